/**
 * "Run Workflow…": the goal, the test command (pre-filled from the settings; empty: the server's
 * detected one), then the server's loop. Only files the user picked go as `file_context`.
 * "Run Workflow in a Worktree…" asks the same and runs it isolated: the user's files untouched
 * until they apply it (flows/isolation.ts); several may run at once, each with its own
 * progress. A run without an isolation of its own follows the `isolation` setting, so any run's
 * answer may be an isolated one: it is told by what the answer says.
 */
import * as vscode from 'vscode';
import { isolatedAnswer, quoted } from '../common/isolation';
import { workflowMessage } from '../common/results';
import { SECTION } from '../common/settings';
import { ServerCommand, type CommandArgs, type TaskResult } from '../protocol';
import type { Isolation } from '../protocolResults';
import { tell, type FlowContext } from '../ui/context';
import { pickedFiles, placeOf, saveDirtyFiles, type Place } from '../ui/files';
import { changedTestCommand } from '../ui/testCommand';
import { tellIsolatedRun } from './isolation';

type WorkflowArgs = CommandArgs['aider-lsp.workflow.run'];

export async function runWorkflow(ctx: FlowContext, clicked?: unknown, selected?: unknown, isolation?: Isolation): Promise<void> {
    const place = await placeOf(pickedFiles(clicked, selected), vscode.window.activeTextEditor?.document.uri);
    if (!place) {
        return;
    }
    const { files, folder } = place;
    const isolated = (isolation ?? configuredIsolation(folder)) === 'worktree';
    // first: a "no" to saving then costs no typed goal
    if (!(await saveDirtyFiles(isolated ? 'The run in a worktree starts from your files as saved.' : undefined))) {
        return;
    }
    if (isolated) {
        // its worktree made ready while the user types: the run then starts at once
        void ctx.server.query(ServerCommand.prepareRuns, {}, folder);
    }
    const title = isolation === 'worktree' ? 'Run Aider Workflow in a Worktree' : 'Run Aider Workflow';
    const goal = await vscode.window.showInputBox({
        title: `${title} (1/2)`,
        placeHolder: 'The goal, e.g. "make the failing parser tests pass"',
        ignoreFocusOut: true,
    });
    if (!goal) {
        return;
    }
    const configured = vscode.workspace.getConfiguration(SECTION, folder).get<string>('testCommand') ?? '';
    const testCommand = await vscode.window.showInputBox({
        title: `${title} (2/2)`,
        prompt: 'The command that tests the result (empty: the one aider-lsp finds in the workspace, asked once)',
        value: configured,
        ignoreFocusOut: true,
    });
    if (testCommand === undefined) {
        return;
    }
    const arg: WorkflowArgs = isolation === undefined ? { goal } : { goal, isolation };
    if (testCommand.trim()) {
        arg.test_command = testCommand.trim();
    }
    if (files.length > 0) {
        arg.file_context = files;
    }
    await runGoal(ctx, arg, place);
}

/**
 * "Run Again" in the Runs view: a past run's goal, run as the palette runs it (its files saved
 * first), in `folder` (the run's, in a multi-root window) else where the palette would.
 */
export async function runAgain(ctx: FlowContext, goal: string, folder?: vscode.Uri): Promise<void> {
    const place = folder !== undefined ? { folder, root: folder, files: [] } : await placeOf([], vscode.window.activeTextEditor?.document.uri);
    if (place && (await saveDirtyFiles())) {
        await runGoal(ctx, { goal }, place);
    }
}

/** The `isolation` setting of `folder`: where a run that does not say runs. */
function configuredIsolation(folder: vscode.Uri | undefined): Isolation {
    return vscode.workspace.getConfiguration(SECTION, folder).get<string>('isolation') === 'worktree' ? 'worktree' : 'none';
}

/** The run itself: the test command changed if the user asks to, then the result told. */
async function runGoal(ctx: FlowContext, arg: WorkflowArgs, place: Place): Promise<void> {
    const isolated = (arg.isolation ?? configuredIsolation(place.folder)) === 'worktree';
    // several may run at once: each notification names its goal
    const title = isolated ? `Aider workflow ${quoted(arg.goal, 40)} in a worktree` : 'Aider workflow';
    const send = (args: WorkflowArgs): Promise<TaskResult | undefined> => {
        const work = ctx.server.run(title, ServerCommand.workflowRun, args, place.folder);
        return isolated ? ctx.isolatedRuns.track(work) : work;
    };
    let result = await send(arg);
    const changed = await changedTestCommand(result, place.folder);
    if (changed) {
        result = await send({ ...arg, test_command: changed });
    }
    if (!result) {
        return;
    }
    const answer = isolatedAnswer(result);
    if (answer !== undefined) {
        await tellIsolatedRun(ctx, arg.goal, result, answer, place.folder);
    } else {
        await tell(ctx, workflowMessage('Workflow', result), place.root);
    }
}
