/**
 * The run history as the Runs view shows it: the records of `aider-lsp.history.list`, the two
 * sides of a file of `aider-lsp.history.diff`, and each run's wording (label, one-line
 * description, tooltip). Pure: the answers are read with the declared result types
 * (protocolResults.ts, the server's RunRecord and RunDiff), and every wording is tested without
 * VS Code.
 */
import type { TaskResult } from '../protocol';
import * as wire from '../protocolResults';

/** An iteration's Aider edit (the server's StepEdit): both lists empty, it changed nothing. */
export interface StepEdit {
    changedFiles: string[];
    createdFiles: string[];
    /** Why it changed nothing, when Aider said (a few lines). */
    error?: string;
}

/** The test run that decided an iteration (the server's StepTestRun). */
export interface StepTestRun {
    command: string;
    /** "whole" (the whole suite) or "failing" (only the tests that failed before). */
    scope: string;
    exitCode?: number;
    timedOut: boolean;
    /** The runner's last line ("1 failed, 2 passed in 0.02s", "OK"); '' when it printed none. */
    summary: string;
    /** How many tests failed; undefined when the runner's output names none it could count. */
    failed?: number;
    /** The first failing test ids (at most a few: `failed` says how many). */
    failing: string[];
    /** How it ended in the server's words ("the tests fail (1 failed)"); older servers send none. */
    outcome?: string;
}

/** An iteration's analysis (the server's StepAnalysis): its verdict and the start of its message. */
export interface StepAnalysis {
    /** SUCCESS / RETRY / FAILURE */
    verdict: string;
    message: string;
    /** Why the run did not follow the verdict (a SUCCESS over a failing test). */
    overruled?: string;
}

/** One iteration of a workflow run (the server's RunStep); a part is undefined where it did not get that far. */
export interface RunStep {
    iteration: number;
    edit?: StepEdit;
    test?: StepTestRun;
    analysis?: StepAnalysis;
    /** The notes the user added while the run was under way, which this iteration's edit carried. */
    notes: string[];
}

/** One run or edit of the history (the server's RunRecord). */
export interface RunRecord {
    id: string;
    /** Seconds since the epoch. */
    created: number;
    /** "workflow" or "edit". */
    kind: string;
    /** What was asked: the goal or the instruction (a workflow's may be cut: see `goal`). */
    label: string;
    /** A workflow run's whole goal. */
    goal?: string;
    /** SUCCESS / FAILURE / CANCELLED (a run), COMPLETE / FAILED (an edit); absent while it runs. */
    status?: string;
    iterations?: number;
    files: string[];
    spend?: string;
    durationS?: number;
    /** When it was undone (seconds since the epoch). */
    undone?: number;
    /** A workflow run's iterations, oldest first (an edit has none). */
    steps: RunStep[];
    /** What the run could not do and went on without (e.g. no plan was made). */
    note?: string;
    /** Where it stands: an isolated run is running, then ready until applied, discarded or kept. */
    state: wire.RunStateName;
    /** `worktree`: it ran in a worktree of its own (a copy where there is no git). */
    isolation: wire.Isolation;
    /** An isolated run's git branch (none: the folder has no git, so no Keep as Branch). */
    branch?: string;
    /** An isolated run's last test failures, shown under it (never in the Problems panel). */
    findings: RunFinding[];
    /** An attempt of a group (several attempts at one goal): its siblings share it. */
    groupId?: string;
    /** The attempt the tests chose in its group. */
    won: boolean;
    /** An attempt's number in its group (1-based). */
    attempt?: number;
    /** The Aider model an attempt edited with. */
    aiderModel?: string;
}

/** One failure of an isolated run's last test run (the server's Finding), its defaults filled in. */
export interface RunFinding {
    path: string;
    /** 1-based; 0: the whole file. */
    line: number;
    column: number;
    message: string;
    severity: string;
    source: string;
}

/** One file of a run: its text before the run and after the run's last edit. */
export interface RunFileSides {
    path: string;
    /** Undefined: the file did not exist (see `existedBefore`) or is binary. */
    before?: string;
    after?: string;
    existedBefore: boolean;
    existsAfter: boolean;
    /** Not UTF-8 text: no sides to show. */
    binary: boolean;
}

/** The present ones of `optional`, so an absent field stays absent (not `key: undefined`). */
function present<T extends Record<string, unknown>>(optional: T): { [K in keyof T]?: Exclude<T[K], undefined> } {
    return Object.fromEntries(Object.entries(optional).filter(([, value]) => value !== undefined)) as { [K in keyof T]?: Exclude<T[K], undefined> };
}

function stepEdit(edit: wire.StepEdit): StepEdit {
    return { changedFiles: edit.changed_files ?? [], createdFiles: edit.created_files ?? [], ...present({ error: edit.error }) };
}

function stepTestRun(test: wire.StepTestRun): StepTestRun {
    return {
        command: test.command,
        scope: test.scope ?? 'whole',
        timedOut: test.timed_out === true,
        summary: test.summary ?? '',
        failing: test.failing ?? [],
        ...present({ exitCode: test.exit_code, failed: test.failed, outcome: test.outcome }),
    };
}

function stepAnalysis(analysis: wire.StepAnalysis): StepAnalysis {
    return { verdict: analysis.verdict, message: analysis.message ?? '', ...present({ overruled: analysis.overruled }) };
}

function runStep(step: wire.RunStep): RunStep {
    return {
        iteration: step.iteration,
        notes: step.notes ?? [],
        ...present({
            edit: step.edit === undefined ? undefined : stepEdit(step.edit),
            test: step.test === undefined ? undefined : stepTestRun(step.test),
            analysis: step.analysis === undefined ? undefined : stepAnalysis(step.analysis),
        }),
    };
}

/** A Finding with its defaults (the server's) filled in. */
export function runFinding(finding: wire.Finding): RunFinding {
    return {
        path: finding.path,
        line: finding.line ?? 0,
        column: finding.column ?? 0,
        message: finding.message,
        severity: finding.severity ?? 'error',
        source: finding.source ?? 'tests',
    };
}

function runRecord(run: wire.RunRecord): RunRecord {
    const optional = present({
        goal: run.goal,
        status: run.status,
        iterations: run.iterations,
        spend: run.spend,
        durationS: run.duration_s,
        undone: run.undone,
        note: run.note,
        branch: run.branch,
        groupId: run.group_id,
        attempt: run.attempt,
        aiderModel: run.aider_model,
    });
    const known = { id: run.id, created: run.created, kind: run.kind, label: run.label, files: run.files ?? [] };
    // an older server sends no state: its runs are all in place, applied as they edit
    const isolation = { state: run.state ?? 'applied', isolation: run.isolation ?? 'none', findings: (run.findings ?? []).map(runFinding) } as const;
    return { ...known, steps: (run.steps ?? []).map(runStep), ...isolation, won: run.won === true, ...optional };
}

/** The runs of a history.list answer (`notes.runs`), newest first as the server sends them. */
export function runRecords(result: TaskResult): RunRecord[] {
    return (wire.historyNotes(result).runs ?? []).map(runRecord);
}

/** The files of a history.diff answer (`notes.files`). */
export function runFileSides(result: TaskResult): RunFileSides[] {
    return (wire.runDiff(result)?.files ?? []).map((file) => ({
        path: file.path,
        existedBefore: file.existed_before,
        existsAfter: file.exists_after,
        binary: file.binary === true,
        ...present({ before: file.before, after: file.after }),
    }));
}

/** The goal to run again: the whole goal when the server kept it, else the label. */
export function goalOf(run: RunRecord): string {
    return run.goal ?? run.label;
}

/** The first line of what was asked, kept short (an instruction may be a whole prompt). */
export function shortLabel(run: RunRecord, max = 80): string {
    const first = run.label.split('\n')[0]?.trim() ?? '';
    if (!first) {
        return run.kind === 'workflow' ? '(workflow run)' : '(Aider edit)';
    }
    return first.length > max ? `${first.slice(0, max)}…` : first;
}

const STATUS_WORDS: Record<string, string> = {
    SUCCESS: 'goal reached',
    FAILURE: 'failed',
    CANCELLED: 'cancelled',
    COMPLETE: 'done',
    FAILED: 'failed',
};

/** How the run ended, in words ("unfinished": no outcome recorded, it runs or was interrupted). */
export function statusWords(run: RunRecord): string {
    return run.status === undefined ? 'unfinished' : (STATUS_WORDS[run.status] ?? run.status.toLowerCase());
}

/**
 * What a state of the run's icon is: passed, failed, cancelled, undone or unfinished; an
 * isolated run's while it is not on the user's files: running, ready, discarded or kept.
 */
export type RunState = 'passed' | 'failed' | 'cancelled' | 'undone' | 'unfinished' | 'running' | 'ready' | 'discarded' | 'kept';

export function runState(run: RunRecord): RunState {
    switch (run.state) {
        case 'running':
        case 'ready':
        case 'discarded':
        case 'kept':
            return run.state;
        default:
            break;
    }
    if (isUndone(run)) {
        return 'undone';
    }
    switch (run.status) {
        case 'SUCCESS':
        case 'COMPLETE':
            return 'passed';
        case 'FAILURE':
        case 'FAILED':
            return 'failed';
        case 'CANCELLED':
            return 'cancelled';
        default:
            return 'unfinished';
    }
}

function plural(count: number, word: string): string {
    return `${String(count)} ${word}${count === 1 ? '' : 's'}`;
}

/** "3 min ago", "2 h ago", "5 d ago" (`now` in ms). */
export function ago(seconds: number, now: number): string {
    const minutes = Math.max(0, Math.floor((now / 1000 - seconds) / 60));
    if (minutes < 1) {
        return 'just now';
    }
    if (minutes < 60) {
        return `${String(minutes)} min ago`;
    }
    const hours = Math.round(minutes / 60);
    return hours < 48 ? `${String(hours)} h ago` : `${String(Math.round(hours / 24))} d ago`;
}

/** The spend's headline: the total before its breakdown ("1500 tokens · $0.0100"). */
function spendHeadline(spend: string): string {
    return spend.split(' (')[0] ?? spend;
}

/** A codicon and its theme color. */
export interface Icon {
    id: string;
    color?: string;
}

/** Each state's icon (the Runs view's runs and iterations). */
export const STATE_ICONS: Record<RunState, Icon> = {
    passed: { id: 'pass', color: 'testing.iconPassed' },
    failed: { id: 'error', color: 'testing.iconFailed' },
    cancelled: { id: 'circle-slash' },
    undone: { id: 'discard' },
    unfinished: { id: 'circle-outline' }, // still running, or interrupted: no outcome recorded
    running: { id: 'loading~spin' },
    // a ready run waits for the user: filled, blue (the description may be cut off, the icon shows)
    ready: { id: 'pass-filled', color: 'charts.blue' },
    discarded: { id: 'trash' },
    kept: { id: 'git-branch' },
};

/** A ready run whose goal was not reached: still ready (blue), but no check mark. */
export const READY_NOT_REACHED: Icon = { id: 'circle-large-filled', color: 'charts.blue' };

/** The attempt the tests chose: a star (yellow while it waits to be applied). */
const WINNER: Icon = { id: 'star-full', color: 'charts.yellow' };

/** The run's icon: its state's; a ready run's says whether it reached its goal; the winner of a group, a star. */
export function runIcon(run: RunRecord): Icon {
    const state = runState(run);
    if (run.won && state !== 'undone' && state !== 'discarded') {
        return state === 'ready' ? WINNER : { id: WINNER.id };
    }
    if (state === 'ready' && run.status !== 'SUCCESS') {
        return READY_NOT_REACHED;
    }
    return STATE_ICONS[state];
}

/** Taken back by an undo (an older server says so by `undone` alone). */
export function isUndone(run: RunRecord): boolean {
    return run.undone !== undefined || run.state === 'undone';
}

/** How an isolated run stands, first in its line: "running in a worktree", "ready to apply", "kept on branch aider/x"; '' once applied. */
export function isolationWords(run: RunRecord): string {
    if (run.isolation !== 'worktree') {
        return '';
    }
    switch (run.state) {
        case 'running':
            return 'running in a worktree';
        case 'ready':
            return 'ready to apply';
        case 'discarded':
            return 'discarded';
        case 'kept':
            return run.branch === undefined ? 'kept' : `kept on branch ${run.branch}`;
        default:
            return '';
    }
}

/**
 * The line beside the run's label, where the run stands first (the side bar cuts the end):
 * "undone · goal reached · 2 iterations · 1500 tokens · $0.01 · 3 min ago", "ready to apply · …",
 * the attempt the tests chose "winner · ready to apply · …".
 */
export function runDescription(run: RunRecord, now: number): string {
    const parts: string[] = run.won ? ['winner'] : [];
    const isolated = isolationWords(run);
    if (isolated) {
        parts.push(isolated);
    }
    if (isUndone(run)) {
        parts.push('undone');
    }
    if (run.state !== 'running') {
        parts.push(statusWords(run));
    }
    if (run.iterations !== undefined) {
        parts.push(plural(run.iterations, 'iteration'));
    }
    if (run.spend) {
        parts.push(spendHeadline(run.spend));
    }
    parts.push(ago(run.created, now));
    return parts.join(' · ');
}

function localTime(seconds: number): string {
    const date = new Date(seconds * 1000);
    const pad = (value: number): string => String(value).padStart(2, '0');
    return `${String(date.getFullYear())}-${pad(date.getMonth() + 1)}-${pad(date.getDate())} ${pad(date.getHours())}:${pad(date.getMinutes())}`;
}

/** Everything the history knows of the run, one fact a line (the item's tooltip). */
export function runTooltip(run: RunRecord): string {
    const lines = [
        goalOf(run),
        '',
        `${run.kind === 'workflow' ? 'Workflow run' : 'Aider edit'}, ${localTime(run.created)}: ${statusWords(run)}`,
    ];
    if (run.iterations !== undefined) {
        lines.push(plural(run.iterations, 'iteration'));
    }
    if (run.note) {
        lines.push(run.note);
    }
    const isolated = isolatedTooltip(run);
    if (isolated) {
        lines.push(isolated);
    }
    lines.push(run.files.length > 0 ? `Changed ${run.files.join(', ')}` : 'Changed no file');
    if (run.spend) {
        lines.push(`Spent ${run.spend}`);
    }
    if (run.durationS !== undefined) {
        lines.push(`Took ${String(Math.round(run.durationS))} s`);
    }
    if (run.undone !== undefined) {
        lines.push(`Undone ${localTime(run.undone)}`);
    }
    lines.push(`Run id ${run.id}`);
    return lines.join('\n');
}

/** What the tooltip says of an isolated run: where its change is and what the user can do with it. */
function isolatedTooltip(run: RunRecord): string {
    if (run.isolation !== 'worktree') {
        return '';
    }
    const where = run.branch === undefined ? 'a copy of the folder' : `a worktree on branch ${run.branch}`;
    switch (run.state) {
        case 'running':
            return `Running in ${where}: your files are not touched`;
        case 'ready':
            return `Ready in ${where}: Apply lays its change on your files; Discard drops it${run.branch === undefined ? '' : '; Keep as Branch commits it there'}`;
        case 'discarded':
            return 'Discarded: its change was thrown away, your files untouched';
        case 'kept':
            return `Kept: committed to ${run.branch ?? 'its branch'}, your files untouched`;
        default:
            return `Ran in ${where}, then applied to your files`;
    }
}

/**
 * The run item's contextValue, which package.json's menus read: `aiderRun.<kind>` for a run on
 * the user's files (Undo, Show Diff), `.undone` once taken back (Show Diff, no Undo); an
 * isolated run's state (`.running`: nothing to show yet; `.ready`: Apply, Discard, Show Diff,
 * and `.ready.git` Keep as Branch too; `.discarded`, `.kept`: its tree is gone, no diff).
 */
export function runContextValue(run: RunRecord): string {
    const base = `aiderRun.${run.kind === 'workflow' ? 'workflow' : 'edit'}`;
    switch (run.state) {
        case 'running':
        case 'discarded':
        case 'kept':
            return `${base}.${run.state}`;
        case 'ready':
            return `${base}.ready${run.branch === undefined ? '' : '.git'}`;
        default:
            return isUndone(run) ? `${base}.undone` : base;
    }
}

/** Whether the run's diff can be shown: on the user's files (applied, undone) or ready in its worktree. */
export function hasDiff(run: RunRecord): boolean {
    return run.state !== 'running' && run.state !== 'discarded' && run.state !== 'kept';
}

/** A finding's leaf: "calculator.py:12" (the file alone when it is about the whole file). */
export function findingLabel(finding: RunFinding): string {
    return finding.line > 0 ? `${finding.path}:${String(finding.line)}` : finding.path;
}

/** Its tooltip: where, what said it, and the whole message. */
export function findingTooltip(finding: RunFinding): string {
    const at = finding.line > 0 ? `${finding.path}, line ${String(finding.line)}${finding.column > 0 ? `, column ${String(finding.column)}` : ''}` : finding.path;
    return `${at} (${finding.source}, ${finding.severity})\n\n${finding.message}`;
}

/** What an iteration's edit did: "changed calc.py", "changed a.py, created b.py", "changed nothing". */
export function editWords(step: RunStep): string {
    const edit = step.edit;
    if (edit === undefined) {
        return 'the edit did not finish';
    }
    const words = [
        ...(edit.changedFiles.length > 0 ? [`changed ${edit.changedFiles.join(', ')}`] : []),
        ...(edit.createdFiles.length > 0 ? [`created ${edit.createdFiles.join(', ')}`] : []),
    ];
    return words.join(', ') || 'changed nothing';
}

/** How the deciding test run ended: the server's words ("the tests fail (1 failed)"), else "tests pass", "tests fail (exit code 2)", "tests timed out". */
export function testWords(test: StepTestRun): string {
    if (test.outcome !== undefined) {
        return test.outcome; // the server's one wording (an older server's history has none)
    }
    if (test.timedOut) {
        return 'tests timed out';
    }
    if (test.exitCode === 0) {
        return 'tests pass';
    }
    if (test.failed !== undefined && test.failed > 0) {
        return `tests fail (${String(test.failed)} failed)`;
    }
    return test.exitCode === undefined ? 'tests fail' : `tests fail (exit code ${String(test.exitCode)})`;
}

/** The line beside "Iteration N": "changed calc.py · tests fail (1 failed) · analysis: RETRY" (· "your note" when its edit carried one). */
export function stepDescription(step: RunStep): string {
    const parts = [editWords(step), step.test === undefined ? 'no test run' : testWords(step.test)];
    if (step.analysis !== undefined) {
        parts.push(`analysis: ${step.analysis.verdict}`);
    }
    if (step.notes.length > 0) {
        parts.push(step.notes.length === 1 ? 'your note' : `${String(step.notes.length)} notes of yours`);
    }
    return parts.join(' · ');
}

/** An iteration's icon: passed (its tests passed), failed (they failed, or the edit changed nothing), unfinished (cancelled in its edit). */
export function stepState(step: RunStep): RunState {
    if (step.test !== undefined) {
        return step.test.exitCode === 0 && !step.test.timedOut ? 'passed' : 'failed';
    }
    return step.edit === undefined ? 'unfinished' : 'failed';
}

/** The iteration's tooltip: what its edit did (or why it changed nothing), then its test run and analysis in a line each. */
export function stepTooltip(step: RunStep): string {
    const lines = [`Iteration ${String(step.iteration)}`, `Edit: ${editWords(step)}`];
    if (step.edit?.error !== undefined) {
        lines.push(step.edit.error);
    }
    lines.push(step.test === undefined ? 'No test run' : `Test run: ${testWords(step.test)}`);
    if (step.analysis !== undefined) {
        lines.push(`Analysis: ${step.analysis.verdict}`);
    }
    lines.push(...step.notes.map((note) => `Your note: ${note}`));
    return lines.join('\n');
}

/** The test run's leaf: "Tests: 1 failed", "Tests pass", "Tests fail (exit code 2)". */
export function testLabel(test: StepTestRun): string {
    const words = testWords(test);
    if (test.failed !== undefined && test.failed > 0 && !test.timedOut) {
        return `Tests: ${String(test.failed)} failed`;
    }
    return words.charAt(0).toUpperCase() + words.slice(1);
}

/** Everything the history keeps of the test run: the command, which tests, how it ended, the failing tests. */
export function testTooltip(test: StepTestRun): string {
    const lines = [`$ ${test.command}`, test.scope === 'failing' ? 'Only the tests that failed before' : 'The whole suite'];
    lines.push(test.timedOut ? 'Timed out' : test.exitCode === undefined ? 'No exit code' : `Exit code ${String(test.exitCode)}`);
    if (test.summary) {
        lines.push(test.summary);
    }
    if (test.failing.length > 0) {
        lines.push('', 'Failing:', ...test.failing.map((id) => `  ${id}`));
        const more = (test.failed ?? 0) - test.failing.length;
        if (more > 0) {
            lines.push(`  … and ${String(more)} more`);
        }
    }
    return lines.join('\n');
}

/** The analysis's leaf: its first line beside the verdict; the tooltip has what the history kept of it. */
export function analysisTooltip(analysis: StepAnalysis): string {
    const lines = [`Analysis: ${analysis.verdict}`, '', analysis.message];
    if (analysis.overruled !== undefined) {
        lines.push('', `Not followed: ${analysis.overruled}`);
    }
    return lines.join('\n');
}
