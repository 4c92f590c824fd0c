/** "Run Tests" and "Clear Diagnostics": the project's tests, and the findings they leave in Problems. */
import { resultMessage } from '../common/results';
import { ServerCommand } from '../protocol';
import { tell, type FlowContext } from '../ui/context';
import { saveDirtyFiles } from '../ui/files';
import { changedTestCommand } from '../ui/testCommand';

export async function runTests(ctx: FlowContext): Promise<void> {
    if (!(await saveDirtyFiles())) {
        return;
    }
    let result = await ctx.server.run('Running the tests', ServerCommand.runTests, {});
    const changed = await changedTestCommand(result);
    if (changed) {
        result = await ctx.server.run('Running the tests', ServerCommand.runTests, { command: changed });
    }
    if (result) {
        await tell(ctx, resultMessage('Tests', result));
    }
}

export async function clearDiagnostics(ctx: FlowContext): Promise<void> {
    const result = await ctx.server.run('Clearing Aider diagnostics', ServerCommand.clearDiagnostics, {});
    if (result?.status === 'FAILED') {
        await tell(ctx, resultMessage('Clear Diagnostics', result));
    }
}
