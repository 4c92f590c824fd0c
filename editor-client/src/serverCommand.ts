/**
 * Running a server command (workspace/executeCommand) for the UI: the one place a request is
 * sent. It runs under a cancellable notification whose cancel button cancels the request
 * ($/cancelRequest, which stops the server's work), the server's progress is routed into it
 * (common/progress.ts), and a server that is not running, a cancel or a failed request is told
 * to the user here, so the flows (src/flows/) only read TaskResults.
 */
import * as vscode from 'vscode';
import { ExecuteCommandRequest, WorkDoneProgress, type Disposable, type LanguageClient } from 'vscode-languageclient/node';
import type { ProgressRouter } from './common/progress';
import { requestErrorMessage } from './common/results';
import { showWithLog } from './common/showLog';
import { asTaskResult, type CommandArgs, type ServerCommandId, type TaskResult } from './protocol';

/** What running a command needs from the extension. */
export interface ServerCommandHost {
    client(): LanguageClient | undefined;
    readonly router: ProgressRouter;
    readonly log: vscode.LogOutputChannel;
    restartServer(): Promise<void>;
}

/** The outcome of one request: its TaskResult, or cancelled by the user. */
type Outcome = { kind: 'result'; result: TaskResult } | { kind: 'cancelled' };

const RESTART = 'Restart Server';

export class ServerCommands {
    constructor(private readonly host: ServerCommandHost) {}

    /** Whether a command can be sent now. */
    running(): boolean {
        return this.host.client()?.isRunning() ?? false;
    }

    /**
     * Runs `command` with `arg` under a notification titled `title`. Undefined when the server
     * is not running, the user cancelled or the request failed: each is already told.
     */
    async run<C extends ServerCommandId>(title: string, command: C, arg: CommandArgs[C]): Promise<TaskResult | undefined> {
        const client = this.host.client();
        if (client === undefined || !client.isRunning()) {
            if ((await showWithLog(this.host.log, 'error', 'Aider: the server is not running.', RESTART)) === RESTART) {
                await this.host.restartServer();
            }
            return undefined;
        }
        try {
            const outcome = await this.execute(client, title, command, arg);
            if (outcome.kind === 'cancelled') {
                this.host.log.info(`${command}: cancelled by the user`);
                void vscode.window.showWarningMessage(`Aider: ${title}: cancelled.`);
                return undefined;
            }
            return outcome.result;
        } catch (error) {
            this.host.log.error(`${command} failed: ${String(error)}`);
            const message = requestErrorMessage(title, error);
            if (message.severity === 'error') {
                await showWithLog(this.host.log, 'error', `Aider: ${message.text}`);
            } else {
                void vscode.window.showWarningMessage(`Aider: ${message.text}`);
            }
            return undefined;
        }
    }

    /**
     * The request under a cancellable notification. Resolves to the TaskResult, or cancelled;
     * rejects on a JSON-RPC error or an answer that is not a TaskResult.
     */
    private async execute<C extends ServerCommandId>(client: LanguageClient, title: string, command: C, arg: CommandArgs[C]): Promise<Outcome> {
        return vscode.window.withProgress(
            { location: vscode.ProgressLocation.Notification, title, cancellable: true },
            async (progress, cancel) => {
                const run = this.host.router.start((message) => { progress.report({ message }); });
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
}
