/**
 * A small stand-in for the `vscode` module: enough of the API for the extension's activation
 * and commands, recording what the extension shows and registers so tests can assert on it.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { CancellationTokenSource, Emitter, type CancellationToken } from 'vscode-languageserver-protocol';

export class Uri {
    private constructor(
        readonly scheme: string,
        readonly path: string,
        readonly query: string = '',
    ) {}
    static file(fsPath: string): Uri {
        return new Uri('file', path.resolve(fsPath));
    }
    static parse(value: string): Uri {
        const url = new URL(value);
        return new Uri(url.protocol.replace(/:$/, ''), decodeURIComponent(url.pathname), url.search.replace(/^\?/, ''));
    }
    static from(parts: { scheme: string; path: string; query?: string }): Uri {
        return new Uri(parts.scheme, parts.path, parts.query ?? '');
    }
    static joinPath(base: Uri, ...segments: string[]): Uri {
        return new Uri(base.scheme, path.posix.join(base.path, ...segments));
    }
    get fsPath(): string {
        return this.path;
    }
    toString(): string {
        return `${this.scheme}://${this.path}${this.query ? `?${this.query}` : ''}`;
    }
}

export class Position {
    constructor(
        readonly line: number,
        readonly character: number,
    ) {}
}

export class Range {
    readonly start: Position;
    readonly end: Position;
    constructor(startLine: number, startCharacter: number, endLine: number, endCharacter: number) {
        this.start = new Position(startLine, startCharacter);
        this.end = new Position(endLine, endCharacter);
    }
}

export class Selection extends Range {
    get isEmpty(): boolean {
        return this.start.line === this.end.line && this.start.character === this.end.character;
    }
}

export class ThemeColor {
    constructor(readonly id: string) {}
}

export class ThemeIcon {
    static readonly File = new ThemeIcon('file');
    constructor(
        readonly id: string,
        readonly color?: ThemeColor,
    ) {}
}

export enum TreeItemCollapsibleState {
    None = 0,
    Collapsed = 1,
    Expanded = 2,
}

export class TreeItem {
    id?: string;
    description?: string | boolean;
    tooltip?: string;
    iconPath?: ThemeIcon;
    contextValue?: string;
    resourceUri?: Uri;
    command?: { command: string; title: string; arguments?: unknown[] };
    constructor(
        readonly label: string,
        readonly collapsibleState: TreeItemCollapsibleState = TreeItemCollapsibleState.None,
    ) {}
}

/** A tree view's data provider as the extension registered it (the tests ask it for items). */
export interface FakeTreeDataProvider {
    getChildren(element?: unknown): Promise<unknown[]>;
    getTreeItem(element: unknown): TreeItem;
    onDidChangeTreeData?: (listener: () => void) => { dispose(): void };
}

export enum ProgressLocation {
    SourceControl = 1,
    Window = 10,
    Notification = 15,
}

export enum ConfigurationTarget {
    Global = 1,
    Workspace = 2,
    WorkspaceFolder = 3,
}

export enum StatusBarAlignment {
    Left = 1,
    Right = 2,
}

export { CancellationTokenSource, Emitter as EventEmitter };

interface Shown {
    kind: 'info' | 'warning' | 'error';
    text: string;
    items: string[];
    /** A modal message's detail, when it has one. */
    detail?: string;
}

export interface FakeDocument {
    uri: Uri;
    isDirty: boolean;
    text: string;
    getText(range?: Range): string;
    save(): Promise<boolean>;
}

/** What the tests script and read back. */
export const recorded = {
    commands: new Map<string, (...args: unknown[]) => unknown>(),
    shown: [] as Shown[],
    inputs: [] as (string | undefined)[],
    /** The answers of the messages, in turn; a promise: a notification left standing until it settles. */
    answers: [] as (string | undefined | Promise<string | undefined>)[],
    progress: [] as { title: string; messages: string[]; cancel: CancellationTokenSource }[],
    statusTexts: [] as string[],
    /** The text of a status item each time it was hidden. */
    statusHidden: [] as string[],
    configuration: {} as Record<string, unknown>,
    configurationTargets: [] as (ConfigurationTarget | undefined)[],
    treeViews: new Map<string, FakeTreeDataProvider>(),
    contentProviders: new Map<string, { provideTextDocumentContent(uri: Uri): string }>(),
    clipboard: '',
    statusBarMessages: [] as string[],
    logLines: [] as string[],
    /** The names of the folders picked, one per "which folder?" question (undefined: dismissed). */
    folderPicks: [] as (string | undefined)[],
    folderPickAsked: 0,
    /** The items of each quick pick shown (the mock picks the first, or the next index of `picks`). */
    quickPicks: [] as unknown[][],
    picks: [] as number[],
    outputChannels: [] as string[],
    reset(): void {
        this.shown.length = 0;
        this.inputs.length = 0;
        this.answers.length = 0;
        this.progress.length = 0;
        this.statusTexts.length = 0;
        this.statusHidden.length = 0;
        this.folderPicks.length = 0;
        this.folderPickAsked = 0;
        this.quickPicks.length = 0;
        this.picks.length = 0;
    },
};

function show(kind: Shown['kind']) {
    return (text: string, ...rest: unknown[]): Promise<string | undefined> => {
        const items = rest.filter((item): item is string => typeof item === 'string');
        const options = rest[0] as { detail?: unknown } | undefined;
        const detail = typeof options === 'object' && typeof options.detail === 'string' ? options.detail : undefined;
        recorded.shown.push(detail === undefined ? { kind, text, items } : { kind, text, items, detail });
        return Promise.resolve(recorded.answers.shift());
    };
}

function logChannel(): Record<string, unknown> {
    const line = (level: string) => (message: string): void => {
        recorded.logLines.push(`${level} ${message}`);
    };
    return {
        name: 'log',
        logLevel: 2,
        onDidChangeLogLevel: new Emitter<number>().event,
        info: line('info'),
        warn: line('warn'),
        error: line('error'),
        debug: line('debug'),
        trace: line('trace'),
        append: line('append'),
        appendLine: line('line'),
        replace: line('replace'),
        clear: () => undefined,
        show: () => undefined,
        hide: () => undefined,
        dispose: () => undefined,
    };
}

export const window = {
    activeTextEditor: undefined as undefined | { document: FakeDocument; selection: Selection },
    /** The listeners of onDidChangeActiveTextEditor (a test switching editors calls them). */
    activeEditorListeners: [] as ((editor: unknown) => void)[],
    onDidChangeActiveTextEditor: (listener: (editor: unknown) => void): { dispose(): void } => {
        window.activeEditorListeners.push(listener);
        return { dispose: () => window.activeEditorListeners.splice(window.activeEditorListeners.indexOf(listener), 1) };
    },
    createOutputChannel: (name: string): Record<string, unknown> => {
        recorded.outputChannels.push(name);
        return logChannel();
    },
    createStatusBarItem: (): Record<string, unknown> => {
        const item: Record<string, unknown> = { show: () => undefined, dispose: () => undefined };
        item.hide = (): void => void recorded.statusHidden.push(String(item.text));
        return new Proxy(item, {
            set(target, key, value): boolean {
                target[key as string] = value;
                if (key === 'text') {
                    recorded.statusTexts.push(String(value));
                }
                return true;
            },
        });
    },
    createTreeView: (id: string, options: { treeDataProvider: FakeTreeDataProvider }): { dispose(): void } => {
        recorded.treeViews.set(id, options.treeDataProvider);
        return { dispose: () => recorded.treeViews.delete(id) };
    },
    setStatusBarMessage: (text: string): { dispose(): void } => {
        recorded.statusBarMessages.push(text);
        return { dispose: () => undefined };
    },
    showInformationMessage: show('info'),
    showWarningMessage: show('warning'),
    showErrorMessage: show('error'),
    showInputBox: (): Promise<string | undefined> => Promise.resolve(recorded.inputs.shift()),
    showQuickPick: <T>(items: T[]): Promise<T | undefined> => {
        recorded.quickPicks.push(items);
        return Promise.resolve(items[recorded.picks.shift() ?? 0]);
    },
    showTextDocument: (): Promise<undefined> => Promise.resolve(undefined),
    showWorkspaceFolderPick: (): Promise<{ uri: Uri; name: string } | undefined> => {
        recorded.folderPickAsked += 1;
        const name = recorded.folderPicks.shift();
        return Promise.resolve(workspace.workspaceFolders.find((folder) => folder.name === name));
    },
    withProgress: async <R>(
        options: { title: string },
        task: (progress: { report(value: { message?: string }): void }, token: CancellationToken) => Promise<R>,
    ): Promise<R> => {
        const entry = { title: options.title, messages: [] as string[], cancel: new CancellationTokenSource() };
        recorded.progress.push(entry);
        return task({ report: (value) => value.message && entry.messages.push(value.message) }, entry.cancel.token);
    },
};

export const workspace = {
    /** Workspace Trust: false is Restricted Mode. */
    isTrusted: true,
    workspaceFolders: [] as { uri: Uri; name: string; index: number }[],
    textDocuments: [] as FakeDocument[],
    /** The innermost folder holding `uri`, as VS Code answers for nested folders. */
    getWorkspaceFolder: (uri: Uri): { uri: Uri; name: string } | undefined =>
        workspace.workspaceFolders
            .filter((folder) => uri.path === folder.uri.path || uri.path.startsWith(`${folder.uri.path}/`))
            .sort((a, b) => b.uri.path.length - a.uri.path.length)[0],
    /** A folder's own values (its .vscode/settings.json): folder path → `section.key` → value. */
    folderConfiguration: new Map<string, Record<string, unknown>>(),
    getConfiguration: (section: string, scope?: Uri) => ({
        get: (key: string): unknown => {
            const own = scope ? workspace.folderConfiguration.get(scope.path)?.[`${section}.${key}`] : undefined;
            return own ?? recorded.configuration[`${section}.${key}`];
        },
        update: (key: string, value: unknown, target?: ConfigurationTarget): Promise<void> => {
            recorded.configuration[`${section}.${key}`] = value;
            recorded.configurationTargets.push(target);
            return Promise.resolve();
        },
    }),
    onDidChangeConfiguration: (): { dispose(): void } => ({ dispose: () => undefined }),
    onDidChangeWorkspaceFolders: (): { dispose(): void } => ({ dispose: () => undefined }),
    registerTextDocumentContentProvider: (scheme: string, provider: { provideTextDocumentContent(uri: Uri): string }): { dispose(): void } => {
        recorded.contentProviders.set(scheme, provider);
        return { dispose: () => recorded.contentProviders.delete(scheme) };
    },
    asRelativePath: (uri: Uri): string => {
        const folder = workspace.workspaceFolders[0]?.uri.path;
        return folder && uri.path.startsWith(`${folder}/`) ? uri.path.slice(folder.length + 1) : uri.path;
    },
    openTextDocument: (uri: Uri): Promise<FakeDocument | undefined> =>
        Promise.resolve(workspace.textDocuments.find((doc) => doc.uri.toString() === uri.toString())),
    fs: { readFile: (uri: Uri): Promise<Uint8Array> => fs.promises.readFile(uri.fsPath).catch(() => new Uint8Array()) },
};

export const env = {
    clipboard: {
        writeText: (text: string): Promise<void> => {
            recorded.clipboard = text;
            return Promise.resolve();
        },
        readText: (): Promise<string> => Promise.resolve(recorded.clipboard),
    },
};

export const commands = {
    executed: [] as { id: string; args: unknown[] }[],
    registerCommand: (id: string, handler: (...args: unknown[]) => unknown): { dispose(): void } => {
        recorded.commands.set(id, handler);
        return { dispose: () => recorded.commands.delete(id) };
    },
    executeCommand: (id: string, ...args: unknown[]): Promise<unknown> => {
        commands.executed.push({ id, args });
        const handler = recorded.commands.get(id);
        return Promise.resolve(handler ? handler(...args) : undefined);
    },
};
