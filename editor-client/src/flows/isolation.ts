/**
 * A workflow run in a worktree of its own, once it is ready: telling it (Apply / Show Diff /
 * Discard), Apply (and the question when the user changed the same lines: "Open the Merge" or
 * "Apply Anyway"), Discard (asked first: its change is lost) and Keep as Branch. The palette's
 * message and the Runs view's actions (flows/runs.ts) both end here; the view reads the history
 * again after each action (ui/runsView.ts).
 */
import * as vscode from 'vscode';
import {
    APPLY_ANYWAY,
    conflictQuestion,
    conflicts,
    isolatedRunMessage,
    OPEN_MERGE,
    quoted,
    runActionMessage,
    type IsolatedAnswer,
} from '../common/isolation';
import { runFileSides } from '../common/runs';
import { ServerCommand, type TaskResult } from '../protocol';
import { runAction } from '../protocolResults';
import type { FlowContext } from '../ui/context';
import { dirtyIn, workspaceRoot } from '../ui/files';
import { showDiffs } from '../ui/runDiff';
import { showWithLog } from '../ui/showLog';
import { undo } from './undo';

/** An isolated run the flows act on: its id, what was asked, the folder it ran in (multi-root; none: the server's). */
export interface IsolatedRunRef {
    id: string;
    label: string;
    folder?: vscode.Uri;
}

const APPLY = 'Apply';
const SHOW_DIFF = 'Show Diff';
const DISCARD = 'Discard';
const UNDO = 'Undo';

/** Tells how a run in a worktree ended; a ready one offers Apply, Show Diff and Discard. */
export async function tellIsolatedRun(ctx: FlowContext, goal: string, result: TaskResult, answer: IsolatedAnswer, folder?: vscode.Uri): Promise<void> {
    const message = isolatedRunMessage(goal, result, answer);
    const text = `Aider: ${message.text}`;
    const show = message.severity === 'info' ? vscode.window.showInformationMessage : vscode.window.showWarningMessage;
    if (!message.ready) {
        void show(text);
        return;
    }
    const run: IsolatedRunRef = { id: answer.runId, label: goal, ...(folder === undefined ? {} : { folder }) };
    const choice = await show(text, APPLY, SHOW_DIFF, DISCARD);
    if (choice === APPLY) {
        await applyRun(ctx, run);
    } else if (choice === SHOW_DIFF) {
        await showDiffs(ctx, { id: run.id, title: quoted(run.label, 40) }, undefined, run.folder);
    } else if (choice === DISCARD) {
        await discardRun(ctx, run);
    }
}

/** Apply: the run's change laid on the user's files; when the user changed the same lines, their choice. */
export async function applyRun(ctx: FlowContext, run: IsolatedRunRef): Promise<void> {
    const title = `Applying ${quoted(run.label, 40)}`;
    const result = await ctx.server.run(title, ServerCommand.applyRun, { run_id: run.id }, run.folder);
    if (!result) {
        return;
    }
    const skipped = runAction(result).skipped ?? [];
    const question = result.status === 'FAILED' ? conflictQuestion(run.label, skipped) : undefined;
    if (question === undefined) {
        await tellAction(ctx, 'Apply', result, run);
        return;
    }
    const merged = conflicts(skipped).filter((file) => file.kind === 'changed_since').map((file) => file.path);
    const choices = merged.length > 0 ? [OPEN_MERGE, APPLY_ANYWAY] : [APPLY_ANYWAY];
    const choice = await vscode.window.showWarningMessage(question.message, { modal: true, detail: question.detail }, ...choices);
    if (choice === OPEN_MERGE) {
        await openMerge(ctx, run, merged);
    } else if (choice === APPLY_ANYWAY) {
        await applyAnyway(ctx, run, title, conflicts(skipped).map((file) => file.path));
    } else {
        void vscode.window.showInformationMessage(`Aider: ${quoted(run.label)} is still ready: nothing applied.`);
    }
}

/** "Apply Anyway": unsaved files saved first (the server never writes under an unsaved buffer), then the run's version wins. */
async function applyAnyway(ctx: FlowContext, run: IsolatedRunRef, title: string, paths: readonly string[]): Promise<void> {
    const held = dirtyIn(run.folder);
    const dirty = paths.filter((path) => held.has(path));
    const saved = await Promise.all(dirty.map((path) => held.get(path)?.save() ?? Promise.resolve(true)));
    if (!saved.every(Boolean)) {
        void vscode.window.showWarningMessage(`Aider: ${dirty.join(', ')} could not be saved: nothing applied.`);
        return;
    }
    const forced = await ctx.server.run(title, ServerCommand.applyRun, { run_id: run.id, force: true }, run.folder);
    if (forced) {
        await tellAction(ctx, 'Apply', forced, run);
    }
}

/** "Open the Merge": each file the user changed on the same lines, the run's version beside the user's (editable) file. */
async function openMerge(ctx: FlowContext, run: IsolatedRunRef, paths: readonly string[]): Promise<void> {
    const root = run.folder ?? workspaceRoot();
    if (root === undefined) {
        return;
    }
    for (const path of paths) {
        const result = await ctx.server.query(ServerCommand.historyDiff, { run_id: run.id, path }, run.folder);
        const file = result?.status === 'COMPLETE' ? runFileSides(result).find((sides) => sides.path === path) : undefined;
        if (file === undefined || file.binary) {
            void vscode.window.showWarningMessage(`Aider: no merge to open for ${path}: the run's version could not be read.`);
            continue;
        }
        await vscode.commands.executeCommand(
            'vscode.diff',
            ctx.beforeContent.add(path, file.after ?? ''),
            vscode.Uri.joinPath(root, path),
            `${path} (${quoted(run.label, 40)} ↔ yours)`,
            { preview: false },
        );
    }
}

/** Discard, after asking: the run's change is lost with its worktree. */
export async function discardRun(ctx: FlowContext, run: IsolatedRunRef): Promise<void> {
    const choice = await vscode.window.showWarningMessage(
        `Discard ${quoted(run.label)}?`,
        { modal: true, detail: 'Its change is thrown away with its worktree. Your files are not touched.' },
        DISCARD,
    );
    if (choice !== DISCARD) {
        return;
    }
    const result = await ctx.server.run(`Discarding ${quoted(run.label, 40)}`, ServerCommand.discardRun, { run_id: run.id }, run.folder);
    if (result) {
        await tellAction(ctx, 'Discard', result, run);
    }
}

/** Keep as Branch (git): the run's change committed to its own branch, the user's files untouched. */
export async function keepRunBranch(ctx: FlowContext, run: IsolatedRunRef): Promise<void> {
    const result = await ctx.server.run(`Keeping ${quoted(run.label, 40)} as a branch`, ServerCommand.keepRunBranch, { run_id: run.id }, run.folder);
    if (result) {
        await tellAction(ctx, 'Keep as Branch', result, run);
    }
}

/** Tells what an action did; an applied run offers Undo (it is an ordinary run of the history now). */
async function tellAction(ctx: FlowContext, title: string, result: TaskResult, run: IsolatedRunRef): Promise<void> {
    const message = runActionMessage(title, result);
    const text = `Aider: ${message.text}`;
    if (message.severity === 'error') {
        await showWithLog(ctx.log, 'error', text);
        return;
    }
    const applied = runAction(result).state === 'applied';
    if (!applied) {
        void vscode.window.showInformationMessage(text);
        return;
    }
    if ((await vscode.window.showInformationMessage(text, UNDO)) === UNDO) {
        await undo(ctx, runAction(result).checkpoint_id ?? run.id, run.folder);
    }
}
