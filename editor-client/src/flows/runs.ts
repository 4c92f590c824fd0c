/**
 * The Runs view's actions (ui/runsView.ts): a file's diff for its run (the click), the whole
 * run's diff, Undo This Run (the undo flow, with the run's id), Run Again (the workflow flow,
 * with the run's goal) and Copy Goal. The diffs are the run's own change, before the run ↔
 * after its last edit (`aider-lsp.history.diff`), whatever happened to the files since.
 */
import * as vscode from 'vscode';
import { resultMessage } from '../common/results';
import { goalOf, runFileSides, shortLabel, type RunFileSides, type RunRecord } from '../common/runs';
import { ServerCommand } from '../protocol';
import { tell, type FlowContext } from '../ui/context';
import type { BeforeContentProvider } from '../ui/diffView';
import { asRunNode } from '../ui/runsView';
import { undo } from './undo';
import { runAgain as runWorkflowAgain } from './workflow';

/** The run of the item the action was chosen on (a file's item stands for its run). */
function runOf(node: unknown): RunRecord | undefined {
    return asRunNode(node)?.run;
}

/** A click on a file of a run: its diff, before the run ↔ after it. */
export async function openRunFile(ctx: FlowContext, node: unknown): Promise<void> {
    const chosen = asRunNode(node);
    if (chosen?.kind === 'file') {
        await showDiffs(ctx, chosen.run, chosen.path);
    }
}

/** "Show Diff" on a run: one diff editor per file it changed (on a file: that file's). */
export async function showRunDiff(ctx: FlowContext, node: unknown): Promise<void> {
    const chosen = asRunNode(node);
    if (chosen !== undefined) {
        await showDiffs(ctx, chosen.run, chosen.kind === 'file' ? chosen.path : undefined);
    }
}

export async function undoRun(ctx: FlowContext, node: unknown): Promise<void> {
    const run = runOf(node);
    if (run !== undefined) {
        await undo(ctx, run.id);
    }
}

export async function runAgain(ctx: FlowContext, node: unknown): Promise<void> {
    const run = runOf(node);
    if (run !== undefined) {
        await runWorkflowAgain(ctx, goalOf(run));
    }
}

export async function copyGoal(node: unknown): Promise<void> {
    const run = runOf(node);
    if (run !== undefined) {
        await vscode.env.clipboard.writeText(goalOf(run));
        vscode.window.setStatusBarMessage(`Aider: copied “${shortLabel(run, 40)}”`, 3000);
    }
}

async function showDiffs(ctx: FlowContext, run: RunRecord, path?: string): Promise<void> {
    const result = await ctx.server.query(ServerCommand.historyDiff, path === undefined ? { run_id: run.id } : { run_id: run.id, path });
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
async function openSides(provider: BeforeContentProvider, run: RunRecord, file: RunFileSides, preview: boolean): Promise<void> {
    const what = !file.existedBefore ? ', created by the run' : !file.existsAfter ? ', deleted by the run' : '';
    await vscode.commands.executeCommand(
        'vscode.diff',
        provider.add(file.path, file.before ?? ''),
        provider.add(file.path, file.after ?? ''),
        `${file.path} (before ↔ after “${shortLabel(run, 40)}”${what})`,
        { preview },
    );
}
