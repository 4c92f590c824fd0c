/**
 * A workflow run in a worktree of its own, once it is ready: telling it (Apply / Show Diff /
 * Discard), Apply (and the question when the user changed the same lines: "Open the Merge" or
 * "Apply Anyway"), Discard (asked first: its change is lost) and Keep as Branch. The palette's
 * message and the Runs view's actions (flows/runs.ts) both end here; the view reads the history
 * again after each action (ui/runsView.ts). A "… is ready" message still standing when its run
 * is applied, discarded or kept from elsewhere is put out of the way (common/readyNotices.ts):
 * the toasts hidden, its buttons saying what already happened.
 */
import * as vscode from 'vscode';
import { attemptAppliedText } from '../common/attempts';
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
import { alreadySettledText, type Settled } from '../common/readyNotices';
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
    /** The run's id; a group's id applies its winner. */
    id: string;
    label: string;
    folder?: vscode.Uri;
    /** A group's winner (or the winner itself): its run id, whose change a merge shows. */
    winner?: string;
}

/** VS Code's own command that hides the notification toasts (they stay in the notification center). */
const HIDE_TOASTS = 'notifications.hideToasts';

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
    const notice = ctx.notices.open([run.id]);
    const choice = await show(text, APPLY, SHOW_DIFF, DISCARD);
    const settled = ctx.notices.close(notice);
    if (settled !== undefined && (choice === APPLY || choice === DISCARD)) {
        void vscode.window.showInformationMessage(`Aider: ${alreadySettledText(quoted(goal), settled)}`);
    } else if (choice === APPLY) {
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
        const result = await ctx.server.query(ServerCommand.historyDiff, { run_id: run.winner ?? run.id, path }, run.folder);
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

/**
 * Tells what an action did (an attempt applied: that its siblings were discarded); an applied
 * run offers Undo (it is an ordinary run of the history now). A ready message still standing
 * for one of the runs is put out of the way.
 */
async function tellAction(ctx: FlowContext, title: string, result: TaskResult, run: IsolatedRunRef): Promise<void> {
    const message = runActionMessage(title, result);
    if (message.severity === 'error') {
        await showWithLog(ctx.log, 'error', `Aider: ${message.text}`);
        return;
    }
    const action = runAction(result);
    settleNotices(ctx, run, action.state, [action.run_id ?? run.id, ...(action.discarded ?? [])]);
    const text = `Aider: ${attemptAppliedText(run.label, action, run.winner !== undefined) ?? message.text}`;
    const applied = action.state === 'applied';
    if (!applied) {
        void vscode.window.showInformationMessage(text);
        return;
    }
    if ((await vscode.window.showInformationMessage(text, UNDO)) === UNDO) {
        await undo(ctx, action.checkpoint_id ?? run.id, run.folder);
    }
}

/** The runs an action settled: a ready message about one of them, still standing, is hidden and its buttons disarmed. */
function settleNotices(ctx: FlowContext, run: IsolatedRunRef, state: string | undefined, runs: readonly string[]): void {
    const how: Settled | undefined = state === 'applied' || state === 'discarded' || state === 'kept' ? state : undefined;
    if (how !== undefined && ctx.notices.settle([run.id, ...runs], how)) {
        // hidden, not closed: they stay in the notification center (a button there now says what happened)
        void vscode.commands.executeCommand(HIDE_TOASTS).then(undefined, () => undefined);
    }
}
