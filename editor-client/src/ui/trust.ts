/**
 * Restricted Mode (Workspace Trust): until the user trusts the folder, the commands that edit
 * files or run the workspace's own commands (its tests) say why not and offer to manage trust;
 * the ones that only read still work. package.json's `untrustedWorkspaces` lists the settings a
 * repository cannot choose until then (programs, paths, endpoints, models, commands).
 */
import * as vscode from 'vscode';

export const MANAGE_TRUST = 'Manage Workspace Trust';

/** Whether `title` may run now; in Restricted Mode it is told why not (and trust offered). */
export async function allowedInThisWindow(title: string): Promise<boolean> {
    if (vscode.workspace.isTrusted) {
        return true;
    }
    const choice = await vscode.window.showWarningMessage(
        `Aider: ${title} is not available in Restricted Mode: it edits files or runs this workspace's commands. Trust the folder to use it.`,
        MANAGE_TRUST,
    );
    if (choice === MANAGE_TRUST) {
        await vscode.commands.executeCommand('workbench.trust.manage');
    }
    return false;
}
