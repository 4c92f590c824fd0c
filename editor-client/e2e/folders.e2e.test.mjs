// A multi-root window (a `.code-workspace` with two folders) in a real VS Code workbench, used as
// a user would: an edit and a workflow in the SECOND folder (its own test command, its own
// diagnostics; the first folder untouched), the Runs view with a node per folder and an undo from
// it in the second folder, then a folder removed and one added while the window is open. Same machinery as aider.e2e.test.mjs: code-server, the repository's server, the real
// bundled Aider, the scripted models of scripted_llm.py (pointed at the second folder).
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe } from 'node:test';
import {
    copyExample, E2E, PYTHON, scriptedVersions, SERVER, serverEnvironment, startScriptedLlm, TEST_COMMAND,
} from './project.mjs';
import { endStory, storySteps } from './story.mjs';
import { CodeServer, openBrowser, Workbench } from './workbench.mjs';

// What the user types; scripted_llm.py answers these (keep both in step).
const EDIT_INSTRUCTION = 'Add a docstring to add';
const GOAL_FIX = 'Make the tests pass';
const RESULT = /^Aider: /m;
// Each folder's own test command (its .vscode/settings.json): the second folder's names its module.
const LIB_TEST_COMMAND = `${PYTHON} -m unittest test_calculator`;
const APP_HEADER = '# The app\'s own copy of the calculator.\n';

function runFolder() {
    const stamp = new Date().toISOString().replace(/[:.]/g, '-');
    const dir = process.env.AIDER_LSP_E2E_OUT ? `${process.env.AIDER_LSP_E2E_OUT}-folders` : path.join(E2E, 'runs', `${stamp}-folders`);
    fs.mkdirSync(dir, { recursive: true });
    return dir;
}

function writeJson(file, value) {
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, JSON.stringify(value, null, 2));
}

/** The window's settings in the .code-workspace (the models are window settings); each folder's test command in its own. */
function writeWorkspace(file, folders, baseUrl) {
    writeJson(file, {
        folders: folders.map((folder) => ({ path: path.basename(folder) })),
        settings: {
            'aiderLsp.model': 'openai:scripted-planner',
            'aiderLsp.baseUrl': baseUrl,
            'aiderLsp.aiderModel': 'openai/scripted-coder',
            'aiderLsp.aiderServer': { args: ['--edit-format', 'whole'] },
            'aiderLsp.timeouts': { llm: 120, aider: 300, test: 120, shell: 60 },
            // lib's workflow is a failing iteration, then a green one: its first edit gets the goal alone
            'aiderLsp.testsBeforeFirstEdit': false,
        },
    });
}

/** Live processes of the window that are the bundled Aider server of `folder`. */
function aiderServersOf(codeServer, folder) {
    return codeServer.record().filter((p) => p.command.includes('aider_mcp') && p.command.includes(`--cwd ${folder} `));
}

/** Quick Open `name` of `folder` (both folders have one): its tab active, its text `expected`. */
async function openIn(wb, folder, name, expected) {
    await wb.page.keyboard.press('Control+P');
    const input = wb.quickInput().locator('input.input');
    await input.waitFor();
    await input.fill(`${path.basename(folder)}/${name}`);
    await wb.quickInput().locator('.monaco-list-row', { hasText: name }).first().waitFor();
    await input.press('Enter');
    await wb.page.locator('.tab.active', { hasText: name }).waitFor();
    await wb.activeEditor().locator('.view-lines').waitFor();
    await wb.waitForEditorText(expected, 10_000);
}

/** Waits for the Aider status bar item to read `Aider: <text>`. */
async function statusSays(wb, text) {
    await wb.page.locator('.statusbar-item', { hasText: `Aider: ${text}` }).first().waitFor({ timeout: 10_000 });
}

describe('a multi-root window: every folder served by the one server', () => {
    const run = runFolder();
    const app = path.join(run, 'app');
    const lib = path.join(run, 'lib');
    const tools = path.join(run, 'tools');
    const workspaceFile = path.join(run, 'folders.code-workspace');
    let appText;
    let text; // lib/calculator.py at each point of the story
    let llm;
    let codeServer;
    let browser;
    let wb;
    const passed = new Set();

    before(async () => {
        console.log(`e2e run folder: ${run}`);
        copyExample(app);
        copyExample(lib);
        appText = APP_HEADER + fs.readFileSync(path.join(app, 'calculator.py'), 'utf8');
        fs.writeFileSync(path.join(app, 'calculator.py'), appText);
        writeJson(path.join(app, '.vscode', 'settings.json'), { 'aiderLsp.testCommand': TEST_COMMAND });
        writeJson(path.join(lib, '.vscode', 'settings.json'), { 'aiderLsp.testCommand': LIB_TEST_COMMAND });
        fs.mkdirSync(tools);
        fs.writeFileSync(path.join(tools, 'release_notes.py'), '"""Writes the changelog of a release."""\n\ndef changelog(version):\n    return f"Release {version}"\n');
        text = scriptedVersions(lib);
        llm = await startScriptedLlm(lib, { log: path.join(run, 'llm-requests.json') });
        writeWorkspace(workspaceFile, [app, lib], llm.baseUrl);
        codeServer = new CodeServer(path.join(run, 'code-server'), serverEnvironment({ scripted: true }));
        codeServer.writeUserSettings({ 'aiderLsp.server.path': process.env.AIDER_LSP_E2E_SERVER || SERVER });
        codeServer.installExtension(process.env.AIDER_LSP_E2E_VSIX || path.join(path.dirname(E2E), 'aider-lsp.vsix'));
        browser = await openBrowser(await codeServer.start(workspaceFile), path.join(run, 'chromium-profile'));
        wb = new Workbench(browser.page, path.join(run, 'screenshots'));
        await wb.ready();
    });

    after(() => endStory({ run, wb, browser, codeServer, llm }));

    const step = storySteps(() => wb, passed);

    step(1, 'edits a file of the second folder; the first folder\'s file of the same name is untouched', 'folders-edit', async () => {
        await openIn(wb, lib, 'calculator.py', text.original);
        const addAt = text.original.split('\n').indexOf('def add(a, b):') + 1;
        await wb.selectLines(addAt, addAt + 1);
        await wb.runCommand('Aider: Edit with Aider…');
        await wb.answerInput(EDIT_INSTRUCTION);
        assert.match(await wb.waitForToast(RESULT, 180_000), /Aider: Edit with Aider: changed calculator\.py/);
        await wb.waitForEditorText(text.documented);
        await statusSays(wb, 'lib · openai/scripted-coder'); // the status item follows the active editor's folder
        assert.equal(fs.readFileSync(path.join(lib, 'calculator.py'), 'utf8'), text.documented);
        assert.equal(fs.readFileSync(path.join(app, 'calculator.py'), 'utf8'), appText);
    });

    step(2, 'runs a workflow in the second folder with its own test command: its diagnostics on its file, then green', 'folders-workflow', async () => {
        await openIn(wb, lib, 'calculator.py', text.documented);
        await wb.runCommand('Aider: Run Workflow…');
        try {
            await wb.answerInput(GOAL_FIX);
            await wb.acceptInput(LIB_TEST_COMMAND); // the second folder's setting, not the first's
            const rows = await wb.waitForProblems((r) => r.some((row) => row.includes('aider-lsp')));
            assert.ok(rows.some((row) => /average|ZeroDivision/.test(row)), rows.join('\n'));
            // the file row of the Problems panel names the folder beside the file
            assert.ok(rows.some((row) => /^calculator\.py\s*lib\b/.test(row)), rows.join('\n'));
            assert.ok(!rows.some((row) => /^calculator\.py\s*app\b/.test(row)), rows.join('\n'));
            await wb.screenshot('folders-workflow-diagnostics');
        } finally {
            llm.release();
        }
        const done = await wb.waitForToast(/Aider: Workflow/, 300_000);
        // the second folder's own test command ran (unittest's last word), in the server's wording
        assert.match(done, /goal reached in 2 iterations; the tests pass \(OK\)\. Changed calculator\.py\./);
        await wb.waitForEditorText(text.fixed);
        await wb.waitForProblems((r) => !r.some((row) => row.includes('aider-lsp')));
        assert.equal(fs.readFileSync(path.join(app, 'calculator.py'), 'utf8'), appText);
    });

    step(3, 'the Runs view lists each folder with its own runs; "Undo This Run" on the second folder\'s workflow undoes it there', 'folders-runs', async () => {
        await wb.showRuns();
        await wb.runsRow(/app\s*no runs/).waitFor({ timeout: 30_000 });
        await wb.runsRow(/lib\s*2 runs/).waitFor({ timeout: 30_000 }); // the edit and the workflow
        await wb.screenshot('folders-runs-view');
        await wb.runsViewAction(wb.runsRow(GOAL_FIX), 'Undo This Run');
        assert.match(await wb.waitForToast(/Aider: Undo/), /calculator\.py|restored|reverted/i);
        await wb.runsRow(GOAL_FIX).filter({ hasText: 'undone' }).waitFor({ timeout: 30_000 });
        assert.equal(fs.readFileSync(path.join(lib, 'calculator.py'), 'utf8'), text.documented); // the edit kept
        assert.equal(fs.readFileSync(path.join(app, 'calculator.py'), 'utf8'), appText);
        await wb.runCommand('View: Show Explorer'); // the sidebar back to the folders
    });

    step(4, 'a folder removed closes its Aider server; a folder added is served at once', 'folders-changed', async () => {
        assert.ok(aiderServersOf(codeServer, lib).length > 0, 'no Aider server for the second folder');
        await wb.runCommand('Remove Folder from Workspace');
        await wb.quickInput().locator('.monaco-list-row', { hasText: 'lib' }).first().click();
        const deadline = Date.now() + 30_000;
        while (aiderServersOf(codeServer, lib).length > 0 && Date.now() < deadline) await sleep(250);
        assert.deepEqual(aiderServersOf(codeServer, lib).map((p) => p.command), [], 'the removed folder\'s Aider server lives on');

        // a folder added by the workspace file (as a user may edit it): the index of the new folder answers
        writeWorkspace(workspaceFile, [app, tools], llm.baseUrl);
        await wb.page.locator('.explorer-folders-view .monaco-list-row', { hasText: 'tools' }).first().waitFor({ timeout: 30_000 });
        await wb.openFile('release_notes.py');
        await statusSays(wb, 'tools · openai/scripted-coder');
        await wb.runCommand('Aider: Find Relevant Files');
        await wb.answerInput('changelog of a release');
        const match = wb.quickInput().locator('.monaco-list-row', { hasText: 'release_notes.py' }).first();
        await match.waitFor({ timeout: 60_000 });
        await wb.screenshot('folders-find-in-added');
        await wb.page.keyboard.press('Escape');
    });
});
