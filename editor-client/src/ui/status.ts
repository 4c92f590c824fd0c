/**
 * The status bar item: the server's state and a running command's (or the set-up's) phase; a
 * click shows the log, or starts the set-up when there is no server yet. Red only once
 * something failed: a server not set up yet is no error.
 */
import * as vscode from 'vscode';
import { ClientCommand } from '../protocol';

type ServerState = 'starting' | 'ready' | 'error' | 'stopped' | 'setup' | 'missing';

const LABELS: Record<ServerState, { icon: string; tooltip: string }> = {
    starting: { icon: '$(loading~spin)', tooltip: 'Aider: the server is starting' },
    ready: { icon: '$(check)', tooltip: 'Aider: the server is ready' },
    error: { icon: '$(error)', tooltip: 'Aider: the server is not running — click for the log' },
    stopped: { icon: '$(circle-slash)', tooltip: 'Aider: the server is stopped' },
    setup: { icon: '$(loading~spin)', tooltip: 'Aider: setting up the server' },
    missing: { icon: '$(cloud-download)', tooltip: 'Aider: the server is not set up yet — click to set it up' },
};

export class StatusItem implements vscode.Disposable {
    private readonly item: vscode.StatusBarItem;
    private state: ServerState = 'stopped';
    private phase: string | undefined;
    private detail: string | undefined;
    private model: string | undefined;

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

    /** The Aider model in use (`aiderLsp.aiderModel`), shown beside the state; undefined: none set. */
    setModel(model: string | undefined): void {
        this.model = model;
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
            this.item.text = this.model ? `${label.icon} Aider: ${this.model}` : `${label.icon} Aider`;
            const lines = [label.tooltip, ...(this.model ? [`Model: ${this.model} (Aider: Select Model… to change)`] : []), ...(this.detail ? [this.detail] : [])];
            this.item.tooltip = lines.join('\n');
        }
        this.item.backgroundColor = this.state === 'error' ? new vscode.ThemeColor('statusBarItem.errorBackground') : undefined;
    }

    dispose(): void {
        this.item.dispose();
    }
}
