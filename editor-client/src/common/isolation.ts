/**
 * Isolated runs in words: what the user is told when a run in a worktree ends (ready, or
 * discarded), the question when Apply meets the user's own changes on the same lines, what an
 * action on a run did, and the status item's count. Pure: every wording is tested without VS Code.
 */
import { taskError, type TaskResult } from '../protocol';
import { runAction, workflowRunNotes, type RunStateName, type SkippedFile } from '../protocolResults';
import { describeTests, iterationCount, workflowSummary } from './workflowSummary';
import { runFinding, type RunFinding } from './runs';

/** An isolated run as its workflow answer names it. */
export interface IsolatedAnswer {
    runId: string;
    state: RunStateName;
    findings: RunFinding[];
}

/** The isolated run of an `aider-lsp.workflow.run` answer; undefined for a run in place (or one refused before it began). */
export function isolatedAnswer(result: TaskResult): IsolatedAnswer | undefined {
    const notes = workflowRunNotes(result);
    if (notes.isolation !== 'worktree' || notes.run_id === undefined) {
        return undefined;
    }
    return { runId: notes.run_id, state: notes.state ?? 'ready', findings: (notes.findings ?? []).map(runFinding) };
}

/** A goal or label as a message names it: its first line, kept short, in quotes. */
export function quoted(label: string, max = 60): string {
    const first = label.split('\n')[0]?.trim() ?? '';
    return `“${first.length > max ? `${first.slice(0, max)}…` : first}”`;
}

function listFiles(files: readonly string[]): string {
    return files.length <= 3 ? files.join(', ') : `${files.slice(0, 3).join(', ')} and ${String(files.length - 3)} more`;
}

export interface IsolatedRunMessage {
    severity: 'info' | 'warning' | 'error';
    /** Without the "Aider: " every message starts with. */
    text: string;
    /** The run waits for the user: Apply, Show Diff and Discard are offered. */
    ready: boolean;
}

/** The files an isolated run changed and created, against the files it started from. */
function changedByRun(result: TaskResult): string[] {
    const notes = workflowRunNotes(result);
    return [...new Set([...(notes.changed_files ?? []), ...(notes.created_files ?? [])])];
}

/** Why the goal was not reached, as the server said it (its error's message, else its content). */
function reasonOf(result: TaskResult): string {
    const said = taskError(result)?.message ?? result.content;
    return said.trim().split('\n')[0] ?? '';
}

/**
 * What the user is told when a run in a worktree ends: "“goal” is ready: goal reached in 2
 * iterations; the tests pass (…). Changed a.py." (Apply, Show Diff, Discard offered); a ready
 * run that did not reach its goal says so, a warning; a discarded one (cancelled, or it
 * changed nothing) says the user's files were not touched.
 */
export function isolatedRunMessage(goal: string, result: TaskResult, run: IsolatedAnswer): IsolatedRunMessage {
    const name = quoted(goal);
    const summary = workflowSummary(result);
    const tests = describeTests(summary.test);
    if (run.state !== 'ready') {
        const cancelled = taskError(result)?.reason === 'cancelled';
        const why = cancelled ? 'cancelled' : result.status === 'FAILED' ? `changed nothing to apply (${reasonOf(result)})` : 'changed nothing to apply';
        return { severity: cancelled || result.status === 'FAILED' ? 'warning' : 'info', text: `${name}: ${why}. Your files are untouched.`, ready: false };
    }
    const files = changedByRun(result);
    const changed = files.length > 0 ? ` Changed ${listFiles(files)}.` : ' No file changed.';
    if (result.status === 'FAILED') {
        const after = summary.iterations > 0 ? ` after ${String(summary.iterations)} iteration${summary.iterations === 1 ? '' : 's'}` : '';
        const said = [reasonOf(result), ...(tests ? [tests] : [])].filter((part) => part !== '').join('; ');
        return { severity: 'warning', text: `${name} is ready, its goal not reached${after}: ${said}.${changed}`, ready: true };
    }
    const parts = [`goal reached ${iterationCount(summary.iterations)}`, ...(tests ? [tests] : [])];
    return { severity: 'info', text: `${name} is ready: ${parts.join('; ')}.${changed}`, ready: true };
}

/** "line 3", "lines 3–5", "lines 3–5, 9 and 12–14" (the [first, last] ranges of a SkippedFile). */
export function lineRanges(lines: readonly (readonly number[])[]): string {
    const spans = lines
        .filter((span) => span.length > 0)
        .map(([first = 0, last = first]) => (last > first ? `${String(first)}–${String(last)}` : String(first)));
    if (spans.length === 0) {
        return '';
    }
    const single = spans.length === 1 && !spans[0]?.includes('–');
    const listed = spans.length === 1 ? spans[0] ?? '' : `${spans.slice(0, -1).join(', ')} and ${spans.at(-1) ?? ''}`;
    return `${single ? 'line' : 'lines'} ${listed}`;
}

/** The skipped files the user can decide on: changed on the same lines, or unsaved in the editor. */
export function conflicts(skipped: readonly SkippedFile[]): SkippedFile[] {
    return skipped.filter((file) => file.kind === 'changed_since' || file.kind === 'unsaved');
}

/** One file of the question: "calculator.py: you changed lines 3–5 too", "util.py: unsaved in the editor". */
function conflictLine(file: SkippedFile): string {
    if (file.kind === 'unsaved') {
        return `${file.path}: has unsaved changes in the editor`;
    }
    const where = lineRanges(file.lines ?? []);
    return `${file.path}: you changed ${where || 'the same lines'} too`;
}

export const OPEN_MERGE = 'Open the Merge';
export const APPLY_ANYWAY = 'Apply Anyway';

/**
 * The question when Apply wrote nothing because the user changed the same lines (or has them
 * unsaved): each file and its lines, and what each choice does. Undefined when no file is one
 * the user can decide on (the answer is then told as it is).
 */
export function conflictQuestion(label: string, skipped: readonly SkippedFile[]): { message: string; detail: string } | undefined {
    const files = conflicts(skipped);
    if (files.length === 0) {
        return undefined;
    }
    const paths = files.map((file) => file.path);
    const one = paths.length === 1;
    const merged = files.filter((file) => file.kind === 'changed_since').map((file) => file.path);
    const detail = [
        ...files.map(conflictLine),
        '',
        `${APPLY_ANYWAY}: the run's version of ${listFiles(paths)} replaces yours${one ? '' : ' in each'}; Undo takes it back.`,
        ...(merged.length > 0 ? [`${OPEN_MERGE}: ${listFiles(merged)} beside the run's version, to take its change by hand.`] : []),
    ].join('\n');
    return { message: `Aider: ${quoted(label)} was not applied: your changes to ${listFiles(paths)} meet the run's. Nothing was written.`, detail };
}

/** What an action on an isolated run did ("Applied “x”: a.py"), or why it did not happen. */
export function runActionMessage(title: string, result: TaskResult): { severity: 'info' | 'error'; text: string } {
    if (result.status === 'FAILED') {
        const reason = taskError(result)?.message || result.content.trim() || 'no reason given';
        return { severity: 'error', text: `${title} failed: ${reason}` };
    }
    const said = result.content.trim();
    if (said) {
        return { severity: 'info', text: said };
    }
    const action = runAction(result);
    const written = [...(action.written ?? []), ...(action.deleted ?? [])];
    const branch = action.branch === undefined ? '' : ` on branch ${action.branch}`;
    return { severity: 'info', text: `${title}: done${written.length > 0 ? ` (${listFiles(written)})` : ''}${branch}.` };
}

/** The status item's text for the isolated runs under way: "$(git-branch) 2 runs"; undefined at 0 (hidden). */
export function isolatedRunsLabel(count: number): string | undefined {
    if (count <= 0) {
        return undefined;
    }
    return `$(git-branch) ${String(count)} run${count === 1 ? '' : 's'}`;
}

/** Its tooltip. */
export function isolatedRunsTooltip(count: number): string {
    const runs = count === 1 ? 'One Aider workflow run is' : `${String(count)} Aider workflow runs are`;
    return `${runs} under way, each in a worktree of its own: your files are not touched until you apply. Click for the Runs view.`;
}
