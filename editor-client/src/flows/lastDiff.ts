/** "Show Last Aider Diff": the last change told (an edit's or a run's), in the diff editor. */
import * as vscode from 'vscode';
import type { FlowContext } from '../ui/context';
import { showDiff } from '../ui/diffView';

export async function showLastDiff(ctx: FlowContext): Promise<void> {
    const change = ctx.lastChange.current;
    if (change === undefined) {
        void vscode.window.showInformationMessage('Aider: no Aider change to show yet (or it was undone).');
        return;
    }
    await showDiff(ctx.beforeContent, change.root, change.diff, change.changedFiles);
}
