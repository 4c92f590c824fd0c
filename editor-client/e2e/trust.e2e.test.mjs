// Restricted Mode (Workspace Trust on, as users have it): a repository whose own
// .vscode/settings.json names a program as `aiderLsp.aiderServer.command`. Opened untrusted, the
// commands that edit say why not, a reading command works, and the program never runs; once the
// user trusts the folder (through the UI), the next edit runs it. The program is a marker: it
// leaves a file saying it ran and exits, so that edit fails, and the user must be told so.
// Same machinery as aider.e2e.test.mjs: code-server, the repository's server, the bundled Aider.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe } from 'node:test';
import { copyExample, E2E, SERVER, serverEnvironment, startScriptedLlm } from './project.mjs';
import { endStory, storySteps } from './story.mjs';
import { CodeServer, openBrowser, Workbench } from './workbench.mjs';

const EDIT_INSTRUCTION = 'Add a docstring to add';
const NOT_IN_RESTRICTED_MODE = /not available in Restricted Mode/;
const RESULT = /^Aider: /m;

function runFolder() {
    const stamp = new Date().toISOString().replace(/[:.]/g, '-');
    const dir = process.env.AIDER_LSP_E2E_OUT ? `${process.env.AIDER_LSP_E2E_OUT}-trust` : path.join(E2E, 'runs', `${stamp}-trust`);
    fs.mkdirSync(dir, { recursive: true });
    return dir;
}

/** A program that is no Aider server: it records that it ran (its folder, its arguments) in `marker`, then exits. */
function writeMarkerProgram(file, marker) {
    fs.writeFileSync(file, [
        '#!/bin/sh',
        '# Not an Aider MCP server: it leaves a mark that it ran, and exits.',
        `printf '%s %s\\n' "$PWD" "$*" >> '${marker}'`,
        'echo "marker program: not an Aider MCP server" >&2',
        'exit 3',
        '',
    ].join('\n'), { mode: 0o755 });
}

/** Live processes of the window that are the bundled Aider server of `folder`. */
function bundledAiderOf(codeServer, folder) {
    return codeServer.record().filter((p) => p.command.includes('aider_mcp') && p.command.includes(`--cwd ${folder} `));
}

describe('Restricted Mode: a repository cannot choose the Aider server until its folder is trusted', () => {
    const run = runFolder();
    const project = path.join(run, 'calculator');
    const program = path.join(run, 'marker-aider-server');
    const marker = path.join(run, 'marker-ran');
    let llm;
    let codeServer;
    let browser;
    let wb;
    const passed = new Set();

    before(async () => {
        console.log(`e2e run folder: ${run}`);
        copyExample(project);
        writeMarkerProgram(program, marker);
        // the repository's own settings: only the program (a restricted setting)
        fs.mkdirSync(path.join(project, '.vscode'));
        fs.writeFileSync(path.join(project, '.vscode', 'settings.json'),
            JSON.stringify({ 'aiderLsp.aiderServer': { command: program } }, null, 2));
        llm = await startScriptedLlm(project, { log: path.join(run, 'llm-requests.json'), hold: false });
        codeServer = new CodeServer(path.join(run, 'code-server'), serverEnvironment({ scripted: true }), 0, { workspaceTrust: true });
        // everything a real edit needs is the user's: the server, the models (the scripted ones).
        // The trust prompt as VS Code documents it ("once"): code-server 4.139's default is "never"
        // (an untrusted folder opens in Restricted Mode straight away, with the banner only).
        codeServer.writeUserSettings({
            'security.workspace.trust.startupPrompt': 'once',
            'aiderLsp.server.path': process.env.AIDER_LSP_E2E_SERVER || SERVER,
            'aiderLsp.model': 'openai:scripted-planner',
            'aiderLsp.baseUrl': llm.baseUrl,
            'aiderLsp.aiderModel': 'openai/scripted-coder',
            'aiderLsp.aiderServer': { args: ['--edit-format', 'whole'] },
            'aiderLsp.timeouts': { llm: 120, aider: 300, test: 120, shell: 60 },
        });
        codeServer.installExtension(process.env.AIDER_LSP_E2E_VSIX || path.join(path.dirname(E2E), 'aider-lsp.vsix'));
        browser = await openBrowser(await codeServer.start(project), path.join(run, 'chromium-profile'));
        wb = new Workbench(browser.page, path.join(run, 'screenshots'));
    });

    after(() => endStory({ run, wb, browser, codeServer, llm }));

    const step = storySteps(() => wb, passed);

    step(1, 'VS Code asks whether to trust the folder; "No" opens it in Restricted Mode', 'trust-restricted', async () => {
        const dialog = wb.page.locator('.monaco-dialog-box');
        await dialog.waitFor({ timeout: 120_000 });
        assert.match(await dialog.innerText(), /Do you trust the authors of the files in this folder\?/);
        await wb.screenshot('trust-prompt');
        await dialog.locator('.monaco-button', { hasText: 'No, I don\'t trust the authors' }).click();
        await wb.ready();
        await wb.page.locator('.statusbar-item', { hasText: 'Restricted Mode' }).first().waitFor({ timeout: 30_000 });
    });

    step(2, 'edits and the workflow say they are not available; Find Relevant Files works; the repository\'s program never ran', 'trust-untrusted-commands', async () => {
        await wb.openFile('calculator.py');
        await wb.runCommand('Aider: Edit with Aider…');
        await wb.waitForToast(/^Aider: Edit with Aider is not available in Restricted Mode/m, 30_000);
        await wb.screenshot('trust-edit-refused');
        await wb.runCommand('Aider: Run Workflow…');
        await wb.waitForToast(/^Aider: Run Workflow is not available in Restricted Mode/m, 30_000);
        await wb.clearToasts();

        await wb.runCommand('Aider: Find Relevant Files');
        await wb.answerInput('average of a list of numbers');
        await wb.quickInput().locator('.monaco-list-row', { hasText: 'calculator.py' }).first().waitFor({ timeout: 60_000 });
        await wb.screenshot('trust-find-files');
        await wb.page.keyboard.press('Escape');

        // the server starts the folder's Aider server ahead of the first edit: the user's (bundled) one
        const deadline = Date.now() + 60_000;
        while (bundledAiderOf(codeServer, project).length === 0 && !fs.existsSync(marker) && Date.now() < deadline) await sleep(250);
        assert.ok(!fs.existsSync(marker), 'the repository\'s program ran in Restricted Mode');
        assert.ok(bundledAiderOf(codeServer, project).length > 0, 'no Aider server started for the folder');
    });

    step(3, 'trusted from the notification\'s "Manage Workspace Trust": the repository\'s program is now the Aider server; an edit says it failed', 'trust-trusted-edit', async () => {
        await wb.runCommand('Aider: Edit with Aider…');
        await wb.answerToast(NOT_IN_RESTRICTED_MODE, 'Manage Workspace Trust', 30_000);
        const trustEditor = wb.page.locator('.workspace-trust-editor');
        await trustEditor.waitFor({ timeout: 30_000 });
        await wb.screenshot('trust-editor');
        await trustEditor.locator('.monaco-button', { hasText: /^Trust$/ }).first().click();
        await wb.page.locator('.statusbar-item', { hasText: 'Restricted Mode' }).first().waitFor({ state: 'detached', timeout: 30_000 });
        // the trust editor is a modal editor: its Close button
        await wb.page.locator('.monaco-modal-editor-block .modal-editor-action-container .action-label[aria-label^="Close"]').first().click();
        await trustEditor.waitFor({ state: 'detached', timeout: 10_000 });

        // the server starts the folder's Aider server ahead of the first edit: now the repository's program
        const deadline = Date.now() + 60_000;
        while (!fs.existsSync(marker) && Date.now() < deadline) await sleep(250);
        assert.ok(fs.existsSync(marker), 'the repository\'s program did not run once the folder was trusted');
        const runs = () => fs.readFileSync(marker, 'utf8').trim().split('\n');
        assert.ok(runs()[0].startsWith(`${project} `), `the program did not run in the folder: ${runs()[0]}`);

        await wb.openFile('calculator.py');
        await wb.runCommand('Aider: Edit with Aider…');
        const before = runs().length;
        await wb.answerInput(EDIT_INSTRUCTION);
        const told = await wb.waitForToast(RESULT, 120_000, /$^/); // the failure is what is awaited: none ends the wait early
        assert.match(told, /^Aider: Edit with Aider failed: the Aider MCP server did not start/m, told);
        assert.ok(runs().length > before, 'the edit did not start the program again');
    });
});
