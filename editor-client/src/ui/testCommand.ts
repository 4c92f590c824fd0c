/**
 * "Change…" on the server's "aider-lsp will run the tests with `…`" question: the server answers
 * FAILED with `notes.detected_test_command`; this offers an input pre-filled with it and keeps the
 * answer as the workspace's `aiderLsp.testCommand` (in a multi-root window, `folder`'s own), for
 * the caller to run again with it.
 */
import * as vscode from 'vscode';
import { SECTION } from '../common/settings';
import type { TaskResult } from '../protocol';
import { testCommandNotes } from '../protocolResults';

/** The command the user typed instead of the detected one (saved for the workspace), or undefined. */
export async function changedTestCommand(result: TaskResult | undefined, folder?: vscode.Uri): Promise<string | undefined> {
    const detected = result?.status === 'FAILED' ? testCommandNotes(result).detected_test_command : undefined;
    if (!detected) {
        return undefined;
    }
    const typed = await vscode.window.showInputBox({
        title: 'Aider: Test Command',
        prompt: 'The command that tests this workspace (saved as aiderLsp.testCommand in the workspace settings)',
        value: detected,
        ignoreFocusOut: true,
    });
    const command = typed?.trim();
    if (!command) {
        return undefined;
    }
    const target = folder ? vscode.ConfigurationTarget.WorkspaceFolder : vscode.ConfigurationTarget.Workspace;
    await vscode.workspace.getConfiguration(SECTION, folder).update('testCommand', command, target);
    return command;
}
