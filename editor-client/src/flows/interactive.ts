/** "Start Interactive Session": an input loop, each turn to the same server-side Aider chat; Esc ends it. */
import * as vscode from 'vscode';
import { resultMessage } from '../common/results';
import { ServerCommand } from '../protocol';
import { interactiveNotes } from '../protocolResults';
import { tell, type FlowContext } from '../ui/context';
import { chosenFiles, placeOf, saveDirtyFiles } from '../ui/files';

export async function interactive(ctx: FlowContext, clicked?: unknown, selected?: unknown): Promise<void> {
    const place = await placeOf(chosenFiles(clicked, selected), vscode.window.activeTextEditor?.document.uri);
    if (!place) {
        return;
    }
    const { root, files, folder } = place;
    let sessionId: string | undefined;
    ctx.chat.show(true);
    for (;;) {
        // before the question: a "no" to saving then costs no typed prompt
        if (!(await saveDirtyFiles())) {
            break;
        }
        const prompt = await vscode.window.showInputBox({
            title: sessionId ? 'Aider session (Esc ends it)' : 'Start an Aider session',
            placeHolder: 'Ask or tell Aider…',
            ignoreFocusOut: true,
        });
        if (!prompt) {
            break;
        }
        const result = await ctx.server.run('Aider is answering', ServerCommand.interactive, {
            prompt,
            ...(files.length > 0 ? { file_context: files } : {}),
            ...(sessionId ? { session_id: sessionId } : {}),
        }, folder);
        if (!result) {
            break;
        }
        sessionId = interactiveNotes(result).session_id ?? sessionId;
        ctx.chat.appendLine(`> ${prompt}`);
        ctx.chat.appendLine(result.content.trim());
        ctx.chat.appendLine('');
        const message = resultMessage('Aider', result);
        if (result.status === 'FAILED' || message.changedFiles.length > 0) {
            void tell(ctx, message, root);
        }
        if (result.status === 'FAILED') {
            break;
        }
    }
    if (sessionId && ctx.server.running()) {
        await ctx.server.run('Ending the Aider session', ServerCommand.interactive, { session_id: sessionId, end_session: true }, folder);
    }
}
