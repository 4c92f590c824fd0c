/**
 * "Add a Note to This Run…": a note for a run under way (an isolated run, or a group's
 * attempts, from the Runs view; the run in place under way, from the palette) that its next
 * edit carries, without cancelling it (`aider-lsp.workflow.steer`). The run's history keeps it
 * (the Runs view shows it on the iteration whose edit carried it).
 */
import * as vscode from 'vscode';
import { noteProblem, steerArgs, steerMessage } from '../common/attempts';
import { quoted } from '../common/isolation';
import { groupGoal } from '../common/runGroups';
import { goalOf } from '../common/runs';
import { ServerCommand } from '../protocol';
import type { FlowContext } from '../ui/context';
import { chooseFolder } from '../ui/files';
import { asGroupNode, asRunNode } from '../ui/runsView';

/** The run a note is for: its id (none: the run in place under way), how messages name it, its folder. */
interface NoteTarget {
    runId?: string;
    name: string;
    folder?: vscode.Uri;
}

/** "Add a Note to This Run…" on a running run (or group) of the Runs view. */
export async function addRunNote(ctx: FlowContext, node: unknown): Promise<void> {
    const group = asGroupNode(node);
    const run = asRunNode(node);
    const where = (folder: vscode.Uri | undefined): { folder?: vscode.Uri } => (folder === undefined ? {} : { folder });
    if (group !== undefined) {
        await addNote(ctx, { runId: group.group.groupId, name: `the attempts at ${quoted(groupGoal(group.group), 40)}`, ...where(group.folder) });
    } else if (run?.kind === 'run') {
        await addNote(ctx, { runId: run.run.id, name: quoted(goalOf(run.run), 40), ...where(run.folder) });
    }
}

/** "Aider: Add a Note to the Run Under Way…" (palette): the workflow run in place in the active editor's folder. */
export async function addNoteInPlace(ctx: FlowContext): Promise<void> {
    const choice = await chooseFolder(vscode.window.activeTextEditor?.document.uri);
    if (choice !== undefined) {
        await addNote(ctx, { name: 'the run under way', ...choice });
    }
}

async function addNote(ctx: FlowContext, target: NoteTarget): Promise<void> {
    const note = await vscode.window.showInputBox({
        title: `Add a Note to ${target.name}`,
        prompt: 'What its next edit should take into account; the run goes on',
        placeHolder: 'e.g. "negative numbers too", "do not touch the public API"',
        validateInput: noteProblem,
        ignoreFocusOut: true,
    });
    if (note === undefined || noteProblem(note) !== undefined) {
        return;
    }
    const result = await ctx.server.run(`Adding a note to ${target.name}`, ServerCommand.steer, steerArgs(note, target.runId), target.folder);
    if (result === undefined) {
        return;
    }
    const message = steerMessage(target.name, result);
    const show = message.severity === 'info' ? vscode.window.showInformationMessage : vscode.window.showWarningMessage;
    void show(`Aider: ${message.text}`);
}
