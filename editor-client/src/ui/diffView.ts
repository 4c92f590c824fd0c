/**
 * "Show Diff": VS Code's diff editor on each changed file, before (rebuilt from the server's
 * diff) and after (the file on disk). A file whose before-content cannot be rebuilt (changed
 * since, binary) gets the raw diff in a read-only document instead.
 */
import * as vscode from 'vscode';
import { contentBefore, splitDiff } from '../common/diff';

export const BEFORE_SCHEME = 'aider-lsp-before';

export class BeforeContentProvider implements vscode.TextDocumentContentProvider {
    private readonly contents = new Map<string, string>();
    private counter = 0;

    /** A URI that serves `content` for `relativePath`. */
    add(relativePath: string, content: string): vscode.Uri {
        this.counter += 1;
        const uri = vscode.Uri.from({ scheme: BEFORE_SCHEME, path: `/${relativePath}`, query: String(this.counter) });
        this.contents.set(uri.toString(), content);
        return uri;
    }

    provideTextDocumentContent(uri: vscode.Uri): string {
        return this.contents.get(uri.toString()) ?? '';
    }
}

async function readText(uri: vscode.Uri): Promise<string | undefined> {
    try {
        return new TextDecoder().decode(await vscode.workspace.fs.readFile(uri));
    } catch {
        return undefined;
    }
}

/** Opens one diff editor per changed file. */
export async function showDiff(
    provider: BeforeContentProvider,
    workspaceRoot: vscode.Uri,
    diff: string | undefined,
    changedFiles: readonly string[],
): Promise<void> {
    const sections = splitDiff(diff ?? '');
    let unreadable = '';
    for (const relativePath of changedFiles) {
        const fileUri = vscode.Uri.joinPath(workspaceRoot, relativePath);
        const section = sections.get(relativePath);
        const after = await readText(fileUri);
        const before = section !== undefined && after !== undefined ? contentBefore(after, section) : undefined;
        if (before === undefined) {
            unreadable += section ?? `(no diff for ${relativePath})\n`;
            continue;
        }
        await vscode.commands.executeCommand(
            'vscode.diff',
            provider.add(relativePath, before),
            fileUri,
            `${relativePath} (before Aider ↔ now)`,
            { preview: false },
        );
    }
    if (unreadable) {
        const document = await vscode.workspace.openTextDocument({ content: unreadable, language: 'diff' });
        await vscode.window.showTextDocument(document, { preview: true });
    }
}
