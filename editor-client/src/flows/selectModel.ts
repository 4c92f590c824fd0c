/**
 * "Select Model…": Aider's model list in a quick pick (filtered as you type, the provider beside
 * each name), then where to keep the choice (user or workspace settings) as `aiderLsp.aiderModel`.
 * A model whose provider key is not set offers "Set API Key" at once: the next edit would fail.
 */
import * as vscode from 'vscode';
import { missingKey, modelChoices, providerOf } from '../common/models';
import { resultMessage } from '../common/results';
import { API_KEY_SECRET, SECTION } from '../common/settings';
import { ServerCommand } from '../protocol';
import { tell, type FlowContext } from '../ui/context';
import { setApiKey } from './apiKey';

const SET_KEY = 'Set API Key';

const SCOPES = [
    { label: 'User settings', description: 'every workspace', target: vscode.ConfigurationTarget.Global },
    { label: 'Workspace settings', description: 'this workspace only', target: vscode.ConfigurationTarget.Workspace },
];

export async function selectModel(ctx: FlowContext): Promise<void> {
    const result = await ctx.server.run('Listing Aider models', ServerCommand.listModels, {});
    if (!result) {
        return;
    }
    if (result.status === 'FAILED') {
        return tell(ctx, resultMessage('Select Model', result));
    }
    const config = vscode.workspace.getConfiguration(SECTION);
    const current = config.get<string>('aiderModel') ?? '';
    const picked = await vscode.window.showQuickPick(
        modelChoices(result).map((model) => ({
            label: model.name,
            description: model.name === current ? `${model.provider} · in use` : model.provider,
        })),
        { title: 'Aider: Select Model', placeHolder: current ? `In use: ${current}. Type to filter` : 'Type to filter', matchOnDescription: true },
    );
    if (!picked) {
        return;
    }
    const scope = await vscode.window.showQuickPick(SCOPES, { title: `Use ${picked.label} in…` });
    if (!scope) {
        return;
    }
    await config.update('aiderModel', picked.label, scope.target);
    const stored = (await ctx.secrets.get(API_KEY_SECRET)) !== undefined;
    const missing = missingKey(providerOf(picked.label), process.env, stored);
    if (missing === undefined) {
        void vscode.window.showInformationMessage(`Aider: ${picked.label} is the model (${scope.label.toLowerCase()}).`);
        return;
    }
    const choice = await vscode.window.showWarningMessage(`Aider: ${picked.label} needs ${missing}, which is not set: edits would fail.`, SET_KEY);
    if (choice === SET_KEY) {
        await setApiKey(ctx);
    }
}
