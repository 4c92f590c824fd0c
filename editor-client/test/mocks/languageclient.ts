/**
 * A stand-in for `vscode-languageclient/node`: the protocol types are the real ones; the
 * LanguageClient records how it was built and the requests sent, and lets the test answer them.
 */
import type { CancellationToken, ProgressToken } from 'vscode-languageserver-protocol';
export * from 'vscode-languageserver-protocol';

export enum State {
    Stopped = 1,
    Starting = 3,
    Running = 2,
}

export enum RevealOutputChannelOn {
    Debug = 0,
    Info = 1,
    Warn = 2,
    Error = 3,
    Never = 4,
}

export interface SentRequest {
    method: string;
    params: { command: string; arguments: unknown[]; workDoneToken?: ProgressToken };
    token: CancellationToken | undefined;
    answer(value: unknown): void;
}

export const clients: FakeLanguageClient[] = [];

export class FakeLanguageClient {
    readonly sent: SentRequest[] = [];
    readonly notifications: { method: string; params: unknown }[] = [];
    readonly progressTokens: ProgressToken[] = [];
    readonly features: { fillClientCapabilities(capabilities: Record<string, unknown>): void }[] = [];
    running = false;
    stopped = false;
    private stateListeners: ((event: { oldState: State; newState: State }) => void)[] = [];
    constructor(
        readonly id: string,
        readonly name: string,
        readonly serverOptions: { command: string; args: string[]; options: { env: Record<string, string | undefined> } },
        readonly clientOptions: {
            initializationOptions: Record<string, unknown>;
            middleware: {
                handleWorkDoneProgress?: (token: ProgressToken, params: unknown, next: (token: ProgressToken, params: unknown) => void) => void;
                executeCommand?: (command: string, args: unknown[], next: unknown) => unknown;
            };
        },
    ) {
        clients.push(this);
    }
    registerFeature(feature: { fillClientCapabilities(capabilities: Record<string, unknown>): void }): void {
        this.features.push(feature);
    }
    start(): Promise<void> {
        this.running = true;
        for (const listener of this.stateListeners) {
            listener({ oldState: State.Starting, newState: State.Running });
        }
        return Promise.resolve();
    }
    stop(): Promise<void> {
        this.running = false;
        this.stopped = true;
        return Promise.resolve();
    }
    isRunning(): boolean {
        return this.running;
    }
    onDidChangeState(listener: (event: { oldState: State; newState: State }) => void): { dispose(): void } {
        this.stateListeners.push(listener);
        return { dispose: () => undefined };
    }
    onProgress(_type: unknown, token: ProgressToken): { dispose(): void } {
        this.progressTokens.push(token);
        return { dispose: () => undefined };
    }
    sendNotification(type: { method: string }, params: unknown): Promise<void> {
        this.notifications.push({ method: type.method, params });
        return Promise.resolve();
    }
    sendRequest(type: { method: string }, params: SentRequest['params'], token?: CancellationToken): Promise<unknown> {
        return new Promise((resolve) => {
            this.sent.push({ method: type.method, params, token, answer: resolve });
        });
    }
}

export { FakeLanguageClient as LanguageClient };
