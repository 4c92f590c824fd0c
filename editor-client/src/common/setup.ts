/**
 * Zero set-up: a private virtual environment in the extension's global storage with the server
 * wheel that ships inside the .vsix, then `aider-lsp setup-aider` (Aider's own environment).
 * Every step's output goes to the log; a failure names what to do.
 */
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { findOnPath, privateEnvDir, venvExecutable } from './server';

export class SetupError extends Error {}

/** Runs a program, its output to the log; rejects with the last lines when it fails. */
function run(
    log: vscode.LogOutputChannel,
    command: string,
    args: string[],
    cancel: vscode.CancellationToken,
): Promise<string> {
    log.info(`$ ${command} ${args.join(' ')}`);
    return new Promise((resolve, reject) => {
        const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
        let output = '';
        const collect = (chunk: Buffer): void => {
            const text = chunk.toString();
            output = (output + text).slice(-4000);
            for (const line of text.split('\n')) {
                if (line.trim()) {
                    log.info(line);
                }
            }
        };
        child.stdout.on('data', collect);
        child.stderr.on('data', collect);
        const onCancel = cancel.onCancellationRequested(() => child.kill());
        child.on('error', (error) => {
            onCancel.dispose();
            reject(new SetupError(`${command} could not be started: ${error.message}`));
        });
        child.on('close', (code) => {
            onCancel.dispose();
            if (code === 0) {
                resolve(output);
            } else if (cancel.isCancellationRequested) {
                reject(new SetupError('set-up cancelled'));
            } else {
                const tail = output.trim().split('\n').slice(-3).join(' ');
                const step = [path.basename(command), ...args.slice(0, args[0] === '-m' ? 2 : 1)].join(' ');
                reject(new SetupError(`${step} failed (exit ${String(code)}): ${tail}`));
            }
        });
    });
}

/** The Python to build the environment with: the setting, else python3/python on PATH. */
export function choosePython(configured: string, searchPath: string | undefined): string | undefined {
    if (configured) {
        return configured;
    }
    const names = process.platform === 'win32' ? ['python.exe', 'py.exe'] : ['python3', 'python'];
    for (const name of names) {
        const found = findOnPath(name, searchPath);
        if (found) {
            return found;
        }
    }
    return undefined;
}

/** The server wheel the .vsix carries (`server/aider_lsp-*.whl`). */
export function bundledWheel(extensionPath: string): string | undefined {
    const dir = path.join(extensionPath, 'server');
    const wheel = fs.existsSync(dir) ? fs.readdirSync(dir).find((name) => /^aider_lsp-.*\.whl$/.test(name)) : undefined;
    return wheel ? path.join(dir, wheel) : undefined;
}

/**
 * Creates the private environment and returns its `aider-lsp`. Throws SetupError with a message
 * that says what to do.
 */
export async function createPrivateServer(
    python: string | undefined,
    extensionPath: string,
    globalStorage: string,
    log: vscode.LogOutputChannel,
): Promise<string> {
    if (!python) {
        throw new SetupError('Python 3.11 or newer was not found: install it, or set aiderLsp.server.python to its path.');
    }
    const wheel = bundledWheel(extensionPath);
    if (!wheel) {
        throw new SetupError('this build of the extension carries no server wheel: install aider-lsp yourself and set aiderLsp.server.path.');
    }
    const venv = privateEnvDir(globalStorage);
    return vscode.window.withProgress(
        { location: vscode.ProgressLocation.Notification, title: 'Aider: setting up the server', cancellable: true },
        async (progress, cancel) => {
            progress.report({ message: `checking ${python}` });
            const version = await run(log, python, ['-c', 'import sys; print(sys.version_info >= (3, 11))'], cancel).catch(() => 'error');
            if (version.trim() !== 'True') {
                throw new SetupError(`${python} is not Python 3.11 or newer: set aiderLsp.server.python to a Python 3.11+ interpreter.`);
            }
            fs.mkdirSync(globalStorage, { recursive: true });
            progress.report({ message: 'creating a virtual environment' });
            await run(log, python, ['-m', 'venv', '--clear', venv], cancel);
            progress.report({ message: 'installing the server (pip)' });
            await run(log, venvExecutable(venv, process.platform === 'win32' ? 'python.exe' : 'python'), ['-m', 'pip', 'install', '--disable-pip-version-check', wheel], cancel);
            const executable = venvExecutable(venv);
            progress.report({ message: 'installing Aider (aider-lsp setup-aider, a few minutes)' });
            await run(log, executable, ['setup-aider'], cancel);
            return executable;
        },
    );
}
