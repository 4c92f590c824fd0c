// The example project and the scripted models, shared by the end-to-end test and the editor
// demo (`./scripts/run editor`): a temp copy of the example calculator, its workspace settings
// pointing the extension at the repository's server, and the scripted OpenAI-compatible LLM.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';

export const E2E = path.dirname(fileURLToPath(import.meta.url));
export const CLIENT = path.dirname(E2E);
export const REPO = path.dirname(CLIENT);
export const PYTHON = path.join(REPO, '.venv', 'bin', 'python');
export const SERVER = path.join(REPO, '.venv', 'bin', 'aider-lsp');
export const TEST_COMMAND = `${PYTHON} -m unittest`;
const EXAMPLE = path.join(REPO, 'server', 'aider_lsp', 'examples', 'calculator');
const SCRIPTED_LLM = path.join(E2E, 'scripted_llm.py');

/** Copies the example calculator (buggy on purpose) to `dest`. */
export function copyExample(dest) {
    if (!fs.existsSync(path.join(EXAMPLE, 'calculator.py'))) throw new Error(`the example project is missing: ${EXAMPLE}`);
    fs.cpSync(EXAMPLE, dest, { recursive: true });
}

/** Runs the repository's Python with `args`; returns its stdout. */
export function python(args) {
    const out = spawnSync(PYTHON, args, { encoding: 'utf8' });
    if (out.status !== 0) throw new Error(`${PYTHON} ${args.join(' ')} failed (exit ${out.status}):\n${out.stderr}`);
    return out.stdout.trim();
}

/** The Aider environment the server uses (found before XDG_CACHE_HOME is moved into a run folder). */
export function aiderEnvDir() {
    return python(['-c', 'from aider_lsp.config import aider_env; print(aider_env.env_dir())']);
}

/** calculator.py of `project` after each scripted edit, as scripted_llm.py writes them. */
export function scriptedVersions(project) {
    return JSON.parse(python([SCRIPTED_LLM, '--project', project, '--print-versions']));
}

/** Starts the scripted LLM for `project`; resolves with {baseUrl, release(), stop()}. */
export async function startScriptedLlm(project, { log, hold = true } = {}) {
    const args = [SCRIPTED_LLM, '--project', project, ...(log ? ['--log', log] : []), ...(hold ? [] : ['--no-hold'])];
    const proc = spawn(PYTHON, args, { stdio: ['pipe', 'pipe', 'inherit'] });
    const firstLine = await new Promise((resolve, reject) => {
        readline.createInterface({ input: proc.stdout }).once('line', resolve);
        proc.once('exit', (code) => reject(new Error(`scripted_llm.py exited with ${code}`)));
    });
    const exited = new Promise((resolve) => proc.once('exit', resolve));
    return {
        baseUrl: JSON.parse(firstLine).base_url,
        release: () => proc.stdin.write('release\n'),
        stop: async () => {
            proc.stdin.end();
            await exited;
        },
    };
}

/**
 * Workspace settings: the repository's server (`server: null`: left to the User settings), the
 * test command (`testCommand: null`: none, the server detects one), whether a workflow runs the
 * tests before its first edit (`testsFirst`; unset: the default) and (if given) the scripted models.
 */
export function writeWorkspaceSettings(project, { server = SERVER, baseUrl, testCommand = TEST_COMMAND, testsFirst } = {}) {
    const settings = {
        ...(server ? { 'aiderLsp.server.path': server } : {}),
        ...(testCommand ? { 'aiderLsp.testCommand': testCommand } : {}),
        ...(testsFirst === undefined ? {} : { 'aiderLsp.testsBeforeFirstEdit': testsFirst }),
        'aiderLsp.timeouts': { llm: 120, aider: 300, test: 120, shell: 60 },
    };
    if (baseUrl) {
        Object.assign(settings, {
            'aiderLsp.model': 'openai:scripted-planner',
            'aiderLsp.baseUrl': baseUrl,
            'aiderLsp.aiderModel': 'openai/scripted-coder',
            'aiderLsp.aiderServer': { args: ['--edit-format', 'whole'] },
        });
    }
    fs.mkdirSync(path.join(project, '.vscode'), { recursive: true });
    fs.writeFileSync(path.join(project, '.vscode', 'settings.json'), JSON.stringify(settings, null, 2));
}

/** Environment additions for code-server: the Aider env found, and with the scripted models a key (any does). */
export function serverEnvironment({ scripted }) {
    return { AIDER_LSP_AIDER_ENV: aiderEnvDir(), ...(scripted ? { AIDER_LSP_API_KEY: 'scripted' } : {}) };
}
