/**
 * The language client for `aider-lsp serve` (stdio, vscode-languageclient): the server's
 * environment and settings, its stderr in the log at the server's own levels, and the client
 * commands this extension tells it about. Where the executable is: common/locate.ts.
 */
import * as vscode from 'vscode';
import { LanguageClient, RevealOutputChannelOn, type LanguageClientOptions, type Middleware, type ServerOptions } from 'vscode-languageclient/node';
import { ClientCommandsFeature } from '../common/capabilities';
import type { ServerInfo } from '../common/locate';
import { pipeServerLog, pipeServerStdout } from '../common/serverLog';
import { initializationOptions, SECTION, serverEnvironment } from '../common/settings';

/** The client for `executable`; not started yet. It tells the server the client commands it has. */
export function createClient(
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
