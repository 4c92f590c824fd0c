/**
 * The palette, menu and code-action commands. Each asks what it needs, saves what the server
 * would otherwise refuse, runs one server command under a cancellable notification and tells
 * the user the outcome. Without a running server they say so instead of failing.
 */
import * as fs from 'node:fs';
import * as vscode from 'vscode';
import type { LanguageClient } from 'vscode-languageclient/node';
import { fileContext, selectionArgument } from './common/arguments';
import { runServerCommand, type ProgressRouter } from './common/progress';
import { requestErrorMessage, resultMessage, type ResultMessage } from './common/results';
import { SECTION } from './common/settings';
import { showDiff, type BeforeContentProvider } from './diffView';
import {
    ClientCommand,
    contextMatches,
    ServerCommand,
    stringNote,
    type CommandArgs,
    type EditSelectionArgs,
    type Selection,
    type ServerCommandId,
    type TaskResult,
} from './protocol';

export const API_KEY_SECRET = 'aiderLsp.apiKey';

/** What the commands need from the extension. */
export interface CommandHost {
    client(): LanguageClient | undefined;
    readonly router: ProgressRouter;
    readonly log: vscode.LogOutputChannel;
    readonly chat: vscode.OutputChannel;
    readonly beforeContent: BeforeContentProvider;
    readonly secrets: vscode.SecretStorage;
    restartServer(): Promise<void>;
    setupServer(): Promise<void>;
}

function workspaceRoot(hint?: vscode.Uri): vscode.Uri | undefined {
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

/** Invoked from the explorer (not the palette or the editor's own context menu): the selection is not meant. */
function fromExplorer(clicked: unknown, selected: unknown): boolean {
    const active = vscode.window.activeTextEditor?.document.uri.toString();
    return Array.isArray(selected) || (clicked instanceof vscode.Uri && clicked.toString() !== active);
}

/** Saves dirty files in the workspace first, after asking: the server never meets a dirty buffer by surprise. */
async function saveDirtyFiles(): Promise<boolean> {
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

export class Commands {
    constructor(private readonly host: CommandHost) {}

    register(): vscode.Disposable[] {
        const table: [string, (...args: unknown[]) => unknown][] = [
            [ClientCommand.edit, (clicked, selected) => this.edit(clicked, selected)],
            [ClientCommand.editSelection, (arg) => this.editSelection(arg)],
            [ClientCommand.runWorkflow, (clicked, selected) => this.runWorkflow(clicked, selected)],
            [ClientCommand.undo, () => this.undo()],
            [ClientCommand.findFiles, () => this.findFiles()],
            [ClientCommand.interactive, (clicked, selected) => this.interactive(clicked, selected)],
            [ClientCommand.clearDiagnostics, () => this.clearDiagnostics()],
            [ClientCommand.runTests, () => this.runTests()],
            [ClientCommand.setApiKey, () => this.setApiKey()],
            [ClientCommand.restartServer, () => this.host.restartServer()],
            [ClientCommand.showLog, () => { this.host.log.show(); }],
            [ClientCommand.setupServer, () => this.host.setupServer()],
        ];
        return table.map(([id, handler]) => vscode.commands.registerCommand(id, handler));
    }

    /** Runs a server command; undefined when the server is not running or the user cancelled. */
    async run<C extends ServerCommandId>(title: string, command: C, arg: CommandArgs[C]): Promise<TaskResult | undefined> {
        const client = this.host.client();
        if (client === undefined || !client.isRunning()) {
            const choice = await vscode.window.showErrorMessage('Aider: the server is not running.', 'Restart Server', 'Show Log');
            if (choice === 'Restart Server') {
                await this.host.restartServer();
            } else if (choice === 'Show Log') {
                this.host.log.show();
            }
            return undefined;
        }
        try {
            const outcome = await runServerCommand(client, this.host.router, title, command, arg);
            if (outcome.kind === 'cancelled') {
                this.host.log.info(`${command}: cancelled by the user`);
                void vscode.window.showWarningMessage(`Aider: ${title}: cancelled.`);
                return undefined;
            }
            return outcome.result;
        } catch (error) {
            this.host.log.error(`${command} failed: ${String(error)}`);
            await this.tell(requestErrorMessage(title, error));
            return undefined;
        }
    }

    /** Tells the outcome; "Show Diff" for changed files, "Show Log" for failures. */
    async tell(message: ResultMessage, root?: vscode.Uri): Promise<void> {
        const text = `Aider: ${message.text}`;
        if (message.severity === 'error') {
            if ((await vscode.window.showErrorMessage(text, 'Show Log')) === 'Show Log') {
                this.host.log.show();
            }
            return;
        }
        if (message.severity === 'warning') {
            void vscode.window.showWarningMessage(text);
            return;
        }
        const base = root ?? workspaceRoot();
        if (message.changedFiles.length > 0 && base !== undefined) {
            if ((await vscode.window.showInformationMessage(text, 'Show Diff')) === 'Show Diff') {
                await showDiff(this.host.beforeContent, base, message.diff, message.changedFiles);
            }
            return;
        }
        void vscode.window.showInformationMessage(text);
    }

    private relative(uris: vscode.Uri[]): { root: vscode.Uri | undefined; files: string[] } {
        const root = workspaceRoot(uris[0]);
        return { root, files: root ? fileContext(uris.map((uri) => uri.fsPath), root.fsPath) : [] };
    }

    /** A server command from a code action (e.g. "Fix with Aider"), run like the palette's. */
    async runFromCodeAction(command: string, args: unknown[]): Promise<TaskResult | undefined> {
        const known = Object.values(ServerCommand).find((id) => id === command);
        const arg: unknown = args[0] ?? {};
        if (known === undefined || typeof arg !== 'object' || arg === null) {
            void vscode.window.showErrorMessage(`Aider: unknown command ${command}.`);
            return undefined;
        }
        if (known !== ServerCommand.getContext && known !== ServerCommand.listModels && !(await saveDirtyFiles())) {
            return undefined;
        }
        const title = known === ServerCommand.automatic ? 'Editing with Aider' : known === ServerCommand.workflowRun ? 'Aider workflow' : 'Aider';
        // the argument comes from the server's own code action: pass it through unchanged
        const result = await this.run(title, known, arg);
        if (result) {
            await this.tell(resultMessage(title, result));
        }
        return result;
    }

    async edit(clicked?: unknown, selected?: unknown): Promise<void> {
        const { root, files } = this.relative(chosenFiles(clicked, selected));
        const editor = vscode.window.activeTextEditor;
        const selection =
            !fromExplorer(clicked, selected) && editor
                ? selectionArgument(editor.document.uri.toString(), rangeOf(editor.selection), editor.document.getText(editor.selection))
                : undefined;
        await this.askAndEdit('Edit with Aider', files, selection, root);
    }

    /** Asks for the instruction, saves dirty files, runs one Aider edit and tells the outcome. */
    private async askAndEdit(title: string, files: string[], selection: Selection | undefined, root: vscode.Uri | undefined): Promise<void> {
        const prompt = await vscode.window.showInputBox({
            title,
            prompt: files.length > 0 ? `Files: ${files.join(', ')}${selection ? ' (with the selection)' : ''}` : 'Aider picks the files',
            placeHolder: 'What should Aider change?',
            ignoreFocusOut: true,
        });
        if (!prompt || !(await saveDirtyFiles())) {
            return;
        }
        const arg: CommandArgs['aider-lsp.aider.automatic'] = {
            prompt,
            ...(files.length > 0 ? { file_context: files } : {}),
            ...(selection ? { selection } : {}),
        };
        const result = await this.run('Editing with Aider', ServerCommand.automatic, arg);
        if (result) {
            await this.tell(resultMessage('Edit with Aider', result), root);
        }
    }

    /** The server's "Edit selection with Aider" code action: {uri, range} → an instruction → an edit. */
    async editSelection(arg: unknown): Promise<void> {
        if (!isEditSelectionArgs(arg)) {
            return this.edit();
        }
        const uri = vscode.Uri.parse(arg.uri);
        const document = await vscode.workspace.openTextDocument(uri);
        const range = new vscode.Range(arg.range.start.line, arg.range.start.character, arg.range.end.line, arg.range.end.character);
        const selection = selectionArgument(arg.uri, arg.range, document.getText(range));
        const { root, files } = this.relative([uri]);
        await this.askAndEdit('Edit selection with Aider', files, selection, root);
    }

    async runWorkflow(clicked?: unknown, selected?: unknown): Promise<void> {
        const { root, files } = this.relative(chosenFiles(clicked, selected));
        const goal = await vscode.window.showInputBox({
            title: 'Run Aider Workflow (1/2)',
            placeHolder: 'The goal, e.g. "make the failing parser tests pass"',
            ignoreFocusOut: true,
        });
        if (!goal) {
            return;
        }
        const configured = vscode.workspace.getConfiguration(SECTION).get<string>('testCommand') ?? '';
        const testCommand = await vscode.window.showInputBox({
            title: 'Run Aider Workflow (2/2)',
            prompt: 'The command that tests the result (empty: no tests)',
            value: configured,
            ignoreFocusOut: true,
        });
        if (testCommand === undefined || !(await saveDirtyFiles())) {
            return;
        }
        const arg: CommandArgs['aider-lsp.workflow.run'] = { goal };
        if (testCommand.trim()) {
            arg.test_command = testCommand.trim();
        }
        if (files.length > 0) {
            arg.file_context = files;
        }
        const result = await this.run('Aider workflow', ServerCommand.workflowRun, arg);
        if (result) {
            await this.tell(resultMessage('Workflow', result), root);
        }
    }

    async undo(): Promise<void> {
        const result = await this.run('Undoing the last Aider change', ServerCommand.undo, {});
        if (!result) {
            return;
        }
        const skipped = result.notes.skipped;
        if (result.status === 'FAILED' && Array.isArray(skipped) && skipped.length > 0) {
            const choice = await vscode.window.showWarningMessage(
                `Aider: ${result.content}`,
                { modal: true },
                'Undo Anyway (discard later changes)',
            );
            if (choice) {
                const forced = await this.run('Undoing the last Aider change', ServerCommand.undo, { force: true });
                if (forced) {
                    await this.tell(resultMessage('Undo', forced));
                }
            }
            return;
        }
        await this.tell(resultMessage('Undo', result));
    }

    async findFiles(): Promise<void> {
        const query = await vscode.window.showInputBox({ title: 'Find Relevant Files', placeHolder: 'What are you looking for?' });
        if (!query) {
            return;
        }
        const result = await this.run('Finding relevant files', ServerCommand.getContext, { query });
        if (!result) {
            return;
        }
        if (result.status === 'FAILED') {
            return this.tell(resultMessage('Find Relevant Files', result));
        }
        const matches = contextMatches(result);
        if (matches.length === 0) {
            void vscode.window.showInformationMessage(`Aider: no files match “${query}”.`);
            return;
        }
        const picked = await vscode.window.showQuickPick(
            matches.map((match) => ({
                label: match.path,
                description: match.score === undefined ? '' : `score ${match.score.toFixed(2)}`,
            })),
            { title: `Files relevant to “${query}”`, matchOnDescription: true },
        );
        const root = workspaceRoot();
        if (picked && root) {
            await vscode.window.showTextDocument(vscode.Uri.joinPath(root, picked.label));
        }
    }

    /** An input loop: each turn goes to the same server-side Aider chat; Esc ends it. */
    async interactive(clicked?: unknown, selected?: unknown): Promise<void> {
        const { root, files } = this.relative(chosenFiles(clicked, selected));
        let sessionId: string | undefined;
        this.host.chat.show(true);
        for (;;) {
            const prompt = await vscode.window.showInputBox({
                title: sessionId ? 'Aider session (Esc ends it)' : 'Start an Aider session',
                placeHolder: 'Ask or tell Aider…',
                ignoreFocusOut: true,
            });
            if (!prompt) {
                break;
            }
            if (!(await saveDirtyFiles())) {
                break;
            }
            const result = await this.run('Aider is answering', ServerCommand.interactive, {
                prompt,
                ...(files.length > 0 ? { file_context: files } : {}),
                ...(sessionId ? { session_id: sessionId } : {}),
            });
            if (!result) {
                break;
            }
            sessionId = stringNote(result, 'session_id') ?? sessionId;
            this.host.chat.appendLine(`> ${prompt}`);
            this.host.chat.appendLine(result.content.trim());
            this.host.chat.appendLine('');
            const message = resultMessage('Aider', result);
            if (result.status === 'FAILED' || message.changedFiles.length > 0) {
                void this.tell(message, root);
            }
            if (result.status === 'FAILED') {
                break;
            }
        }
        const client = this.host.client();
        if (sessionId && client?.isRunning()) {
            await this.run('Ending the Aider session', ServerCommand.interactive, { session_id: sessionId, end_session: true });
        }
    }

    async clearDiagnostics(): Promise<void> {
        const result = await this.run('Clearing Aider diagnostics', ServerCommand.clearDiagnostics, {});
        if (result?.status === 'FAILED') {
            await this.tell(resultMessage('Clear Diagnostics', result));
        }
    }

    async runTests(): Promise<void> {
        if (!(await saveDirtyFiles())) {
            return;
        }
        const result = await this.run('Running the tests', ServerCommand.runTests, {});
        if (result) {
            await this.tell(resultMessage('Tests', result));
        }
    }

    async setApiKey(): Promise<void> {
        const key = await vscode.window.showInputBox({
            title: 'Aider: API Key',
            prompt: 'Kept in VS Code\'s secret storage and given to the server in its environment; empty removes it.',
            password: true,
            ignoreFocusOut: true,
        });
        if (key === undefined) {
            return;
        }
        if (key === '') {
            await this.host.secrets.delete(API_KEY_SECRET);
        } else {
            await this.host.secrets.store(API_KEY_SECRET, key);
        }
        await this.host.restartServer();
    }
}

function rangeOf(selection: vscode.Selection): EditSelectionArgs['range'] {
    return {
        start: { line: selection.start.line, character: selection.start.character },
        end: { line: selection.end.line, character: selection.end.character },
    };
}

function isEditSelectionArgs(value: unknown): value is EditSelectionArgs {
    if (typeof value !== 'object' || value === null) {
        return false;
    }
    const candidate = value as { uri?: unknown; range?: { start?: { line?: unknown }; end?: { line?: unknown } } };
    return (
        typeof candidate.uri === 'string' &&
        typeof candidate.range?.start?.line === 'number' &&
        typeof candidate.range?.end?.line === 'number'
    );
}
