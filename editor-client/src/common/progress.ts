/**
 * Long server commands under one cancellable notification. The server reports its work under
 * progress tokens it creates itself (window/workDoneProgress/create); a languageclient
 * middleware routes those messages to the notification of the command that is waiting, and the
 * notification's cancel button cancels the request ($/cancelRequest), which stops the server's work.
 */
import * as vscode from 'vscode';
import {
    ExecuteCommandRequest,
    WorkDoneProgress,
    type Disposable,
    type LanguageClient,
    type Middleware,
    type ProgressToken,
    type WorkDoneProgressBegin,
    type WorkDoneProgressEnd,
    type WorkDoneProgressReport,
} from 'vscode-languageclient/node';
import { asTaskResult, type CommandArgs, type ServerCommandId, type TaskResult } from '../protocol';

type ProgressValue = WorkDoneProgressBegin | WorkDoneProgressReport | WorkDoneProgressEnd;

/** A command waiting for its answer; it receives the server's progress messages. */
export interface ActiveRun {
    readonly token: string;
    report(message: string): void;
    dispose(): void;
}

interface RunState {
    token: string;
    report: (message: string) => void;
    serverTokens: number;
}

let runCounter = 0;

export class ProgressRouter {
    private readonly runs: RunState[] = [];
    private readonly owners = new Map<ProgressToken, RunState>();
    /** Every routed message, e.g. for the status bar ("Iteration 2/3: running tests"); undefined when a run ends. */
    public onPhase: (message: string | undefined) => void = () => undefined;

    readonly middleware: Middleware = {
        handleWorkDoneProgress: (token, params, next) => { this.route(token, params, next); },
    };

    /** Starts routing for a new command; the first progress the server begins after this belongs to it. */
    start(report: (message: string) => void): ActiveRun {
        runCounter += 1;
        const state: RunState = { token: `aider-lsp-client-${process.pid}-${runCounter}`, report, serverTokens: 0 };
        this.runs.push(state);
        this.owners.set(state.token, state);
        return {
            token: state.token,
            report: (message) => { this.deliver(state, message); },
            dispose: () => {
                this.runs.splice(this.runs.indexOf(state), 1);
                for (const [token, owner] of this.owners) {
                    if (owner === state) {
                        this.owners.delete(token);
                    }
                }
                this.onPhase(undefined);
            },
        };
    }

    /** The middleware's handler: a run's messages go to its notification, others to VS Code's default. */
    route(token: ProgressToken, params: ProgressValue, next: (token: ProgressToken, params: ProgressValue) => void): void {
        let owner = this.owners.get(token);
        if (owner === undefined && params.kind === 'begin') {
            owner = this.runs.find((run) => run.serverTokens === 0);
            if (owner !== undefined) {
                owner.serverTokens += 1;
                this.owners.set(token, owner);
            }
        }
        if (owner === undefined || params.kind === 'end') {
            if (owner !== undefined && token !== owner.token) {
                this.owners.delete(token);
            }
            next(token, params); // VS Code's own progress part cleans up on `end`
            return;
        }
        const message = params.message ?? (params.kind === 'begin' ? params.title : undefined);
        if (message) {
            this.deliver(owner, message);
        }
    }

    private deliver(state: RunState, message: string): void {
        state.report(message);
        this.onPhase(message);
    }
}

export class ServerNotRunningError extends Error {
    constructor() {
        super('the Aider server is not running');
    }
}

/** The outcome of one command: its TaskResult, or cancelled by the user. */
export type CommandOutcome = { kind: 'result'; result: TaskResult } | { kind: 'cancelled' };

/**
 * Runs `command` with `arg` under a cancellable notification titled `title`.
 * Resolves to the TaskResult, or `cancelled`; rejects on a JSON-RPC error or a malformed answer.
 */
export async function runServerCommand<C extends ServerCommandId>(
    client: LanguageClient,
    router: ProgressRouter,
    title: string,
    command: C,
    arg: CommandArgs[C],
): Promise<CommandOutcome> {
    return vscode.window.withProgress(
        { location: vscode.ProgressLocation.Notification, title, cancellable: true },
        async (progress, cancel) => {
            const run = router.start((message) => { progress.report({ message }); });
            let listener: Disposable | undefined;
            try {
                // if the server reports under our token, the middleware routes it to this run
                listener = client.onProgress(WorkDoneProgress.type, run.token, () => undefined);
                const answer: unknown = await client.sendRequest(
                    ExecuteCommandRequest.type,
                    { command, arguments: [arg], workDoneToken: run.token },
                    cancel,
                );
                if (cancel.isCancellationRequested) {
                    return { kind: 'cancelled' };
                }
                const result = asTaskResult(answer);
                if (result === undefined) {
                    throw new Error(`${command}: the server's answer is not a TaskResult`);
                }
                return { kind: 'result', result };
            } catch (error) {
                if (cancel.isCancellationRequested) {
                    return { kind: 'cancelled' };
                }
                throw error;
            } finally {
                listener?.dispose();
                run.dispose();
            }
        },
    );
}
