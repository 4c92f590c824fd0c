/**
 * Finding the `aider-lsp` executable. Order: the `aiderLsp.server.path` setting, `aider-lsp` on
 * PATH, then the private environment this extension creates in its global storage
 * (server/setup.ts). The server's id and name come from package.json's `serverInfo`, their one
 * source. Starting it: server/client.ts.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';

/** package.json's `serverInfo`: the language client's id (e.g. the `aider-lsp.trace.server` setting) and the log's name. */
export interface ServerInfo {
    readonly id: string;
    readonly name: string;
}

/** The `serverInfo` of the extension's package.json; a manifest without one is a build error. */
export function loadServerDefaults(packageJson: unknown): ServerInfo {
    const info: unknown = typeof packageJson === 'object' && packageJson !== null ? (packageJson as { serverInfo?: unknown }).serverInfo : undefined;
    const { id, name } = (typeof info === 'object' && info !== null ? info : {}) as { id?: unknown; name?: unknown };
    if (typeof id !== 'string' || typeof name !== 'string' || !id || !name) {
        throw new Error('package.json has no serverInfo {id, name}');
    }
    return { id, name };
}

const EXECUTABLE = process.platform === 'win32' ? 'aider-lsp.exe' : 'aider-lsp';

/** The private virtual environment's directory in the extension's global storage. */
export function privateEnvDir(globalStorage: string): string {
    return path.join(globalStorage, 'server-venv');
}

/** The `aider-lsp` executable inside a virtual environment. */
export function venvExecutable(venv: string, name: string = EXECUTABLE): string {
    return path.join(venv, process.platform === 'win32' ? 'Scripts' : 'bin', name);
}

function isExecutable(file: string): boolean {
    try {
        fs.accessSync(file, fs.constants.X_OK);
        return fs.statSync(file).isFile();
    } catch {
        return false;
    }
}

/** The first executable file named `name` on `searchPath`. */
export function findOnPath(name: string, searchPath: string | undefined): string | undefined {
    for (const dir of (searchPath ?? '').split(path.delimiter)) {
        if (dir && isExecutable(path.join(dir, name))) {
            return path.join(dir, name);
        }
    }
    return undefined;
}

/** Found; missing (the set-up helps); or a bad `aiderLsp.server.path` (only fixing the setting helps). */
export type ServerLocation =
    | { kind: 'found'; executable: string; origin: 'setting' | 'path' | 'private' }
    | { kind: 'missing'; reason: string }
    | { kind: 'badSetting'; reason: string };

/** Where `aider-lsp` is, in the order docs/vscode.md describes. A configured path that does not exist is an error, not a fallback. */
export function locateServer(configuredPath: string, globalStorage: string, searchPath: string | undefined): ServerLocation {
    if (configuredPath) {
        return isExecutable(configuredPath)
            ? { kind: 'found', executable: configuredPath, origin: 'setting' }
            : { kind: 'badSetting', reason: `aiderLsp.server.path is ${configuredPath}, which is not an executable file: fix the setting or clear it` };
    }
    const onPath = findOnPath(EXECUTABLE, searchPath);
    if (onPath) {
        return { kind: 'found', executable: onPath, origin: 'path' };
    }
    const privateServer = venvExecutable(privateEnvDir(globalStorage));
    if (isExecutable(privateServer)) {
        return { kind: 'found', executable: privateServer, origin: 'private' };
    }
    return { kind: 'missing', reason: 'aider-lsp was not found (aiderLsp.server.path, PATH, or the private environment)' };
}
