/**
 * "Select Model…": Aider's model list in a quick pick (filtered as you type, the provider beside
 * each name), then what the model is for (Aider's edits `aiderLsp.aiderModel`, the planning and
 * analysis `aiderLsp.model`, or both), then where to keep the choice (user or workspace settings).
 * A model whose provider key is not set offers "Set API Key" at once: the next edit would fail.
 */
import * as vscode from 'vscode';
import { missingKey, modelChoices, planningModelOf, providerOf } from '../common/models';
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

/** A use of the picked model: the settings it goes to, with their values. */
interface Role extends vscode.QuickPickItem {
    values: Partial<Record<'aiderModel' | 'model', string>>;
}

/** What the picked model can be used for; the planning roles only when the planner speaks to its provider. */
function roles(picked: string, config: vscode.WorkspaceConfiguration): Role[] {
    const inUse = (key: string): string => `in use: ${config.get<string | null>(key) || 'none'}`;
    const aider: Role = { label: 'Aider\'s edits', description: 'aiderLsp.aiderModel', detail: inUse('aiderModel'), values: { aiderModel: picked } };
    const planning = planningModelOf(picked);
    if (planning === undefined) {
        return [aider];
    }
    return [
        aider,
        { label: 'Planning and analysis', description: `aiderLsp.model = ${planning}`, detail: inUse('model'), values: { model: planning } },
        { label: 'Both', description: 'aiderLsp.aiderModel and aiderLsp.model', values: { aiderModel: picked, model: planning } },
    ];
}

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
    const role = await vscode.window.showQuickPick(roles(picked.label, config), { title: `Use ${picked.label} for…` });
    const scope = role && (await vscode.window.showQuickPick(SCOPES, { title: `Use ${picked.label} in…` }));
    if (!role || !scope) {
        return;
    }
    for (const [key, value] of Object.entries(role.values)) {
        await config.update(key, value, scope.target);
    }
    await offerKey(ctx, picked.label, `${Object.values(role.values).join(' and ')} (${scope.label.toLowerCase()})`);
}

/** Says what is now in use, or that the model's provider key is missing (offering to set it). */
async function offerKey(ctx: FlowContext, model: string, what: string): Promise<void> {
    const stored = (await ctx.secrets.get(API_KEY_SECRET)) !== undefined;
    const missing = missingKey(providerOf(model), process.env, stored);
    if (missing === undefined) {
        void vscode.window.showInformationMessage(`Aider: now using ${what}.`);
        return;
    }
    const choice = await vscode.window.showWarningMessage(`Aider: ${model} needs ${missing}, which is not set: calls to it would fail.`, SET_KEY);
    if (choice === SET_KEY) {
        await setApiKey(ctx);
    }
}
