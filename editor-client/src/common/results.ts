/**
 * What the user is told about a TaskResult: one line, its severity and whether a diff can be
 * shown. Pure, so every wording is tested without VS Code.
 */
import { taskError, type TaskResult } from '../protocol';
import { changeNotes, type Retest } from '../protocolResults';
import { describeTests, iterationCount, workflowSummary } from './workflowSummary';

type Severity = 'info' | 'warning' | 'error';

export interface ResultMessage {
    severity: Severity;
    text: string;
    /** Files the command changed or created (workspace-relative); a "Show Diff" offer when non-empty. */
    changedFiles: string[];
    /** The unified diff of those files, when the server sent one. */
    diff?: string;
    /** The files are still as the command left them and "Undo Last Aider Change" restores them. */
    undoable?: boolean;
    /** The run of the history that made the change (`notes.checkpoint_id`), when it made one. */
    runId?: string;
}

const MAX_TEXT = 400;

function firstLines(text: string): string {
    const trimmed = text.trim();
    return trimmed.length > MAX_TEXT ? `${trimmed.slice(0, MAX_TEXT)}…` : trimmed;
}

function listFiles(files: readonly string[]): string {
    return files.length <= 3 ? files.join(', ') : `${files.slice(0, 3).join(', ')} and ${files.length - 3} more`;
}

/** The message for `title`'s result (e.g. title "Edit with Aider"). */
export function resultMessage(title: string, result: TaskResult): ResultMessage {
    const notes = changeNotes(result);
    const changedFiles = [...new Set([...(notes.changed_files ?? []), ...(notes.created_files ?? [])])];
    const message = messageOf(title, result, changedFiles, notes.diff, notes.retest);
    return notes.checkpoint_id === undefined ? message : { ...message, runId: notes.checkpoint_id };
}

function messageOf(title: string, result: TaskResult, changedFiles: string[], diff: string | undefined, retest: Retest | undefined): ResultMessage {
    if (result.status === 'FAILED') {
        const error = taskError(result);
        const reason = error?.message || firstLines(result.content) || 'no reason given';
        const cancelled = error?.reason === 'cancelled';
        return {
            severity: cancelled ? 'warning' : 'error',
            text: cancelled ? `${title}: cancelled.` : `${title} failed: ${reason}`,
            changedFiles,
            ...(diff ? { diff } : {}),
        };
    }
    if (changedFiles.length > 0) {
        return {
            severity: 'info',
            text: `${title}: changed ${listFiles(changedFiles)}.${retestSentence(retest)}`,
            changedFiles,
            ...(diff ? { diff } : {}),
        };
    }
    const summary = firstLines(result.content);
    return { severity: 'info', text: summary ? `${title}: ${summary}` : `${title}: done.`, changedFiles };
}

/** What the re-run of the failing tests said after "Fix with Aider" on one (`notes.retest`), or ''. */
function retestSentence(retest: Retest | undefined): string {
    const exitCode = retest?.exit_code;
    if (exitCode === 0) {
        return ' The tests that failed pass now.';
    }
    return exitCode === undefined ? '' : ` The tests that failed still fail (exit code ${String(exitCode)}).`;
}

/**
 * The message for a workflow run (`aider-lsp.workflow.run`): whether the goal was reached, in
 * how many iterations, what the last test run said, and the files the run left changed, with
 * Undo offered whenever it left any (cancelled and failed runs included).
 */
export function workflowMessage(title: string, result: TaskResult): ResultMessage {
    const base = resultMessage(title, result);
    const summary = workflowSummary(result);
    const tests = describeTests(summary.test);
    const files = base.changedFiles;
    const left = files.length > 0 ? ` It left ${listFiles(files)} changed: Undo puts ${files.length === 1 ? 'it' : 'them'} back.` : '';
    if (result.status === 'FAILED') {
        const reason = taskError(result)?.reason;
        const after = summary.iterations > 0 && reason !== 'cancelled' ? ` (after ${String(summary.iterations)} iteration${summary.iterations === 1 ? '' : 's'}${tests ? `; ${tests}` : ''})` : '';
        const text = base.text.replace(/\.?$/, '') + after + '.' + left;
        return { ...base, text, undoable: files.length > 0 };
    }
    const parts = [`${title}: goal reached ${iterationCount(summary.iterations)}`];
    if (tests) {
        parts.push(tests);
    }
    const changed = files.length > 0 ? ` Changed ${listFiles(files)}.` : ' No file changed.';
    return { ...base, text: `${parts.join('; ')}.${changed}`, undoable: files.length > 0 };
}

/** The text of a cancelled or failed request (JSON-RPC error, transport failure). */
export function requestErrorMessage(title: string, error: unknown): ResultMessage {
    const code = typeof error === 'object' && error !== null && 'code' in error ? (error).code : undefined;
    if (code === -32800) {
        return { severity: 'warning', text: `${title}: cancelled.`, changedFiles: [] };
    }
    const message = error instanceof Error ? error.message : String(error);
    return { severity: 'error', text: `${title} failed: ${message}`, changedFiles: [] };
}
