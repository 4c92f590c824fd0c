/**
 * Activation: the log, the status item, the commands, then the server. The Extension holds the
 * one language client; `restartServer` is the one place it is (re)created, and a missing server
 * offers the zero set-up.
 */
import * as vscode from 'vscode';
import { State, type LanguageClient } from 'vscode-languageclient/node';
import { registerCommands, type CommandHost } from './commands';
import { ProgressRouter } from './common/progress';
import { createServer, loadServerDefaults, locateServer, type ServerInfo } from './common/server';
import { API_KEY_SECRET, SECTION } from './common/settings';
import { choosePython, createPrivateServer, SetupError } from './common/setup';
import { pythonExtensionInterpreter } from './common/python';
import { showWithLog } from './common/showLog';
import { StatusItem } from './common/status';
import { BEFORE_SCHEME, BeforeContentProvider } from './diffView';
import { runFromCodeAction } from './flows/codeAction';
import { ServerCommands, type ServerCommandHost } from './serverCommand';

class Extension implements CommandHost, ServerCommandHost {
    readonly router = new ProgressRouter();
    readonly server = new ServerCommands(this);
    readonly log: vscode.LogOutputChannel;
    readonly chat: vscode.OutputChannel;
    readonly beforeContent = new BeforeContentProvider();
    readonly status: StatusItem;
    readonly secrets: vscode.SecretStorage;
    private readonly info: ServerInfo;
    private languageClient: LanguageClient | undefined;
    private starting: Promise<void> | undefined;

    constructor(private readonly context: vscode.ExtensionContext) {
        this.info = loadServerDefaults(context.extension.packageJSON);
        this.log = vscode.window.createOutputChannel(this.info.name, { log: true });
        this.chat = vscode.window.createOutputChannel('Aider Chat');
        this.status = new StatusItem();
        this.secrets = context.secrets;
        this.router.onPhase = (phase) => { this.status.setPhase(phase); };
        context.subscriptions.push(this.log, this.chat, this.status);
        context.subscriptions.push(vscode.workspace.registerTextDocumentContentProvider(BEFORE_SCHEME, this.beforeContent));
        context.subscriptions.push(...registerCommands(this));
        context.subscriptions.push(
            vscode.workspace.onDidChangeConfiguration((event) => {
                if (event.affectsConfiguration(`${SECTION}.server`)) {
                    void this.restartServer();
                }
            }),
        );
    }

    client(): LanguageClient | undefined {
        return this.languageClient;
    }

    /** Stops the running client (if any) and starts a new one; one restart at a time. */
    restartServer(): Promise<void> {
        const previous = this.starting ?? Promise.resolve();
        this.starting = previous.then(() => this.startFresh()).finally(() => (this.starting = undefined));
        return this.starting;
    }

    private async startFresh(): Promise<void> {
        await this.stopServer();
        const config = vscode.workspace.getConfiguration(SECTION);
        const location = locateServer(config.get<string>('server.path') ?? '', this.context.globalStorageUri.fsPath, process.env.PATH);
        if (location.kind === 'missing') {
            this.log.warn(location.reason);
            this.status.setState('error', location.reason);
            void this.offerSetup(location.reason);
            return;
        }
        this.status.setState('starting');
        this.log.info(`starting ${location.executable} serve (${location.origin})`);
        const apiKey = await this.secrets.get(API_KEY_SECRET);
        const python = await pythonExtensionInterpreter(vscode.workspace.workspaceFolders?.[0]?.uri);
        const fresh = createServer(
            this.info,
            location.executable,
            apiKey,
            this.log,
            {
                ...this.router.middleware,
                // server commands chosen from code actions ("Fix with Aider") get progress, cancel and a result message
                executeCommand: (command, args) => runFromCodeAction(this, command, args),
            },
            python,
        );
        fresh.onDidChangeState((event) => {
            if (event.newState === State.Running) {
                this.status.setState('ready');
            } else if (event.newState === State.Stopped && this.languageClient === fresh) {
                this.status.setState('error', 'the server stopped');
            }
        });
        this.languageClient = fresh;
        try {
            await fresh.start();
            this.status.setState('ready');
        } catch (error) {
            this.log.error(`the server did not start: ${String(error)}`);
            this.status.setState('error', String(error));
            // not awaited: activation (and every command waiting for it) must not hang until the
            // user dismisses this message; commands then say "the server is not running"
            void showWithLog(this.log, 'error', `Aider: the server did not start: ${String(error)}`);
        }
    }

    async stopServer(): Promise<void> {
        const running = this.languageClient;
        this.languageClient = undefined;
        if (running) {
            try {
                await running.stop();
            } catch (error) {
                this.log.warn(`stopping the server: ${String(error)}`);
            }
        }
        this.status.setState('stopped');
    }

    private async offerSetup(reason: string): Promise<void> {
        const text = `Aider: ${reason}. Set up a private copy of the server with your Python 3.11+ (a few minutes, about 1 GB)?`;
        if ((await showWithLog(this.log, 'warning', text, 'Set Up')) === 'Set Up') {
            await this.setupServer();
        }
    }

    async setupServer(): Promise<void> {
        const config = vscode.workspace.getConfiguration(SECTION);
        const python = choosePython(config.get<string>('server.python') ?? '', process.env.PATH);
        this.status.setState('setup');
        try {
            const executable = await createPrivateServer(python, this.context.extensionPath, this.context.globalStorageUri.fsPath, this.log);
            this.log.info(`set up ${executable}`);
        } catch (error) {
            const message = error instanceof SetupError ? error.message : `set-up failed: ${String(error)}`;
            this.log.error(message);
            this.status.setState('error', message);
            await showWithLog(this.log, 'error', `Aider: ${message}`);
            return;
        }
        await this.restartServer();
    }
}

let extension: Extension | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
    extension = new Extension(context);
    await extension.restartServer();
}

export async function deactivate(): Promise<void> {
    await extension?.stopServer();
    extension = undefined;
}
