/**
 * Several attempts at one goal, once the tests chose (the palette's questions and the run are
 * flows/workflow.ts's): the group's message with "Apply the Winner" and "Show Attempts", and
 * "Apply the Winner" on a group of the Runs view. Applying is an isolated run's Apply
 * (flows/isolation.ts) with the group's id: the server applies its winner and discards its
 * siblings in the same step.
 */
import * as vscode from 'vscode';
import { APPLY_WINNER, groupMessage, SHOW_ATTEMPTS, type GroupAnswer } from '../common/attempts';
import { quoted } from '../common/isolation';
import { alreadySettledText } from '../common/readyNotices';
import { groupGoal, groupWinner } from '../common/runGroups';
import type { TaskResult } from '../protocol';
import type { FlowContext } from '../ui/context';
import { asGroupNode, RUNS_VIEW } from '../ui/runsView';
import { applyRun } from './isolation';

/** Tells how a group ended: the server's sentence; Apply the Winner when one waits, Show Attempts (the Runs view). */
export async function tellGroup(ctx: FlowContext, goal: string, result: TaskResult, group: GroupAnswer, folder?: vscode.Uri): Promise<void> {
    ctx.attempts.remember(group);
    const message = groupMessage(goal, result, group);
    const show = message.severity === 'info' ? vscode.window.showInformationMessage : vscode.window.showWarningMessage;
    const notice = ctx.notices.open([group.groupId, ...group.attempts.map((attempt) => attempt.runId)]);
    const choice = await show(`Aider: ${message.text}`, ...message.buttons);
    const settled = ctx.notices.close(notice);
    if (choice === APPLY_WINNER && settled !== undefined) {
        void vscode.window.showInformationMessage(`Aider: ${alreadySettledText(`An attempt of ${quoted(goal)}`, settled)}`);
    } else if (choice === APPLY_WINNER && group.winner !== undefined) {
        await applyRun(ctx, { id: group.groupId, label: goal, winner: group.winner, ...(folder === undefined ? {} : { folder }) });
    } else if (choice === SHOW_ATTEMPTS) {
        await vscode.commands.executeCommand(`${RUNS_VIEW}.focus`); // VS Code's own "focus this view" command
    }
}

/** "Apply the Winner" on a group of the Runs view: the group's id sent, in the group's folder. */
export async function applyWinner(ctx: FlowContext, node: unknown): Promise<void> {
    const chosen = asGroupNode(node);
    const winner = chosen === undefined ? undefined : groupWinner(chosen.group);
    if (chosen === undefined || winner === undefined) {
        return;
    }
    const { group, folder } = chosen;
    await applyRun(ctx, { id: group.groupId, label: groupGoal(group), winner: winner.id, ...(folder === undefined ? {} : { folder }) });
}
