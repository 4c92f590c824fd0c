/** "Set API Key": kept in VS Code's secret storage (never settings.json); the server restarts with it. */
import * as vscode from 'vscode';
import { API_KEY_SECRET } from '../common/settings';
import type { FlowContext } from '../ui/context';

export async function setApiKey(ctx: FlowContext): Promise<void> {
    const key = await vscode.window.showInputBox({
        title: 'Aider: API Key',
        prompt: 'Kept in VS Code\'s secret storage and given to the server in its environment; empty removes it.',
        password: true,
        ignoreFocusOut: true,
    });
    if (key === undefined) {
        return;
    }
    if (key === '') {
        await ctx.secrets.delete(API_KEY_SECRET);
    } else {
        await ctx.secrets.store(API_KEY_SECRET, key);
    }
    await ctx.restartServer();
}
