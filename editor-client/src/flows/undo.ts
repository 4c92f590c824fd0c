/** "Undo Last Aider Change": restores the last edit; files changed since are kept unless the user confirms. */
import * as vscode from 'vscode';
import { resultMessage } from '../common/results';
import { ServerCommand } from '../protocol';
import { tell, type FlowContext } from './context';

const TITLE = 'Undoing the last Aider change';

export async function undo(ctx: FlowContext): Promise<void> {
    const result = await ctx.server.run(TITLE, ServerCommand.undo, {});
    if (!result) {
        return;
    }
    const skipped = result.notes.skipped;
    if (result.status === 'FAILED' && Array.isArray(skipped) && skipped.length > 0) {
        const choice = await vscode.window.showWarningMessage(`Aider: ${result.content}`, { modal: true }, 'Undo Anyway (discard later changes)');
        if (choice) {
            const forced = await ctx.server.run(TITLE, ServerCommand.undo, { force: true });
            if (forced) {
                await tell(ctx, resultMessage('Undo', forced));
            }
        }
        return;
    }
    await tell(ctx, resultMessage('Undo', result));
}
