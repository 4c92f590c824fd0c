/**
 * Two attempts of a group side by side ("Compare with Another Attempt…" on an attempt of the
 * Runs view, "Compare Attempts…" on a group): which attempts can be compared, their names, the
 * quick pick's items, the items' contextValue marker, and for each file either attempt changed
 * the text of each side and the diff editor's title. Pure: tested without VS Code
 * (test/compare.test.ts); the flow is flows/compare.ts.
 */
import type { AttemptAnswer } from './attempts';
import type { RunGroup } from './runGroups';
import { hasDiff, runDescription, type RunFileSides, type RunRecord } from './runs';

/** An attempt as the comparison names it: "Attempt 2 (openai/gpt-4.1)". */
export interface NamedAttempt {
    run: RunRecord;
    name: string;
}

/**
 * The attempts of `group` whose change can be shown (ready in their worktree, applied, undone:
 * not running, discarded or kept), oldest first, each named by its number and model: from its
 * record, else from this window's answer (`known`), else its place in the group (the server
 * numbers them in the order it started them, the group lists them oldest first).
 */
export function comparableAttempts(group: RunGroup, known: (runId: string) => AttemptAnswer | undefined = () => undefined): NamedAttempt[] {
    return group.runs.flatMap((run, index) => (hasDiff(run) ? [{ run, name: attemptName(run, index + 1, known(run.id)) }] : []));
}

function attemptName(run: RunRecord, place: number, known: AttemptAnswer | undefined): string {
    const number = run.attempt ?? known?.number ?? place;
    const model = run.aiderModel ?? known?.aiderModel;
    return `Attempt ${String(number)}${model === undefined ? '' : ` (${model})`}`;
}

/** The marker an item's contextValue ends with when package.json's menus offer Compare on it. */
export const COMPARE_MARKER = '.compare';

/** A group node's contextValue: its own (runGroups.ts groupContextValue), marked when two of its attempts can be compared. */
export function groupCompareValue(value: string, group: RunGroup): string {
    return comparableAttempts(group).length >= 2 ? `${value}${COMPARE_MARKER}` : value;
}

/** An attempt node's contextValue: its run's (runs.ts runContextValue), marked when it has a change and another attempt of its group has one. */
export function attemptCompareValue(value: string, run: RunRecord, group: RunGroup): string {
    const comparable = comparableAttempts(group);
    return comparable.length >= 2 && comparable.some((each) => each.run.id === run.id) ? `${value}${COMPARE_MARKER}` : value;
}

/** One attempt in the quick pick: its name, where it stands, the files it changed. */
export interface AttemptPick {
    label: string;
    description: string;
    detail: string;
    attempt: NamedAttempt;
}

export function attemptPicks(attempts: readonly NamedAttempt[], now: number): AttemptPick[] {
    return attempts.map((attempt) => ({
        label: attempt.name,
        description: runDescription(attempt.run, now),
        detail: attempt.run.files.length > 0 ? `Changed ${attempt.run.files.join(', ')}` : 'Changed no file',
        attempt,
    }));
}

/** Why an attempt or a group offers nothing to compare (the view's menus were older than its attempts). */
export function cannotCompareText(goal: string): string {
    return `Fewer than two attempts of ${goal} have a change to show (a running, discarded or kept attempt has none): nothing to compare.`;
}

/** One attempt's change as the comparison reads it: its name and the files it changed (`aider-lsp.history.diff`). */
export interface AttemptChange {
    name: string;
    files: readonly RunFileSides[];
}

/** A file of the comparison: binary (no sides to show), or each attempt's text of it and the diff editor's title. */
export type ComparedFile = { path: string; binary: true } | { path: string; binary: false; left: string; right: string; title: string };

/** A file as one attempt has it: its text (undefined: binary), whether it exists there, whether the attempt changed it. */
interface Version {
    text?: string;
    exists: boolean;
    changed: boolean;
}

/**
 * `path` in the attempt whose sides are `own`: its `after` when it changed the file; else the
 * file it started from, which is the other attempt's `before` (the attempts of a group start
 * from the same files).
 */
function versionOf(own: RunFileSides | undefined, other: RunFileSides | undefined): Version {
    if (own !== undefined) {
        return { ...(own.binary ? {} : { text: own.after ?? '' }), exists: own.existsAfter, changed: true };
    }
    const base = other?.binary === true ? {} : { text: other?.before ?? '' };
    return { ...base, exists: other?.existedBefore ?? false, changed: false };
}

/** What the title adds after the two names: the same in both, or where the file is absent or left as it was. */
function titleNotes(left: Version & { name: string }, right: Version & { name: string }): string {
    if (left.exists === right.exists && left.text === right.text) {
        return left.exists ? ', the same in both' : ', deleted by both';
    }
    const notes: string[] = [];
    for (const side of [left, right]) {
        if (!side.exists) {
            notes.push(`not in ${side.name}`);
        } else if (!side.changed) {
            notes.push(`unchanged by ${side.name}`);
        }
    }
    return notes.map((note) => `, ${note}`).join('');
}

/**
 * Each file either attempt changed (sorted by path), left as attempt `a` has it and right as
 * `b` has it; a file that does not exist in one is empty on its side. Binary on either side:
 * no sides (the flow says it is not text). Changed by neither: not listed.
 */
export function comparedFiles(a: AttemptChange, b: AttemptChange): ComparedFile[] {
    const inA = new Map(a.files.map((file) => [file.path, file]));
    const inB = new Map(b.files.map((file) => [file.path, file]));
    const paths = [...new Set([...inA.keys(), ...inB.keys()])].sort((x, y) => (x < y ? -1 : x > y ? 1 : 0));
    return paths.map((path): ComparedFile => {
        const left = versionOf(inA.get(path), inB.get(path));
        const right = versionOf(inB.get(path), inA.get(path));
        if (left.text === undefined || right.text === undefined) {
            return { path, binary: true };
        }
        const notes = titleNotes({ ...left, name: a.name }, { ...right, name: b.name });
        return { path, binary: false, left: left.text, right: right.text, title: `${path} (${a.name} ↔ ${b.name}${notes})` };
    });
}

/** When neither attempt changed a file. */
export function nothingToCompareText(a: string, b: string): string {
    return `${a} and ${b} changed no file: nothing to compare.`;
}
