/**
 * The aider-lsp server's protocol as this extension uses it: command ids, their arguments and
 * the TaskResult every command answers. Nothing typed `any` crosses this boundary: answers are
 * checked with `asTaskResult`, and their notes read with protocolResults.ts's readers, which
 * check each field against the declared result types (themselves compared with the server's
 * result models by test/server.test.ts). The argument types mirror the server's argument models:
 * test/server.test.ts compares them with the server's own JSON schemas (property names,
 * required or not), so they cannot drift apart.
 */

import { contextNotes, decodeTaskError, decodeTaskResult, type Choose, type Isolation, type TaskError, type TaskStatus } from './protocolResults';

/** Server command ids (workspace/executeCommand). */
export const ServerCommand = {
    readFiles: 'aider-lsp.system.readFiles',
    listTools: 'aider-lsp.tools.list',
    getContext: 'aider-lsp.system.getContext',
    primeContext: 'aider-lsp.handler.primeContext',
    reset: 'aider-lsp.handler.reset',
    runTests: 'aider-lsp.system.runTests',
    automatic: 'aider-lsp.aider.automatic',
    interactive: 'aider-lsp.aider.interactive',
    listModels: 'aider-lsp.aider.listModels',
    undo: 'aider-lsp.workflow.undo',
    historyList: 'aider-lsp.history.list',
    historyDiff: 'aider-lsp.history.diff',
    workflowRun: 'aider-lsp.workflow.run',
    // a note for a run under way: its next edit carries it (the run goes on)
    steer: 'aider-lsp.workflow.steer',
    clearDiagnostics: 'aider-lsp.diagnostics.clear',
    // an isolated run that is ready (its change waits in its worktree): take it, drop it, or keep it
    applyRun: 'aider-lsp.runs.apply',
    discardRun: 'aider-lsp.runs.discard',
    keepRunBranch: 'aider-lsp.runs.keepBranch',
    // a worktree made ready while the user types the goal of a run in one (it then starts at once)
    prepareRuns: 'aider-lsp.runs.prepare',
} as const;
export type ServerCommandId = (typeof ServerCommand)[keyof typeof ServerCommand];

/** Commands this extension registers itself (palette, menus, code actions). */
export const ClientCommand = {
    edit: 'aider-lsp.client.edit',
    editSelection: 'aider-lsp.client.editSelection',
    runWorkflow: 'aider-lsp.client.runWorkflow',
    runWorkflowInWorktree: 'aider-lsp.client.runWorkflowInWorktree',
    runWorkflowAttempts: 'aider-lsp.client.runWorkflowAttempts',
    addNote: 'aider-lsp.client.addNote',
    undo: 'aider-lsp.client.undo',
    findFiles: 'aider-lsp.client.findFiles',
    interactive: 'aider-lsp.client.interactive',
    clearDiagnostics: 'aider-lsp.client.clearDiagnostics',
    runTests: 'aider-lsp.client.runTests',
    setApiKey: 'aider-lsp.client.setApiKey',
    restartServer: 'aider-lsp.client.restartServer',
    showLog: 'aider-lsp.client.showLog',
    setupServer: 'aider-lsp.client.setupServer',
    showLastDiff: 'aider-lsp.client.showLastDiff',
    selectModel: 'aider-lsp.client.selectModel',
    // the Runs view (ui/runsView.ts): its title button and its items' actions
    refreshRuns: 'aider-lsp.client.runs.refresh',
    undoRun: 'aider-lsp.client.runs.undo',
    showRunDiff: 'aider-lsp.client.runs.showDiff',
    runAgain: 'aider-lsp.client.runs.runAgain',
    copyGoal: 'aider-lsp.client.runs.copyGoal',
    openRunFile: 'aider-lsp.client.runs.openFile',
    applyRun: 'aider-lsp.client.runs.apply',
    discardRun: 'aider-lsp.client.runs.discard',
    keepRunBranch: 'aider-lsp.client.runs.keepBranch',
    // a group of attempts: its winner applied (its siblings discarded with it)
    applyWinner: 'aider-lsp.client.runs.applyWinner',
    // two attempts of a group side by side: from an attempt (the other asked), from the group (both asked)
    compareAttempt: 'aider-lsp.client.runs.compareAttempt',
    compareAttempts: 'aider-lsp.client.runs.compareAttempts',
    // a running run (or group): a note its next edit carries
    addRunNote: 'aider-lsp.client.runs.addNote',
} as const;
export type ClientCommandId = (typeof ClientCommand)[keyof typeof ClientCommand];

export interface Position {
    line: number;
    character: number;
}

export interface Range {
    start: Position;
    end: Position;
}

/** The editor selection an edit is about (this extension always sends its range and text). */
export interface Selection {
    uri: string;
    range?: Range;
    text?: string;
}

interface AutomaticArgs {
    prompt: string;
    file_context?: string[];
    selection?: Selection;
    /** "Fix with Aider" on a failing test: re-run the tests that failed after the edit. */
    rerun_failing_tests?: boolean;
}

interface InteractiveArgs {
    prompt?: string;
    file_context?: string[];
    session_id?: string;
    end_session?: boolean;
}

interface GetContextArgs {
    query: string;
    history?: string;
    target_files?: string[];
    max_results?: number;
}

interface WorkflowRunArgs {
    goal: string;
    context?: string;
    test_command?: string;
    max_retries?: number;
    file_context?: string[];
    /** Ask for a plan (it runs beside the first edit and shapes the second). */
    plan?: boolean;
    /** Where the run edits: the user's files, or a worktree of its own (absent: the `isolation` setting). */
    isolation?: Isolation;
    /** Several attempts at the goal (1..8), each in a worktree of its own, the tests choosing (absent: the `attempts` setting). */
    attempts?: number;
    /** How the tests choose among the attempts (absent: the `chooseAttempt` setting). */
    choose?: Choose;
    /** The Aider models the attempts edit with, in turn (absent: the `attemptModels` setting). */
    aider_models?: string[];
    /** Absolute paths of image files shown to Aider's model with each edit (one that reads images). */
    images?: string[];
}

interface SteerArgs {
    /** The run under way: an isolated run's or a group's id; absent: the run in place under way. */
    run_id?: string;
    /** What the run's next edit should take into account. */
    note: string;
}

interface RunIdArgs {
    /** The isolated run (`notes.run_id` of its workflow.run answer, or `aider-lsp.history.list`). */
    run_id: string;
}

interface ApplyRunArgs extends RunIdArgs {
    /** Apply anyway: the run's version of files the user changed on the same lines wins (undo takes it back). */
    force?: boolean;
}

interface RunTestsArgs {
    command?: string;
}

interface HistoryDiffArgs {
    /** The run or edit (`aider-lsp.history.list`). */
    run_id: string;
    /** One workspace-relative file of the run; default every file it changed. */
    path?: string;
}

interface UndoArgs {
    /** The run or edit to undo (`aider-lsp.history.list`); default the last one. */
    run_id?: string;
    force?: boolean;
    /** Take back the run's change to these workspace-relative files only (its tests, say). */
    files?: string[];
}

/** The argument of the server's "Edit selection with Aider" code action. */
export interface EditSelectionArgs {
    uri: string;
    range: Range;
}

type EmptyArgs = Record<string, never>;

/** Each server command with the one object argument it takes. */
export interface CommandArgs {
    'aider-lsp.system.readFiles': { file_paths: string[] };
    'aider-lsp.tools.list': EmptyArgs;
    'aider-lsp.system.getContext': GetContextArgs;
    'aider-lsp.handler.primeContext': { query?: string; initial_files?: string[] };
    'aider-lsp.handler.reset': EmptyArgs;
    'aider-lsp.system.runTests': RunTestsArgs;
    'aider-lsp.aider.automatic': AutomaticArgs;
    'aider-lsp.aider.interactive': InteractiveArgs;
    'aider-lsp.aider.listModels': { substring?: string };
    'aider-lsp.workflow.undo': UndoArgs;
    'aider-lsp.history.list': EmptyArgs;
    'aider-lsp.history.diff': HistoryDiffArgs;
    'aider-lsp.workflow.run': WorkflowRunArgs;
    'aider-lsp.workflow.steer': SteerArgs;
    'aider-lsp.diagnostics.clear': EmptyArgs;
    'aider-lsp.runs.apply': ApplyRunArgs;
    'aider-lsp.runs.discard': RunIdArgs;
    'aider-lsp.runs.keepBranch': RunIdArgs;
    'aider-lsp.runs.prepare': EmptyArgs;
}

/**
 * Every command's argument may also carry `folder`: the URI of the workspace folder it runs in
 * (its relative paths are relative to that folder). The server takes it out before it checks the
 * argument against the command's model (server lsp/routing.py), so it is no command's property.
 */
export const FOLDER_FIELD = 'folder';

/** `arg` with the workspace folder it runs in, when there is one to name. */
export function withFolder(arg: object, folder: string | undefined): object {
    return folder === undefined ? arg : { ...arg, [FOLDER_FIELD]: folder };
}

/**
 * What every server command answers, its defaults filled in. `notes` stays `unknown`-valued:
 * read it with the notes readers of protocolResults.ts, which check each field's type.
 */
export interface TaskResult {
    status: TaskStatus;
    content: string;
    notes: Record<string, unknown>;
    parsedContent?: unknown;
}

/** The answer as a TaskResult (server models/envelope.py), or undefined when it does not have that shape. */
export function asTaskResult(value: unknown): TaskResult | undefined {
    const wire = decodeTaskResult(value);
    if (wire === undefined) {
        return undefined;
    }
    return { status: wire.status, content: wire.content ?? '', notes: wire.notes ?? {}, parsedContent: wire.parsedContent };
}

/** `notes.error` of a FAILED result, when present and well-formed. */
export function taskError(result: TaskResult): TaskError | undefined {
    return decodeTaskError(result.notes.error);
}

/** One relevant file of aider-lsp.system.getContext. */
interface ContextMatch {
    path: string;
    score?: number;
}

/** The files of a getContext answer: `notes.matches` with scores when present, else `notes.file_paths`. */
export function contextMatches(result: TaskResult): ContextMatch[] {
    const notes = contextNotes(result);
    const found = (notes.matches ?? []).map((match): ContextMatch => ({ path: match.source_path ?? match.id, score: match.relevance_score }));
    return found.length > 0 ? found : (notes.file_paths ?? []).map((path) => ({ path }));
}
