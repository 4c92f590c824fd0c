/**
 * Activation (in every window, once it has started): the log, the status items, the diff view's
 * content, the Runs view, the commands and the settings listener. The server starts later, when
 * the first command or the Runs view needs it (server/lifecycle.ts), so a window that never uses
 * Aider pays nothing. The server's life (start, restart, set-up): server/lifecycle.ts;
 * each command's flow: commands.ts → flows/. A map of the folders: src/README.md.
 */
import * as vscode from 'vscode';
import { registerCommands, type CommandHost } from './commands';
import { KnownAttempts } from './common/attempts';
import { loadServerDefaults } from './common/locate';
import { ProgressRouter } from './common/progress';
import { ReadyNotices } from './common/readyNotices';
import { SECTION } from './common/settings';
import { runFromCodeAction } from './flows/codeAction';
import { ServerCommands } from './server/execute';
import { ServerLifecycle } from './server/lifecycle';
import { BEFORE_SCHEME, BeforeContentProvider } from './ui/diffView';
import { IsolatedRunsItem } from './ui/isolatedRuns';
import { LastChange } from './ui/lastChange';
import { RUNS_VIEW, RunsTree } from './ui/runsView';
import { activeFolderStatus, StatusItem } from './ui/status';

let lifecycle: ServerLifecycle | undefined;

export function activate(context: vscode.ExtensionContext): void {
    const info = loadServerDefaults(context.extension.packageJSON);
    const log = vscode.window.createOutputChannel(info.name, { log: true });
    const chat = vscode.window.createOutputChannel('Aider Chat');
    const status = new StatusItem();
    const isolatedRuns = new IsolatedRunsItem();
    const beforeContent = new BeforeContentProvider();
    const router = new ProgressRouter();
    context.subscriptions.push(log, chat, status, isolatedRuns);
    context.subscriptions.push(vscode.workspace.registerTextDocumentContentProvider(BEFORE_SCHEME, beforeContent));

    const server = new ServerLifecycle(context, info, log, status, {
        ...router.middleware,
        // server commands chosen from code actions ("Fix with Aider") get progress, cancel and a result message
        executeCommand: (command, args) => runFromCodeAction(host, command, args),
    });
    const commands = new ServerCommands({ client: () => server.client(), router, log, restartServer: () => restartServer() });
    const attempts = new KnownAttempts();
    const runs = new RunsTree(commands, () => vscode.workspace.workspaceFolders ?? [], () => server.wake(), attempts);
    // a run's progress: the status bar says the phase, the Runs view shows its files as it edits them
    router.onPhase = (phase) => {
        status.setPhase(phase);
        runs.refreshSoon();
    };
    context.subscriptions.push(runs, vscode.window.createTreeView(RUNS_VIEW, { treeDataProvider: runs }));
    // the history is the server's: read it again once a (new) server runs
    const restartServer = (): Promise<void> => server.restartServer().then(() => { runs.refresh(); });
    const host: CommandHost = {
        server: commands,
        log,
        chat,
        beforeContent,
        secrets: context.secrets,
        lastChange: new LastChange(),
        isolatedRuns,
        notices: new ReadyNotices(),
        attempts,
        runs,
        restartServer,
        setupServer: () => server.setupServer().finally(() => { runs.refresh(); }),
        ensureServer: () => server.ensureServer(),
    };
    context.subscriptions.push(...registerCommands(host));
    // the status item follows the active editor's folder (its models, its test command)
    const showFolder = (): void => { status.setFolder(activeFolderStatus()); };
    showFolder();
    context.subscriptions.push(
        vscode.window.onDidChangeActiveTextEditor((editor) => {
            if (editor) {
                showFolder();
            }
        }),
        vscode.workspace.onDidChangeWorkspaceFolders(() => {
            showFolder();
            runs.refresh(); // one folder or several: the view's top level changes
        }),
        vscode.workspace.onDidChangeConfiguration((event) => {
            if (event.affectsConfiguration(`${SECTION}.server`)) {
                void server.settingsChanged().then(() => { runs.refresh(); });
            }
            if (event.affectsConfiguration(SECTION)) {
                showFolder();
            }
        }),
    );
    lifecycle = server;
}

export async function deactivate(): Promise<void> {
    await lifecycle?.stopServer();
    lifecycle = undefined;
}
