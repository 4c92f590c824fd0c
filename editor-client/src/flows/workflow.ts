/**
 * "Run Workflow…": the goal, the test command (pre-filled from the settings; empty: the server's
 * detected one), then the server's loop. Only files the user picked go as `file_context`.
 */
import * as vscode from 'vscode';
import { workflowMessage } from '../common/results';
import { SECTION } from '../common/settings';
import { ServerCommand, type CommandArgs } from '../protocol';
import { tell, type FlowContext } from '../ui/context';
import { pickedFiles, placeOf, saveDirtyFiles, type Place } from '../ui/files';
import { changedTestCommand } from '../ui/testCommand';

export async function runWorkflow(ctx: FlowContext, clicked?: unknown, selected?: unknown): Promise<void> {
    const place = await placeOf(pickedFiles(clicked, selected), vscode.window.activeTextEditor?.document.uri);
    if (!place) {
        return;
    }
    const { files, folder } = place;
    // first: a "no" to saving then costs no typed goal
    if (!(await saveDirtyFiles())) {
        return;
    }
    const goal = await vscode.window.showInputBox({
        title: 'Run Aider Workflow (1/2)',
        placeHolder: 'The goal, e.g. "make the failing parser tests pass"',
        ignoreFocusOut: true,
    });
    if (!goal) {
        return;
    }
    const configured = vscode.workspace.getConfiguration(SECTION, folder).get<string>('testCommand') ?? '';
    const testCommand = await vscode.window.showInputBox({
        title: 'Run Aider Workflow (2/2)',
        prompt: 'The command that tests the result (empty: the one aider-lsp finds in the workspace, asked once)',
        value: configured,
        ignoreFocusOut: true,
    });
    if (testCommand === undefined) {
        return;
    }
    const arg: CommandArgs['aider-lsp.workflow.run'] = { goal };
    if (testCommand.trim()) {
        arg.test_command = testCommand.trim();
    }
    if (files.length > 0) {
        arg.file_context = files;
    }
    await runGoal(ctx, arg, place);
}

/** "Run Again" in the Runs view: a past run's goal, run as the palette runs it (its files saved first). */
export async function runAgain(ctx: FlowContext, goal: string): Promise<void> {
    const place = await placeOf([], vscode.window.activeTextEditor?.document.uri);
    if (place && (await saveDirtyFiles())) {
        await runGoal(ctx, { goal }, place);
    }
}

/** The run itself: the test command changed if the user asks to, then the result told. */
async function runGoal(ctx: FlowContext, arg: CommandArgs['aider-lsp.workflow.run'], place: Place): Promise<void> {
    let result = await ctx.server.run('Aider workflow', ServerCommand.workflowRun, arg, place.folder);
    const changed = await changedTestCommand(result, place.folder);
    if (changed) {
        result = await ctx.server.run('Aider workflow', ServerCommand.workflowRun, { ...arg, test_command: changed }, place.folder);
    }
    if (result) {
        await tell(ctx, workflowMessage('Workflow', result), place.root);
    }
}
