/**
 * The "… is ready" notifications still standing (not answered, not closed), by the runs their
 * buttons act on. VS Code has no way to close a notification an extension showed
 * (microsoft/vscode#134777): when such a run is applied, discarded or kept from elsewhere (the
 * Runs view), the flow hides the toasts and the notification's buttons, if the user still
 * clicks one, say what already happened instead of acting on a run that is gone. Pure.
 */

/** How a run stopped waiting for the user. */
export type Settled = 'applied' | 'discarded' | 'kept';

interface Notice {
    readonly runs: ReadonlySet<string>;
    settled?: Settled;
}

export class ReadyNotices {
    private next = 0;
    private readonly standing = new Map<number, Notice>();

    /** A notification about these runs (a run's id; a group's id and its attempts') is shown: its handle. */
    open(runs: readonly string[]): number {
        this.next += 1;
        this.standing.set(this.next, { runs: new Set(runs.filter((id) => id !== '')) });
        return this.next;
    }

    /** The notification was answered or closed: how its runs were settled meanwhile elsewhere, if they were. */
    close(handle: number): Settled | undefined {
        const notice = this.standing.get(handle);
        this.standing.delete(handle);
        return notice?.settled;
    }

    /** Runs were applied, discarded or kept: true when a notification about one of them still stands. */
    settle(runs: readonly string[], how: Settled): boolean {
        let found = false;
        for (const notice of this.standing.values()) {
            if (notice.settled === undefined && runs.some((id) => notice.runs.has(id))) {
                notice.settled = how;
                found = true;
            }
        }
        return found;
    }
}

/** What a stale notification's button says instead of acting: "“goal” was already applied: nothing to do." */
export function alreadySettledText(name: string, how: Settled): string {
    return `${name} was already ${how}: nothing to do.`;
}
