/**
 * "Undo Last Aider Change", and "Undo This Run" in the Runs view: takes back the last edit or
 * run, or the one given (a revert: later changes stay). Files the user changed since are
 * kept unless they choose otherwise: the question says what is kept and what "Undo Anyway"
 * would lose, and the safe answer is the default button (Enter).
 */
import * as vscode from 'vscode';
import { resultMessage } from '../common/results';
import { ServerCommand, type TaskResult } from '../protocol';
import { restoreReport } from '../protocolResults';
import { tell, type FlowContext } from '../ui/context';
import { dirtyIn, placeOf } from '../ui/files';

const TITLE = 'Undoing the last Aider change';
const TITLE_RUN = 'Undoing an Aider run';
const KEEP = 'Keep My Changes';
const UNDO_ANYWAY = 'Undo Anyway (discard my changes)';

/** The files an "Undo Anyway" would overwrite: the user's later work, saved or not. */
const USERS_WORK = new Set(['changed_since', 'unsaved']);

/** "before “fix the parser”": the change by its label's first line, kept short (it may be a whole prompt). */
function describeChange(label: string | undefined): string {
    const first = (label ?? '').split('\n')[0]?.trim() ?? '';
    if (!first) {
        return 'before the last Aider change';
    }
    return `before “${first.length > 60 ? `${first.slice(0, 60)}…` : first}”`;
}

function list(paths: readonly string[]): string {
    return paths.join(', ');
}

/**
 * Undoes the run `runId` of the history, else the last one not undone yet, in `folder` (a
 * multi-root window's folder the run is of: the Runs view, a run applied there).
 */
export async function undo(ctx: FlowContext, runId?: string, folder?: vscode.Uri): Promise<void> {
    // the run's folder, else that of the change just told, else of the active editor, else the user's pick
    const place = folder !== undefined ? { folder, root: folder } : await placeOf([], ctx.lastChange.current?.root ?? vscode.window.activeTextEditor?.document.uri);
    if (!place) {
        return;
    }
    const title = runId === undefined ? TITLE : TITLE_RUN;
    const which = runId === undefined ? {} : { run_id: runId };
    const result = await ctx.server.run(title, ServerCommand.undo, which, place.folder);
    if (!result) {
        return;
    }
    const dirty = dirtyIn(place.root);
    const kept = (restoreReport(result).skipped ?? [])
        .filter((item) => dirty.has(item.path) || USERS_WORK.has(item.kind ?? ''))
        .map((item) => item.path);
    if (result.status !== 'FAILED' || kept.length === 0) {
        return finish(ctx, result, place.root);
    }
    const unsaved = kept.filter((path) => dirty.has(path));
    const { message, detail } = question(result, kept, unsaved);
    // the safe answer first: VS Code makes the first button the default (Enter)
    const choice = await vscode.window.showWarningMessage(message, { modal: true, detail }, KEEP, UNDO_ANYWAY);
    if (choice !== UNDO_ANYWAY) {
        void vscode.window.showInformationMessage(`Aider: kept your changes to ${list(kept)}.`);
        return;
    }
    // the server never writes under an unsaved buffer: save it, then force discards it
    const saved = await Promise.all(unsaved.map((path) => dirty.get(path)?.save() ?? Promise.resolve(true)));
    if (!saved.every(Boolean)) {
        void vscode.window.showWarningMessage(`Aider: ${list(unsaved)} could not be saved: nothing more undone.`);
        return;
    }
    const forced = await ctx.server.run(title, ServerCommand.undo, { ...which, force: true }, place.folder);
    if (forced) {
        await finish(ctx, forced, place.root);
    }
}

/** The question over files changed after the edit: what the undo did, what is kept, what would be lost. */
function question(result: TaskResult, kept: readonly string[], unsaved: readonly string[]): { message: string; detail: string } {
    const report = restoreReport(result);
    const restored = [...(report.restored ?? []), ...(report.deleted ?? [])];
    const head = restored.length > 0 ? `Aider: restored ${list(restored)}. ` : 'Aider: nothing undone yet. ';
    const one = kept.length === 1;
    const detail = [
        `You changed ${list(kept)} after Aider's edit${unsaved.length > 0 ? ` (${list(unsaved)} not saved yet)` : ''}.`,
        `${KEEP}: ${list(kept)} ${one ? 'stays as it is' : 'stay as they are'} now, with Aider's change and yours.`,
        `${UNDO_ANYWAY}: ${list(kept)} ${one ? 'goes back to how it was' : 'go back to how they were'} ${describeChange(report.label)}; the changes you made after Aider's edit are lost.`,
    ].join('\n\n');
    return { message: `${head}Undoing ${list(kept)} would discard your later changes.`, detail };
}

/** Tells the undo's outcome (about files of `root`); once the files are back, the last change's diff is gone (if it was that run's). */
async function finish(ctx: FlowContext, result: TaskResult, root: vscode.Uri | undefined): Promise<void> {
    if (result.status === 'COMPLETE') {
        ctx.lastChange.forget(restoreReport(result).checkpoint);
    }
    await tell(ctx, resultMessage('Undo', result), root);
}
