/**
 * Activation: the log, the status item, the diff view's content, the commands and the settings
 * listener, then the server. The server's life (start, restart, set-up): server/lifecycle.ts;
 * each command's flow: commands.ts → flows/. A map of the folders: src/README.md.
 */
import * as vscode from 'vscode';
import { registerCommands, type CommandHost } from './commands';
import { loadServerDefaults } from './common/locate';
import { ProgressRouter } from './common/progress';
import { SECTION } from './common/settings';
import { runFromCodeAction } from './flows/codeAction';
import { ServerCommands } from './server/execute';
import { ServerLifecycle } from './server/lifecycle';
import { BEFORE_SCHEME, BeforeContentProvider } from './ui/diffView';
import { LastChange } from './ui/lastChange';
import { StatusItem } from './ui/status';

let lifecycle: ServerLifecycle | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
    const info = loadServerDefaults(context.extension.packageJSON);
    const log = vscode.window.createOutputChannel(info.name, { log: true });
    const chat = vscode.window.createOutputChannel('Aider Chat');
    const status = new StatusItem();
    const beforeContent = new BeforeContentProvider();
    const router = new ProgressRouter();
    router.onPhase = (phase) => { status.setPhase(phase); };
    context.subscriptions.push(log, chat, status);
    context.subscriptions.push(vscode.workspace.registerTextDocumentContentProvider(BEFORE_SCHEME, beforeContent));

    const server = new ServerLifecycle(context, info, log, status, {
        ...router.middleware,
        // server commands chosen from code actions ("Fix with Aider") get progress, cancel and a result message
        executeCommand: (command, args) => runFromCodeAction(host, command, args),
    });
    const restartServer = (): Promise<void> => server.restartServer();
    const host: CommandHost = {
        server: new ServerCommands({ client: () => server.client(), router, log, restartServer }),
        log,
        chat,
        beforeContent,
        secrets: context.secrets,
        lastChange: new LastChange(),
        restartServer,
        setupServer: () => server.setupServer(),
        ensureServer: () => server.ensureServer(),
    };
    context.subscriptions.push(...registerCommands(host));
    const showModel = (): void => { status.setModel(vscode.workspace.getConfiguration(SECTION).get<string>('aiderModel') ?? undefined); };
    showModel();
    context.subscriptions.push(
        vscode.workspace.onDidChangeConfiguration((event) => {
            if (event.affectsConfiguration(`${SECTION}.server`)) {
                void restartServer();
            }
            if (event.affectsConfiguration(`${SECTION}.aiderModel`)) {
                showModel();
            }
        }),
    );
    lifecycle = server;
    await server.restartServer();
}

export async function deactivate(): Promise<void> {
    await lifecycle?.stopServer();
    lifecycle = undefined;
}
