/**
 * Finding and starting the `aider-lsp serve` language server (stdio) with vscode-languageclient.
 * Order: the `aiderLsp.server.path` setting, `aider-lsp` on PATH, then the private environment
 * this extension creates in its global storage (see setup.ts). The server's id and name come
 * from package.json's `serverInfo`, their one source.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { LanguageClient, RevealOutputChannelOn, type LanguageClientOptions, type Middleware, type ServerOptions } from 'vscode-languageclient/node';
import { ClientCommandsFeature } from './capabilities';
import { pipeServerLog, pipeServerStdout } from './serverLog';
import { initializationOptions, SECTION, serverEnvironment } from './settings';

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

/** Where `aider-lsp` is, in the order the README describes. A configured path that does not exist is an error, not a fallback. */
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

/** The client for `executable`; not started yet. It tells the server the client commands it has. */
export function createServer(
    info: ServerInfo,
    executable: string,
    apiKey: string | undefined,
    outputChannel: vscode.LogOutputChannel,
    middleware: Middleware,
    pythonInterpreter?: string,
): LanguageClient {
    const config = vscode.workspace.getConfiguration(SECTION);
    const serverOptions: ServerOptions = {
        command: executable,
        args: ['serve'],
        options: { env: serverEnvironment(process.env, apiKey, pythonInterpreter) },
    };
    const clientOptions: LanguageClientOptions = {
        documentSelector: [{ scheme: 'file' }, { scheme: 'untitled' }],
        outputChannel,
        traceOutputChannel: outputChannel,
        revealOutputChannelOn: RevealOutputChannelOn.Never,
        // the server logs to stderr at its own levels: INFO stays info, not [error]
        stdioOptions: { stdout: pipeServerStdout, stderr: pipeServerLog },
        initializationOptions: initializationOptions((key) => config.get(key), apiKey),
        synchronize: { configurationSection: SECTION },
        middleware,
    };
    const client = new LanguageClient(info.id, info.name, serverOptions, clientOptions);
    client.registerFeature(new ClientCommandsFeature());
    return client;
}
