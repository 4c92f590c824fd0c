/**
 * Zero set-up: a private virtual environment in the extension's global storage with the server
 * wheel that ships inside the .vsix, then `aider-lsp setup-aider` (Aider's own environment).
 * Every step's output goes to the log; a failure names what to do.
 */
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { findOnPath, privateEnvDir, venvExecutable } from '../common/locate';

export class SetupError extends Error {}

/**
 * Runs a program in `cwd`, its output to the log (and each line to `onLine`); rejects with the
 * last lines when it fails. `cwd` is the extension's own storage, never a workspace: Python puts
 * the folder it starts in on its import path, and a repository's modules must never load there.
 */
function run(
    log: vscode.LogOutputChannel,
    cwd: string,
    command: string,
    args: string[],
    cancel: vscode.CancellationToken,
    onLine: (line: string) => void = () => undefined,
): Promise<string> {
    log.info(`$ ${command} ${args.join(' ')}`);
    return new Promise((resolve, reject) => {
        const child = spawn(command, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
        let output = '';
        const collect = (chunk: Buffer): void => {
            const text = chunk.toString();
            output = (output + text).slice(-4000);
            for (const line of text.split('\n')) {
                if (line.trim()) {
                    log.info(line);
                    onLine(line.trim());
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
                const named = args.filter((arg) => arg !== '-I');
                const step = [path.basename(command), ...named.slice(0, named[0] === '-m' ? 2 : 1)].join(' ');
                reject(new SetupError(`${step} failed (exit ${String(code)}): ${tail}`));
            }
        });
    });
}

/** A configured Python that is not there, or not a program: what to say (undefined: it may be one). */
function pythonProblem(python: string): string | undefined {
    let stat: fs.Stats;
    try {
        stat = fs.statSync(python);
    } catch {
        return path.isAbsolute(python) || python.includes(path.sep) ? `aiderLsp.server.python is ${python}, which does not exist` : undefined;
    }
    if (!stat.isFile()) {
        return `aiderLsp.server.python is ${python}, which is not a file`;
    }
    try {
        fs.accessSync(python, fs.constants.X_OK);
    } catch {
        return `aiderLsp.server.python is ${python}, which is not executable`;
    }
    return undefined;
}

/** "1 min 20 s" */
function elapsed(ms: number): string {
    const seconds = Math.floor(ms / 1000);
    return seconds < 60 ? `${String(seconds)} s` : `${String(Math.floor(seconds / 60))} min ${String(seconds % 60)} s`;
}

/**
 * The step's message, then every second its elapsed time and the latest line it printed (pip's
 * "Collecting …", "Installing collected packages"), so a step of minutes is seen moving.
 */
function stepProgress(message: string, report: (message: string) => void): { onLine(line: string): void; dispose(): void } {
    const started = Date.now();
    let latest = '';
    const show = (): void => {
        const line = latest.length > 70 ? `${latest.slice(0, 70)}…` : latest;
        report(`${message} — ${elapsed(Date.now() - started)}${line ? `: ${line}` : ''}`);
    };
    report(message);
    const timer = setInterval(show, 1000);
    return {
        onLine: (line) => {
            latest = line;
        },
        dispose: () => { clearInterval(timer); },
    };
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
function bundledWheel(extensionPath: string): string | undefined {
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
    onPhase: (phase: string) => void = () => undefined,
): Promise<string> {
    if (!python) {
        throw new SetupError('Python 3.11 or newer was not found: install it, or set aiderLsp.server.python to its path.');
    }
    const problem = pythonProblem(python);
    if (problem) {
        throw new SetupError(`${problem}: set it to a Python 3.11+ interpreter, or leave it empty to use python3 on PATH.`);
    }
    const wheel = bundledWheel(extensionPath);
    if (!wheel) {
        throw new SetupError('this build of the extension carries no server wheel: install aider-lsp yourself and set aiderLsp.server.path.');
    }
    const venv = privateEnvDir(globalStorage);
    return vscode.window.withProgress(
        { location: vscode.ProgressLocation.Notification, title: 'Aider: setting up the server', cancellable: true },
        async (progress, cancel) => {
            const report = (message: string): void => {
                progress.report({ message });
                onPhase(`setting up: ${message}`);
            };
            /** One step under its own progress message. */
            const step = async (message: string, command: string, args: string[]): Promise<string> => {
                const shown = stepProgress(message, report);
                try {
                    return await run(log, globalStorage, command, args, cancel, (line) => { shown.onLine(line); });
                } finally {
                    shown.dispose();
                }
            };
            report(`checking ${python}`);
            fs.mkdirSync(globalStorage, { recursive: true });
            const version = await run(log, globalStorage, python, ['-I', '-c', 'import sys; print(sys.version_info >= (3, 11))'], cancel).catch(() => 'error');
            if (version.trim() !== 'True') {
                throw new SetupError(`${python} is not Python 3.11 or newer: set aiderLsp.server.python to a Python 3.11+ interpreter.`);
            }
            await step('1/3 creating a virtual environment', python, ['-I', '-m', 'venv', '--clear', venv]);
            const venvPython = venvExecutable(venv, process.platform === 'win32' ? 'python.exe' : 'python');
            await step('2/3 installing the server (pip)', venvPython, ['-I', '-m', 'pip', 'install', '--disable-pip-version-check', wheel]);
            const executable = venvExecutable(venv);
            await step('3/3 installing Aider (pip, a few minutes)', executable, ['setup-aider']);
            return executable;
        },
    );
}
