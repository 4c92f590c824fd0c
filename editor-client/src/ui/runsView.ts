/**
 * The Runs view (activity bar "Aider" → "Runs"): each run and edit of the server's history
 * (`aider-lsp.history.list`, so it survives a reload) with what was asked, how it ended, its
 * iterations and spend, and under it its iterations (each with what its edit did, its test
 * run and its analysis as leaves) and the files it changed; a click on a file opens its diff
 * (flows/runs.ts). Runs in worktrees of their own are listed while they run and once ready
 * (their icon and line say so, a ready one open with its actions: Apply, Discard, Show Diff,
 * Keep as Branch), their last test failures under them, never in the Problems panel.
 * Several attempts at one goal (a group) are one node, "3 attempts: “goal”", its attempts under
 * it, the winner marked with a star (common/runGroups.ts); the group's menu has Apply the
 * Winner, a running run's or group's Add a Note, and the group's and its attempts' Compare
 * (two attempts side by side, flows/compare.ts). A run's line starts with where it stands, and
 * a run that becomes ready (or a group's winner) is shown open again (its item id says so: VS
 * Code keeps an item's open or closed state by its id).
 * In a window of several workspace folders the top level is one node per folder (its runs'
 * count beside it), each listing its own history (`history.list {folder}`); every node under
 * a folder knows it, so each action goes to that folder's server side (flows/runs.ts).
 * It reads the history (every folder's) again after every command that can change it, while a
 * run reports progress (its files appear as it edits them), after a server (re)start, when
 * folders come or go, and on its refresh button. With no run the view's welcome text
 * (package.json `viewsWelcome`) shows, chosen by the `aiderLsp.runs` context key.
 */
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { AttemptAnswer } from '../common/attempts';
import { attemptCompareValue, groupCompareValue } from '../common/compareAttempts';
import {
    attemptLabel,
    groupContextValue,
    groupDescription,
    groupHistory,
    groupIcon,
    groupLabel,
    groupState,
    groupTooltip,
    groupWinner,
    type RunGroup,
} from '../common/runGroups';
import {
    analysisTooltip,
    findingLabel,
    findingTooltip,
    hasDiff,
    runContextValue,
    runDescription,
    runIcon,
    runRecords,
    runTooltip,
    shortLabel,
    STATE_ICONS,
    stepDescription,
    stepState,
    stepTooltip,
    testLabel,
    testTooltip,
    type Icon,
    type RunFinding,
    type RunRecord,
    type RunStep,
    type StepAnalysis,
    type StepTestRun,
} from '../common/runs';
import { ClientCommand, ServerCommand, type ServerCommandId } from '../protocol';
import type { ServerCommands } from '../server/execute';

export const RUNS_VIEW = 'aider-lsp.runs';
/** What the view's welcome says: `listed` (none), `empty` (No runs yet…), `unavailable` (no server). */
const STATE_KEY = 'aiderLsp.runs';

/** The workspace folder a node is under, in a window of several (none: one folder, the server's). */
interface InFolder {
    folder?: vscode.Uri;
}

/** A run of the history, one of its iterations (or that iteration's test run or analysis), or one file it changed. */
export type RunNode = InFolder &
    (
        | { kind: 'run'; run: RunRecord; newest: boolean; /** An attempt, under its group's node: its group, whether it has a winner. */ attempt?: { group: RunGroup; decided: boolean } }
        | { kind: 'iteration'; run: RunRecord; step: RunStep }
        | { kind: 'test'; run: RunRecord; iteration: number; test: StepTestRun }
        | { kind: 'analysis'; run: RunRecord; iteration: number; analysis: StepAnalysis }
        | { kind: 'finding'; run: RunRecord; index: number; finding: RunFinding }
        | { kind: 'file'; run: RunRecord; path: string }
    );

/** The attempts of one goal, one node with its attempts under it. */
export type GroupNode = InFolder & { kind: 'group'; group: RunGroup };

/** A workspace folder at the top of a multi-root window's view: its runs, or why they could not be read. */
export interface FolderNode {
    kind: 'folder';
    folder: RunsFolder;
    runs: RunRecord[];
    /** Why its history could not be read (a FAILED answer, or none). */
    problem?: string;
}

/** What the view needs of a workspace folder. */
export interface RunsFolder {
    readonly uri: vscode.Uri;
    readonly name: string;
}

type ViewNode = FolderNode | GroupNode | RunNode;

const KINDS = new Set<unknown>(['run', 'iteration', 'test', 'analysis', 'finding', 'file']);

/** The commands after which the history may hold another run, or a run undone, applied, discarded or kept. */
const CHANGES_HISTORY = new Set<ServerCommandId>([
    ServerCommand.automatic,
    ServerCommand.interactive,
    ServerCommand.workflowRun,
    ServerCommand.undo,
    ServerCommand.applyRun,
    ServerCommand.discardRun,
    ServerCommand.keepRunBranch,
]);

/** While a run reports progress, the history is read again at most this often. */
const LIVE_REFRESH_MS = 1500;

/** The longest run label the view shows (the whole goal is in the tooltip): the description beside it stays in view. */
const LABEL_MAX = 48;

/** The value VS Code passes a view item's command: one of this view's nodes, else undefined. */
export function asRunNode(value: unknown): RunNode | undefined {
    if (typeof value !== 'object' || value === null || !('kind' in value) || !('run' in value)) {
        return undefined;
    }
    return KINDS.has((value as { kind: unknown }).kind) ? (value as RunNode) : undefined;
}

/** The value VS Code passes a group node's command: this view's group node, else undefined. */
export function asGroupNode(value: unknown): GroupNode | undefined {
    if (typeof value !== 'object' || value === null || !('kind' in value) || !('group' in value)) {
        return undefined;
    }
    return (value as { kind: unknown }).kind === 'group' ? (value as GroupNode) : undefined;
}

/** A folder's history as read: its runs, or why there are none to show. */
interface Listing {
    runs: RunRecord[];
    /** undefined: read; else why not (the server is not running, or its answer). */
    problem?: string;
}

export class RunsTree implements vscode.TreeDataProvider<ViewNode>, vscode.Disposable {
    private readonly changed = new vscode.EventEmitter<ViewNode | undefined>();
    readonly onDidChangeTreeData = this.changed.event;
    private readonly subscription: vscode.Disposable;
    private timer: NodeJS.Timeout | undefined;

    constructor(
        private readonly server: ServerCommands,
        /** The window's workspace folders: one (or none) lists the server's history as it is; several, one node each. */
        private readonly folders: () => readonly RunsFolder[],
        /** Starts the server if it is idle: the view shown is the user asking for their runs. */
        private readonly wake: () => Promise<void>,
        /** The attempts of the groups this window ran (their numbers and models label them). */
        private readonly attempts: { get(runId: string): AttemptAnswer | undefined } = { get: () => undefined },
        private readonly now: () => number = Date.now,
    ) {
        this.subscription = server.onDidRun((command) => {
            if (CHANGES_HISTORY.has(command)) {
                this.refresh();
            }
        });
    }

    /** Reads the history again (VS Code asks for the children of the view when it is shown). */
    refresh(): void {
        clearTimeout(this.timer);
        this.timer = undefined;
        this.changed.fire(undefined);
    }

    /** A refresh soon, at most one per LIVE_REFRESH_MS (a run's progress messages come in bursts). */
    refreshSoon(): void {
        if (this.timer === undefined) {
            this.timer = setTimeout(() => { this.refresh(); }, LIVE_REFRESH_MS);
            this.timer.unref();
        }
    }

    async getChildren(node?: ViewNode): Promise<ViewNode[]> {
        if (node === undefined) {
            return this.top();
        }
        if (node.kind === 'folder') {
            return historyNodes(node.runs, node.folder.uri);
        }
        // a node under a folder hands it on to its children (the actions send it)
        const where = node.folder === undefined ? {} : { folder: node.folder };
        if (node.kind === 'group') {
            const attempt = { group: node.group, decided: groupWinner(node.group) !== undefined };
            return node.group.runs.map((run): RunNode => ({ kind: 'run', run, newest: false, attempt, ...where }));
        }
        if (node.kind === 'run') {
            const { run } = node;
            return [
                ...run.steps.map((step): RunNode => ({ kind: 'iteration', run, step, ...where })),
                ...run.findings.map((finding, index): RunNode => ({ kind: 'finding', run, index, finding, ...where })),
                ...run.files.map((file): RunNode => ({ kind: 'file', run, path: file, ...where })),
            ];
        }
        if (node.kind === 'iteration') {
            const { run, step: { iteration, test, analysis } } = node;
            return [
                ...(test === undefined ? [] : [{ kind: 'test', run, iteration, test, ...where } as const]),
                ...(analysis === undefined ? [] : [{ kind: 'analysis', run, iteration, analysis, ...where } as const]),
            ];
        }
        return [];
    }

    /** The top level: the runs of the one folder, or one node per folder of a multi-root window. */
    private async top(): Promise<ViewNode[]> {
        await this.wake();
        const folders = this.folders();
        if (folders.length <= 1) {
            const listing = await this.listing();
            await this.setState(listing.problem !== undefined ? 'unavailable' : listing.runs.length === 0 ? 'empty' : 'listed');
            return historyNodes(listing.runs);
        }
        const listings = await Promise.all(folders.map((folder) => this.listing(folder.uri)));
        const nodes = folders.map((folder, index): FolderNode => {
            const { runs, problem } = listings[index] ?? { runs: [] };
            return problem === undefined ? { kind: 'folder', folder, runs } : { kind: 'folder', folder, runs, problem };
        });
        // no folder read: the server is not running; none with a run: the welcome's "No runs yet"
        if (nodes.every((node) => node.problem !== undefined)) {
            await this.setState('unavailable');
            return [];
        }
        const none = nodes.every((node) => node.runs.length === 0 && node.problem === undefined);
        await this.setState(none ? 'empty' : 'listed');
        return none ? [] : nodes;
    }

    /** One folder's history (none: the server's, in a window of one folder). */
    private async listing(folder?: vscode.Uri): Promise<Listing> {
        const result = await this.server.query(ServerCommand.historyList, {}, folder);
        if (result === undefined) {
            return { runs: [], problem: 'The Aider server is not running.' };
        }
        return result.status === 'COMPLETE' ? { runs: runRecords(result) } : { runs: [], problem: result.content };
    }

    private async setState(state: 'listed' | 'empty' | 'unavailable'): Promise<void> {
        await vscode.commands.executeCommand('setContext', STATE_KEY, state);
    }

    getTreeItem(node: ViewNode): vscode.TreeItem {
        if (node.kind === 'folder') {
            return folderItem(node);
        }
        if (node.kind === 'group') {
            return this.groupItem(node);
        }
        const key = runKey(node.run, node.folder);
        switch (node.kind) {
            case 'run':
                return this.runItem(node, key);
            case 'file':
                return this.fileItem(node, key);
            case 'iteration':
                return iterationItem(key, node.step);
            case 'test':
                return testItem(key, node.iteration, node.test);
            case 'analysis':
                return analysisItem(key, node.iteration, node.analysis);
            case 'finding':
                return findingItem(key, node.index, node.finding);
        }
    }

    private runItem(node: RunNode & { kind: 'run' }, key: string): vscode.TreeItem {
        const { run, newest } = node;
        const { None, Collapsed, Expanded } = vscode.TreeItemCollapsibleState;
        const empty = run.files.length === 0 && run.steps.length === 0 && run.findings.length === 0;
        // the newest run and every ready one are open: a ready one waits for the user (an
        // attempt: the winner, or each ready one while none won)
        const ready = run.state === 'ready' && (node.attempt === undefined || run.won || !node.attempt.decided);
        const label = node.attempt === undefined ? shortLabel(run, LABEL_MAX) : attemptLabel(run, this.attempts.get(run.id));
        const item = new vscode.TreeItem(label, empty ? None : newest || ready ? Expanded : Collapsed);
        // a run that became ready (or won) is a new item to VS Code: shown open, whatever it was while it ran
        item.id = run.state === 'ready' ? `${key}~ready${run.won ? '~won' : ''}` : key;
        item.description = runDescription(run, this.now());
        item.tooltip = runTooltip(run);
        item.iconPath = themeIcon(runIcon(run));
        // package.json's menus read it: which actions a run has (Run Again: workflows; Undo: on the user's files, not undone; Apply…: ready;
        // an attempt: Compare with Another Attempt… when it and another of its group have a change)
        item.contextValue = node.attempt === undefined ? runContextValue(run) : attemptCompareValue(runContextValue(run), run, node.attempt.group);
        return item;
    }

    /** A group of attempts: "3 attempts: “goal”", where it stands, open while an attempt runs or waits. */
    private groupItem(node: GroupNode): vscode.TreeItem {
        const { group } = node;
        const state = groupState(group);
        const key = groupKey(group.groupId, node.folder);
        const open = state === 'running' || state === 'ready';
        const item = new vscode.TreeItem(groupLabel(group), open ? vscode.TreeItemCollapsibleState.Expanded : vscode.TreeItemCollapsibleState.Collapsed);
        item.id = `${key}~${state}`; // a new state is a new item: shown open again when it becomes ready
        item.description = groupDescription(group, this.now());
        item.tooltip = groupTooltip(group);
        item.iconPath = themeIcon(groupIcon(group));
        // package.json's menus read it: Apply the Winner (a winner ready), Add a Note (an attempt running), Compare Attempts… (two with a change)
        item.contextValue = groupCompareValue(groupContextValue(group), group);
        return item;
    }

    private fileItem(node: RunNode & { kind: 'file' }, key: string): vscode.TreeItem {
        const { run, path: file } = node;
        const item = new vscode.TreeItem(path.posix.basename(file), vscode.TreeItemCollapsibleState.None);
        item.id = `${key}/${file}`;
        const dir = path.posix.dirname(file);
        item.description = dir === '.' ? '' : dir;
        const root = node.folder ?? this.folders()[0]?.uri;
        if (root !== undefined) {
            item.resourceUri = vscode.Uri.joinPath(root, file); // the file's own icon
        }
        item.contextValue = 'aiderRunFile';
        // a running run has no diff yet; a discarded or kept one's tree is gone
        if (hasDiff(run)) {
            item.tooltip = `${file}: before ↔ after “${shortLabel(run)}”`;
            item.command = { command: ClientCommand.openRunFile, title: 'Show Diff', arguments: [node satisfies RunNode] };
        } else {
            item.tooltip = file;
        }
        return item;
    }

    dispose(): void {
        clearTimeout(this.timer);
        this.subscription.dispose();
        this.changed.dispose();
    }
}

/** The nodes of a history (newest first): each run, each group of attempts as one node; each knowing its folder in a multi-root window. */
function historyNodes(runs: readonly RunRecord[], folder?: vscode.Uri): (GroupNode | RunNode)[] {
    const where = folder === undefined ? {} : { folder };
    return groupHistory(runs).map((entry, index): GroupNode | RunNode =>
        entry.kind === 'group' ? { kind: 'group', group: entry.group, ...where } : { kind: 'run', run: entry.run, newest: index === 0, ...where },
    );
}

/** A group's item id (with its folder's in a window of several). */
function groupKey(groupId: string, folder: vscode.Uri | undefined): string {
    return folder === undefined ? `group:${groupId}` : `${folder.toString()}#group:${groupId}`;
}

/** A run's item id: its own in a window of one folder; with its folder's in one of several (ids are the whole tree's). */
function runKey(run: RunRecord, folder: vscode.Uri | undefined): string {
    return folder === undefined ? run.id : `${folder.toString()}#${run.id}`;
}

/** "2 runs", "1 run", "no runs" (or that its history could not be read). */
function folderDescription(node: FolderNode): string {
    if (node.problem !== undefined) {
        return 'runs not available';
    }
    const count = node.runs.length;
    return count === 0 ? 'no runs' : `${String(count)} ${count === 1 ? 'run' : 'runs'}`;
}

/** A workspace folder of a multi-root window: its name, its runs' count, open when it has runs. */
function folderItem(node: FolderNode): vscode.TreeItem {
    const { None, Expanded } = vscode.TreeItemCollapsibleState;
    const item = new vscode.TreeItem(node.folder.name, node.runs.length === 0 ? None : Expanded);
    item.id = `folder:${node.folder.uri.toString()}`;
    item.description = folderDescription(node);
    item.tooltip = node.problem === undefined ? node.folder.uri.fsPath : `${node.folder.uri.fsPath}\n\n${node.problem}`;
    item.iconPath = new vscode.ThemeIcon('root-folder');
    item.contextValue = 'aiderRunsFolder';
    return item;
}

function themeIcon(icon: Icon): vscode.ThemeIcon {
    return new vscode.ThemeIcon(icon.id, icon.color === undefined ? undefined : new vscode.ThemeColor(icon.color));
}

/** "Iteration 1" with what happened in it beside ("changed calc.py · tests fail (1 failed) · analysis: RETRY"). */
function iterationItem(key: string, step: RunStep): vscode.TreeItem {
    const leaves = step.test !== undefined || step.analysis !== undefined;
    const item = new vscode.TreeItem(`Iteration ${String(step.iteration)}`, leaves ? vscode.TreeItemCollapsibleState.Collapsed : vscode.TreeItemCollapsibleState.None);
    item.id = `${key}:iteration:${String(step.iteration)}`;
    item.description = stepDescription(step);
    item.tooltip = stepTooltip(step);
    item.iconPath = themeIcon(STATE_ICONS[stepState(step)]);
    item.contextValue = 'aiderRunIteration';
    return item;
}

/** A leaf under an iteration: its label, the line beside it, the tooltip. */
function leaf(id: string, label: string, description: string, tooltip: string, icon: string): vscode.TreeItem {
    const item = new vscode.TreeItem(label, vscode.TreeItemCollapsibleState.None);
    item.id = id;
    item.description = description;
    item.tooltip = tooltip;
    item.iconPath = new vscode.ThemeIcon(icon);
    return item;
}

/** An iteration's test run: "Tests: 1 failed" with the runner's last line beside it. */
function testItem(key: string, iteration: number, test: StepTestRun): vscode.TreeItem {
    const item = leaf(`${key}:iteration:${String(iteration)}:test`, testLabel(test), test.summary, testTooltip(test), 'beaker');
    item.contextValue = 'aiderRunTests';
    return item;
}

/** A failure of the run's last test run (an isolated run's: not in the Problems panel): "calculator.py:12" and the message's first line. */
function findingItem(key: string, index: number, finding: RunFinding): vscode.TreeItem {
    const firstLine = finding.message.split('\n')[0] ?? '';
    const icon = finding.severity === 'error' ? 'error' : finding.severity === 'warning' ? 'warning' : 'info';
    const item = leaf(`${key}:finding:${String(index)}`, findingLabel(finding), firstLine, findingTooltip(finding), icon);
    item.contextValue = 'aiderRunFinding';
    return item;
}

/** An iteration's analysis: "Analysis: RETRY" with the first line of its message beside it. */
function analysisItem(key: string, iteration: number, analysis: StepAnalysis): vscode.TreeItem {
    const firstLine = analysis.message.split('\n')[0] ?? '';
    const item = leaf(`${key}:iteration:${String(iteration)}:analysis`, `Analysis: ${analysis.verdict}`, firstLine, analysisTooltip(analysis), 'comment-discussion');
    item.contextValue = 'aiderRunAnalysis';
    return item;
}
