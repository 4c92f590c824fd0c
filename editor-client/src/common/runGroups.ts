/**
 * The attempts of one goal in the Runs view: the history's records of a group (`group_id`)
 * gathered under one node where the group's newest attempt stands, the winner (`won`) marked,
 * and the group node's wording (label, description, tooltip, icon, contextValue). Pure: tested
 * without VS Code (test/attempts.test.ts).
 */
import type { AttemptAnswer } from './attempts';
import { quoted } from './isolation';
import { ago, goalOf, READY_NOT_REACHED, runState, shortLabel, STATE_ICONS, type Icon, type RunRecord, type RunState } from './runs';

/** The attempts of one group, oldest first, as the history lists them. */
export interface RunGroup {
    groupId: string;
    runs: RunRecord[];
}

/** One entry of the view's list: a run on its own, or a group of attempts. */
export type HistoryEntry = { kind: 'run'; run: RunRecord } | { kind: 'group'; group: RunGroup };

/**
 * The history's runs (newest first) with each group's attempts gathered in one entry, at the
 * place of its newest attempt; runs of no group stay as they are, in their order.
 */
export function groupHistory(runs: readonly RunRecord[]): HistoryEntry[] {
    const groups = new Map<string, RunGroup>();
    const entries: HistoryEntry[] = [];
    for (const run of runs) {
        if (run.groupId === undefined) {
            entries.push({ kind: 'run', run });
            continue;
        }
        const known = groups.get(run.groupId);
        if (known !== undefined) {
            known.runs.push(run);
            continue;
        }
        const group: RunGroup = { groupId: run.groupId, runs: [run] };
        groups.set(run.groupId, group);
        entries.push({ kind: 'group', group });
    }
    for (const group of groups.values()) {
        group.runs.sort((a, b) => a.created - b.created || a.id.localeCompare(b.id));
    }
    return entries;
}

/** The attempt the tests chose, when they chose one. */
export function groupWinner(group: RunGroup): RunRecord | undefined {
    return group.runs.find((run) => run.won);
}

/** The goal the attempts share. */
export function groupGoal(group: RunGroup): string {
    const [first] = group.runs;
    return first === undefined ? '' : goalOf(first);
}

/** "3 attempts: “make the parser tests pass”". */
export function groupLabel(group: RunGroup): string {
    const count = group.runs.length;
    const [first] = group.runs;
    const goal = first === undefined ? '' : shortLabel(first, 40);
    return `${String(count)} attempt${count === 1 ? '' : 's'}: ${quoted(goal, 40)}`;
}

/** Where an attempt stands, in a word: running, ready, applied, discarded, kept or undone. */
function stateWord(run: RunRecord): string {
    const state = runState(run);
    switch (state) {
        case 'running':
        case 'ready':
        case 'discarded':
        case 'kept':
        case 'undone':
            return state;
        default:
            return 'applied'; // on the user's files: passed, failed, cancelled or unfinished as it ended
    }
}

/**
 * The line beside the group, where it stands first: "3 running · just now", "winner ready · 2
 * discarded · 3 min ago", "no winner · 1 ready · 2 discarded · 1 h ago".
 */
export function groupDescription(group: RunGroup, now: number): string {
    const winner = groupWinner(group);
    const others = new Map<string, number>();
    for (const run of group.runs) {
        if (run !== winner) {
            const word = stateWord(run);
            others.set(word, (others.get(word) ?? 0) + 1);
        }
    }
    const running = others.get('running') ?? 0;
    const parts: string[] = running > 0 ? [`${String(running)} running`] : [];
    if (winner !== undefined) {
        parts.push(`winner ${stateWord(winner)}`);
    } else if (running === 0) {
        parts.push('no winner');
    }
    for (const word of ['ready', 'applied', 'discarded', 'kept', 'undone']) {
        const counted = others.get(word) ?? 0;
        if (counted > 0) {
            parts.push(`${String(counted)} ${word}`);
        }
    }
    const newest = Math.max(...group.runs.map((run) => run.created));
    if (Number.isFinite(newest)) {
        parts.push(ago(newest, now));
    }
    return parts.join(' · ');
}

/** Where the group stands: running while an attempt runs; ready while one waits; else its winner's state (none: failed). */
export function groupState(group: RunGroup): RunState {
    const states = group.runs.map(runState);
    if (states.includes('running')) {
        return 'running';
    }
    if (states.includes('ready')) {
        return 'ready';
    }
    const winner = groupWinner(group);
    return winner === undefined ? 'failed' : runState(winner);
}

/** The group's icon: its state's; ready with a winner, a star (it waits to be applied); ready without, no check mark. */
export function groupIcon(group: RunGroup): Icon {
    const state = groupState(group);
    if (state === 'ready') {
        return groupWinner(group)?.state === 'ready' ? { id: 'star-full', color: 'charts.yellow' } : READY_NOT_REACHED;
    }
    return STATE_ICONS[state];
}

/**
 * The group node's contextValue, which package.json's menus read: `aiderRunGroup.winner` while
 * its winner is ready (Apply the Winner), `aiderRunGroup.running` while an attempt runs (Add a
 * Note), else `aiderRunGroup`.
 */
export function groupContextValue(group: RunGroup): string {
    if (groupWinner(group)?.state === 'ready') {
        return 'aiderRunGroup.winner';
    }
    return group.runs.some((run) => run.state === 'running') ? 'aiderRunGroup.running' : 'aiderRunGroup';
}

/** Everything the view knows of the group: its goal, how the tests chose, its id. */
export function groupTooltip(group: RunGroup): string {
    const winner = groupWinner(group);
    const running = group.runs.some((run) => run.state === 'running');
    const lines = [groupGoal(group), '', `${String(group.runs.length)} attempts at this goal, each in a worktree of its own: the tests choose.`];
    if (winner?.state === 'ready') {
        lines.push('The winner (★) is ready: Apply the Winner lays it on your files and discards the other attempts.');
    } else if (winner !== undefined) {
        lines.push(`The winner (★) is ${stateWord(winner)}.`);
    } else if (running) {
        lines.push('Running: the tests choose when the attempts end.');
    } else {
        lines.push('No attempt passed the tests: a ready one can still be applied on its own.');
    }
    lines.push(`Group id ${group.groupId}`);
    return lines.join('\n');
}

/** An attempt's label under its group: "Attempt 2 (openai/gpt-4.1)", from its record (or this window's answer), else the goal. */
export function attemptLabel(run: RunRecord, known?: AttemptAnswer): string {
    const number = run.attempt ?? known?.number;
    if (number === undefined) {
        return shortLabel(run, 48);
    }
    const model = run.aiderModel ?? known?.aiderModel;
    return `Attempt ${String(number)}${model === undefined ? '' : ` (${model})`}`;
}
