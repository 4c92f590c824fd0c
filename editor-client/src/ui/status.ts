/**
 * The status bar item: the server's state and a running command's (or the set-up's) phase; a
 * click shows the log, or starts the set-up when there is no server yet. Red only once
 * something failed: a server not set up yet is no error.
 */
import * as vscode from 'vscode';
import { SECTION } from '../common/settings';
import { statusSummary, type FolderStatus } from '../common/statusSummary';
import { ClientCommand } from '../protocol';

type ServerState = 'idle' | 'starting' | 'ready' | 'error' | 'stopped' | 'setup' | 'missing';

const LABELS: Record<ServerState, { icon: string; tooltip: string }> = {
    idle: { icon: '$(sparkle)', tooltip: 'Aider: the server starts with the first command' },
    starting: { icon: '$(loading~spin)', tooltip: 'Aider: the server is starting' },
    ready: { icon: '$(check)', tooltip: 'Aider: the server is ready' },
    error: { icon: '$(error)', tooltip: 'Aider: the server is not running — click for the log' },
    stopped: { icon: '$(circle-slash)', tooltip: 'Aider: the server is stopped' },
    setup: { icon: '$(loading~spin)', tooltip: 'Aider: setting up the server' },
    missing: { icon: '$(cloud-download)', tooltip: 'Aider: the server is not set up yet — click to set it up' },
};

export class StatusItem implements vscode.Disposable {
    private readonly item: vscode.StatusBarItem;
    private state: ServerState = 'idle';
    private phase: string | undefined;
    private detail: string | undefined;
    private folder: FolderStatus = {};

    constructor() {
        this.item = vscode.window.createStatusBarItem('aider-lsp.status', vscode.StatusBarAlignment.Left, 0);
        this.item.name = 'Aider';
        this.item.command = ClientCommand.showLog;
        this.render();
        this.item.show();
    }

    setState(state: ServerState, detail?: string): void {
        this.state = state;
        this.detail = detail;
        this.render();
    }

    /** A running command's phase, e.g. "Iteration 2/3: running tests"; undefined when it ends. */
    setPhase(phase: string | undefined): void {
        this.phase = phase;
        this.render();
    }

    /** The settings of the active editor's folder: its model shown beside the state, the rest in the tooltip. */
    setFolder(folder: FolderStatus): void {
        this.folder = folder;
        this.render();
    }

    private render(): void {
        const label = LABELS[this.state];
        this.item.command = this.state === 'missing' ? ClientCommand.setupServer : ClientCommand.showLog;
        if (this.phase !== undefined && (this.state === 'ready' || this.state === 'setup')) {
            const icon = this.state === 'setup' ? label.icon : '$(sync~spin)';
            this.item.text = `${icon} Aider: ${this.phase.length > 50 ? `${this.phase.slice(0, 50)}…` : this.phase}`;
            this.item.tooltip = `Aider: ${this.phase}`;
        } else {
            const summary = statusSummary(this.folder);
            this.item.text = summary.label ? `${label.icon} Aider: ${summary.label}` : `${label.icon} Aider`;
            this.item.tooltip = [label.tooltip, ...summary.lines, ...(this.detail ? [this.detail] : [])].join('\n');
        }
        this.item.backgroundColor = this.state === 'error' ? new vscode.ThemeColor('statusBarItem.errorBackground') : undefined;
    }

    dispose(): void {
        this.item.dispose();
    }
}

/**
 * The settings of the active editor's folder (no editor: the window's first folder), read with
 * that folder's scope: in a multi-root window each folder may have its own test command.
 */
export function activeFolderStatus(): FolderStatus {
    const folders = vscode.workspace.workspaceFolders ?? [];
    const active = vscode.window.activeTextEditor?.document.uri;
    const folder = (active ? vscode.workspace.getWorkspaceFolder(active) : undefined) ?? folders[0];
    const config = vscode.workspace.getConfiguration(SECTION, folder?.uri);
    const read = (key: string): string | undefined => config.get<string | null>(key) ?? undefined;
    return {
        folder: folders.length > 1 ? folder?.name : undefined,
        aiderModel: read('aiderModel'),
        model: read('model'),
        testCommand: read('testCommand'),
    };
}
