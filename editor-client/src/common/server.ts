/**
 * Finding and starting the `aider-lsp serve` language server (stdio) with vscode-languageclient.
 * Order: the `aiderLsp.server.path` setting, `aider-lsp` on PATH, then the private environment
 * this extension creates in its global storage (see setup.ts).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { LanguageClient, RevealOutputChannelOn, type LanguageClientOptions, type Middleware, type ServerOptions } from 'vscode-languageclient/node';
import { initializationOptions, SECTION, serverEnvironment } from './settings';

export const SERVER_ID = 'aider-lsp';
export const SERVER_NAME = 'Aider LSP';

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

export type ServerLocation = { kind: 'found'; executable: string; origin: 'setting' | 'path' | 'private' } | { kind: 'missing'; reason: string };

/** Where `aider-lsp` is, in the order the README describes. A configured path that does not exist is an error, not a fallback. */
export function locateServer(configuredPath: string, globalStorage: string, searchPath: string | undefined): ServerLocation {
    if (configuredPath) {
        return isExecutable(configuredPath)
            ? { kind: 'found', executable: configuredPath, origin: 'setting' }
            : { kind: 'missing', reason: `aiderLsp.server.path is ${configuredPath}, which is not an executable file` };
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

/** The client for `executable`; not started yet. */
export function createServer(
    executable: string,
    apiKey: string | undefined,
    outputChannel: vscode.LogOutputChannel,
    middleware: Middleware,
): LanguageClient {
    const config = vscode.workspace.getConfiguration(SECTION);
    const serverOptions: ServerOptions = {
        command: executable,
        args: ['serve'],
        options: { env: serverEnvironment(process.env, apiKey) },
    };
    const clientOptions: LanguageClientOptions = {
        documentSelector: [{ scheme: 'file' }, { scheme: 'untitled' }],
        outputChannel,
        traceOutputChannel: outputChannel,
        revealOutputChannelOn: RevealOutputChannelOn.Never,
        initializationOptions: initializationOptions((key) => config.get(key), apiKey),
        synchronize: { configurationSection: SECTION },
        middleware,
    };
    return new LanguageClient(SERVER_ID, SERVER_NAME, serverOptions, clientOptions);
}
