/**
 * "Run Workflow…": the goal, the test command (pre-filled from the settings; empty: the server's
 * detected one), then the server's loop. Only files the user picked go as `file_context`.
 * "Run Workflow in a Worktree…" asks the same and runs it isolated: the user's files untouched
 * until they apply it (flows/isolation.ts); several may run at once, each with its own
 * progress. "Run Workflow: Several Attempts…" asks also how many attempts and how the tests
 * choose: the attempts run at once, each isolated, and the group's answer names the winner
 * (flows/attempts.ts). A run that does not say follows the `isolation` and `attempts`
 * settings, so any run's answer may be an isolated one or a group's: it is told by what the
 * answer says.
 */
import * as vscode from 'vscode';
import { attemptGroup, attemptsTitle, attemptsTyped, chooseItems, defaultAttempts, MAX_ATTEMPTS, MIN_ATTEMPTS } from '../common/attempts';
import { isolatedAnswer, quoted } from '../common/isolation';
import { workflowMessage } from '../common/results';
import { SECTION } from '../common/settings';
import { ServerCommand, type CommandArgs, type TaskResult } from '../protocol';
import type { Isolation } from '../protocolResults';
import { tell, type FlowContext } from '../ui/context';
import { pickedFiles, placeOf, saveDirtyFiles, type Place } from '../ui/files';
import { changedTestCommand } from '../ui/testCommand';
import { tellGroup } from './attempts';
import { tellIsolatedRun } from './isolation';

type WorkflowArgs = CommandArgs['aider-lsp.workflow.run'];

/** The first answers of every workflow flow: where it runs (its files saved), and the goal. */
interface Started {
    place: Place;
    goal: string;
}

/**
 * Where the run goes and its goal, the files saved first (a "no" then costs no typed goal).
 * `isolated`: whether it will run in worktrees (the question says they start from the saved
 * files; a worktree is made ready while the user types).
 */
async function askGoal(ctx: FlowContext, clicked: unknown, selected: unknown, title: string, isolated: (folder?: vscode.Uri) => boolean): Promise<Started | undefined> {
    const place = await placeOf(pickedFiles(clicked, selected), vscode.window.activeTextEditor?.document.uri);
    if (!place) {
        return undefined;
    }
    const inWorktrees = isolated(place.folder);
    if (!(await saveDirtyFiles(inWorktrees ? 'The run in a worktree starts from your files as saved.' : undefined))) {
        return undefined;
    }
    if (inWorktrees) {
        // its worktree made ready while the user types: the run then starts at once
        void ctx.server.query(ServerCommand.prepareRuns, {}, place.folder);
    }
    const goal = await vscode.window.showInputBox({
        title,
        placeHolder: 'The goal, e.g. "make the failing parser tests pass"',
        ignoreFocusOut: true,
    });
    return goal ? { place, goal } : undefined;
}

/** The test command, pre-filled from the settings; undefined when dismissed, '' for the detected one. */
async function askTestCommand(title: string, folder: vscode.Uri | undefined): Promise<string | undefined> {
    const configured = vscode.workspace.getConfiguration(SECTION, folder).get<string>('testCommand') ?? '';
    const testCommand = await vscode.window.showInputBox({
        title,
        prompt: 'The command that tests the result (empty: the one aider-lsp finds in the workspace, asked once)',
        value: configured,
        ignoreFocusOut: true,
    });
    return testCommand?.trim();
}

/** The request with the test command and the files the user picked, when there are. */
function withChoices(arg: WorkflowArgs, testCommand: string, files: readonly string[]): WorkflowArgs {
    return {
        ...arg,
        ...(testCommand ? { test_command: testCommand } : {}),
        ...(files.length > 0 ? { file_context: [...files] } : {}),
    };
}

export async function runWorkflow(ctx: FlowContext, clicked?: unknown, selected?: unknown, isolation?: Isolation): Promise<void> {
    const title = isolation === 'worktree' ? 'Run Aider Workflow in a Worktree' : 'Run Aider Workflow';
    const isolated = (folder?: vscode.Uri): boolean => (isolation ?? configuredIsolation(folder)) === 'worktree' || configuredAttempts(folder) > 1;
    const started = await askGoal(ctx, clicked, selected, `${title} (1/2)`, isolated);
    if (!started) {
        return;
    }
    const testCommand = await askTestCommand(`${title} (2/2)`, started.place.folder);
    if (testCommand === undefined) {
        return;
    }
    const { goal, place } = started;
    await runGoal(ctx, withChoices(isolation === undefined ? { goal } : { goal, isolation }, testCommand, place.files), place);
}

/**
 * "Run Workflow: Several Attempts…": the goal, how many attempts (the `attempts` setting when it
 * asks for several, else 3), how the tests choose (the `chooseAttempt` setting first), the test
 * command; then the attempts run at once, each in a worktree of its own.
 */
export async function runWorkflowAttempts(ctx: FlowContext, clicked?: unknown, selected?: unknown): Promise<void> {
    const title = 'Run Aider Workflow: Several Attempts';
    const started = await askGoal(ctx, clicked, selected, `${title} (1/4)`, () => true);
    if (!started) {
        return;
    }
    const { goal, place } = started;
    const config = vscode.workspace.getConfiguration(SECTION, place.folder);
    const typed = await vscode.window.showInputBox({
        title: `${title} (2/4)`,
        prompt: `How many attempts (${String(MIN_ATTEMPTS)}–${String(MAX_ATTEMPTS)})? Each runs in a worktree of its own, with its own Aider server (about 330 MB each)`,
        value: String(defaultAttempts(config.get('attempts'))),
        validateInput: (text) => {
            const count = attemptsTyped(text);
            return typeof count === 'string' ? count : undefined;
        },
        ignoreFocusOut: true,
    });
    const attempts = typed === undefined ? undefined : attemptsTyped(typed);
    if (typeof attempts !== 'number') {
        return;
    }
    const picked = await vscode.window.showQuickPick(chooseItems(config.get('chooseAttempt')), {
        title: `${title} (3/4)`,
        placeHolder: 'How do the tests choose the winner?',
        ignoreFocusOut: true,
    });
    if (picked === undefined) {
        return;
    }
    const testCommand = await askTestCommand(`${title} (4/4)`, place.folder);
    if (testCommand === undefined) {
        return;
    }
    await runGoal(ctx, withChoices({ goal, attempts, choose: picked.choose }, testCommand, place.files), place);
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

/** The `attempts` setting of `folder`: how many attempts a run that does not say makes. */
function configuredAttempts(folder: vscode.Uri | undefined): number {
    const setting = vscode.workspace.getConfiguration(SECTION, folder).get<unknown>('attempts');
    return typeof setting === 'number' && Number.isInteger(setting) && setting > 1 ? setting : 1;
}

/** The run itself: the test command changed if the user asks to, then the result told (a group's, an isolated run's, a run's in place). */
async function runGoal(ctx: FlowContext, arg: WorkflowArgs, place: Place): Promise<void> {
    const attempts = arg.attempts ?? configuredAttempts(place.folder);
    const isolated = attempts > 1 || (arg.isolation ?? configuredIsolation(place.folder)) === 'worktree';
    // several may run at once: each notification names its goal
    const title = attempts > 1 ? attemptsTitle(arg.goal, attempts) : isolated ? `Aider workflow ${quoted(arg.goal, 40)} in a worktree` : 'Aider workflow';
    const send = (args: WorkflowArgs): Promise<TaskResult | undefined> => {
        const work = ctx.server.run(title, ServerCommand.workflowRun, args, place.folder);
        return isolated ? ctx.isolatedRuns.track(work, attempts) : work;
    };
    let result = await send(arg);
    const changed = await changedTestCommand(result, place.folder);
    if (changed) {
        result = await send({ ...arg, test_command: changed });
    }
    if (!result) {
        return;
    }
    const group = attemptGroup(result);
    const answer = isolatedAnswer(result);
    if (group !== undefined) {
        await tellGroup(ctx, arg.goal, result, group, place.folder);
    } else if (answer !== undefined) {
        await tellIsolatedRun(ctx, arg.goal, result, answer, place.folder);
    } else {
        await tell(ctx, workflowMessage('Workflow', result), place.root);
    }
}
