/**
 * The last change an Aider command told the user about (an edit's or a workflow run's diff),
 * kept so "Show Last Aider Diff" can open it from the palette after the notification is gone.
 * Undo forgets it: the files are back as they were.
 */
import * as vscode from 'vscode';

export interface Change {
    readonly root: vscode.Uri;
    readonly changedFiles: readonly string[];
    readonly diff: string | undefined;
}

export class LastChange {
    private change: Change | undefined;

    get current(): Change | undefined {
        return this.change;
    }

    remember(change: Change): void {
        this.change = change;
    }

    forget(): void {
        this.change = undefined;
    }
}
