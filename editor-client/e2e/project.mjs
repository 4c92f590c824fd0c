// The example project and the scripted models, shared by the end-to-end test and the editor
// demo (`./scripts/run editor`): a temp copy of examples/calculator, its workspace settings
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
const EXAMPLE = path.join(REPO, 'examples', 'calculator');
const SCRIPTED_LLM = path.join(E2E, 'scripted_llm.py');

// Until examples/calculator is in the repository, the same calculator from here.
const FALLBACK_EXAMPLE = {
    'calculator.py':
        '"""A tiny calculator (it has two bugs the tests catch)."""\n\n\n' +
        'def add(a, b):\n    return a + b\n\n\n' +
        'def subtract(a, b):\n    return b - a\n\n\n' +
        'def average(values):\n    """The mean of a list of numbers; 0 for an empty list."""\n' +
        '    return sum(values) / len(values)\n',
    'test_calculator.py':
        'import unittest\n\nfrom calculator import add, average, subtract\n\n\n' +
        'class CalculatorTest(unittest.TestCase):\n' +
        '    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n\n' +
        '    def test_subtract(self):\n        self.assertEqual(subtract(5, 3), 2)\n\n' +
        '    def test_average(self):\n        self.assertEqual(average([1, 2, 3]), 2)\n\n' +
        '    def test_average_of_nothing_is_zero(self):\n        self.assertEqual(average([]), 0)\n\n\n' +
        "if __name__ == '__main__':\n    unittest.main()\n",
};

/** Copies the example calculator (buggy on purpose) to `dest`. */
export function copyExample(dest) {
    if (fs.existsSync(EXAMPLE)) {
        fs.cpSync(EXAMPLE, dest, { recursive: true });
        return;
    }
    fs.mkdirSync(dest, { recursive: true });
    for (const [name, text] of Object.entries(FALLBACK_EXAMPLE)) fs.writeFileSync(path.join(dest, name), text);
}

/** Runs the repository's Python with `args`; returns its stdout. */
export function python(args) {
    const out = spawnSync(PYTHON, args, { encoding: 'utf8' });
    if (out.status !== 0) throw new Error(`${PYTHON} ${args.join(' ')} failed (exit ${out.status}):\n${out.stderr}`);
    return out.stdout.trim();
}

/** The Aider environment the server uses (found before XDG_CACHE_HOME is moved into a run folder). */
export function aiderEnvDir() {
    return python(['-c', 'from aider_lsp import aider_env; print(aider_env.env_dir())']);
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

/** Workspace settings: the repository's server, the test command and (if given) the scripted models. */
export function writeWorkspaceSettings(project, { server = SERVER, baseUrl } = {}) {
    const settings = {
        'aiderLsp.server.path': server,
        'aiderLsp.testCommand': TEST_COMMAND,
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
