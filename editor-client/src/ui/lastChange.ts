/**
 * The last change an Aider command told the user about (an edit's or a workflow run's diff),
 * kept so "Show Last Aider Diff" can open it from the palette after the notification is gone.
 * Undoing its run forgets it: the files are back as they were (undoing an older run keeps it).
 */
import * as vscode from 'vscode';

export interface Change {
    readonly root: vscode.Uri;
    readonly changedFiles: readonly string[];
    readonly diff: string | undefined;
    /** The run of the history that made it, when known. */
    readonly runId?: string;
}

export class LastChange {
    private change: Change | undefined;

    get current(): Change | undefined {
        return this.change;
    }

    remember(change: Change): void {
        this.change = change;
    }

    /** Forgets the change once it is undone: any undo when `runId` is not known, else only that run's. */
    forget(runId?: string): void {
        if (runId === undefined || this.change?.runId === undefined || this.change.runId === runId) {
            this.change = undefined;
        }
    }
}
