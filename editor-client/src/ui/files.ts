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

/**
 * The folder a flow runs in, in a multi-root window: that of `hint` (its files, the active
 * editor), else the one the user picks. `{}` in a window of one folder (the server knows it) or
 * none; undefined when the user dismissed the pick (the flow stops).
 */
export async function chooseFolder(hint?: vscode.Uri): Promise<{ folder?: vscode.Uri } | undefined> {
    const folders = vscode.workspace.workspaceFolders ?? [];
    if (folders.length <= 1) {
        return {};
    }
    const own = hint ? vscode.workspace.getWorkspaceFolder(hint) : undefined;
    if (own) {
        return { folder: own.uri };
    }
    const picked = await vscode.window.showWorkspaceFolderPick({ placeHolder: 'Which folder should Aider work in?', ignoreFocusOut: true });
    return picked ? { folder: picked.uri } : undefined;
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

/** The files as `file_context` paths relative to `root` (files in another folder left out). */
export function relative(uris: vscode.Uri[], root: vscode.Uri | undefined): string[] {
    return root ? fileContext(uris.map((uri) => uri.fsPath), root.fsPath) : [];
}

/**
 * The open documents with unsaved changes among the files of `root` (default: the first
 * folder), by path relative to it: what the server calls them in that folder. A dirty file of
 * the same name in another folder of the window is not one of them.
 */
export function dirtyIn(root: vscode.Uri | undefined): Map<string, vscode.TextDocument> {
    const dirty = new Map<string, vscode.TextDocument>();
    for (const doc of vscode.workspace.textDocuments) {
        const [rel] = doc.isDirty && doc.uri.scheme === 'file' ? relative([doc.uri], root ?? workspaceRoot()) : [];
        if (rel !== undefined) {
            dirty.set(rel, doc);
        }
    }
    return dirty;
}

/** Where a flow runs: the folder to name to the server (multi-root only), its root, its files. */
export interface Place {
    folder?: vscode.Uri;
    root: vscode.Uri | undefined;
    files: string[];
}

/**
 * Where a flow about `uris` runs: its folder (asked in a multi-root window when the files do
 * not say, see chooseFolder), the root its files are relative to, and the files; undefined
 * when the user dismissed the question.
 */
export async function placeOf(uris: vscode.Uri[], hint?: vscode.Uri): Promise<Place | undefined> {
    const choice = await chooseFolder(uris[0] ?? hint);
    if (choice === undefined) {
        return undefined;
    }
    const root = choice.folder ?? workspaceRoot(uris[0] ?? hint);
    return { folder: choice.folder, root, files: relative(uris, root) };
}

/**
 * Saves dirty files in the workspace first, after asking: the server never meets a dirty buffer
 * by surprise. `why` says why the question is asked (default: Aider edits files on disk).
 */
export async function saveDirtyFiles(why = 'Aider edits files on disk.'): Promise<boolean> {
    // the workspace's files only: Aider and a worktree read those (an unsaved settings.json or
    // another folder's file is not theirs to save)
    const dirty = vscode.workspace.textDocuments.filter(
        (doc) => doc.isDirty && doc.uri.scheme === 'file' && vscode.workspace.getWorkspaceFolder(doc.uri) !== undefined,
    );
    if (dirty.length === 0) {
        return true;
    }
    const names = dirty.map((doc) => vscode.workspace.asRelativePath(doc.uri)).join(', ');
    const choice = await vscode.window.showWarningMessage(
        `${why} Save ${names} first?`,
        { modal: true },
        'Save and Continue',
    );
    if (choice !== 'Save and Continue') {
        return false;
    }
    const saved = await Promise.all(dirty.map((doc) => doc.save()));
    return saved.every(Boolean);
}
