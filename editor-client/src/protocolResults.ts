/**
 * The results the server answers, as this extension reads them: the TaskResult envelope and the
 * `notes` of each command whose notes the extension reads, in the server's own field names
 * (snake_case, as on the wire). Each interface is named after the server's pydantic model it
 * mirrors; `RESULT_MODELS` lists them under those names and test/server.test.ts compares each
 * with the server's JSON schema (property names, required or not), so a field renamed or added
 * in a server model fails `npm test`. Fields the extension does not read are declared all the
 * same (typed `unknown`): the check is of the whole model.
 *
 * Some notes are built by hand on the server (results.py, tools/context.py), not dumped from a
 * model: their tables (`*_NOTES`) are held to a real answer in server.test.ts instead.
 */
import type { TaskResult } from './protocol';
import { bool, list, num, object, oneOf, opaque, optional, record, required, str, type Fields } from './wire';

// --- the envelope (server models/envelope.py) ---

export type TaskStatus = 'COMPLETE' | 'CONTINUATION' | 'FAILED';

/** TaskResult: what every command answers (`parsedContent` is the wire's name of `parsed_content`). */
export interface TaskResultWire {
    status: TaskStatus;
    content?: string;
    notes?: Record<string, unknown>;
    parsedContent?: unknown;
}

/** TaskError: `notes.error` of a FAILED result. */
export interface TaskError {
    type?: string;
    /** An ErrorReason value: `cancelled`, `configuration_error`, `max_retries_reached`, … */
    reason: string;
    message: string;
}

const TASK_RESULT: Fields<TaskResultWire> = {
    status: required(oneOf<TaskStatus>('COMPLETE', 'CONTINUATION', 'FAILED')),
    content: optional(str),
    notes: optional(record),
    parsedContent: optional(opaque),
};

const TASK_ERROR: Fields<TaskError> = { type: optional(str), reason: required(str), message: required(str) };

// --- a workflow run (server models/runs.py, models/history.py) ---

/** DecidingRun: the test run that decided an iteration (an iteration's `test`). */
export interface DecidingRun {
    command: string;
    /** "whole", "failing" or "rest" (SuiteScope). */
    scope: string;
    exit_code?: number;
    timed_out?: boolean;
    duration_s?: number;
    stdout?: string;
    stderr?: string;
    /** The runner's own last line ("3 passed in 0.02s", "OK"), as the server read it. */
    summary?: string;
    /** How it ended in the server's one wording ("the tests fail (1 failed)"): shown as it is. */
    outcome?: string;
}

/** WorkflowIteration: one edit → test → analysis round of a run's history. */
export interface WorkflowIteration {
    iteration: number;
    prompt: string;
    files: string[];
    aider?: unknown;
    test?: DecidingRun;
    test_runs?: unknown;
    findings?: unknown;
    analysis?: unknown;
    overruled?: string;
    judge?: unknown;
    /** The notes the user added while the run was under way, which this iteration's edit carried. */
    notes?: string[];
}

/** WorkflowResult: a run's outcome and history (`notes.workflow` of aider-lsp.workflow.run). */
export interface WorkflowResult {
    /** SUCCESS or FAILURE (WorkflowStatus). */
    status: string;
    content: string;
    reason?: string;
    details?: string;
    plan?: unknown;
    final_aider_result?: unknown;
    analysis_result?: unknown;
    iterations?: WorkflowIteration[];
    usage?: unknown;
    judge?: unknown;
    plan_problem?: string;
}

/** RunChanges: what a run changed against the files before it, and the checkpoint that undoes it. */
export interface RunChanges {
    changed_files?: string[];
    created_files?: string[];
    /** The changed files' unified diff (common/diff.ts reads it). */
    diff?: string;
    checkpoint_id?: string;
}

const DECIDING_RUN: Fields<DecidingRun> = {
    command: required(str),
    scope: required(str),
    exit_code: optional(num),
    timed_out: optional(bool),
    duration_s: optional(num),
    stdout: optional(str),
    stderr: optional(str),
    summary: optional(str),
    outcome: optional(str),
};

const WORKFLOW_ITERATION: Fields<WorkflowIteration> = {
    iteration: required(num),
    prompt: required(str),
    files: required(list(str)),
    aider: optional(opaque),
    test: optional(object(DECIDING_RUN)),
    test_runs: optional(opaque),
    findings: optional(opaque),
    analysis: optional(opaque),
    overruled: optional(str),
    judge: optional(opaque),
    notes: optional(list(str)),
};

const WORKFLOW_RESULT: Fields<WorkflowResult> = {
    status: required(str),
    content: required(str),
    reason: optional(str),
    details: optional(str),
    plan: optional(opaque),
    final_aider_result: optional(opaque),
    analysis_result: optional(opaque),
    iterations: optional(list(object(WORKFLOW_ITERATION))),
    usage: optional(opaque),
    judge: optional(opaque),
    plan_problem: optional(str),
};

const RUN_CHANGES: Fields<RunChanges> = {
    changed_files: optional(list(str)),
    created_files: optional(list(str)),
    diff: optional(str),
    checkpoint_id: optional(str),
};

// --- the run history (server models/history.py) ---

/** Isolation: where a workflow run edits, the user's files (`none`) or a worktree of its own. */
export const ISOLATIONS = ['none', 'worktree'] as const;
export type Isolation = (typeof ISOLATIONS)[number];

/** RunState: where a run of the history stands (an isolated one: running, then ready until the user acts). */
export const RUN_STATES = ['running', 'ready', 'applied', 'discarded', 'kept', 'undone'] as const;
export type RunStateName = (typeof RUN_STATES)[number];

/** Finding (server models/commands.py): one problem in a file; `line` and `column` 1-based, 0 = the whole file. */
export interface Finding {
    path: string;
    line?: number;
    column?: number;
    message: string;
    /** "error", "warning", "information" or "hint". */
    severity?: string;
    /** The tool that said it: pytest, unittest, ruff, analysis, … */
    source?: string;
}

const isolation = oneOf<Isolation>(...ISOLATIONS);
const runStateName = oneOf<RunStateName>(...RUN_STATES);

const FINDING: Fields<Finding> = {
    path: required(str),
    line: optional(num),
    column: optional(num),
    message: required(str),
    severity: optional(str),
    source: optional(str),
};

/** StepEdit: an iteration's Aider edit as the history keeps it. */
export interface StepEdit {
    changed_files?: string[];
    created_files?: string[];
    error?: string;
}

/** StepTestRun: the test run that decided an iteration, as the history keeps it. */
export interface StepTestRun {
    command: string;
    scope?: string;
    exit_code?: number;
    timed_out?: boolean;
    summary?: string;
    failed?: number;
    failing?: string[];
    /** How it ended in the server's one wording ("the tests fail (1 failed)"): shown as it is. */
    outcome?: string;
}

/** StepAnalysis: an iteration's verdict and the start of its message. */
export interface StepAnalysis {
    verdict: string;
    message?: string;
    overruled?: string;
}

/** RunStep: one iteration of a workflow run in the history. */
export interface RunStep {
    iteration: number;
    edit?: StepEdit;
    test?: StepTestRun;
    analysis?: StepAnalysis;
    /** The notes the user added while the run was under way, which this iteration's edit carried. */
    notes?: string[];
}

/** RunRecord: one run or edit of the history (aider-lsp.history.list). */
export interface RunRecord {
    id: string;
    created: number;
    kind: string;
    label: string;
    goal?: string;
    status?: string;
    iterations?: number;
    files?: string[];
    spend?: string;
    duration_s?: number;
    undone?: number;
    steps?: RunStep[];
    note?: string;
    /** Where the run stands (absent from an older server: `applied`). */
    state?: RunStateName;
    isolation?: Isolation;
    /** An isolated run's git branch (kept: where its commit is); absent in a folder without git. */
    branch?: string;
    /** An isolated run's last test failures: shown on the run, never in the Problems panel. */
    findings?: Finding[];
    /** An attempt of a group (several attempts at one goal): its siblings share it. */
    group_id?: string;
    /** The attempt the tests chose in its group. */
    won?: boolean;
    /** An attempt's number in its group (1-based). */
    attempt?: number;
    /** The Aider model an attempt edited with (absent: the settings'). */
    aider_model?: string;
}

/** RunFileDiff: one file of a run, its text before and after (aider-lsp.history.diff). */
export interface RunFileDiff {
    path: string;
    before?: string;
    after?: string;
    existed_before: boolean;
    exists_after: boolean;
    binary?: boolean;
}

/** RunDiff: the notes of aider-lsp.history.diff, the run and its files. */
export interface RunDiff {
    run: RunRecord;
    files?: RunFileDiff[];
}

const STEP_EDIT: Fields<StepEdit> = { changed_files: optional(list(str)), created_files: optional(list(str)), error: optional(str) };

const STEP_TEST_RUN: Fields<StepTestRun> = {
    command: required(str),
    scope: optional(str),
    exit_code: optional(num),
    timed_out: optional(bool),
    summary: optional(str),
    failed: optional(num),
    failing: optional(list(str)),
    outcome: optional(str),
};

const STEP_ANALYSIS: Fields<StepAnalysis> = { verdict: required(str), message: optional(str), overruled: optional(str) };

const RUN_STEP: Fields<RunStep> = {
    iteration: required(num),
    edit: optional(object(STEP_EDIT)),
    test: optional(object(STEP_TEST_RUN)),
    analysis: optional(object(STEP_ANALYSIS)),
    notes: optional(list(str)),
};

const RUN_RECORD: Fields<RunRecord> = {
    id: required(str),
    created: required(num),
    kind: required(str),
    label: required(str),
    goal: optional(str),
    status: optional(str),
    iterations: optional(num),
    files: optional(list(str)),
    spend: optional(str),
    duration_s: optional(num),
    undone: optional(num),
    steps: optional(list(object(RUN_STEP))),
    note: optional(str),
    state: optional(runStateName),
    isolation: optional(isolation),
    branch: optional(str),
    findings: optional(list(object(FINDING))),
    group_id: optional(str),
    won: optional(bool),
    attempt: optional(num),
    aider_model: optional(str),
};

const RUN_FILE_DIFF: Fields<RunFileDiff> = {
    path: required(str),
    before: optional(str),
    after: optional(str),
    existed_before: required(bool),
    exists_after: required(bool),
    binary: optional(bool),
};

const RUN_DIFF: Fields<RunDiff> = { run: required(object(RUN_RECORD)), files: optional(list(object(RUN_FILE_DIFF))) };

// --- undo (server models/history.py) ---

/** SkippedFile: a file an undo left alone; `kind` (a SkipReason) is what the extension decides on. */
export interface SkippedFile {
    path: string;
    /** The sentence a user reads; never parsed. */
    reason: string;
    /** "unsaved", "changed_since" or "unwritable". */
    kind?: string;
    /** Where the run's change and a later one overlap: [first, last] lines. */
    lines?: number[][];
}

/** RestoreReport: the notes of aider-lsp.workflow.undo. */
export interface RestoreReport {
    checkpoint?: string;
    label?: string;
    restored?: string[];
    deleted?: string[];
    skipped?: SkippedFile[];
}

const SKIPPED_FILE: Fields<SkippedFile> = { path: required(str), reason: required(str), kind: optional(str), lines: optional(list(list(num))) };

const RESTORE_REPORT: Fields<RestoreReport> = {
    checkpoint: optional(str),
    label: optional(str),
    restored: optional(list(str)),
    deleted: optional(list(str)),
    skipped: optional(list(object(SKIPPED_FILE))),
};

// --- isolated runs (server models/history.py) ---

/** IsolatedRun: an isolated run as its workflow answer names it. */
export interface IsolatedRun {
    run_id: string;
    state: RunStateName;
    findings?: Finding[];
}

/**
 * RunAction: the notes of aider-lsp.runs.apply, .discard and .keepBranch. An apply that meets a
 * file the user changed on the same lines (or left unsaved) writes nothing: `skipped` names them.
 */
export interface RunAction {
    run_id: string;
    state: RunStateName;
    label?: string;
    written?: string[];
    deleted?: string[];
    skipped?: SkippedFile[];
    branch?: string;
    commit?: string;
    /** The applied run in the history (undo takes it back). */
    checkpoint_id?: string;
    refused?: TaskError;
    /** An attempt applied: its ready siblings, discarded in the same step. */
    discarded?: string[];
}

const ISOLATED_RUN: Fields<IsolatedRun> = { run_id: required(str), state: required(runStateName), findings: optional(list(object(FINDING))) };

const RUN_ACTION: Fields<RunAction> = {
    run_id: required(str),
    state: required(runStateName),
    label: optional(str),
    written: optional(list(str)),
    deleted: optional(list(str)),
    skipped: optional(list(object(SKIPPED_FILE))),
    branch: optional(str),
    commit: optional(str),
    checkpoint_id: optional(str),
    refused: optional(object(TASK_ERROR)),
    discarded: optional(list(str)),
};

// --- several attempts at one goal, the tests choosing (server models/history.py) ---

/** Choose: how the tests choose among the attempts (the first green one, or all compared). */
export const CHOOSES = ['first-green', 'compare'] as const;
export type Choose = (typeof CHOOSES)[number];

/** Attempt: one attempt of a group, how it ended and what it cost. */
export interface Attempt {
    run_id: string;
    /** 1-based, in the order they were started. */
    number: number;
    /** The model Aider edited with (absent: the settings'). */
    aider_model?: string;
    /** A plan ran beside its first edit. */
    planned?: boolean;
    state: RunStateName;
    /** SUCCESS / FAILURE as the run ended; absent: stopped before its end. */
    status?: string;
    /** Its whole suite passed and the judge kept it. */
    green?: boolean;
    /** How its last test run ended, in the server's one wording. */
    tests?: string;
    lines_changed?: number;
    tokens?: number;
    cost?: number;
    seconds?: number;
    /** Why it was stopped before its end (another attempt won first). */
    stopped?: string;
}

/** AttemptGroup: a group's answer (`notes.group` of aider-lsp.workflow.run with attempts): each attempt, the winner and why. */
export interface AttemptGroup {
    group_id: string;
    choose: Choose;
    attempts?: Attempt[];
    /** The winner's run id; absent: no attempt passed the tests (`reason` says so). */
    winner?: string;
    reason?: string;
}

const choose = oneOf<Choose>(...CHOOSES);

const ATTEMPT: Fields<Attempt> = {
    run_id: required(str),
    number: required(num),
    aider_model: optional(str),
    planned: optional(bool),
    state: required(runStateName),
    status: optional(str),
    green: optional(bool),
    tests: optional(str),
    lines_changed: optional(num),
    tokens: optional(num),
    cost: optional(num),
    seconds: optional(num),
    stopped: optional(str),
};

const ATTEMPT_GROUP: Fields<AttemptGroup> = {
    group_id: required(str),
    choose: required(choose),
    attempts: optional(list(object(ATTEMPT))),
    winner: optional(str),
    reason: optional(str),
};

// --- context (server models/context.py) ---

/** MatchItem: one relevant file of aider-lsp.system.getContext (`notes.matches`). */
export interface MatchItem {
    id: string;
    content: string;
    relevance_score: number;
    content_type?: string;
    source_path?: string;
    metadata?: unknown;
}

const MATCH_ITEM: Fields<MatchItem> = {
    id: required(str),
    content: required(str),
    relevance_score: required(num),
    content_type: optional(str),
    source_path: optional(str),
    metadata: optional(opaque),
};

/** The enumerations the declared types name, under the names of the server's enums (the protocol test compares their values). */
export const RESULT_ENUMS = { Isolation: ISOLATIONS, RunState: RUN_STATES, Choose: CHOOSES } as const;

/** The declared result types under the names of the server's models (aider_lsp.models), for the protocol test. */
export const RESULT_MODELS = {
    TaskResult: TASK_RESULT,
    TaskError: TASK_ERROR,
    WorkflowResult: WORKFLOW_RESULT,
    WorkflowIteration: WORKFLOW_ITERATION,
    DecidingRun: DECIDING_RUN,
    RunChanges: RUN_CHANGES,
    RunRecord: RUN_RECORD,
    RunStep: RUN_STEP,
    StepEdit: STEP_EDIT,
    StepTestRun: STEP_TEST_RUN,
    StepAnalysis: STEP_ANALYSIS,
    RunFileDiff: RUN_FILE_DIFF,
    RunDiff: RUN_DIFF,
    SkippedFile: SKIPPED_FILE,
    RestoreReport: RESTORE_REPORT,
    Finding: FINDING,
    IsolatedRun: ISOLATED_RUN,
    RunAction: RUN_ACTION,
    Attempt: ATTEMPT,
    AttemptGroup: ATTEMPT_GROUP,
    MatchItem: MATCH_ITEM,
} as const;

// --- notes built by hand on the server: no model to check them against ---

/** `notes.retest` of "Fix with Aider" on a failing test (results.py fix_result). */
export interface Retest {
    command: string;
    exit_code?: number;
    duration_s?: number;
    summary?: string;
}

/** The notes of an edit, a test run or a workflow run: what it changed, and what a re-run of the failing tests said. */
export interface ChangeNotes extends RunChanges {
    retest?: Retest;
}

/**
 * The notes of aider-lsp.workflow.run (results.py workflow_result): its changes and its history;
 * an isolated run adds its id, its state (ready, or discarded) and its last test failures, and
 * its changes are against the files it started from (they wait in its worktree). Several
 * attempts (results.py group_result) answer `group` and `run_id`, the winner's, only.
 */
export interface WorkflowRunNotes extends RunChanges {
    workflow?: WorkflowResult;
    run_id?: string;
    state?: RunStateName;
    isolation?: Isolation;
    findings?: Finding[];
    group?: AttemptGroup;
}

/** The notes of aider-lsp.history.list (results.py history_result). */
export interface HistoryNotes {
    runs?: RunRecord[];
}

/** The notes of aider-lsp.system.getContext (tools/context.py): scored matches, else the paths. */
export interface ContextNotes {
    file_paths?: string[];
    context_summary?: string;
    matches?: MatchItem[];
}

/** The notes of an interactive Aider turn: the chat to continue (null: the server keeps none). */
export interface InteractiveNotes {
    session_id?: string;
}

/** The notes of a test run refused for want of a confirmed test command (suite/choose.py). */
export interface TestCommandNotes {
    detected_test_command?: string;
    detected_by?: string;
}

const RETEST: Fields<Retest> = { command: required(str), exit_code: optional(num), duration_s: optional(num), summary: optional(str) };

const ISOLATED_NOTES = {
    run_id: optional(str),
    state: optional(runStateName),
    isolation: optional(isolation),
    findings: optional(list(object(FINDING))),
} satisfies Fields<Omit<WorkflowRunNotes, keyof RunChanges | 'workflow' | 'group'>>;

/** The hand-built notes' tables, by command (server.test.ts holds the ones it runs to a real answer). */
export const NOTES = {
    change: { ...RUN_CHANGES, retest: optional(object(RETEST)) } satisfies Fields<ChangeNotes>,
    workflowRun: { ...RUN_CHANGES, workflow: optional(object(WORKFLOW_RESULT)), ...ISOLATED_NOTES, group: optional(object(ATTEMPT_GROUP)) } satisfies Fields<WorkflowRunNotes>,
    /** The notes of several attempts' answer: the group, and the winner's run id. */
    attempts: { group: optional(object(ATTEMPT_GROUP)), run_id: optional(str) } satisfies Fields<Pick<WorkflowRunNotes, 'group' | 'run_id'>>,
    /** The notes only an isolated run's answer has. */
    isolatedRun: ISOLATED_NOTES,
    history: { runs: optional(list(object(RUN_RECORD))) } satisfies Fields<HistoryNotes>,
    context: { file_paths: optional(list(str)), context_summary: optional(str), matches: optional(list(object(MATCH_ITEM))) } satisfies Fields<ContextNotes>,
    interactive: { session_id: optional(str) } satisfies Fields<InteractiveNotes>,
    testCommand: { detected_test_command: optional(str), detected_by: optional(str) } satisfies Fields<TestCommandNotes>,
} as const;

export const decodeTaskResult = object(TASK_RESULT);
export const decodeTaskError = object(TASK_ERROR);

/** Reads a TaskResult's notes with a notes table: every field optional, so a wrong one is only left out. */
function notesReader<T>(fields: Fields<T>): (result: TaskResult) => Partial<T> {
    const decode = object(fields);
    return (result) => decode(result.notes) ?? {};
}

export const changeNotes = notesReader<ChangeNotes>(NOTES.change);
export const workflowRunNotes = notesReader<WorkflowRunNotes>(NOTES.workflowRun);
export const historyNotes = notesReader<HistoryNotes>(NOTES.history);
export const contextNotes = notesReader<ContextNotes>(NOTES.context);
export const interactiveNotes = notesReader<InteractiveNotes>(NOTES.interactive);
export const testCommandNotes = notesReader<TestCommandNotes>(NOTES.testCommand);
export const restoreReport = notesReader<RestoreReport>(RESTORE_REPORT);
export const runAction = notesReader<RunAction>(RUN_ACTION);

const decodeRunDiff = object(RUN_DIFF);

/** The notes of aider-lsp.history.diff, or undefined when they are not a RunDiff. */
export function runDiff(result: TaskResult): RunDiff | undefined {
    return decodeRunDiff(result.notes);
}
