/**
 * Running a server command (workspace/executeCommand) for the UI: the one place a request is
 * sent. It runs under a cancellable notification whose cancel button stops the server's work:
 * through the server's own progress (window/workDoneProgress/cancel) when it has begun one, so
 * the server still answers and says what the work did before it stopped (a workflow's changed
 * files, for Undo), else, or when that answer is late, by cancelling the request
 * ($/cancelRequest). The server's progress is routed into the notification
 * (common/progress.ts), and a server that is not running, a cancel or a failed request is told
 * to the user here, so the flows (src/flows/) only read TaskResults.
 */
import * as vscode from 'vscode';
import {
    CancellationTokenSource,
    ExecuteCommandRequest,
    WorkDoneProgress,
    WorkDoneProgressCancelNotification,
    type CancellationToken,
    type Disposable,
    type LanguageClient,
} from 'vscode-languageclient/node';
import type { ActiveRun } from '../common/progress';
import type { ProgressRouter } from '../common/progress';
import { requestErrorMessage } from '../common/results';
import { showWithLog } from '../ui/showLog';
import { asTaskResult, withFolder, type CommandArgs, type ServerCommandId, type TaskResult } from '../protocol';

/** What running a command needs from the extension. */
interface ServerCommandHost {
    client(): LanguageClient | undefined;
    readonly router: ProgressRouter;
    readonly log: vscode.LogOutputChannel;
    restartServer(): Promise<void>;
}

/** The outcome of one request: its TaskResult, or cancelled by the user. */
type Outcome = { kind: 'result'; result: TaskResult } | { kind: 'cancelled' };

export const RESTART = 'Restart Server';

/** How long a server asked to stop its progress may take to answer before the request is cancelled. */
const CANCEL_GRACE_MS = 15_000;

export class ServerCommands {
    private readonly ran = new vscode.EventEmitter<ServerCommandId>();
    /** Fires after each command run() sent, answered or not (the Runs view refreshes on the ones that change files). */
    readonly onDidRun = this.ran.event;

    constructor(private readonly host: ServerCommandHost) {}

    /** Whether a command can be sent now. */
    running(): boolean {
        return this.host.client()?.isRunning() ?? false;
    }

    /**
     * Runs `command` with `arg` under a notification titled `title`, in the workspace folder
     * `folder` (sent in a multi-root window: ui/files.ts chooseFolder). Undefined when the server
     * is not running, the user cancelled or the request failed: each is already told.
     */
    async run<C extends ServerCommandId>(title: string, command: C, arg: CommandArgs[C], folder?: vscode.Uri): Promise<TaskResult | undefined> {
        const client = this.host.client();
        if (client === undefined || !client.isRunning()) {
            if ((await showWithLog(this.host.log, 'error', 'Aider: the server is not running.', RESTART)) === RESTART) {
                await this.host.restartServer();
            }
            return undefined;
        }
        try {
            const outcome = await this.execute(client, title, command, withFolder(arg, folder?.toString())).finally(() => {
                this.ran.fire(command);
            });
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
     * A quick read for a view (the run history, a run's diff), in `folder` when given: no
     * notification, no cancel button, no message. Undefined when the server is not running or the request failed
     * (logged); a FAILED answer is the caller's to tell.
     */
    async query<C extends ServerCommandId>(command: C, arg: CommandArgs[C], folder?: vscode.Uri): Promise<TaskResult | undefined> {
        const client = this.host.client();
        if (client === undefined || !client.isRunning()) {
            return undefined;
        }
        try {
            const answer: unknown = await client.sendRequest(ExecuteCommandRequest.type, { command, arguments: [withFolder(arg, folder?.toString())] });
            const result = asTaskResult(answer);
            if (result === undefined) {
                this.host.log.error(`${command}: the server's answer is not a TaskResult`);
            }
            return result;
        } catch (error) {
            this.host.log.error(`${command} failed: ${String(error)}`);
            return undefined;
        }
    }

    /**
     * The cancel button: stop the server's progress (it then answers), and cancel the request
     * itself when the server has no progress of this run to stop or does not answer in time.
     */
    private stopOnCancel(client: LanguageClient, run: ActiveRun, cancel: CancellationToken, request: CancellationTokenSource): Disposable {
        let timer: NodeJS.Timeout | undefined;
        const listener = cancel.onCancellationRequested(() => {
            const begun = run.begun();
            if (begun.length === 0) {
                request.cancel();
                return;
            }
            for (const token of begun) {
                void client.sendNotification(WorkDoneProgressCancelNotification.type, { token });
            }
            timer = setTimeout(() => { request.cancel(); }, CANCEL_GRACE_MS);
        });
        return {
            dispose: () => {
                listener.dispose();
                clearTimeout(timer);
            },
        };
    }

    /**
     * The request under a cancellable notification. Resolves to the TaskResult, or cancelled;
     * rejects on a JSON-RPC error or an answer that is not a TaskResult.
     */
    private async execute(client: LanguageClient, title: string, command: ServerCommandId, arg: object): Promise<Outcome> {
        return vscode.window.withProgress(
            { location: vscode.ProgressLocation.Notification, title, cancellable: true },
            async (progress, cancel) => {
                const run = this.host.router.start((message) => { progress.report({ message }); });
                const request = new CancellationTokenSource();
                const stopping = this.stopOnCancel(client, run, cancel, request);
                let listener: Disposable | undefined;
                try {
                    // if the server reports under our token, the middleware routes it to this run
                    listener = client.onProgress(WorkDoneProgress.type, run.token, () => undefined);
                    const answer: unknown = await client.sendRequest(
                        ExecuteCommandRequest.type,
                        { command, arguments: [arg], workDoneToken: run.token },
                        request.token,
                    );
                    const result = asTaskResult(answer);
                    if (result === undefined && cancel.isCancellationRequested) {
                        return { kind: 'cancelled' };
                    }
                    if (result === undefined) {
                        throw new Error(`${command}: the server's answer is not a TaskResult`);
                    }
                    // also after a cancel: the server's answer says what the work did before it stopped
                    return { kind: 'result', result };
                } catch (error) {
                    if (cancel.isCancellationRequested) {
                        return { kind: 'cancelled' };
                    }
                    throw error;
                } finally {
                    stopping.dispose();
                    listener?.dispose();
                    run.dispose();
                    request.dispose();
                }
            },
        );
    }
}
