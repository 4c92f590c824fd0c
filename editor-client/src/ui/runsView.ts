/**
 * The Runs view (activity bar "Aider" → "Runs"): each run and edit of the server's history
 * (`aider-lsp.history.list`, so it survives a reload) with what was asked, how it ended, its
 * iterations and spend, and under it the files it changed; a click on a file opens its diff
 * (flows/runs.ts). It reads the history again after every command that can change it, while a
 * run reports progress (its files appear as it edits them), after a server (re)start, and on
 * its refresh button. With no run the view's welcome text (package.json `viewsWelcome`) shows,
 * chosen by the `aiderLsp.runs` context key.
 */
import * as path from 'node:path';
import * as vscode from 'vscode';
import { runDescription, runRecords, runState, runTooltip, shortLabel, type RunRecord, type RunState } from '../common/runs';
import { ClientCommand, ServerCommand, type ServerCommandId } from '../protocol';
import type { ServerCommands } from '../server/execute';

export const RUNS_VIEW = 'aider-lsp.runs';
/** What the view's welcome says: `listed` (none), `empty` (No runs yet…), `unavailable` (no server). */
const STATE_KEY = 'aiderLsp.runs';

/** A run of the history, or one file it changed. */
export type RunNode = { kind: 'run'; run: RunRecord; newest: boolean } | { kind: 'file'; run: RunRecord; path: string };

/** The commands after which the history may hold another run, or a run undone. */
const CHANGES_HISTORY = new Set<ServerCommandId>([ServerCommand.automatic, ServerCommand.interactive, ServerCommand.workflowRun, ServerCommand.undo]);

/** While a run reports progress, the history is read again at most this often. */
const LIVE_REFRESH_MS = 1500;

const ICONS: Record<RunState, { id: string; color?: string }> = {
    passed: { id: 'pass', color: 'testing.iconPassed' },
    failed: { id: 'error', color: 'testing.iconFailed' },
    cancelled: { id: 'circle-slash' },
    undone: { id: 'discard' },
    unfinished: { id: 'circle-outline' }, // still running, or interrupted: no outcome recorded
};

/** The value VS Code passes a view item's command: one of this view's nodes, else undefined. */
export function asRunNode(value: unknown): RunNode | undefined {
    if (typeof value !== 'object' || value === null || !('kind' in value) || !('run' in value)) {
        return undefined;
    }
    const kind = (value as { kind: unknown }).kind;
    return kind === 'run' || kind === 'file' ? (value as RunNode) : undefined;
}

export class RunsTree implements vscode.TreeDataProvider<RunNode>, vscode.Disposable {
    private readonly changed = new vscode.EventEmitter<RunNode | undefined>();
    readonly onDidChangeTreeData = this.changed.event;
    private readonly subscription: vscode.Disposable;
    private timer: NodeJS.Timeout | undefined;

    constructor(
        private readonly server: ServerCommands,
        private readonly root: () => vscode.Uri | undefined,
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

    async getChildren(node?: RunNode): Promise<RunNode[]> {
        if (node === undefined) {
            return this.runs();
        }
        return node.kind === 'run' ? node.run.files.map((file) => ({ kind: 'file', run: node.run, path: file })) : [];
    }

    private async runs(): Promise<RunNode[]> {
        const result = await this.server.query(ServerCommand.historyList, {});
        const runs = result?.status === 'COMPLETE' ? runRecords(result) : [];
        const state = result?.status !== 'COMPLETE' ? 'unavailable' : runs.length === 0 ? 'empty' : 'listed';
        await vscode.commands.executeCommand('setContext', STATE_KEY, state);
        return runs.map((run, index) => ({ kind: 'run', run, newest: index === 0 }));
    }

    getTreeItem(node: RunNode): vscode.TreeItem {
        return node.kind === 'run' ? this.runItem(node.run, node.newest) : this.fileItem(node.run, node.path);
    }

    private runItem(run: RunRecord, newest: boolean): vscode.TreeItem {
        const { None, Collapsed, Expanded } = vscode.TreeItemCollapsibleState;
        const item = new vscode.TreeItem(shortLabel(run), run.files.length === 0 ? None : newest ? Expanded : Collapsed);
        item.id = run.id;
        item.description = runDescription(run, this.now());
        item.tooltip = runTooltip(run);
        const icon = ICONS[runState(run)];
        item.iconPath = new vscode.ThemeIcon(icon.id, icon.color === undefined ? undefined : new vscode.ThemeColor(icon.color));
        // package.json's menus read it: which actions a run has (Run Again: workflows; Undo: not undone)
        item.contextValue = `aiderRun.${run.kind === 'workflow' ? 'workflow' : 'edit'}${run.undone === undefined ? '' : '.undone'}`;
        return item;
    }

    private fileItem(run: RunRecord, file: string): vscode.TreeItem {
        const item = new vscode.TreeItem(path.posix.basename(file), vscode.TreeItemCollapsibleState.None);
        item.id = `${run.id}/${file}`;
        const folder = path.posix.dirname(file);
        item.description = folder === '.' ? '' : folder;
        const root = this.root();
        if (root !== undefined) {
            item.resourceUri = vscode.Uri.joinPath(root, file); // the file's own icon
        }
        item.tooltip = `${file}: before ↔ after “${shortLabel(run)}”`;
        item.contextValue = 'aiderRunFile';
        item.command = { command: ClientCommand.openRunFile, title: 'Show Diff', arguments: [{ kind: 'file', run, path: file } satisfies RunNode] };
        return item;
    }

    dispose(): void {
        clearTimeout(this.timer);
        this.subscription.dispose();
        this.changed.dispose();
    }
}
