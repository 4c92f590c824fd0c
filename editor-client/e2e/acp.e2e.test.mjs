// `aider-lsp acp` driven by a client nobody here wrote: acpx (npm, a headless Agent Client
// Protocol client), as an editor that hosts coding agents would drive it. One Workflow turn on a
// copy of the example calculator (two bugs, a failing `python -m unittest`): acpx opens a session,
// picks the Workflow mode through the agent's "mode" config option, sends the goal, and prints
// every ACP message as one JSON line (`--format json`). The agent is the repository's (.venv),
// Aider the real bundled one, the models the scripted server of scripted_llm.py.
// acpx (0.19.1) and the Node 24 it needs come from the e2e cache (setup.sh installs both).
// Run it with `npm run test:e2e` (after the VS Code test), or alone:
//   node --test editor-client/e2e/acp.e2e.test.mjs
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ACPX, answerTo, NODE24, quoted, runAcpx, text, toolCalls, updates } from './acpx.mjs';
import {
    copyExample, E2E, PYTHON, scriptedVersions, SERVER, serverEnvironment, startScriptedLlm, TEST_COMMAND,
} from './project.mjs';

// The goal typed into the editor's agent panel; scripted_llm.py plans it as "Fix subtract",
// then the failing test's output brings the fix of average([]).
const GOAL = 'Make the tests pass';
const TURN_TIMEOUT_S = 300;

/** The run's folder: acpx's events and stderr, the scripted model's log, the project copy. */
function runFolder() {
    const stamp = new Date().toISOString().replace(/[:.]/g, '-');
    const dir = process.env.AIDER_LSP_E2E_OUT
        ? path.join(process.env.AIDER_LSP_E2E_OUT, 'acpx')
        : path.join(E2E, 'runs', `${stamp}-acpx`);
    fs.mkdirSync(dir, { recursive: true });
    return dir;
}

describe('aider-lsp acp driven by acpx', () => {
    const run = runFolder();
    const project = path.join(run, 'calculator');
    const file = path.join(project, 'calculator.py');
    let versions; // calculator.py at each point of the story
    let llm;
    let acpx; // {code, messages, stderr}

    before(async () => {
        for (const [what, where] of [['Node 24', NODE24], ['acpx', ACPX]]) {
            assert.ok(fs.existsSync(where), `${what} is not installed at ${where}: run editor-client/e2e/setup.sh`);
        }
        console.log(`acpx e2e run folder: ${run}`);
        copyExample(project);
        versions = scriptedVersions(project);
        llm = await startScriptedLlm(project, { log: path.join(run, 'llm-requests.json'), hold: false });
        const env = {
            ...process.env,
            // acpx's state (~/.acpx) and Aider's (~/.aider) stay in the run folder
            HOME: path.join(run, 'home'),
            ...serverEnvironment({ scripted: true }),
            AIDER_LSP_MODEL: 'openai:scripted-planner',
            AIDER_LSP_BASE_URL: llm.baseUrl,
            AIDER_LSP_AIDER_MODEL: 'openai/scripted-coder',
            AIDER_LSP_AIDER_SERVER: JSON.stringify({ args: ['--edit-format', 'whole'] }),
            AIDER_LSP_TEST_COMMAND: TEST_COMMAND,
        };
        fs.mkdirSync(env.HOME, { recursive: true });
        const started = Date.now();
        acpx = await runAcpx(
            [
                '--format', 'json',
                '--cwd', project,
                '--timeout', String(TURN_TIMEOUT_S),
                // the test command is the user's own: the agent has nothing to ask
                '--non-interactive-permissions', 'fail',
                // AIDER_LSP_E2E_SERVER: another agent executable (e.g. /bin/false, to see the test fail)
                '--agent', `${quoted(process.env.AIDER_LSP_E2E_SERVER || SERVER)} acp`,
                'exec', '--config-option', 'mode=workflow', GOAL,
            ],
            { cwd: run, env, out: run },
        );
        console.log(`acpx exited with ${acpx.code} after ${((Date.now() - started) / 1000).toFixed(1)} s`);
    });

    after(async () => {
        await llm?.stop();
    });

    it('acpx ends without an error, the turn with end_turn', () => {
        const errors = acpx.messages.filter((m) => m.error).map((m) => JSON.stringify(m.error));
        assert.equal(acpx.code, 0, `acpx failed:\n${errors.join('\n')}\n${acpx.stderr}`);
        assert.equal(answerTo(acpx.messages, 'session/prompt').result?.stopReason, 'end_turn');
    });

    it('the session runs in Workflow mode: its plan starts with the first edit (or planning)', () => {
        const chosen = answerTo(acpx.messages, 'session/set_config_option').result.configOptions.find((o) => o.id === 'mode');
        assert.equal(chosen.currentValue, 'workflow');
        const plans = updates(acpx.messages).filter((u) => u.sessionUpdate === 'plan');
        assert.ok(plans.length > 0, 'no plan update');
        assert.match(plans.at(-1).entries[0].content, /^(Planning|Iteration 1\/)/);
        assert.ok(plans.at(-1).entries.every((e) => e.status === 'completed'), JSON.stringify(plans.at(-1)));
    });

    it('the test runs are execute tool calls: the first fails, the last shows the tests passing', () => {
        const runs = toolCalls(acpx.messages).filter((c) => c.kind === 'execute');
        assert.ok(runs.length >= 2, JSON.stringify(runs, null, 1));
        assert.equal(runs[0].status, 'failed');
        assert.match(text(runs[0].content), /FAILED \(/);
        const last = runs.at(-1);
        assert.equal(last.status, 'completed');
        assert.equal(last.title.split(' (')[0], TEST_COMMAND); // the whole suite, as configured
        assert.match(text(last.content), /Ran 4 tests[\s\S]*^OK$/m);
    });

    it('each edit is an edit tool call; their diffs go from the original calculator.py to the file now', () => {
        const edits = toolCalls(acpx.messages).filter((c) => c.kind === 'edit');
        assert.ok(edits.length >= 1, 'no edit tool call');
        const diffs = edits
            .flatMap((c) => (c.content || []).filter((part) => part.type === 'diff'))
            .filter((d) => d.path === file);
        assert.ok(diffs.length >= 1, `no diff of ${file}: ${JSON.stringify(edits, null, 1)}`);
        // shown as each edit landed: one after the other, they rebuild the file
        assert.equal(diffs[0].oldText, versions.original);
        diffs.slice(1).forEach((d, i) => assert.equal(d.oldText, diffs[i].newText));
        assert.equal(diffs.at(-1).newText, fs.readFileSync(file, 'utf8'));
        assert.ok(edits.every((c) => c.status === 'completed'), JSON.stringify(edits, null, 1));
    });

    it('the reply says the tests pass, and they do: calculator.py is fixed on disk', () => {
        const reply = updates(acpx.messages)
            .filter((u) => u.sessionUpdate === 'agent_message_chunk')
            .map((u) => u.content.text)
            .join('');
        assert.match(reply, /The tests pass/);
        assert.equal(fs.readFileSync(file, 'utf8'), versions.fixed);
        const tests = spawnSync(PYTHON, ['-m', 'unittest'], { cwd: project, encoding: 'utf8' });
        assert.equal(tests.status, 0, tests.stderr);
    });
});
