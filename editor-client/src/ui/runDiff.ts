/**
 * A run's own change in VS Code's diff editor, file by file: before the run ↔ after its last
 * edit (`aider-lsp.history.diff`), whatever happened to the files since. For a ready isolated
 * run, before is the file it started from and after its version in its worktree.
 */
import * as vscode from 'vscode';
import { resultMessage } from '../common/results';
import { runFileSides, type RunFileSides } from '../common/runs';
import { ServerCommand } from '../protocol';
import { tell, type FlowContext } from './context';
import type { BeforeContentProvider } from './diffView';

/** The run whose diff is shown: its id, and its label as the diff's title names it (short). */
export interface RunDiffRef {
    id: string;
    title: string;
}

/** One diff editor per text file of the run (`path`: that file's alone), in `folder` (multi-root; none: the server's). */
export async function showDiffs(ctx: FlowContext, run: RunDiffRef, path?: string, folder?: vscode.Uri): Promise<void> {
    const result = await ctx.server.query(ServerCommand.historyDiff, path === undefined ? { run_id: run.id } : { run_id: run.id, path }, folder);
    if (result === undefined) {
        void vscode.window.showWarningMessage('Aider: no diff to show: the server is not running (Aider: Show Log says why).');
        return;
    }
    if (result.status === 'FAILED') {
        await tell(ctx, resultMessage('Show Diff', result));
        return;
    }
    const files = runFileSides(result);
    const shown = files.filter((file) => !file.binary);
    for (const file of shown) {
        await openSides(ctx.beforeContent, run, file, shown.length === 1);
    }
    const binary = files.filter((file) => file.binary).map((file) => file.path);
    if (binary.length > 0) {
        void vscode.window.showInformationMessage(`Aider: ${binary.join(', ')}: not text, no diff to show.`);
    }
}

/** One file in VS Code's diff editor: left as before the run, right as the run left it. */
async function openSides(provider: BeforeContentProvider, run: RunDiffRef, file: RunFileSides, preview: boolean): Promise<void> {
    const what = !file.existedBefore ? ', created by the run' : !file.existsAfter ? ', deleted by the run' : '';
    await vscode.commands.executeCommand(
        'vscode.diff',
        provider.add(file.path, file.before ?? ''),
        provider.add(file.path, file.after ?? ''),
        `${file.path} (before ↔ after “${run.title}”${what})`,
        { preview },
    );
}
