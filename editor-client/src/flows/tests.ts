/** "Run Tests" and "Clear Diagnostics": the project's tests, and the findings they leave in Problems. */
import * as vscode from 'vscode';
import { resultMessage } from '../common/results';
import { ServerCommand } from '../protocol';
import { tell, type FlowContext } from '../ui/context';
import { placeOf, saveDirtyFiles } from '../ui/files';
import { changedTestCommand } from '../ui/testCommand';

export async function runTests(ctx: FlowContext): Promise<void> {
    const place = await placeOf([], vscode.window.activeTextEditor?.document.uri);
    if (!place || !(await saveDirtyFiles())) {
        return;
    }
    let result = await ctx.server.run('Running the tests', ServerCommand.runTests, {}, place.folder);
    const changed = await changedTestCommand(result, place.folder);
    if (changed) {
        result = await ctx.server.run('Running the tests', ServerCommand.runTests, { command: changed }, place.folder);
    }
    if (result) {
        await tell(ctx, resultMessage('Tests', result), place.root);
    }
}

export async function clearDiagnostics(ctx: FlowContext): Promise<void> {
    const result = await ctx.server.run('Clearing Aider diagnostics', ServerCommand.clearDiagnostics, {});
    if (result?.status === 'FAILED') {
        await tell(ctx, resultMessage('Clear Diagnostics', result));
    }
}
