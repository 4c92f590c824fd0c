/**
 * The status bar item counting the workflow runs under way in worktrees of their own
 * ("$(git-branch) 2 runs"), hidden when none runs; a click shows the Runs view. Each run's own
 * progress stays in its notification: this only says how many there are.
 */
import * as vscode from 'vscode';
import { isolatedRunsLabel, isolatedRunsTooltip } from '../common/isolation';
import { RUNS_VIEW } from './runsView';

export class IsolatedRunsItem implements vscode.Disposable {
    private readonly item: vscode.StatusBarItem;
    private count = 0;

    constructor() {
        this.item = vscode.window.createStatusBarItem('aider-lsp.isolatedRuns', vscode.StatusBarAlignment.Left, -1);
        this.item.name = 'Aider: runs in worktrees';
        this.item.command = `${RUNS_VIEW}.focus`; // VS Code's own "focus this view" command
    }

    /** Counts `work` (an isolated run's request; a group's: its `count` attempts) while it is under way. */
    async track<T>(work: Promise<T>, count = 1): Promise<T> {
        this.change(count);
        try {
            return await work;
        } finally {
            this.change(-count);
        }
    }

    private change(by: number): void {
        this.count += by;
        const label = isolatedRunsLabel(this.count);
        if (label === undefined) {
            this.item.hide();
            return;
        }
        this.item.text = label;
        this.item.tooltip = isolatedRunsTooltip(this.count);
        this.item.show();
    }

    dispose(): void {
        this.item.dispose();
    }
}
