/**
 * What a UI flow works with (the server's commands, the log, the chat output, the secrets) and
 * how it tells the user a result: one line, "Show Diff" for changed files, "Show Log" for failures.
 */
import * as vscode from 'vscode';
import type { ResultMessage } from '../common/results';
import { showWithLog } from '../common/showLog';
import { showDiff, type BeforeContentProvider } from '../diffView';
import type { ServerCommands } from '../serverCommand';
import { workspaceRoot } from './files';

export interface FlowContext {
    readonly server: ServerCommands;
    readonly log: vscode.LogOutputChannel;
    readonly chat: vscode.OutputChannel;
    readonly beforeContent: BeforeContentProvider;
    readonly secrets: vscode.SecretStorage;
    restartServer(): Promise<void>;
}

const SHOW_DIFF = 'Show Diff';

/** Tells a result; the diff opens against `root` (default: the first workspace folder). */
export async function tell(ctx: FlowContext, message: ResultMessage, root?: vscode.Uri): Promise<void> {
    const text = `Aider: ${message.text}`;
    if (message.severity === 'error') {
        await showWithLog(ctx.log, 'error', text);
        return;
    }
    if (message.severity === 'warning') {
        void vscode.window.showWarningMessage(text);
        return;
    }
    const base = root ?? workspaceRoot();
    if (message.changedFiles.length > 0 && base !== undefined) {
        if ((await vscode.window.showInformationMessage(text, SHOW_DIFF)) === SHOW_DIFF) {
            await showDiff(ctx.beforeContent, base, message.diff, message.changedFiles);
        }
        return;
    }
    void vscode.window.showInformationMessage(text);
}
