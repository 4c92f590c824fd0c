/**
 * The palette, menu and code-action commands: each client command id → its UI flow (src/flows/,
 * one module per flow). Flows run server commands through the one ServerCommands.run, which
 * says so when the server is not running instead of failing.
 */
import * as vscode from 'vscode';
import { setApiKey } from './flows/apiKey';
import { edit, editSelection } from './flows/edit';
import { findFiles } from './flows/findFiles';
import { interactive } from './flows/interactive';
import { showLastDiff } from './flows/lastDiff';
import { applyWinner } from './flows/attempts';
import { compareAttempts, compareWithAttempt } from './flows/compare';
import { applyRun, copyGoal, discardRun, keepRunBranch, openRunFile, runAgain, showRunDiff, undoRun } from './flows/runs';
import { addNoteInPlace, addRunNote } from './flows/steer';
import { clearDiagnostics, runTests } from './flows/tests';
import { undo } from './flows/undo';
import { selectModel } from './flows/selectModel';
import { runWorkflow, runWorkflowAttempts } from './flows/workflow';
import { ClientCommand, type ClientCommandId } from './protocol';
import type { FlowContext } from './ui/context';
import { allowedInThisWindow } from './ui/trust';

/** What the commands need beyond the flows' context: the server's set-up, the Runs view. */
export interface CommandHost extends FlowContext {
    readonly runs: { refresh(): void };
    setupServer(): Promise<boolean>;
    /** True when the server runs, after offering to set it up or restart it (before any question). */
    ensureServer(): Promise<boolean>;
}

/** Registers every client command; the disposables unregister them. */
export function registerCommands(host: CommandHost): vscode.Disposable[] {
    // a command that needs the server makes sure of it first, before asking the user anything
    const withServer =
        (flow: (...args: unknown[]) => Promise<void>) =>
        async (...args: unknown[]): Promise<void> => {
            if (await host.ensureServer()) {
                await flow(...args);
            }
        };
    // a command that edits files or runs the workspace's commands: not in Restricted Mode (ui/trust.ts)
    const trusted =
        (title: string, flow: (...args: unknown[]) => Promise<void>) =>
        async (...args: unknown[]): Promise<void> => {
            if (await allowedInThisWindow(title)) {
                await withServer(flow)(...args);
            }
        };
    const table: Record<ClientCommandId, (...args: unknown[]) => unknown> = {
        [ClientCommand.edit]: trusted('Edit with Aider', (clicked, selected) => edit(host, clicked, selected)),
        [ClientCommand.editSelection]: trusted('Edit Selection with Aider', (arg) => editSelection(host, arg)),
        [ClientCommand.runWorkflow]: trusted('Run Workflow', (clicked, selected) => runWorkflow(host, clicked, selected)),
        [ClientCommand.runWorkflowInWorktree]: trusted('Run Workflow in a Worktree', (clicked, selected) => runWorkflow(host, clicked, selected, 'worktree')),
        [ClientCommand.runWorkflowAttempts]: trusted('Run Workflow: Several Attempts', (clicked, selected) => runWorkflowAttempts(host, clicked, selected)),
        [ClientCommand.addNote]: trusted('Add a Note to the Run Under Way', () => addNoteInPlace(host)),
        [ClientCommand.undo]: trusted('Undo', () => undo(host)),
        [ClientCommand.findFiles]: withServer(() => findFiles(host)),
        [ClientCommand.interactive]: trusted('Interactive Session', (clicked, selected) => interactive(host, clicked, selected)),
        [ClientCommand.clearDiagnostics]: withServer(() => clearDiagnostics(host)),
        [ClientCommand.runTests]: trusted('Run Tests', () => runTests(host)),
        [ClientCommand.setApiKey]: () => setApiKey(host),
        [ClientCommand.restartServer]: () => host.restartServer(),
        [ClientCommand.showLog]: () => { host.log.show(); },
        [ClientCommand.setupServer]: () => host.setupServer(),
        [ClientCommand.showLastDiff]: () => showLastDiff(host),
        [ClientCommand.selectModel]: withServer(() => selectModel(host)),
        [ClientCommand.refreshRuns]: () => { host.runs.refresh(); },
        [ClientCommand.undoRun]: trusted('Undo This Run', (node) => undoRun(host, node)),
        [ClientCommand.showRunDiff]: withServer((node) => showRunDiff(host, node)),
        [ClientCommand.runAgain]: trusted('Run Again', (node) => runAgain(host, node)),
        [ClientCommand.copyGoal]: (node) => copyGoal(node),
        [ClientCommand.openRunFile]: withServer((node) => openRunFile(host, node)),
        [ClientCommand.applyRun]: trusted('Apply', (node) => applyRun(host, node)),
        [ClientCommand.discardRun]: trusted('Discard', (node) => discardRun(host, node)),
        [ClientCommand.keepRunBranch]: trusted('Keep as Branch', (node) => keepRunBranch(host, node)),
        [ClientCommand.applyWinner]: trusted('Apply the Winner', (node) => applyWinner(host, node)),
        [ClientCommand.compareAttempt]: withServer((node) => compareWithAttempt(host, node)),
        [ClientCommand.compareAttempts]: withServer((node) => compareAttempts(host, node)),
        [ClientCommand.addRunNote]: trusted('Add a Note to This Run', (node) => addRunNote(host, node)),
    };
    return Object.entries(table).map(([id, handler]) => vscode.commands.registerCommand(id, handler));
}
