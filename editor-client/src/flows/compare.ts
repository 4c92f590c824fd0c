/**
 * Two attempts of a group side by side: "Compare with Another Attempt…" on an attempt of the
 * Runs view (which other: asked unless one alone has a change) and "Compare Attempts…" on a
 * group (which two: asked unless two alone have a change). One diff editor per file either
 * attempt changed, left as the first has it, right as the second has it (the file they started
 * from where one did not change it); the files, sides and titles are common/compareAttempts.ts's.
 * Each attempt's files come from `aider-lsp.history.diff` in the item's folder, as its Show
 * Diff's do (ui/runDiff.ts).
 */
import * as vscode from 'vscode';
import {
    attemptPicks,
    cannotCompareText,
    comparableAttempts,
    comparedFiles,
    nothingToCompareText,
    type AttemptChange,
    type NamedAttempt,
} from '../common/compareAttempts';
import { quoted } from '../common/isolation';
import { resultMessage } from '../common/results';
import { groupGoal, type RunGroup } from '../common/runGroups';
import { runFileSides } from '../common/runs';
import { ServerCommand } from '../protocol';
import { tell, type FlowContext } from '../ui/context';
import { asGroupNode, asRunNode } from '../ui/runsView';

/** "Compare with Another Attempt…" on an attempt: it on the left, the other on the right. */
export async function compareWithAttempt(ctx: FlowContext, node: unknown): Promise<void> {
    const chosen = asRunNode(node);
    if (chosen?.kind !== 'run' || chosen.attempt === undefined) {
        return;
    }
    const { group } = chosen.attempt;
    const attempts = named(ctx, group);
    const self = attempts.find((attempt) => attempt.run.id === chosen.run.id);
    if (self === undefined || attempts.length < 2) {
        void vscode.window.showInformationMessage(`Aider: ${cannotCompareText(quoted(groupGoal(group)))}`);
        return;
    }
    await compareWithOther(ctx, self, attempts, chosen.folder);
}

/** "Compare Attempts…" on a group: the first picked on the left, the second on the right. */
export async function compareAttempts(ctx: FlowContext, node: unknown): Promise<void> {
    const chosen = asGroupNode(node);
    if (chosen === undefined) {
        return;
    }
    const attempts = named(ctx, chosen.group);
    if (attempts.length < 2) {
        void vscode.window.showInformationMessage(`Aider: ${cannotCompareText(quoted(groupGoal(chosen.group)))}`);
        return;
    }
    const left = attempts.length === 2 ? attempts[0] : await pick(attempts, 'Compare which attempt…');
    if (left !== undefined) {
        await compareWithOther(ctx, left, attempts, chosen.folder);
    }
}

/** `left` against another of `attempts`: the one other, else the one picked. */
async function compareWithOther(ctx: FlowContext, left: NamedAttempt, attempts: readonly NamedAttempt[], folder?: vscode.Uri): Promise<void> {
    const others = attempts.filter((attempt) => attempt.run.id !== left.run.id);
    const right = others.length === 1 ? others[0] : await pick(others, `Compare ${left.name} with…`);
    if (right !== undefined) {
        await compare(ctx, left, right, folder);
    }
}

function named(ctx: FlowContext, group: RunGroup): NamedAttempt[] {
    return comparableAttempts(group, (runId) => ctx.attempts.get(runId));
}

async function pick(attempts: readonly NamedAttempt[], title: string): Promise<NamedAttempt | undefined> {
    const picked = await vscode.window.showQuickPick(attemptPicks(attempts, Date.now()), { title, matchOnDescription: true, matchOnDetail: true });
    return picked?.attempt;
}

/** Each file either attempt changed in the diff editor, `a` left and `b` right; binary files named. */
async function compare(ctx: FlowContext, a: NamedAttempt, b: NamedAttempt, folder?: vscode.Uri): Promise<void> {
    const left = await changeOf(ctx, a, folder);
    const right = left === undefined ? undefined : await changeOf(ctx, b, folder);
    if (left === undefined || right === undefined) {
        return;
    }
    const files = comparedFiles(left, right);
    if (files.length === 0) {
        void vscode.window.showInformationMessage(`Aider: ${nothingToCompareText(a.name, b.name)}`);
        return;
    }
    const shown = files.flatMap((file) => (file.binary ? [] : [file]));
    for (const file of shown) {
        await vscode.commands.executeCommand(
            'vscode.diff',
            ctx.beforeContent.add(file.path, file.left),
            ctx.beforeContent.add(file.path, file.right),
            file.title,
            { preview: shown.length === 1 },
        );
    }
    const binary = files.filter((file) => file.binary).map((file) => file.path);
    if (binary.length > 0) {
        void vscode.window.showInformationMessage(`Aider: ${binary.join(', ')}: not text, no diff to show.`);
    }
}

/** The files an attempt changed, with their sides (none asked for when its record lists none); undefined: told why not. */
async function changeOf(ctx: FlowContext, attempt: NamedAttempt, folder?: vscode.Uri): Promise<AttemptChange | undefined> {
    if (attempt.run.files.length === 0) {
        return { name: attempt.name, files: [] }; // the server has no diff of a run that changed nothing
    }
    const result = await ctx.server.query(ServerCommand.historyDiff, { run_id: attempt.run.id }, folder);
    if (result === undefined) {
        void vscode.window.showWarningMessage('Aider: nothing to compare: the server is not running (Aider: Show Log says why).');
        return undefined;
    }
    if (result.status === 'FAILED') {
        await tell(ctx, resultMessage(`Compare ${attempt.name}`, result));
        return undefined;
    }
    return { name: attempt.name, files: runFileSides(result) };
}
