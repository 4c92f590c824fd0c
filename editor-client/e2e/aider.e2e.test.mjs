// The extension in a real VS Code workbench (code-server + headless Chromium), used as a user
// would: palette, input boxes, the editor, notifications, the Problems panel, the quick fix.
// The language server is the repository's (.venv), Aider is the real bundled one, and the
// models are the scripted OpenAI-compatible server of scripted_llm.py.
// Run it with `npm run test:e2e` (e2e/run.sh installs what it needs first).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe } from 'node:test';
import {
    CLIENT, copyExample, E2E, PYTHON, REPO, scriptedVersions, SERVER, serverEnvironment, startScriptedLlm, TEST_COMMAND,
    writeWorkspaceSettings,
} from './project.mjs';
import { endStory, storySteps } from './story.mjs';
import { CodeServer, openBrowser, Workbench } from './workbench.mjs';

const DOCS = path.join(REPO, 'docs', 'images');

// What the user types; scripted_llm.py answers these (keep both in step).
const EDIT_INSTRUCTION = 'Add a docstring to add';
const GOAL_FIX = 'Make the tests pass';
const GOAL_REVIEW = 'Mark calculator.py as reviewed';
const GOAL_AREA = 'Make the circle area test pass';
// A result or error notification (a progress notification starts with its title instead).
const RESULT = /^Aider: /m;

/** The run's folder: screenshots, logs, the project copy, the profiles. */
function runFolder() {
    const stamp = new Date().toISOString().replace(/[:.]/g, '-');
    const dir = process.env.AIDER_LSP_E2E_OUT || path.join(E2E, 'runs', stamp);
    fs.mkdirSync(dir, { recursive: true });
    return dir;
}

/** The .vsix under test: AIDER_LSP_E2E_VSIX, else `npm run package`. */
function buildVsix() {
    if (process.env.AIDER_LSP_E2E_VSIX) return process.env.AIDER_LSP_E2E_VSIX;
    const out = spawnSync('npm', ['run', 'package'], { cwd: CLIENT, encoding: 'utf8' });
    assert.equal(out.status, 0, `npm run package failed:\n${out.stdout}${out.stderr}`);
    return path.join(CLIENT, 'aider-lsp.vsix');
}

describe('the Aider extension in a real VS Code', () => {
    const run = runFolder();
    const project = path.join(run, 'calculator');
    let text; // calculator.py at each point of the story
    let llm;
    let codeServer;
    let browser;
    let wb;
    const shots = {};
    const passed = new Set();

    before(async () => {
        console.log(`e2e run folder: ${run}`);
        copyExample(project);
        text = scriptedVersions(project);
        llm = await startScriptedLlm(project, { log: path.join(run, 'llm-requests.json') });
        // the workflow story is a failing iteration, then a green one: its first edit gets the goal alone
        writeWorkspaceSettings(project, { baseUrl: llm.baseUrl, server: null, testsFirst: false });
        codeServer = new CodeServer(path.join(run, 'code-server'), serverEnvironment({ scripted: true }));
        // the server's path where users put it, the User settings: code-server is a remote window,
        // where machine-scoped settings are read from the Remote ones only (the setting is window-scoped)
        // AIDER_LSP_E2E_SERVER: another server executable (e.g. /bin/false, to see the test fail)
        codeServer.writeUserSettings({ 'aiderLsp.server.path': process.env.AIDER_LSP_E2E_SERVER || SERVER });
        codeServer.installExtension(buildVsix());
        const url = await codeServer.start(project);
        browser = await openBrowser(url, path.join(run, 'chromium-profile'));
        wb = new Workbench(browser.page, path.join(run, 'screenshots'));
        await wb.ready();
    });

    after(() => endStory({ run, wb, browser, codeServer, llm }));

    const step = storySteps(() => wb, passed);

    step(1, 'edits the selection with Aider from the palette', 'edit-result', async () => {
        await wb.openFile('calculator.py');
        assert.equal(await wb.editorText(), text.original);
        const addAt = text.original.split('\n').indexOf('def add(a, b):') + 1;
        await wb.selectLines(addAt, addAt + 1);
        shots.palette = await wb.runCommand('Aider: Edit with Aider…', { screenshot: 'palette' });
        await wb.answerInput(EDIT_INSTRUCTION, { screenshot: 'edit-instruction' });
        const toast = await wb.waitForToast(RESULT, 180_000); // the result, or why there is none
        assert.match(toast, /Aider: Edit with Aider: changed calculator\.py/);
        await wb.waitForEditorText(text.documented);
    });

    step(2, 'runs the workflow: progress, a diagnostic after the failing iteration, success with none left', 'workflow-done', async () => {
        await wb.runCommand('Aider: Run Workflow…');
        // The second iteration's Aider answer is held back until the failing one has been seen.
        try {
            await wb.answerInput(GOAL_FIX, { screenshot: 'workflow-goal' });
            await wb.acceptInput(TEST_COMMAND); // pre-filled from the settings
            // the progress notification (its first phase may be over before a poll sees it)
            await wb.waitForToast(/Aider workflow: (Planning|Iteration \d+\/)/);
            const rows = await wb.waitForProblems((r) => r.some((row) => row.includes('aider-lsp')));
            assert.ok(rows.some((row) => /average|ZeroDivision/.test(row)), rows.join('\n'));
            await wb.waitForToast(/Aider workflow: Iteration 2\//);
            shots.progress = await wb.screenshot('workflow-progress');
            await wb.openFile('calculator.py');
            // on the failing line, where the unittest diagnostic's squiggle starts
            const failing = { line: text.half_fixed.split('\n').indexOf('    return sum(values) / len(values)') + 1, column: 5 };
            shots.quickFix = await wb.showQuickFixes(failing, /Fix with Aider/, 'quick-fix-menu');
            await wb.page.keyboard.press('Escape');
        } finally {
            llm.release();
        }
        const done = await wb.waitForToast(/Aider: Workflow/);
        assert.doesNotMatch(done, /failed|cancelled/i);
        // what a user wants to know: reached, how long it took, what the tests said, what changed
        assert.match(done, /Workflow: goal reached in 2 iterations; the tests pass \(OK\)\. Changed calculator\.py\./);
        await wb.waitForEditorText(text.fixed);
        await wb.waitForProblems((r) => !r.some((row) => row.includes('aider-lsp')));
    });

    step(3, 'the Runs view shows the workflow run with its iterations and file; a click on the file opens the run\'s diff', 'runs-view', async () => {
        await wb.showRuns();
        const run = wb.runsRow(GOAL_FIX);
        await run.waitFor({ timeout: 30_000 });
        assert.match(await run.innerText(), /goal reached · 2 iterations/);
        assert.match(await wb.runsRow(EDIT_INSTRUCTION).innerText(), /done/); // the edit of step 1, older, below
        // the newest run is open: its iterations, then its file (the row that is the file's name alone)
        await wb.runsRow(/^\s*calculator\.py\s*$/).click();
        await wb.page.locator('.tab.active', { hasText: `calculator.py (before ↔ after “${GOAL_FIX}”)` }).waitFor({ timeout: 30_000 });
        const diff = wb.page.locator('.monaco-diff-editor').first();
        await diff.locator('.editor.original .view-lines', { hasText: 'return b - a' }).waitFor(); // before the run
        await diff.locator('.editor.modified .view-lines', { hasText: 'if values else 0' }).waitFor(); // after it
        await wb.screenshot('runs-view-diff');
        await wb.runCommand('View: Close Editor');
    });

    step(4, 'shows the last run\'s diff from the palette, then undoes it', 'undo', async () => {
        await wb.runCommand('Aider: Show Last Aider Diff');
        await wb.page.locator('.tab.active', { hasText: 'calculator.py (before Aider ↔ now)' }).waitFor({ timeout: 30_000 });
        await wb.screenshot('last-diff');
        await wb.runCommand('View: Close Editor');
        await wb.page.locator('.tab.active', { hasText: 'calculator.py' }).waitFor();
        await wb.runCommand('Aider: Undo Last Aider Change');
        assert.match(await wb.waitForToast(/Aider: Undo/), /calculator\.py|restored|undid/i);
        await wb.waitForEditorText(text.documented); // as it was before the workflow
    });

    step(5, 'fixes a failing test\'s diagnostic with the quick fix "Fix with Aider": the tests re-run, the diagnostic goes', 'quick-fix-result', async () => {
        await wb.runCommand('Aider: Run Workflow…');
        await wb.answerInput(GOAL_REVIEW);
        await wb.acceptInput(TEST_COMMAND);
        assert.match(await wb.waitForToast(/Aider: Workflow/), /failed.*(tests still fail|goal)/is);
        await wb.waitForEditorText(text.reviewed);
        await wb.waitForProblems((r) => r.some((row) => /ZeroDivision/.test(row)));
        await wb.clearToasts();
        await wb.openFile('calculator.py');
        // the unittest failure's diagnostic, on the line that divides by zero
        const failing = { line: text.reviewed.split('\n').indexOf('    return sum(values) / len(values)') + 1, column: 5 };
        await wb.showQuickFixes(failing, /Fix with Aider/, 'quick-fix');
        await wb.page.locator('.action-widget .monaco-list-row', { hasText: 'Fix with Aider' }).first().click();
        await wb.waitForEditorText(text.quick_fixed, 180_000);
        const said = await wb.waitForToast(RESULT);
        assert.match(said, /Aider: Editing with Aider: changed calculator\.py/);
        assert.match(said, /The tests that failed pass now/);
        await wb.waitForProblems((r) => !r.some((row) => row.includes('aider-lsp')), 60_000);
    });

    step(6, '"Undo This Run" on the older of two runs keeps the newer run\'s change', 'runs-undo-older', async () => {
        // the review workflow added "# Reviewed." at the top; the quick fix after it changed average()
        await wb.showRuns();
        const review = wb.runsRow(GOAL_REVIEW);
        await review.waitFor({ timeout: 30_000 });
        await wb.runsViewAction(review, 'Undo This Run');
        assert.match(await wb.waitForToast(/Aider: Undo/), /calculator\.py|restored|reverted/i);
        await wb.openFile('calculator.py');
        await wb.waitForEditorText(text.fixed); // "# Reviewed." gone, the quick fix kept
        await wb.showRuns(); // the view read the history again after the undo: the run is marked
        await wb.runsRow(GOAL_REVIEW).filter({ hasText: 'undone' }).waitFor({ timeout: 30_000 });
    });

    step(7, 'undo over a change the user saved on the lines Aider changed: Enter keeps it, the question says what is kept and lost', 'undo-kept', async () => {
        // undo is a revert: a change elsewhere in the file would simply stay (tests/safety/test_undo_revert.py);
        // one on the lines the quick fix changed overlaps it, and the user is asked
        const fixedLine = text.fixed.split('\n').indexOf('    return sum(values) / len(values) if values else 0') + 1;
        await wb.openFile('calculator.py');
        await wb.goToLine(fixedLine, 1);
        await wb.page.keyboard.press('End');
        await wb.page.keyboard.type('  # my own note');
        await wb.runCommand('File: Save');
        const mine = text.fixed.replace('if values else 0\n', 'if values else 0  # my own note\n'); // step 6 took "# Reviewed." back
        await wb.waitForEditorText(mine);
        await wb.runCommand('Aider: Undo Last Aider Change');
        const dialog = wb.page.locator('.monaco-dialog-box');
        await dialog.waitFor({ timeout: 60_000 });
        const said = await dialog.innerText();
        assert.match(said, /Undoing calculator\.py would discard your later changes/);
        assert.match(said, /Keep My Changes: calculator\.py stays? as it is now/);
        assert.match(said, /the changes you made after Aider's edit are lost/);
        assert.doesNotMatch(said, /Restored 0/);
        await wb.screenshot('undo-question');
        await wb.page.keyboard.press('Enter'); // the default button
        await dialog.waitFor({ state: 'detached' });
        assert.match(await wb.waitForToast(/Aider: kept your changes/), /calculator\.py/);
        await wb.waitForEditorText(mine);
    });

    step(8, 'a workflow with no test command configured asks once, runs, and remembers; the open file is only a hint', 'test-command-remembered', async () => {
        writeWorkspaceSettings(project, { baseUrl: llm.baseUrl, server: null, testCommand: null });
        await new Promise((resolve) => setTimeout(resolve, 3000)); // the workbench reads settings.json again
        // the file merely open is not the user's choice: the plan picks calculator.py, the run is green
        await wb.openFile('test_calculator.py');
        await wb.runCommand('Aider: Run Workflow…');
        await wb.answerInput(GOAL_FIX);
        await wb.acceptInput(''); // nothing configured: the server's detected command
        const asked = await wb.answerToast(/aider-lsp will run the tests with/, 'Use it');
        assert.match(asked, /-m unittest/);
        const done = await wb.waitForToast(/Aider: Workflow/, 300_000);
        assert.doesNotMatch(done, /failed|cancelled/i);
        // remembered in the user's own state folder (never the workspace): the second run does not ask
        assert.ok(!fs.existsSync(path.join(project, '.aider-lsp', 'test-command.json')), 'remembered inside the workspace');
        await wb.clearToasts();

        await wb.runCommand('Aider: Run Workflow…');
        await wb.answerInput(GOAL_FIX);
        await wb.acceptInput('');
        const again = await wb.waitForToast(/Aider: Workflow|aider-lsp will run the tests with/, 300_000);
        assert.doesNotMatch(again, /will run the tests with/, 'asked a second time');
        assert.doesNotMatch(again, /failed|cancelled/i);
    });

    step(9, 'a workflow whose Aider reply fixes a file the index did not offer reaches green', 'outside-file', async () => {
        // the area is wrong because of constants.py, which nothing in the goal names
        fs.writeFileSync(path.join(project, 'constants.py'), 'PI = 3.0\n');
        fs.writeFileSync(path.join(project, 'area.py'), 'from constants import PI\n\n\ndef circle_area(r):\n    return PI * r * r\n');
        fs.writeFileSync(
            path.join(project, 'test_area.py'),
            'import unittest\n\nfrom area import circle_area\n\n\nclass AreaTest(unittest.TestCase):\n'
                + '    def test_circle_area(self):\n        self.assertAlmostEqual(circle_area(2), 12.566, places=2)\n',
        );
        await wb.clearToasts();
        await wb.runCommand('Aider: Run Workflow…');
        await wb.answerInput(GOAL_AREA);
        await wb.answerInput(`${PYTHON} -m unittest test_area`);
        const done = await wb.waitForToast(/Aider: Workflow/, 300_000);
        assert.doesNotMatch(done, /failed|cancelled/i);
        assert.match(done, /goal reached in 1 iteration; the tests pass .*Changed constants\.py\./);
        assert.equal(fs.readFileSync(path.join(project, 'constants.py'), 'utf8'), 'PI = 3.14159\n');
        const tests = spawnSync(PYTHON, ['-m', 'unittest', 'test_area'], { cwd: project, encoding: 'utf8' });
        assert.equal(tests.status, 0, tests.stderr);
    });

    after(() => {
        // The docs show the palette, the workflow's progress and a diagnostic's quick fix of a passing run.
        if (passed.size < 4 || process.env.AIDER_LSP_E2E_NO_DOCS) return;
        fs.mkdirSync(DOCS, { recursive: true });
        fs.copyFileSync(shots.palette, path.join(DOCS, 'e2e-palette.png'));
        fs.copyFileSync(shots.progress, path.join(DOCS, 'e2e-workflow-progress.png'));
        fs.copyFileSync(shots.quickFix, path.join(DOCS, 'e2e-quick-fix.png'));
    });
});
