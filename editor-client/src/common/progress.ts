/**
 * Routing the server's progress to the command that waits for it. The server reports its work
 * under progress tokens it creates itself (window/workDoneProgress/create): the router's
 * languageclient middleware hands a command's notification (and `onPhase`, the status bar) the
 * messages under the command's own workDoneToken and under the first token the server begins
 * after the command started; progress that belongs to no command goes to VS Code's default
 * handling. Several commands under way (runs in worktrees side by side): the status bar's phase
 * says which ("Run 2 of 3: Iteration 1/3: Aider is editing"), and when one ends it goes back to
 * another's last phase. Sending the command and its cancel button: server/execute.ts.
 */
import type {
    Middleware,
    ProgressToken,
    WorkDoneProgressBegin,
    WorkDoneProgressEnd,
    WorkDoneProgressReport,
} from 'vscode-languageclient/node';

type ProgressValue = WorkDoneProgressBegin | WorkDoneProgressReport | WorkDoneProgressEnd;

/** A command waiting for its answer; it receives the server's progress messages. */
export interface ActiveRun {
    readonly token: string;
    report(message: string): void;
    /** The cancellable progress tokens the server has begun for this run and not ended (its cancel buttons). */
    begun(): ProgressToken[];
    dispose(): void;
}

interface RunState {
    token: string;
    report: (message: string) => void;
    serverTokens: number;
    begun: Set<ProgressToken>;
    /** Its last phase (the status bar goes back to it when another run ends). */
    last?: string;
}

/** The status bar's phase: the message, and which run it is when several are under way ("Run 2 of 3: …"). */
export function phaseText(message: string, index: number, count: number): string {
    return count > 1 ? `Run ${String(index + 1)} of ${String(count)}: ${message}` : message;
}

export class ProgressRouter {
    private readonly runs: RunState[] = [];
    private started = 0;
    private readonly owners = new Map<ProgressToken, RunState>();
    /** Every routed message, e.g. for the status bar ("Iteration 2/3: running tests", "Run 2 of 3: …" when several run); undefined once none has a phase. */
    public onPhase: (message: string | undefined) => void = () => undefined;

    readonly middleware: Middleware = {
        handleWorkDoneProgress: (token, params, next) => { this.route(token, params, next); },
    };

    /** Starts routing for a new command; the first progress the server begins after this belongs to it. */
    start(report: (message: string) => void): ActiveRun {
        this.started += 1;
        const state: RunState = { token: `aider-lsp-client-${process.pid}-${this.started}`, report, serverTokens: 0, begun: new Set() };
        this.runs.push(state);
        this.owners.set(state.token, state);
        return {
            token: state.token,
            report: (message) => { this.deliver(state, message); },
            begun: () => [...state.begun],
            dispose: () => {
                this.runs.splice(this.runs.indexOf(state), 1);
                for (const [token, owner] of this.owners) {
                    if (owner === state) {
                        this.owners.delete(token);
                    }
                }
                // another run still under way: its last phase, numbered among those left
                const latest = [...this.runs].reverse().find((run) => run.last !== undefined);
                this.onPhase(latest?.last === undefined ? undefined : this.phaseOf(latest, latest.last));
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
        if (owner !== undefined && params.kind === 'begin') {
            if (token === owner.token) {
                owner.serverTokens += 1; // the server reports under the run's own token: no other is the run's
            }
            if (params.cancellable === true) {
                owner.begun.add(token);
            }
        }
        if (owner === undefined || params.kind === 'end') {
            owner?.begun.delete(token);
            if (owner !== undefined && token !== owner.token) {
                this.owners.delete(token);
            }
            next(token, params); // VS Code's own progress part cleans up on `end`
            return;
        }
        if (params.message) {
            this.deliver(owner, params.message);
        } else if (params.kind === 'begin') {
            // the notification already carries the command's own title: the server's title
            // would only repeat it ("Aider workflow: Aider workflow"); the status bar gets it
            owner.last = params.title;
            this.onPhase(this.phaseOf(owner, params.title));
        }
    }

    private deliver(state: RunState, message: string): void {
        state.report(message);
        state.last = message;
        this.onPhase(this.phaseOf(state, message));
    }

    private phaseOf(state: RunState, message: string): string {
        return phaseText(message, this.runs.indexOf(state), this.runs.length);
    }
}
