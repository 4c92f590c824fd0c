/**
 * What a UI flow works with (the server's commands, the log, the chat output, the secrets) and
 * how it tells the user a result: one line, "Show Diff" for changed files, "Show Log" for failures.
 */
import * as vscode from 'vscode';
import type { KnownAttempts } from '../common/attempts';
import type { ReadyNotices } from '../common/readyNotices';
import type { ResultMessage } from '../common/results';
import { ClientCommand } from '../protocol';
import type { ServerCommands } from '../server/execute';
import { showDiff, type BeforeContentProvider } from './diffView';
import { workspaceRoot } from './files';
import type { LastChange } from './lastChange';
import { showWithLog } from './showLog';

export interface FlowContext {
    readonly server: ServerCommands;
    readonly log: vscode.LogOutputChannel;
    readonly chat: vscode.OutputChannel;
    readonly beforeContent: BeforeContentProvider;
    readonly secrets: vscode.SecretStorage;
    readonly lastChange: LastChange;
    /** Counts the isolated runs under way (the status item, ui/isolatedRuns.ts); a group counts its attempts. */
    readonly isolatedRuns: { track<T>(work: Promise<T>, count?: number): Promise<T> };
    /** The "… is ready" notifications still standing, by the runs their buttons act on. */
    readonly notices: ReadyNotices;
    /** The attempts of the groups this window ran (the Runs view labels them). */
    readonly attempts: KnownAttempts;
    restartServer(): Promise<void>;
}

const SHOW_DIFF = 'Show Diff';
const UNDO = 'Undo';

/**
 * Tells a result; the diff opens against `root` (default: the first workspace folder). A result
 * that changed files is remembered for "Show Last Aider Diff" and offers Show Diff (and Undo
 * when the message says the change can be undone), whatever its severity.
 */
export async function tell(ctx: FlowContext, message: ResultMessage, root?: vscode.Uri): Promise<void> {
    const text = `Aider: ${message.text}`;
    const base = root ?? workspaceRoot();
    const items: string[] = [];
    if (message.changedFiles.length > 0 && base !== undefined) {
        ctx.lastChange.remember({ root: base, changedFiles: message.changedFiles, diff: message.diff, ...(message.runId === undefined ? {} : { runId: message.runId }) });
        items.push(SHOW_DIFF);
    }
    if (message.undoable === true) {
        items.push(UNDO);
    }
    let choice: string | undefined;
    if (message.severity === 'error') {
        choice = await showWithLog(ctx.log, 'error', text, ...items);
    } else if (items.length === 0) {
        // nothing to choose: do not hold the command until the notification is dismissed
        void (message.severity === 'warning' ? vscode.window.showWarningMessage(text) : vscode.window.showInformationMessage(text));
        return;
    } else {
        const show = message.severity === 'warning' ? vscode.window.showWarningMessage : vscode.window.showInformationMessage;
        choice = await show(text, ...items);
    }
    if (choice === SHOW_DIFF && base !== undefined) {
        await showDiff(ctx.beforeContent, base, message.diff, message.changedFiles);
    } else if (choice === UNDO) {
        await vscode.commands.executeCommand(ClientCommand.undo);
    }
}
