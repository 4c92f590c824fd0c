/** The one "Show Log" button: a message that offers the log, for failures the log explains. */
import * as vscode from 'vscode';

const SHOW_LOG = 'Show Log';

/**
 * Shows `text` with `items` and a "Show Log" button that opens `log`. Resolves to the other
 * button the user chose, else undefined.
 */
export async function showWithLog(
    log: vscode.LogOutputChannel,
    severity: 'error' | 'warning',
    text: string,
    ...items: string[]
): Promise<string | undefined> {
    const show = severity === 'error' ? vscode.window.showErrorMessage : vscode.window.showWarningMessage;
    const choice = await show(text, ...items, SHOW_LOG);
    if (choice === SHOW_LOG) {
        log.show();
        return undefined;
    }
    return choice;
}
