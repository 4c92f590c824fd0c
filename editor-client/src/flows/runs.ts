/**
 * The Runs view's actions (ui/runsView.ts): a file's diff for its run (the click), the whole
 * run's diff, Undo This Run (the undo flow, with the run's id), Run Again (the workflow flow,
 * with the run's goal) and Copy Goal; on a ready isolated run Apply, Discard and Keep as Branch
 * (flows/isolation.ts; an attempt applied discards its siblings). A group's Apply the Winner:
 * flows/attempts.ts, two attempts' Compare: flows/compare.ts; a running run's Add a Note: flows/steer.ts. The diffs are the run's own change, before the run ↔ after its last
 * edit (ui/runDiff.ts), whatever happened to the files since. In a multi-root window every
 * action goes to the folder of the item it was chosen on (its `folder`).
 */
import * as vscode from 'vscode';
import { goalOf, shortLabel, type RunRecord } from '../common/runs';
import type { FlowContext } from '../ui/context';
import { showDiffs } from '../ui/runDiff';
import { asRunNode } from '../ui/runsView';
import { applyRun as applyIsolatedRun, discardRun as discardIsolatedRun, keepRunBranch as keepIsolatedRun, type IsolatedRunRef } from './isolation';
import { undo } from './undo';
import { runAgain as runWorkflowAgain } from './workflow';

/** The run of the item the action was chosen on (a file's item stands for its run). */
function runOf(node: unknown): RunRecord | undefined {
    return asRunNode(node)?.run;
}

function diffRef(run: RunRecord): { id: string; title: string } {
    return { id: run.id, title: shortLabel(run, 40) };
}

/** The isolated run of the item, in the item's folder. */
function isolatedOf(node: unknown): IsolatedRunRef | undefined {
    const chosen = asRunNode(node);
    if (chosen === undefined) {
        return undefined;
    }
    const { run, folder } = chosen;
    // the winner of its group: told as such once applied
    return { id: run.id, label: run.label, ...(folder === undefined ? {} : { folder }), ...(run.won ? { winner: run.id } : {}) };
}

/** A click on a file of a run: its diff, before the run ↔ after it. */
export async function openRunFile(ctx: FlowContext, node: unknown): Promise<void> {
    const chosen = asRunNode(node);
    if (chosen?.kind === 'file') {
        await showDiffs(ctx, diffRef(chosen.run), chosen.path, chosen.folder);
    }
}

/** "Show Diff" on a run: one diff editor per file it changed (on a file: that file's). */
export async function showRunDiff(ctx: FlowContext, node: unknown): Promise<void> {
    const chosen = asRunNode(node);
    if (chosen !== undefined) {
        await showDiffs(ctx, diffRef(chosen.run), chosen.kind === 'file' ? chosen.path : undefined, chosen.folder);
    }
}

export async function undoRun(ctx: FlowContext, node: unknown): Promise<void> {
    const chosen = asRunNode(node);
    if (chosen !== undefined) {
        await undo(ctx, chosen.run.id, chosen.folder);
    }
}

/** "Run Again": the run's goal, in the run's folder. */
export async function runAgain(ctx: FlowContext, node: unknown): Promise<void> {
    const chosen = asRunNode(node);
    if (chosen !== undefined) {
        await runWorkflowAgain(ctx, goalOf(chosen.run), chosen.folder);
    }
}

export async function copyGoal(node: unknown): Promise<void> {
    const run = runOf(node);
    if (run !== undefined) {
        await vscode.env.clipboard.writeText(goalOf(run));
        vscode.window.setStatusBarMessage(`Aider: copied “${shortLabel(run, 40)}”`, 3000);
    }
}

/** "Apply" on a ready run: its change laid on the user's files (their edits meanwhile kept). */
export async function applyRun(ctx: FlowContext, node: unknown): Promise<void> {
    const run = isolatedOf(node);
    if (run !== undefined) {
        await applyIsolatedRun(ctx, run);
    }
}

export async function discardRun(ctx: FlowContext, node: unknown): Promise<void> {
    const run = isolatedOf(node);
    if (run !== undefined) {
        await discardIsolatedRun(ctx, run);
    }
}

export async function keepRunBranch(ctx: FlowContext, node: unknown): Promise<void> {
    const run = isolatedOf(node);
    if (run !== undefined) {
        await keepIsolatedRun(ctx, run);
    }
}
