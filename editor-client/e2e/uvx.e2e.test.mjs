// A new user of an ACP editor, on a machine with Python and uv only: the agent comes from this
// project's wheel through `uvx --from <wheel> aider-lsp acp` (as the registry entry's `uvx`
// distribution runs it), with every cache empty (uv's, pip's, Aider's environment) and no
// sign-in. acpx (a headless ACP client) drives it as the editor would:
//   1. initialize offers the sign-in methods; session/new without a model answers auth-required;
//   2. the terminal sign-in (`<agent command> login`, as a Terminal Auth client runs it) is given
//      its answers as options and the key on standard input: stored, 0600, outside the workspace;
//   3. a new session (no restart, no variable set) runs a Workflow turn: the first prompt sets
//      Aider's environment up (a tool call the client sees), then fixes the calculator.
// The models are the scripted server of scripted_llm.py; Aider's edits are real. uv is installed
// by setup.sh (pinned); the figures (times, MB downloaded) go to the run folder's figures.json.
// Run it with `npm run test:e2e`, or alone: node --test editor-client/e2e/uvx.e2e.test.mjs
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ACPX, answerTo, CACHE, NODE24, quoted, runAcpx, text, toolCalls, updates } from './acpx.mjs';
import { copyExample, E2E, PYTHON, REPO, scriptedVersions, startScriptedLlm, TEST_COMMAND } from './project.mjs';

const GOAL = 'Make the tests pass';
const TURN_TIMEOUT_S = 900; // the first turn builds Aider's environment (about 1.5 minutes here)
const UVX = path.join(CACHE, 'uv', 'bin', 'uvx');
const KEY = 'sk-scripted-0123456789';

function runFolder() {
    const stamp = new Date().toISOString().replace(/[:.]/g, '-');
    const dir = process.env.AIDER_LSP_E2E_OUT
        ? path.join(process.env.AIDER_LSP_E2E_OUT, 'uvx')
        : path.join(E2E, 'runs', `${stamp}-uvx`);
    fs.mkdirSync(dir, { recursive: true });
    return dir;
}

/** Bytes under `folder` (symlinks not followed), in MB. */
function megabytes(folder) {
    let total = 0;
    for (const entry of fs.readdirSync(folder, { recursive: true, withFileTypes: true })) {
        if (entry.isFile()) total += fs.statSync(path.join(entry.parentPath, entry.name)).size;
    }
    return Math.round(total / 1e5) / 10;
}

/** This project's wheel, built as a release would be. */
function buildWheel(dist) {
    const out = spawnSync(PYTHON, ['-m', 'pip', 'wheel', REPO, '--no-deps', '-q', '-w', dist], { encoding: 'utf8' });
    assert.equal(out.status, 0, `building the wheel failed:\n${out.stdout}${out.stderr}`);
    const wheel = fs.readdirSync(dist).find((name) => /^aider_lsp-.*\.whl$/.test(name));
    assert.ok(wheel, `no aider_lsp wheel in ${dist}`);
    return path.join(dist, wheel);
}

/**
 * A user's environment with nothing of ours in it: no AIDER_LSP_* variable (no model, no key), no
 * uv or pip setting, every cache, config and state folder new and empty.
 */
function newUserEnvironment(run) {
    const env = Object.fromEntries(
        Object.entries(process.env).filter(([key]) => !/^(AIDER_LSP_|UV_|PIP_|VIRTUAL_ENV)/.test(key)),
    );
    const folders = {
        HOME: 'home', XDG_CACHE_HOME: 'xdg-cache', XDG_CONFIG_HOME: 'config', XDG_STATE_HOME: 'state',
        UV_CACHE_DIR: 'uv-cache', UV_TOOL_DIR: 'uv-tools', UV_PYTHON_INSTALL_DIR: 'uv-python',
    };
    for (const [key, name] of Object.entries(folders)) {
        env[key] = path.join(run, name);
        fs.mkdirSync(env[key], { recursive: true });
    }
    env.PATH = `${path.dirname(UVX)}:${process.env.PATH}`;
    // the project's own test command, as the user would have it (no model, no key: those come from the sign-in)
    env.AIDER_LSP_TEST_COMMAND = TEST_COMMAND;
    // the scripted coder answers in whole files
    env.AIDER_LSP_AIDER_SERVER = JSON.stringify({ args: ['--edit-format', 'whole'] });
    return env;
}

describe('from nothing to a green turn: uvx, sign-in, first-run set-up', () => {
    const run = runFolder();
    const project = path.join(run, 'calculator');
    const file = path.join(project, 'calculator.py');
    const figures = {};
    let env;
    let agent; // the command an editor starts: uvx --from <wheel> aider-lsp
    let versions;
    let llm;
    let before1; // acpx with no sign-in
    let login; // the terminal sign-in
    let turn; // acpx after it

    before(async () => {
        for (const [what, where] of [['Node 24', NODE24], ['acpx', ACPX], ['uv', UVX]]) {
            assert.ok(fs.existsSync(where), `${what} is not installed at ${where}: run editor-client/e2e/setup.sh`);
        }
        console.log(`uvx e2e run folder: ${run}`);
        copyExample(project);
        versions = scriptedVersions(project);
        llm = await startScriptedLlm(project, { log: path.join(run, 'llm-requests.json'), hold: false });
        env = newUserEnvironment(run);
        agent = [UVX, '--from', buildWheel(path.join(run, 'dist')), 'aider-lsp'];
        const acpxArgs = ['--format', 'json', '--cwd', project, '--timeout', String(TURN_TIMEOUT_S),
            '--non-interactive-permissions', 'fail', '--agent', [...agent, 'acp'].map(quoted).join(' ')];

        let started = Date.now();
        before1 = await runAcpx([...acpxArgs, 'exec', GOAL], { cwd: run, env, out: run, name: 'no-sign-in' });
        figures.first_start_s = (Date.now() - started) / 1000;

        const method = answerTo(before1.messages, 'initialize').result?.authMethods?.find((m) => m.type === 'terminal');
        const loginArgs = [...(method?.args ?? ['login']), '--base-url', llm.baseUrl, '--model', 'scripted-planner',
            '--aider-model', 'openai/scripted-coder', '--with-key'];
        started = Date.now();
        login = spawnSync(agent[0], [...agent.slice(1), ...loginArgs], { cwd: run, env, input: `${KEY}\n`, encoding: 'utf8' });
        figures.login_s = (Date.now() - started) / 1000;

        started = Date.now();
        turn = await runAcpx([...acpxArgs, 'exec', '--config-option', 'mode=workflow', GOAL], { cwd: run, env, out: run, name: 'turn' });
        figures.turn_s = (Date.now() - started) / 1000;
        for (const name of ['uv-cache', 'xdg-cache', 'uv-tools', 'uv-python']) {
            figures[`${name}_mb`] = megabytes(path.join(run, name));
        }
        fs.writeFileSync(path.join(run, 'figures.json'), JSON.stringify(figures, null, 1));
        console.log(`uvx e2e figures: ${JSON.stringify(figures)}`);
    });

    after(async () => {
        await llm?.stop();
    });

    it('initialize offers the sign-in: the terminal method, the environment variables', () => {
        const { authMethods } = answerTo(before1.messages, 'initialize').result;
        const ids = authMethods.map((m) => m.id);
        assert.ok(ids.includes('environment'), JSON.stringify(authMethods));
        const variables = authMethods.find((m) => m.id === 'environment').vars.map((v) => v.name);
        assert.ok(variables.includes('AIDER_LSP_MODEL') && variables.includes('AIDER_LSP_API_KEY'), JSON.stringify(variables));
    });

    it('with no sign-in, session/new answers auth-required (so the editor shows its sign-in)', () => {
        const { error } = answerTo(before1.messages, 'session/new');
        assert.equal(error?.code, -32000, JSON.stringify(error));
        assert.match(error.data?.message ?? error.message, /sign in/);
        assert.notEqual(before1.code, 0);
    });

    it('the terminal sign-in takes its answers without a prompt and keeps the key outside the workspace', () => {
        assert.equal(login.status, 0, `login failed:\n${login.stdout}\n${login.stderr}`);
        assert.ok(!`${login.stdout}${login.stderr}`.includes(KEY), 'the key was printed');
        const store = path.join(env.XDG_CONFIG_HOME, 'aider-lsp', 'credentials.json');
        assert.ok(login.stdout.includes(store), login.stdout);
        assert.equal(fs.statSync(store).mode & 0o777, 0o600);
        assert.ok(!spawnSync('grep', ['-r', KEY, project]).stdout.length, 'the key is in the workspace');
    });

    it('a new session then works with no restart: the first turn sets Aider up (seen), then the tests pass', () => {
        const errors = turn.messages.filter((m) => m.error).map((m) => JSON.stringify(m.error));
        assert.equal(turn.code, 0, `acpx failed:\n${errors.join('\n')}\n${turn.stderr}`);
        assert.equal(answerTo(turn.messages, 'session/prompt').result?.stopReason, 'end_turn');
        const setup = toolCalls(turn.messages).find((c) => /^Setting up/.test(c.title ?? ''));
        assert.ok(setup, `no set-up tool call: ${JSON.stringify(toolCalls(turn.messages).map((c) => c.title))}`);
        assert.equal(setup.status, 'completed', text(setup.content));
        const reply = updates(turn.messages).filter((u) => u.sessionUpdate === 'agent_message_chunk').map((u) => u.content.text).join('');
        assert.match(reply, /The tests pass/);
        assert.equal(fs.readFileSync(file, 'utf8'), versions.fixed);
        const tests = spawnSync(PYTHON, ['-m', 'unittest'], { cwd: project, encoding: 'utf8' });
        assert.equal(tests.status, 0, tests.stderr);
    });
});
