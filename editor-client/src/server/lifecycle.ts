/**
 * The language server's life in VS Code: find it, start it, stop it, and the zero set-up when
 * it is missing. It holds the one language client; `restartServer` is the one place it is
 * (re)created. The extension activates in every window (onStartupFinished) but the server starts
 * only when something needs it: the first command (`ensureServer`) or the Runs view shown
 * (`wake`). A missing server offers the set-up before a command that needs it (modal, then the
 * command goes on); one set-up runs at a time.
 */
import * as vscode from 'vscode';
import { State, type LanguageClient, type Middleware } from 'vscode-languageclient/node';
import { locateServer, type ServerInfo, type ServerLocation } from '../common/locate';
import { API_KEY_SECRET, SECTION } from '../common/settings';
import { showWithLog } from '../ui/showLog';
import type { StatusItem } from '../ui/status';
import { createClient } from './client';
import { RESTART } from './execute';
import { pythonExtensionInterpreter } from './python';
import { choosePython, createPrivateServer, SetupError } from './setup';

const SET_UP = 'Set Up';

type Found = Extract<ServerLocation, { kind: 'found' }>;

export class ServerLifecycle {
    private languageClient: LanguageClient | undefined;
    private starting: Promise<void> | undefined;
    /** Why no server was found (undefined: one was): a command then offers the set-up first. */
    private missing: string | undefined;
    /** Why the server found did not start (a bad setting, a crash): told before a command. */
    private notStarted: string | undefined;
    private settingUp: Promise<boolean> | undefined;
    /** Whether a start was ever asked for in this window (until then the server is idle, not stopped). */
    private asked = false;

    /** `middleware` goes to every client started (the server's progress, its code actions' commands). */
    constructor(
        private readonly context: vscode.ExtensionContext,
        private readonly info: ServerInfo,
        private readonly log: vscode.LogOutputChannel,
        private readonly status: StatusItem,
        private readonly middleware: Middleware,
    ) {}

    client(): LanguageClient | undefined {
        return this.languageClient;
    }

    /** Whether a command can be sent now. */
    running(): boolean {
        return this.languageClient?.isRunning() ?? false;
    }

    /**
     * Stops the running client (if any) and starts a new one; one restart at a time. `offerSetup`:
     * a missing server offers its set-up in a notification (not when a modal offer follows).
     */
    restartServer(offerSetup = true): Promise<void> {
        this.asked = true;
        const previous = this.starting ?? Promise.resolve();
        this.starting = previous.then(() => this.startFresh(offerSetup)).finally(() => (this.starting = undefined));
        return this.starting;
    }

    /** Starts the server if nothing asked for it yet in this window, asking the user nothing. */
    async wake(): Promise<void> {
        await (this.asked ? this.starting : this.restartServer(false));
    }

    /** A restart when the server's settings change, if it was started (an idle server stays idle). */
    async settingsChanged(): Promise<void> {
        if (this.asked) {
            await this.restartServer();
        }
    }

    private async startFresh(offerSetup: boolean): Promise<void> {
        await this.stopServer();
        const found = this.locate(offerSetup);
        if (found !== undefined) {
            await this.start(found);
        }
    }

    /** The server to start, else undefined with the reason told (a set-up offered when it is missing). */
    private locate(offerSetup: boolean): Found | undefined {
        const config = vscode.workspace.getConfiguration(SECTION);
        const location = locateServer(config.get<string>('server.path') ?? '', this.context.globalStorageUri.fsPath, process.env.PATH);
        if (location.kind === 'missing') {
            this.log.warn(location.reason);
            this.missing = location.reason;
            // nothing failed yet: the user has not asked for anything
            this.status.setState('missing', location.reason);
            if (offerSetup && this.settingUp === undefined) {
                void this.offerSetup(location.reason);
            }
            return undefined;
        }
        this.missing = undefined;
        if (location.kind === 'badSetting') {
            this.log.error(location.reason);
            this.notStarted = location.reason;
            this.status.setState('error', location.reason);
            void showWithLog(this.log, 'error', `Aider: ${location.reason}.`);
            return undefined;
        }
        this.notStarted = undefined;
        return location;
    }

    private async start({ executable, origin }: Found): Promise<void> {
        this.status.setState('starting');
        this.log.info(`starting ${executable} serve (${origin})`);
        const apiKey = await this.context.secrets.get(API_KEY_SECRET);
        const python = await pythonExtensionInterpreter(vscode.workspace.workspaceFolders?.[0]?.uri);
        const fresh = createClient(this.info, executable, apiKey, this.log, this.middleware, python);
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
            this.notStarted = `it did not start: ${String(error)}`;
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

    /** The offer after a restart: not modal (no command waits for it). */
    private async offerSetup(reason: string): Promise<void> {
        const text = `Aider: ${reason}. Set up a private copy of the server with your Python 3.11+ (a few minutes, about 1 GB)?`;
        if ((await showWithLog(this.log, 'warning', text, SET_UP)) === SET_UP) {
            await this.setupServer();
        }
    }

    /**
     * Before a command that needs the server: waits for a start or set-up under way, offers the
     * set-up when there is no server (modal: the command goes on once it is ready) and a restart
     * when it stopped. True when the server runs.
     */
    async ensureServer(): Promise<boolean> {
        await this.wake();
        if (this.settingUp !== undefined) {
            void vscode.window.showInformationMessage('Aider: the server is being set up; your command goes on when it is ready.');
            await this.settingUp;
        }
        if (this.running()) {
            return true;
        }
        if (this.missing !== undefined) {
            const choice = await vscode.window.showWarningMessage(
                `Aider needs its server first: ${this.missing}.`,
                {
                    modal: true,
                    detail: 'Set Up creates a private copy of the server with your Python 3.11+ (a few minutes, about 1 GB of downloads); your command goes on when it is ready. Or install aider-lsp yourself and set aiderLsp.server.path.',
                },
                SET_UP,
            );
            return choice === SET_UP && (await this.setupServer());
        }
        const why = this.notStarted === undefined ? '' : `: ${this.notStarted}`;
        if ((await showWithLog(this.log, 'error', `Aider: the server is not running${why}.`, RESTART)) === RESTART) {
            await this.restartServer();
        }
        return this.running();
    }

    /** Sets up the private server and starts it; one set-up at a time (a second call joins the first). */
    setupServer(): Promise<boolean> {
        if (this.settingUp !== undefined) {
            void vscode.window.showInformationMessage('Aider: the server is already being set up (see its progress).');
            return this.settingUp;
        }
        const running = this.runSetup().finally(() => {
            this.settingUp = undefined;
        });
        this.settingUp = running;
        return running;
    }

    private async runSetup(): Promise<boolean> {
        const config = vscode.workspace.getConfiguration(SECTION);
        const python = choosePython(config.get<string>('server.python') ?? '', process.env.PATH);
        this.status.setState('setup');
        try {
            const executable = await createPrivateServer(python, this.context.extensionPath, this.context.globalStorageUri.fsPath, this.log, (phase) => {
                this.status.setPhase(phase);
            });
            this.log.info(`set up ${executable}`);
        } catch (error) {
            const message = error instanceof SetupError ? error.message : `set-up failed: ${String(error)}`;
            this.log.error(message);
            this.status.setState('error', message);
            await showWithLog(this.log, 'error', `Aider: ${message}`);
            return false;
        } finally {
            this.status.setPhase(undefined);
        }
        await this.restartServer();
        if (this.running()) {
            void vscode.window.showInformationMessage('Aider: the server is set up and running.');
            return true;
        }
        void showWithLog(this.log, 'error', `Aider: the server was set up but is not running${this.notStarted === undefined ? '' : `: ${this.notStarted}`}.`);
        return false;
    }
}
