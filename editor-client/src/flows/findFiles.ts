/** "Find Relevant Files": a query to the workspace index, the matches in a quick pick, the chosen one opened. */
import * as vscode from 'vscode';
import { resultMessage } from '../common/results';
import { contextMatches, ServerCommand } from '../protocol';
import { tell, type FlowContext } from '../ui/context';
import { placeOf } from '../ui/files';

export async function findFiles(ctx: FlowContext): Promise<void> {
    const place = await placeOf([], vscode.window.activeTextEditor?.document.uri);
    if (!place) {
        return;
    }
    const query = await vscode.window.showInputBox({ title: 'Find Relevant Files', placeHolder: 'What are you looking for?' });
    if (!query) {
        return;
    }
    const result = await ctx.server.run('Finding relevant files', ServerCommand.getContext, { query }, place.folder);
    if (!result) {
        return;
    }
    if (result.status === 'FAILED') {
        return tell(ctx, resultMessage('Find Relevant Files', result));
    }
    const matches = contextMatches(result);
    if (matches.length === 0) {
        void vscode.window.showInformationMessage(`Aider: no files match “${query}”.`);
        return;
    }
    const picked = await vscode.window.showQuickPick(
        matches.map((match) => ({
            label: match.path,
            description: match.score === undefined ? '' : `score ${match.score.toFixed(2)}`,
        })),
        { title: `Files relevant to “${query}”`, matchOnDescription: true },
    );
    const root = place.root;
    if (picked && root) {
        await vscode.window.showTextDocument(vscode.Uri.joinPath(root, picked.label));
    }
}
