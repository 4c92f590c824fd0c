// Two workflow runs side by side, each in a worktree of its own, in a real VS Code workbench, used
// as a user would: both started from the palette ("Aider: Run Workflow in a Worktree…") and under
// way at once (a progress notification each, the status item "2 runs", the Runs view), the user's
// file untouched meanwhile; both end ready; one is applied from the Runs view, the other discarded
// there: the user's file then holds the applied run's change, and nothing of the other.
// Same machinery as aider.e2e.test.mjs: code-server, the repository's server, the real bundled
// Aider (one per run), the scripted models of scripted_llm.py; the project is a git repository.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe } from 'node:test';
import { copyExample, E2E, PYTHON, scriptedVersions, SERVER, serverEnvironment, startScriptedLlm, writeWorkspaceSettings } from './project.mjs';
import { endStory, storySteps } from './story.mjs';
import { CodeServer, openBrowser, Workbench } from './workbench.mjs';

// What the user types; scripted_llm.py answers these (keep both in step). Each run tests its own function.
const GOAL_SUBTRACT = 'Fix subtract in a worktree';
const GOAL_AVERAGE = 'Fix average in a worktree';
const TEST_SUBTRACT = `${PYTHON} -m unittest test_calculator.CalculatorTest.test_subtract`;
const TEST_AVERAGE = `${PYTHON} -m unittest test_calculator.CalculatorTest.test_average_of_nothing_is_zero`;

function runFolder() {
    const stamp = new Date().toISOString().replace(/[:.]/g, '-');
    const dir = process.env.AIDER_LSP_E2E_OUT ? `${process.env.AIDER_LSP_E2E_OUT}-isolation` : path.join(E2E, 'runs', `${stamp}-isolation`);
    fs.mkdirSync(dir, { recursive: true });
    return dir;
}

/** `git args` in `cwd`; its stdout (the story fails if git does). */
function git(cwd, ...args) {
    const out = spawnSync('git', ['-c', 'user.name=e2e', '-c', 'user.email=e2e@example.invalid', ...args], { cwd, encoding: 'utf8' });
    assert.equal(out.status, 0, `git ${args.join(' ')}: ${out.stderr}`);
    return out.stdout;
}

/** The palette's "Run Workflow in a Worktree…": the goal, then the test command (replacing the pre-filled one). */
async function startRun(wb, goal, testCommand) {
    await wb.runCommand('Aider: Run Workflow in a Worktree…');
    await wb.answerInput(goal);
    await wb.answerInput(testCommand);
}

/** Waits for the Runs view's row of `goal` to match `pattern`, refreshing the view while it does not (a run's state moves on its own). */
async function runsRowSays(wb, goal, pattern, timeout = 60_000) {
    const row = wb.runsRow(goal);
    const refresh = wb.page.locator('.part.sidebar .title-actions .action-label[aria-label^="Refresh Runs"]').first();
    const deadline = Date.now() + timeout;
    let seen = '';
    while (Date.now() < deadline) {
        seen = (await row.isVisible()) ? await row.innerText() : '(not listed)';
        if (pattern.test(seen)) return seen;
        await refresh.click().catch(() => {});
        await sleep(1000);
    }
    throw new Error(`the Runs view's row of “${goal}” never matched ${pattern}; it shows: ${seen}`);
}

/** The items of a row's context menu (right click), closed again with Escape. */
async function contextMenu(wb, row) {
    await row.click({ button: 'right' });
    const items = wb.page.getByRole('menuitem');
    await items.first().waitFor({ timeout: 10_000 });
    const names = (await items.allInnerTexts()).map((name) => name.split('\n')[0].trim());
    await wb.screenshot('ready-run-menu');
    await wb.page.keyboard.press('Escape');
    return names;
}

describe('runs in worktrees side by side: one applied from the Runs view, one discarded', () => {
    const run = runFolder();
    const project = path.join(run, 'calculator');
    const file = path.join(project, 'calculator.py');
    let text;
    let llm;
    let codeServer;
    let browser;
    let wb;
    const passed = new Set();

    before(async () => {
        console.log(`e2e run folder: ${run}`);
        copyExample(project);
        text = scriptedVersions(project);
        llm = await startScriptedLlm(project, { log: path.join(run, 'llm-requests.json') });
        writeWorkspaceSettings(project, { baseUrl: llm.baseUrl, server: null, testsFirst: false });
        git(project, 'init', '-q');
        git(project, 'add', '-A');
        git(project, 'commit', '-q', '-m', 'the example calculator');
        codeServer = new CodeServer(path.join(run, 'code-server'), serverEnvironment({ scripted: true }));
        codeServer.writeUserSettings({ 'aiderLsp.server.path': process.env.AIDER_LSP_E2E_SERVER || SERVER });
        codeServer.installExtension(process.env.AIDER_LSP_E2E_VSIX || path.join(path.dirname(E2E), 'aider-lsp.vsix'));
        const url = await codeServer.start(project);
        browser = await openBrowser(url, path.join(run, 'chromium-profile'));
        wb = new Workbench(browser.page, path.join(run, 'screenshots'));
        await wb.ready();
    });

    after(() => endStory({ run, wb, browser, codeServer, llm }));

    const step = storySteps(() => wb, passed);

    step(1, 'starts two runs from the palette, each in a worktree: both under way at once, the user\'s file untouched', 'two-runs-under-way', async () => {
        await wb.openFile('calculator.py');
        // each run's Aider answer is held back (scripted_llm.py) until both have been seen under way
        await startRun(wb, GOAL_SUBTRACT, TEST_SUBTRACT);
        await wb.waitForToast(/Aider workflow “Fix subtract in a worktree” in a worktree/);
        await startRun(wb, GOAL_AVERAGE, TEST_AVERAGE);
        await wb.waitForToast(/Aider workflow “Fix average in a worktree” in a worktree/);
        await wb.page.locator('.statusbar-item', { hasText: '2 runs' }).first().waitFor({ timeout: 30_000 });
        await wb.showRuns();
        await runsRowSays(wb, GOAL_SUBTRACT, /running in a worktree/);
        await runsRowSays(wb, GOAL_AVERAGE, /running in a worktree/);
        assert.equal(fs.readFileSync(file, 'utf8'), text.original, 'the user\'s file while the runs run');
        await wb.openFile('calculator.py');
        assert.equal(await wb.editorText(), text.original);
    });

    step(2, 'both end ready: each says so and offers Apply, Show Diff and Discard; the user\'s file is still as it was', 'both-ready', async () => {
        llm.release();
        for (const goal of [GOAL_SUBTRACT, GOAL_AVERAGE]) {
            const ready = new RegExp(`Aider: “${goal}” is ready`);
            const said = await wb.waitForToast(ready, 300_000);
            assert.match(said, /goal reached in 1 iteration; the tests pass .*Changed calculator\.py\./);
            const toast = wb.page.locator('.notifications-toasts .notification-toast', { hasText: ready }).first();
            for (const button of ['Apply', 'Show Diff', 'Discard']) {
                await toast.locator('.monaco-button', { hasText: button }).first().waitFor({ timeout: 5_000 });
            }
        }
        // none under way: the status item that counted them is hidden
        await wb.page.locator('.statusbar-item', { hasText: /^\s*\d+ runs?\s*$/ }).first().waitFor({ state: 'hidden', timeout: 30_000 });
        assert.equal(fs.readFileSync(file, 'utf8'), text.original, 'nothing applied yet');
    });

    step(3, 'the Runs view lists both ready, with Apply, Discard, Show Diff and Keep as Branch; Show Diff is the run\'s change', 'ready-diff', async () => {
        await wb.showRuns();
        await runsRowSays(wb, GOAL_SUBTRACT, /ready to apply · goal reached · 1 iteration/);
        await runsRowSays(wb, GOAL_AVERAGE, /ready to apply · goal reached · 1 iteration/);
        const menu = await contextMenu(wb, wb.runsRow(GOAL_AVERAGE));
        for (const action of ['Apply', 'Discard', 'Show Diff', 'Keep as Branch']) {
            assert.ok(menu.includes(action), `${action} in ${JSON.stringify(menu)}`);
        }
        assert.ok(!menu.includes('Undo This Run'), 'nothing to undo before it is applied');
        await wb.runsViewAction(wb.runsRow(GOAL_AVERAGE), 'Show Diff');
        await wb.page.locator('.tab.active', { hasText: `calculator.py (before ↔ after “${GOAL_AVERAGE}”)` }).waitFor({ timeout: 30_000 });
        const diff = wb.page.locator('.monaco-diff-editor').first();
        await diff.locator('.editor.original .view-lines', { hasText: 'return sum(values) / len(values)' }).waitFor();
        await diff.locator('.editor.modified .view-lines', { hasText: 'if values else 0' }).waitFor();
        await wb.screenshot('ready-run-diff');
        await wb.runCommand('View: Close Editor');
    });

    step(4, 'Apply from the Runs view: the run\'s change lands on the user\'s file, and no other', 'applied', async () => {
        await wb.showRuns();
        await wb.runsViewAction(wb.runsRow(GOAL_SUBTRACT), 'Apply');
        assert.match(await wb.waitForToast(/Aider: Applied/), /calculator\.py/);
        assert.equal(fs.readFileSync(file, 'utf8'), text.wt_subtract);
        await wb.openFile('calculator.py');
        await wb.waitForEditorText(text.wt_subtract);
        await wb.showRuns();
        await runsRowSays(wb, GOAL_SUBTRACT, /^(?![\s\S]*ready to apply)[\s\S]*goal reached/); // an ordinary run of the history now
    });

    step(5, 'Discard from the Runs view, asked first: the user\'s file holds the applied run\'s change only, no worktree left', 'discarded', async () => {
        await wb.runsViewAction(wb.runsRow(GOAL_AVERAGE), 'Discard');
        const dialog = wb.page.locator('.monaco-dialog-box');
        await dialog.waitFor({ timeout: 30_000 });
        const asked = await dialog.innerText();
        assert.match(asked, /Discard “Fix average in a worktree”\?/);
        assert.match(asked, /Your files are not touched/);
        await wb.screenshot('discard-question');
        await wb.page.keyboard.press('Enter'); // the default button: Discard
        await dialog.waitFor({ state: 'detached' });
        await wb.waitForToast(/Aider: .*[Dd]iscard/);
        await runsRowSays(wb, GOAL_AVERAGE, /discarded/);
        const now = fs.readFileSync(file, 'utf8');
        assert.equal(now, text.wt_subtract, 'the applied run\'s change, and nothing of the discarded one');
        assert.doesNotMatch(now, /if values else 0/);
        await wb.openFile('calculator.py');
        await wb.waitForEditorText(text.wt_subtract);
        // nothing left behind: the runs' worktrees and branches are gone (a spare tree, on no branch
        // until a run takes it, may wait for the next run while the server is up)
        const branches = git(project, 'for-each-ref', '--format=%(refname:short)', 'refs/heads/aider-lsp/').split('\n').filter(Boolean);
        assert.deepEqual(branches, [], 'no run\'s branch is left');
        const entries = git(project, 'worktree', 'list', '--porcelain').split('\n\n').filter((entry) => entry.trim());
        const spares = entries.slice(1).filter((entry) => entry.split('\n').includes('detached'));
        assert.ok(spares.length <= 1, entries.join('\n\n'));
        assert.equal(entries.length, 1 + spares.length, entries.join('\n\n'));
        assert.ok(entries[0].startsWith(`worktree ${fs.realpathSync(project)}\n`), entries[0]);
    });
});
