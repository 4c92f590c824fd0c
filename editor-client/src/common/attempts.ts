/**
 * Several attempts at one goal, the tests choosing (the server's run groups): the palette's
 * questions (how many, how the tests choose), the group's answer read, its message and buttons,
 * what applying an attempt did, and a note for a run under way (`aider-lsp.workflow.steer`).
 * Pure: every wording is tested without VS Code (test/attempts.test.ts).
 */
import { taskError, type CommandArgs, type TaskResult } from '../protocol';
import { CHOOSES, workflowRunNotes, type Choose, type RunAction, type RunStateName } from '../protocolResults';
import { quoted } from './isolation';

/** One attempt of a group's answer (the server's Attempt), its defaults filled in. */
export interface AttemptAnswer {
    runId: string;
    /** 1-based, in the order they were started. */
    number: number;
    /** The model Aider edited with (undefined: the settings'). */
    aiderModel?: string;
    planned: boolean;
    state: RunStateName;
    /** SUCCESS / FAILURE as it ended; undefined: stopped before its end. */
    status?: string;
    green: boolean;
    /** How its last test run ended, in the server's one wording ('' when none ran). */
    tests: string;
    linesChanged: number;
    tokens: number;
    cost: number;
    seconds: number;
    /** Why it was stopped before its end (another attempt won first). */
    stopped?: string;
}

/** A group's answer (`notes.group` of aider-lsp.workflow.run with attempts). */
export interface GroupAnswer {
    groupId: string;
    choose: Choose;
    attempts: AttemptAnswer[];
    /** The winner's run id; undefined: no attempt passed the tests. */
    winner?: string;
    /** Why the winner won, or why there is none. */
    reason: string;
}

/** The group of an `aider-lsp.workflow.run` answer; undefined for a single run (in place or isolated). */
export function attemptGroup(result: TaskResult): GroupAnswer | undefined {
    const group = workflowRunNotes(result).group;
    if (group === undefined) {
        return undefined;
    }
    const attempts = (group.attempts ?? []).map(
        (attempt): AttemptAnswer => ({
            runId: attempt.run_id,
            number: attempt.number,
            planned: attempt.planned === true,
            state: attempt.state,
            green: attempt.green === true,
            tests: attempt.tests ?? '',
            linesChanged: attempt.lines_changed ?? 0,
            tokens: attempt.tokens ?? 0,
            cost: attempt.cost ?? 0,
            seconds: attempt.seconds ?? 0,
            ...(attempt.aider_model === undefined ? {} : { aiderModel: attempt.aider_model }),
            ...(attempt.status === undefined ? {} : { status: attempt.status }),
            ...(attempt.stopped === undefined ? {} : { stopped: attempt.stopped }),
        }),
    );
    const winner = group.winner === undefined ? {} : { winner: group.winner };
    return { groupId: group.group_id, choose: group.choose, attempts, reason: group.reason ?? '', ...winner };
}

/** The winner of a group's answer, when there is one and it is among its attempts. */
export function winnerOf(group: GroupAnswer): AttemptAnswer | undefined {
    return group.winner === undefined ? undefined : group.attempts.find((attempt) => attempt.runId === group.winner);
}

// --- the palette's questions ---

/** The attempts a group may make (the server's bounds: 2 and more is several, 8 at most). */
export const MIN_ATTEMPTS = 2;
export const MAX_ATTEMPTS = 8;

/** The number pre-filled: the `attempts` setting when it asks for several, else 3. */
export function defaultAttempts(setting: unknown): number {
    return typeof setting === 'number' && Number.isInteger(setting) && setting >= MIN_ATTEMPTS && setting <= MAX_ATTEMPTS ? setting : 3;
}

/** The number typed, or what is wrong with it (the input box's validation message). */
export function attemptsTyped(text: string): number | string {
    const trimmed = text.trim();
    const count = /^\d+$/.test(trimmed) ? Number(trimmed) : Number.NaN;
    if (!Number.isInteger(count) || count < MIN_ATTEMPTS || count > MAX_ATTEMPTS) {
        return `A whole number from ${String(MIN_ATTEMPTS)} to ${String(MAX_ATTEMPTS)}: each attempt runs in a worktree of its own, with its own Aider server.`;
    }
    return count;
}

/** One way the tests choose, as the quick pick shows it. */
export interface ChooseItem {
    label: string;
    description: string;
    detail: string;
    choose: Choose;
}

const CHOOSE_WORDS: Record<Choose, Omit<ChooseItem, 'choose' | 'description'>> = {
    'first-green': {
        label: 'The first that passes the tests',
        detail: 'The first attempt whose whole suite passes wins; the others are stopped at once (their spend stops).',
    },
    compare: {
        label: 'Compare them all',
        detail: 'Every attempt finishes; then the ones that pass the tests are ranked: the smaller change first, then the lower cost.',
    },
};

/** The quick pick's items, the `chooseAttempt` setting's first (Enter takes it). */
export function chooseItems(setting: unknown): ChooseItem[] {
    const first = CHOOSES.find((choose) => choose === setting) ?? 'first-green';
    const ordered = [first, ...CHOOSES.filter((choose) => choose !== first)];
    return ordered.map((choose) => ({ ...CHOOSE_WORDS[choose], description: choose === first ? `${choose} (your setting)` : choose, choose }));
}

// --- the group's message ---

export const APPLY_WINNER = 'Apply the Winner';
export const SHOW_ATTEMPTS = 'Show Attempts';

export interface GroupMessage {
    severity: 'info' | 'warning';
    /** Without the "Aider: " every message starts with. */
    text: string;
    /** Apply the Winner when there is one ready, and Show Attempts. */
    buttons: string[];
}

/**
 * What the user is told when a group ends: the goal, then the server's sentence (the winner and
 * why, each attempt); Apply the Winner when one waits, Show Attempts always. No winner: a
 * warning (the attempts that are ready can still be applied from the Runs view).
 */
export function groupMessage(goal: string, result: TaskResult, group: GroupAnswer): GroupMessage {
    const said = result.content.trim() || (taskError(result)?.message ?? group.reason);
    const text = `${quoted(goal)}: ${said}`;
    const winner = winnerOf(group);
    if (winner !== undefined && winner.state === 'ready') {
        return { severity: 'info', text, buttons: [APPLY_WINNER, SHOW_ATTEMPTS] };
    }
    return { severity: winner === undefined ? 'warning' : 'info', text, buttons: [SHOW_ATTEMPTS] };
}

/** The progress notification's title: "Aider workflow “goal”: 3 attempts" (several may run at once: each names its goal). */
export function attemptsTitle(goal: string, count: number): string {
    return `Aider workflow ${quoted(goal, 40)}: ${String(count)} attempts`;
}

function listed(files: readonly string[]): string {
    return files.length <= 3 ? files.join(', ') : `${files.slice(0, 3).join(', ')} and ${String(files.length - 3)} more`;
}

/**
 * What applying an attempt did, when it discarded siblings: "Applied the winner of “goal”:
 * calculator.py. Its 2 other attempts were discarded (their worktrees removed)." Undefined when
 * it discarded none (the action is told as any apply).
 */
export function attemptAppliedText(label: string, action: Partial<RunAction>, winner: boolean): string | undefined {
    const discarded = action.discarded ?? [];
    if (action.state !== 'applied' || discarded.length === 0) {
        return undefined;
    }
    const files = [...(action.written ?? []), ...(action.deleted ?? []).map((path) => `${path} (deleted)`)];
    const what = winner ? `the winner of ${quoted(label)}` : quoted(label);
    const others = discarded.length === 1 ? 'Its other attempt was' : `Its ${String(discarded.length)} other attempts were`;
    return `Applied ${what}: ${files.length > 0 ? listed(files) : 'no file'}. ${others} discarded (their worktrees removed).`;
}

// --- a note for a run under way ---

type SteerArgs = CommandArgs['aider-lsp.workflow.steer'];

/** The steer request: the note trimmed; `runId` the isolated run or group (undefined: the run in place under way). */
export function steerArgs(note: string, runId?: string): SteerArgs {
    return runId === undefined ? { note: note.trim() } : { run_id: runId, note: note.trim() };
}

/** The note typed, or what is wrong with it (the input box's validation message). */
export function noteProblem(text: string): string | undefined {
    return text.trim() ? undefined : 'Say what the run should take into account, e.g. “negative numbers too”.';
}

/** What the server said of the note for `name` (“goal”, the run under way): it reaches the run's next edit, or why not. */
export function steerMessage(name: string, result: TaskResult): { severity: 'info' | 'warning'; text: string } {
    if (result.status === 'FAILED') {
        const why = taskError(result)?.message || result.content.trim() || 'the server did not say why';
        return { severity: 'warning', text: `The note was not added to ${name}: ${why}.` };
    }
    return { severity: 'info', text: `Note added to ${name}. ${result.content.trim()}`.trim() };
}

// --- the attempts this window saw ---

/**
 * The attempts of the groups this window ran, by run id: the history keeps no attempt's number
 * or model, the group's answer does (the Runs view labels an attempt with them when it knows).
 */
export class KnownAttempts {
    private readonly byRun = new Map<string, AttemptAnswer>();

    remember(group: GroupAnswer): void {
        for (const attempt of group.attempts) {
            if (attempt.runId) {
                this.byRun.set(attempt.runId, attempt);
            }
        }
    }

    get(runId: string): AttemptAnswer | undefined {
        return this.byRun.get(runId);
    }
}
