/**
 * The palette, menu and code-action commands: each client command id → its UI flow (src/flows/,
 * one module per flow). Flows run server commands through the one ServerCommands.run, which
 * says so when the server is not running instead of failing.
 */
import * as vscode from 'vscode';
import { setApiKey } from './flows/apiKey';
import { showLastDiff, type FlowContext } from './flows/context';
import { edit, editSelection } from './flows/edit';
import { findFiles } from './flows/findFiles';
import { interactive } from './flows/interactive';
import { clearDiagnostics, runTests } from './flows/tests';
import { undo } from './flows/undo';
import { runWorkflow } from './flows/workflow';
import { ClientCommand, type ClientCommandId } from './protocol';

/** What the commands need beyond the flows' context: the server's set-up. */
export interface CommandHost extends FlowContext {
    setupServer(): Promise<void>;
}

/** Registers every client command; the disposables unregister them. */
export function registerCommands(host: CommandHost): vscode.Disposable[] {
    const table: Record<ClientCommandId, (...args: unknown[]) => unknown> = {
        [ClientCommand.edit]: (clicked, selected) => edit(host, clicked, selected),
        [ClientCommand.editSelection]: (arg) => editSelection(host, arg),
        [ClientCommand.runWorkflow]: (clicked, selected) => runWorkflow(host, clicked, selected),
        [ClientCommand.undo]: () => undo(host),
        [ClientCommand.findFiles]: () => findFiles(host),
        [ClientCommand.interactive]: (clicked, selected) => interactive(host, clicked, selected),
        [ClientCommand.clearDiagnostics]: () => clearDiagnostics(host),
        [ClientCommand.runTests]: () => runTests(host),
        [ClientCommand.setApiKey]: () => setApiKey(host),
        [ClientCommand.restartServer]: () => host.restartServer(),
        [ClientCommand.showLog]: () => { host.log.show(); },
        [ClientCommand.setupServer]: () => host.setupServer(),
        [ClientCommand.showLastDiff]: () => showLastDiff(host),
    };
    return Object.entries(table).map(([id, handler]) => vscode.commands.registerCommand(id, handler));
}
