/**
 * The run history as the Runs view shows it: the records of `aider-lsp.history.list`, the two
 * sides of a file of `aider-lsp.history.diff`, and each run's wording (label, one-line
 * description, tooltip). Pure: the answers are read field by field (nothing typed `any`), and
 * every wording is tested without VS Code.
 */
import type { TaskResult } from '../protocol';

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

type Fields = Record<string, unknown>;

function isRecord(value: unknown): value is Fields {
    return typeof value === 'object' && value !== null && !Array.isArray(value);
}

const text = (fields: Fields, key: string): string | undefined => (typeof fields[key] === 'string' ? fields[key] : undefined);
const number = (fields: Fields, key: string): number | undefined => (typeof fields[key] === 'number' ? fields[key] : undefined);

function strings(value: unknown): string[] {
    return Array.isArray(value) ? value.filter((item): item is string => typeof item === 'string') : [];
}

function runRecord(fields: Fields): RunRecord | undefined {
    const id = text(fields, 'id');
    const created = number(fields, 'created');
    if (id === undefined || created === undefined) {
        return undefined;
    }
    const optional = {
        goal: text(fields, 'goal'),
        status: text(fields, 'status'),
        iterations: number(fields, 'iterations'),
        spend: text(fields, 'spend'),
        durationS: number(fields, 'duration_s'),
        undone: number(fields, 'undone'),
    };
    const present = Object.fromEntries(Object.entries(optional).filter(([, value]) => value !== undefined));
    return { id, created, kind: text(fields, 'kind') ?? 'edit', label: text(fields, 'label') ?? '', files: strings(fields.files), ...present };
}

/** The runs of a history.list answer (`notes.runs`), newest first as the server sends them. */
export function runRecords(result: TaskResult): RunRecord[] {
    const runs = result.notes.runs;
    return Array.isArray(runs) ? runs.flatMap((item) => (isRecord(item) ? (runRecord(item) ?? []) : [])) : [];
}

/** The files of a history.diff answer (`notes.files`). */
export function runFileSides(result: TaskResult): RunFileSides[] {
    const files = result.notes.files;
    if (!Array.isArray(files)) {
        return [];
    }
    return files.flatMap((item): RunFileSides[] => {
        if (!isRecord(item) || text(item, 'path') === undefined) {
            return [];
        }
        const sides: RunFileSides = {
            path: text(item, 'path') ?? '',
            existedBefore: item.existed_before === true,
            existsAfter: item.exists_after === true,
            binary: item.binary === true,
        };
        const before = text(item, 'before');
        const after = text(item, 'after');
        return [{ ...sides, ...(before === undefined ? {} : { before }), ...(after === undefined ? {} : { after }) }];
    });
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

/** What a state of the run's icon is: passed, failed, cancelled, undone or unfinished. */
export type RunState = 'passed' | 'failed' | 'cancelled' | 'undone' | 'unfinished';

export function runState(run: RunRecord): RunState {
    if (run.undone !== undefined) {
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

/** The line beside the run's label: "undone · goal reached · 2 iterations · 1500 tokens · $0.01 · 3 min ago". */
export function runDescription(run: RunRecord, now: number): string {
    const parts: string[] = [];
    if (run.undone !== undefined) {
        parts.push('undone');
    }
    parts.push(statusWords(run));
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
