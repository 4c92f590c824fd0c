/**
 * The Python interpreter the Python extension (ms-python.python) picked for the workspace, if it
 * is installed: the server runs a detected Python test command with it when the project has no
 * `.venv/` or `venv/` of its own. Any failure (no extension, an older API) means "not known".
 */
import * as vscode from 'vscode';

interface PythonExtensionApi {
    environments?: { getActiveEnvironmentPath?(resource?: vscode.Uri): { path?: string } | undefined };
    settings?: { getExecutionDetails?(resource?: vscode.Uri): { execCommand?: string[] } | undefined };
}

/** The interpreter's path, or undefined when the Python extension is absent or does not say. */
export async function pythonExtensionInterpreter(resource?: vscode.Uri): Promise<string | undefined> {
    try {
        const extension = vscode.extensions?.getExtension<PythonExtensionApi>('ms-python.python');
        if (!extension) {
            return undefined;
        }
        const api = extension.isActive ? extension.exports : await extension.activate();
        const active = api?.environments?.getActiveEnvironmentPath?.(resource)?.path;
        const legacy = api?.settings?.getExecutionDetails?.(resource)?.execCommand?.[0];
        return active || legacy || undefined;
    } catch {
        return undefined;
    }
}
