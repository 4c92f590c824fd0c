/**
 * Which files a flow is about (the active file, the explorer's selection) as workspace-relative
 * paths, and the one question before the server edits files on disk: save the dirty ones?
 */
import * as fs from 'node:fs';
import * as vscode from 'vscode';
import { fileContext } from '../common/arguments';

/** The workspace folder of `hint`, else the first one. */
export function workspaceRoot(hint?: vscode.Uri): vscode.Uri | undefined {
    const folder = hint ? vscode.workspace.getWorkspaceFolder(hint) : undefined;
    return (folder ?? vscode.workspace.workspaceFolders?.[0])?.uri;
}

function isFile(uri: vscode.Uri): boolean {
    try {
        return uri.scheme === 'file' && fs.statSync(uri.fsPath).isFile();
    } catch {
        return false;
    }
}

/** The active file first, then the files selected in the explorer (folders left out). */
export function chosenFiles(clicked: unknown, selected: unknown): vscode.Uri[] {
    const active = vscode.window.activeTextEditor?.document.uri;
    const fromMenu: unknown[] = Array.isArray(selected) ? (selected as unknown[]) : [clicked];
    const uris = [active, ...fromMenu].filter((item): item is vscode.Uri => item instanceof vscode.Uri);
    return uris.filter(isFile);
}

/**
 * The files a user picked for a workflow: the explorer's selection, or the active file when text
 * is selected in it. The file that merely happens to be open is not a choice (a palette "Run
 * Workflow…" with an unrelated file open must still find the right one): the server counts the
 * open files as candidates beside its index's.
 */
export function pickedFiles(clicked: unknown, selected: unknown): vscode.Uri[] {
    if (fromExplorer(clicked, selected)) {
        const fromMenu: unknown[] = Array.isArray(selected) ? (selected as unknown[]) : [clicked];
        return fromMenu.filter((item): item is vscode.Uri => item instanceof vscode.Uri).filter(isFile);
    }
    const editor = vscode.window.activeTextEditor;
    return editor && !editor.selection.isEmpty ? [editor.document.uri].filter(isFile) : [];
}

/** Invoked from the explorer (not the palette or the editor's own context menu): the selection is not meant. */
export function fromExplorer(clicked: unknown, selected: unknown): boolean {
    const active = vscode.window.activeTextEditor?.document.uri.toString();
    return Array.isArray(selected) || (clicked instanceof vscode.Uri && clicked.toString() !== active);
}

/** The workspace folder of the first file (else of `hint`) and the files as `file_context` paths. */
export function relative(uris: vscode.Uri[], hint?: vscode.Uri): { root: vscode.Uri | undefined; files: string[] } {
    const root = workspaceRoot(uris[0] ?? hint);
    return { root, files: root ? fileContext(uris.map((uri) => uri.fsPath), root.fsPath) : [] };
}

/** Saves dirty files in the workspace first, after asking: the server never meets a dirty buffer by surprise. */
export async function saveDirtyFiles(): Promise<boolean> {
    const dirty = vscode.workspace.textDocuments.filter((doc) => doc.isDirty && doc.uri.scheme === 'file');
    if (dirty.length === 0) {
        return true;
    }
    const names = dirty.map((doc) => vscode.workspace.asRelativePath(doc.uri)).join(', ');
    const choice = await vscode.window.showWarningMessage(
        `Aider edits files on disk. Save ${names} first?`,
        { modal: true },
        'Save and Continue',
    );
    if (choice !== 'Save and Continue') {
        return false;
    }
    const saved = await Promise.all(dirty.map((doc) => doc.save()));
    return saved.every(Boolean);
}
