/**
 * A server command chosen from one of the server's code actions ("Fix with Aider", "Run Aider
 * workflow on this file"): run like the palette's, with progress, cancel and a result message.
 */
import * as vscode from 'vscode';
import { resultMessage, workflowMessage } from '../common/results';
import { FOLDER_FIELD, ServerCommand, type TaskResult } from '../protocol';
import { tell, type FlowContext } from '../ui/context';
import { saveDirtyFiles } from '../ui/files';
import { allowedInThisWindow } from '../ui/trust';

export async function runFromCodeAction(ctx: FlowContext, command: string, args: unknown[]): Promise<TaskResult | undefined> {
    const known = Object.values(ServerCommand).find((id) => id === command);
    const arg: unknown = args[0] ?? {};
    if (known === undefined || typeof arg !== 'object' || arg === null) {
        void vscode.window.showErrorMessage(`Aider: unknown command ${command}.`);
        return undefined;
    }
    const readOnly = known === ServerCommand.getContext || known === ServerCommand.listModels;
    if (!readOnly && !(await allowedInThisWindow('Fix with Aider'))) {
        return undefined;
    }
    if (!readOnly && !(await saveDirtyFiles())) {
        return undefined;
    }
    const title = known === ServerCommand.automatic ? 'Editing with Aider' : known === ServerCommand.workflowRun ? 'Aider workflow' : 'Aider';
    // the argument comes from the server's own code action: pass it through unchanged
    const result = await ctx.server.run(title, known, arg);
    if (result) {
        // the server names the document's own folder: a change's diff opens against it
        const folder = (arg as { [FOLDER_FIELD]?: unknown })[FOLDER_FIELD];
        const root = typeof folder === 'string' ? vscode.Uri.parse(folder) : undefined;
        await tell(ctx, known === ServerCommand.workflowRun ? workflowMessage('Workflow', result) : resultMessage(title, result), root);
    }
    return result;
}
