/** `activate` with a mocked `vscode`: the commands it registers and the requests they send, cancellation included. */
import './mocks/install';
import * as assert from 'node:assert/strict';
import { once } from 'node:events';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { PassThrough } from 'node:stream';
import { after, before, beforeEach, describe, it } from 'node:test';
import { ClientCommand, ServerCommand } from '../src/protocol';
import { clients, type FakeLanguageClient, type SentRequest } from './mocks/languageclient';
import { commands, recorded, Selection, TreeItemCollapsibleState, Uri, window, workspace, type FakeDocument } from './mocks/vscode';
// eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded after the mocks are installed
import extension = require('../src/extension');

const manifest = JSON.parse(fs.readFileSync(path.resolve(__dirname, '..', '..', 'package.json'), 'utf8')) as {
    serverInfo: { id: string; name: string };
};
const root = fs.mkdtempSync(path.join(os.tmpdir(), 'aider-lsp-client-'));
const serverExe = path.join(root, 'fake-aider-lsp');
const secrets = new Map<string, string>([['aiderLsp.apiKey', 'sk-from-secret-storage']]);

function document(relative: string, text: string, dirty = false): FakeDocument {
    const file = path.join(root, relative);
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, text);
    const lines = text.split('\n');
    return {
        uri: Uri.file(file),
        isDirty: dirty,
        text,
        getText: (range) => (range ? lines.slice(range.start.line, range.end.line + 1).join('\n') : text),
        save() {
            this.isDirty = false;
            return Promise.resolve(true);
        },
    };
}

/** Waits for `probe` to give a value (a cap, not a timing assertion: subprocesses may be slow). */
async function until<T>(probe: () => T | undefined): Promise<T> {
    const deadline = Date.now() + 60_000;
    for (;;) {
        const value = probe();
        if (value !== undefined) {
            return value;
        }
        if (Date.now() > deadline) {
            throw new Error('condition never met');
        }
        await new Promise((resolve) => setTimeout(resolve, 5));
    }
}

/** A run's diff of shapes/area.py, as the server writes it. */
const AREA_DIFF = [
    'diff --git a/shapes/area.py b/shapes/area.py',
    '--- a/shapes/area.py',
    '+++ b/shapes/area.py',
    '@@ -1,2 +1,2 @@',
    ' def area(r):',
    '-    return 3 * r * r',
    '+    return 3.14159 * r * r',
    '',
].join('\n');

function client(): FakeLanguageClient {
    const last = clients.at(-1);
    assert.ok(last, 'a language client was created');
    return last;
}

async function nextRequest(fake: FakeLanguageClient, count: number): Promise<SentRequest> {
    return until(() => (fake.sent.length >= count ? fake.sent[count - 1] : undefined));
}

/**
 * A window of two folders for the tests of the calling describe block: the workspace and `lib`
 * inside it (restored to the one folder after them). `single`/`both` switch between the two.
 */
function twoFolders(): { lib: string; single(): typeof workspace.workspaceFolders; both(): typeof workspace.workspaceFolders } {
    const lib = path.join(root, 'lib');
    let single: typeof workspace.workspaceFolders = [];
    const both = (): typeof workspace.workspaceFolders => [...single, { uri: Uri.file(lib), name: 'lib', index: 1 }];
    before(() => {
        single = workspace.workspaceFolders;
        fs.mkdirSync(lib, { recursive: true });
        workspace.workspaceFolders = both();
    });
    after(() => {
        workspace.workspaceFolders = single;
    });
    return { lib, single: () => single, both };
}

function run(id: string, ...args: unknown[]): Promise<unknown> {
    const handler = recorded.commands.get(id);
    assert.ok(handler, `${id} is registered`);
    return Promise.resolve(handler(...args));
}

describe('activate', () => {
    let startedAtActivation = -1;
    let statusAtActivation: string | undefined;
    const context = {
        subscriptions: [] as { dispose(): void }[],
        secrets: {
            get: (key: string) => Promise.resolve(secrets.get(key)),
            store: (key: string, value: string) => Promise.resolve(void secrets.set(key, value)),
            delete: (key: string) => Promise.resolve(void secrets.delete(key)),
        },
        globalStorageUri: Uri.file(path.join(root, 'global')),
        extensionPath: root,
        extension: { packageJSON: manifest },
    };

    before(async () => {
        fs.writeFileSync(serverExe, '#!/bin/sh\n', { mode: 0o755 });
        recorded.configuration = {
            'aiderLsp.server.path': serverExe,
            'aiderLsp.model': 'openai:gpt-4.1',
            'aiderLsp.testCommand': 'pytest -q',
            'aiderLsp.baseUrl': '',
        };
        workspace.workspaceFolders = [{ uri: Uri.file(root), name: 'ws', index: 0 }];
        extension.activate(context as never);
        startedAtActivation = clients.length;
        statusAtActivation = recorded.statusTexts.at(-1);
        // the first command that needs the server starts it (here: Find Relevant Files, left at its question)
        await run(ClientCommand.findFiles);
    });

    after(async () => {
        await extension.deactivate();
        fs.rmSync(root, { recursive: true, force: true });
    });

    beforeEach(() => {
        recorded.reset();
        workspace.textDocuments = [];
        window.activeTextEditor = undefined;
    });

    it('activation starts no server (every window activates): the status item is there, idle; the first command starts it', () => {
        assert.equal(startedAtActivation, 0);
        assert.equal(statusAtActivation, '$(sparkle) Aider: openai:gpt-4.1'); // the model beside it
        assert.equal(clients.length, 1);
        assert.ok(client().running, 'the first command started the server');
    });

    it('registers every palette command under its own id, none of the server ids', () => {
        for (const id of Object.values(ClientCommand)) {
            assert.ok(recorded.commands.has(id), id);
        }
        for (const id of Object.values(ServerCommand)) {
            assert.ok(!recorded.commands.has(id), `${id} is left to the language client`);
        }
    });

    it('starts `aider-lsp serve` with the settings as initializationOptions and the key only in the environment and options', () => {
        const fake = client();
        assert.equal(fake.serverOptions.command, serverExe);
        assert.deepEqual(fake.serverOptions.args, ['serve']);
        assert.equal(fake.serverOptions.options.env.AIDER_LSP_API_KEY, 'sk-from-secret-storage');
        assert.deepEqual(fake.clientOptions.initializationOptions, {
            model: 'openai:gpt-4.1',
            testCommand: 'pytest -q',
            apiKey: 'sk-from-secret-storage',
        });
        assert.ok(recorded.statusTexts.length === 0 || !recorded.statusTexts.at(-1)?.includes('error'));
    });

    it('names the client and its log after package.json\'s serverInfo', () => {
        assert.deepEqual(manifest.serverInfo, { id: 'aider-lsp', name: 'Aider LSP' });
        assert.equal(client().id, manifest.serverInfo.id);
        assert.equal(client().name, manifest.serverInfo.name);
        assert.ok(recorded.outputChannels.includes(manifest.serverInfo.name), 'the log is named after the server');
    });

    it('tells the server the client commands it has (experimental capability), keeping other experimental capabilities', () => {
        const capabilities: Record<string, unknown> = { experimental: { other: true } };
        for (const feature of client().features) {
            feature.fillClientCapabilities(capabilities);
        }
        const experimental = capabilities.experimental as { other?: boolean; aiderLsp?: { clientCommands?: string[] } };
        assert.equal(experimental.other, true);
        const announced = experimental.aiderLsp?.clientCommands ?? [];
        assert.ok(announced.includes(ClientCommand.editSelection), JSON.stringify(capabilities));
        for (const id of announced) {
            assert.ok(recorded.commands.has(id), `${id} is announced, so it must be registered`);
        }
    });

    it('Edit with Aider sends the active file and the selection, then offers Show Diff', async () => {
        const doc = document('pkg/calc.py', 'def add(a, b):\n    return a + b\n');
        window.activeTextEditor = { document: doc, selection: new Selection(1, 4, 1, 16) };
        recorded.inputs.push('add zero');
        const fake = client();
        const done = run(ClientCommand.edit);
        const request = await nextRequest(fake, fake.sent.length + 1);
        assert.equal(request.method, 'workspace/executeCommand');
        assert.equal(request.params.command, ServerCommand.automatic);
        assert.deepEqual(request.params.arguments, [
            {
                prompt: 'add zero',
                file_context: ['pkg/calc.py'],
                selection: {
                    uri: doc.uri.toString(),
                    range: { start: { line: 1, character: 4 }, end: { line: 1, character: 16 } },
                    text: '    return a + b',
                },
            },
        ]);
        assert.ok(request.token, 'the request carries the notification\'s cancellation token');
        request.answer({ status: 'COMPLETE', content: 'diff', notes: { changed_files: ['pkg/calc.py'], diff: '' } });
        await done;
        assert.deepEqual(recorded.shown.at(-1), { kind: 'info', text: 'Aider: Edit with Aider: changed pkg/calc.py.', items: ['Show Diff'] });
    });

    it('from the explorer: the active file and the selected files, folders left out, no selection', async () => {
        const active = document('pkg/active.py', 'a = 1\n');
        const other = document('pkg/other.py', 'b = 2\n');
        window.activeTextEditor = { document: active, selection: new Selection(0, 0, 0, 5) };
        recorded.inputs.push('use both');
        const fake = client();
        const count = fake.sent.length;
        const done = run(ClientCommand.edit, other.uri, [other.uri, Uri.file(path.join(root, 'pkg'))]);
        const request = await nextRequest(fake, count + 1);
        assert.deepEqual(request.params.arguments, [{ prompt: 'use both', file_context: ['pkg/active.py', 'pkg/other.py'] }]);
        request.answer({ status: 'COMPLETE', content: '', notes: {} });
        await done;
    });

    it('asks before saving dirty files, and saves them before the edit', async () => {
        const doc = document('dirty.py', 'x = 1\n', true);
        workspace.textDocuments = [doc];
        window.activeTextEditor = { document: doc, selection: new Selection(0, 0, 0, 0) };
        recorded.inputs.push('rename x');
        recorded.answers.push('Save and Continue');
        const fake = client();
        const count = fake.sent.length;
        const done = run(ClientCommand.edit);
        const request = await nextRequest(fake, count + 1);
        assert.equal(doc.isDirty, false);
        assert.match(recorded.shown[0]?.text ?? '', /Save .*dirty\.py/);
        assert.deepEqual(request.params.arguments, [{ prompt: 'rename x', file_context: ['dirty.py'] }]);
        request.answer({ status: 'FAILED', content: '', notes: { error: { type: 't', reason: 'llm_error', message: 'no key' } } });
        await done;
        assert.deepEqual(recorded.shown.at(-1), { kind: 'error', text: 'Aider: Edit with Aider failed: no key', items: ['Show Log'] });
    });

    it('does not ask to save an unsaved file outside the workspace (the editor’s own settings.json)', async () => {
        const doc = document('ok.py', 'x = 1\n');
        const settings = { ...document('ok2.py', '{}\n', true), uri: Uri.file('/elsewhere/User/settings.json') };
        workspace.textDocuments = [doc, settings];
        window.activeTextEditor = { document: doc, selection: new Selection(0, 0, 0, 0) };
        recorded.inputs.push('rename x');
        const fake = client();
        const count = fake.sent.length;
        const shownBefore = recorded.shown.length;
        const done = run(ClientCommand.edit);
        const request = await nextRequest(fake, count + 1);
        assert.equal(recorded.shown.length, shownBefore, 'no question about saving');
        assert.equal(settings.isDirty, true);
        request.answer({ status: 'COMPLETE', content: '', notes: {} });
        await done;
    });

    it('asks to save before the instruction, so saying no costs no typed text', async () => {
        const doc = document('dirty2.py', 'x = 1\n', true);
        workspace.textDocuments = [doc];
        window.activeTextEditor = { document: doc, selection: new Selection(0, 0, 0, 0) };
        recorded.inputs.push('a long instruction the user typed');
        recorded.answers.push(undefined); // the save question is cancelled
        const fake = client();
        const count = fake.sent.length;
        await run(ClientCommand.edit);
        assert.match(recorded.shown[0]?.text ?? '', /Save .*dirty2\.py/);
        assert.equal(recorded.inputs.length, 1, 'the instruction was never asked for');
        assert.equal(fake.sent.length, count, 'nothing was sent');
        await run(ClientCommand.runWorkflow);
        assert.equal(recorded.inputs.length, 1, 'nor the workflow goal');
        recorded.inputs.length = 0;
    });

    it('Undo over later changes: Keep My Changes is the default, the question says what is kept and what is lost', async () => {
        const unsaved = document('pkg/typed.py', 'T = 2  # typing\n', true);
        workspace.textDocuments = [unsaved];
        const fake = client();
        const count = fake.sent.length;
        recorded.answers.push('Keep My Changes');
        const done = run(ClientCommand.undo);
        const first = await nextRequest(fake, count + 1);
        assert.deepEqual(first.params.arguments, [{}]);
        first.answer({
            status: 'FAILED',
            content: 'Nothing was restored …',
            notes: {
                checkpoint: 'c1',
                label: 'workflow: fix area',
                restored: [],
                deleted: [],
                skipped: [
                    { path: 'shapes/area.py', reason: 'changed since the edit (undo would discard those changes)', kind: 'changed_since' },
                    { path: 'pkg/typed.py', reason: 'open in the editor with unsaved changes', kind: 'unsaved' },
                ],
                error: { type: 'TASK_FAILURE', reason: 'input_validation_failure', message: '…' },
            },
        });
        await done;
        const question = recorded.shown[0];
        assert.ok(question);
        assert.equal(question.text, 'Aider: nothing undone yet. Undoing shapes/area.py, pkg/typed.py would discard your later changes.');
        assert.ok(!question.text.includes('Restored 0'));
        assert.deepEqual(question.items, ['Keep My Changes', 'Undo Anyway (discard my changes)'], 'the safe answer is the first, default button');
        assert.match(question.detail ?? '', /pkg\/typed\.py not saved yet/);
        assert.match(question.detail ?? '', /Keep My Changes: shapes\/area\.py, pkg\/typed\.py stay as they are now/);
        assert.match(question.detail ?? '', /before “workflow: fix area”; the changes you made after Aider's edit are lost/);
        assert.equal(fake.sent.length, count + 1, 'kept: no forced undo');
        assert.equal(unsaved.isDirty, true);

        // Undo Anyway: the unsaved file is saved (the server never writes under a dirty buffer), then forced
        recorded.reset();
        recorded.answers.push('Undo Anyway (discard my changes)');
        const again = run(ClientCommand.undo);
        const second = await nextRequest(fake, count + 2);
        second.answer({
            status: 'FAILED',
            content: '…',
            notes: { checkpoint: 'c1', label: 'edit', restored: [], deleted: [], skipped: [{ path: 'pkg/typed.py', reason: 'open in the editor with unsaved changes', kind: 'unsaved' }] },
        });
        const forced = await nextRequest(fake, count + 3);
        assert.equal(unsaved.isDirty, false, 'saved before the forced undo');
        assert.deepEqual(forced.params.arguments, [{ force: true }]);
        forced.answer({ status: 'COMPLETE', content: 'Restored pkg/typed.py from before “edit”.', notes: { restored: ['pkg/typed.py'] } });
        await again;
        assert.deepEqual(recorded.shown.at(-1), { kind: 'info', text: 'Aider: Undo: Restored pkg/typed.py from before “edit”.', items: [] });
    });

    it('the Undo button of a result runs the undo', async () => {
        recorded.inputs.push('goal', '');
        recorded.answers.push('Undo');
        const fake = client();
        const count = fake.sent.length;
        const done = run(ClientCommand.runWorkflow);
        const request = await nextRequest(fake, count + 1);
        request.answer({
            status: 'FAILED',
            content: 'gave up',
            notes: { error: { type: 'TASK_FAILURE', reason: 'goal_not_reached', message: 'the analysis gave up: too hard' }, changed_files: ['a.py'], diff: '' },
        });
        const undoRequest = await nextRequest(fake, count + 2);
        assert.equal(undoRequest.params.command, ServerCommand.undo);
        assert.match(recorded.shown[0]?.text ?? '', /^Aider: Workflow failed: the analysis gave up: too hard\. It left a\.py changed: Undo puts it back\.$/);
        assert.deepEqual(recorded.shown[0]?.items, ['Show Diff', 'Undo', 'Show Log']);
        undoRequest.answer({ status: 'COMPLETE', content: 'Restored a.py.', notes: {} });
        await done;
        // undone: nothing left to show
        await run(ClientCommand.showLastDiff);
        assert.match(recorded.shown.at(-1)?.text ?? '', /no Aider change to show/);
    });

    it('Run Tests: "Change…" on the detected command offers it pre-filled, saves the answer for the workspace and runs it', async () => {
        recorded.inputs.push('pytest -x');
        const fake = client();
        const count = fake.sent.length;
        const done = run(ClientCommand.runTests);
        const first = await nextRequest(fake, count + 1);
        assert.deepEqual(first.params.arguments, [{}]);
        first.answer({
            status: 'FAILED',
            content: 'set aiderLsp.testCommand',
            notes: { detected_test_command: 'python -m pytest', error: { type: 't', reason: 'configuration_error', message: 'set it' } },
        });
        const second = await nextRequest(fake, count + 2);
        assert.deepEqual(second.params.arguments, [{ command: 'pytest -x' }]);
        assert.equal(recorded.configuration['aiderLsp.testCommand'], 'pytest -x');
        assert.equal(recorded.configurationTargets.at(-1), 2, 'saved in the workspace settings');
        second.answer({ status: 'COMPLETE', content: 'ok', notes: { exit_code: 0 } });
        await done;
        delete recorded.configuration['aiderLsp.testCommand'];
    });

    it('Select Model… lists Aider\'s models with their providers, sets aiderModel where the user chose, and offers Set API Key when the provider\'s key is missing', async () => {
        const stored = secrets.get('aiderLsp.apiKey');
        secrets.delete('aiderLsp.apiKey');
        const saved = process.env.ANTHROPIC_API_KEY;
        delete process.env.ANTHROPIC_API_KEY;
        try {
            const fake = client();
            const count = fake.sent.length;
            recorded.answers.push('Set API Key');
            recorded.inputs.push(undefined); // the key's input box, dismissed
            const done = run(ClientCommand.selectModel);
            const request = await nextRequest(fake, count + 1);
            assert.equal(request.params.command, ServerCommand.listModels);
            request.answer({ status: 'COMPLETE', content: '', notes: { count: 2 }, parsedContent: ['openai/gpt-4.1', 'anthropic/claude-sonnet-4-5'] });
            await done;
            assert.deepEqual(recorded.quickPicks[0], [
                { label: 'anthropic/claude-sonnet-4-5', description: 'anthropic' },
                { label: 'openai/gpt-4.1', description: 'openai' },
            ]);
            assert.equal(recorded.configuration['aiderLsp.aiderModel'], 'anthropic/claude-sonnet-4-5');
            assert.equal(recorded.configurationTargets.at(-1), 1, 'the first scope offered: user settings');
            const warning = recorded.shown.find((shown) => shown.kind === 'warning');
            assert.match(warning?.text ?? '', /needs ANTHROPIC_API_KEY/);
            assert.deepEqual(warning?.items, ['Set API Key']);
            assert.equal(recorded.inputs.length, 0, 'Set API Key asked for the key');
        } finally {
            if (stored !== undefined) {
                secrets.set('aiderLsp.apiKey', stored);
            }
            if (saved !== undefined) {
                process.env.ANTHROPIC_API_KEY = saved;
            }
            delete recorded.configuration['aiderLsp.aiderModel'];
        }
    });

    it('Select Model… sets the planning model (aiderLsp.model, pydantic-ai\'s spelling) from the same list, at the scope picked', async () => {
        const fake = client();
        const count = fake.sent.length;
        recorded.picks.push(1, 1, 1); // the second model, "Planning and analysis", workspace settings
        const done = run(ClientCommand.selectModel);
        const request = await nextRequest(fake, count + 1);
        request.answer({ status: 'COMPLETE', content: '', notes: {}, parsedContent: ['anthropic/claude-sonnet-4-5', 'openai/gpt-4.1'] });
        await done;
        try {
            const roles = recorded.quickPicks[1] as { label: string }[];
            assert.deepEqual(roles.map((role) => role.label), ['Aider\'s edits', 'Planning and analysis', 'Both']);
            assert.equal(recorded.configuration['aiderLsp.model'], 'openai:gpt-4.1');
            assert.equal(recorded.configuration['aiderLsp.aiderModel'], undefined, 'Aider\'s model left as it was');
            assert.equal(recorded.configurationTargets.at(-1), 2, 'workspace settings');
        } finally {
            delete recorded.configuration['aiderLsp.model'];
        }
    });

    it('in Restricted Mode, editing and running commands say why not and offer to manage trust; reading ones still work', async () => {
        workspace.isTrusted = false;
        try {
            const fake = client();
            const count = fake.sent.length;
            recorded.answers.push('Manage Workspace Trust');
            await run(ClientCommand.runTests);
            await run(ClientCommand.edit);
            await run(ClientCommand.runWorkflow);
            assert.equal(fake.sent.length, count, 'nothing sent to the server');
            assert.match(recorded.shown[0]?.text ?? '', /Run Tests is not available in Restricted Mode/);
            assert.deepEqual(recorded.shown[0]?.items, ['Manage Workspace Trust']);
            assert.ok(commands.executed.some((call) => call.id === 'workbench.trust.manage'), 'trust offered');
            recorded.inputs.push('parser');
            const done = run(ClientCommand.findFiles);
            const request = await nextRequest(fake, count + 1);
            assert.equal(request.params.command, ServerCommand.getContext, 'Find Relevant Files still works');
            request.answer({ status: 'COMPLETE', content: '[]', notes: {} });
            await done;
        } finally {
            workspace.isTrusted = true;
        }
    });

    describe('in a window of two folders', () => {
        const { lib } = twoFolders();

        it('the status item follows the active editor\'s folder: its name, its model, its test command', () => {
            workspace.folderConfiguration.set(Uri.file(lib).path, { 'aiderLsp.aiderModel': 'openai/lib-coder', 'aiderLsp.testCommand': 'make test' });
            try {
                window.activeTextEditor = { document: document('lib/core.py', 'X = 1\n'), selection: new Selection(0, 0, 0, 0) };
                window.activeEditorListeners.forEach((listener) => { listener(window.activeTextEditor); });
                assert.match(recorded.statusTexts.at(-1) ?? '', /Aider: lib · openai\/lib-coder$/);
                window.activeTextEditor = { document: document('main.py', 'Y = 1\n'), selection: new Selection(0, 0, 0, 0) };
                window.activeEditorListeners.forEach((listener) => { listener(window.activeTextEditor); });
                assert.doesNotMatch(recorded.statusTexts.at(-1) ?? '', /lib/);
            } finally {
                workspace.folderConfiguration.clear();
                window.activeTextEditor = undefined;
            }
        });

        it('Edit with Aider runs in the folder of the active file, its paths relative to that folder', async () => {
            const doc = document('lib/core.py', 'X = 1\n');
            window.activeTextEditor = { document: doc, selection: new Selection(0, 0, 0, 0) };
            recorded.inputs.push('rename X');
            const fake = client();
            const done = run(ClientCommand.edit);
            const request = await nextRequest(fake, fake.sent.length + 1);
            assert.deepEqual(request.params.arguments, [{ prompt: 'rename X', file_context: ['core.py'], folder: Uri.file(lib).toString() }]);
            assert.equal(recorded.folderPickAsked, 0, 'the file says which folder');
            request.answer({ status: 'COMPLETE', content: '', notes: {} });
            await done;
        });

        it('Run Tests with no file open asks which folder and runs there; dismissing the question sends nothing', async () => {
            recorded.folderPicks.push('lib');
            const fake = client();
            const count = fake.sent.length;
            const done = run(ClientCommand.runTests);
            const request = await nextRequest(fake, count + 1);
            assert.equal(recorded.folderPickAsked, 1);
            assert.deepEqual(request.params.arguments, [{ folder: Uri.file(lib).toString() }]);
            request.answer({ status: 'COMPLETE', content: 'ok', notes: { exit_code: 0 } });
            await done;

            await run(ClientCommand.runTests); // the question dismissed
            assert.equal(fake.sent.length, count + 1, 'no request without a folder');
        });
    });

    it('Run Workflow from the palette with a file merely open sends no file_context: the open file is a hint, not a choice', async () => {
        const open = document('units.py', 'M = 1\n');
        window.activeTextEditor = { document: open, selection: new Selection(0, 0, 0, 0) };
        recorded.inputs.push('make the circle area test pass', '');
        const fake = client();
        const count = fake.sent.length;
        const done = run(ClientCommand.runWorkflow);
        const request = await nextRequest(fake, count + 1);
        assert.deepEqual(request.params.arguments, [{ goal: 'make the circle area test pass' }]);
        request.answer({ status: 'COMPLETE', content: 'ok', notes: {} });
        await done;
    });

    it('Run Workflow with text selected in the editor, or files picked in the explorer, sends them as the choice', async () => {
        const active = document('pkg/active.py', 'a = 1\n');
        const other = document('pkg/other.py', 'b = 2\n');
        window.activeTextEditor = { document: active, selection: new Selection(0, 0, 0, 5) };
        recorded.inputs.push('goal one', '');
        let fake = client();
        let done = run(ClientCommand.runWorkflow);
        let request = await nextRequest(fake, fake.sent.length + 1);
        assert.deepEqual(request.params.arguments, [{ goal: 'goal one', file_context: ['pkg/active.py'] }]);
        request.answer({ status: 'COMPLETE', content: 'ok', notes: {} });
        await done;

        recorded.inputs.push('goal two', '');
        fake = client();
        done = run(ClientCommand.runWorkflow, other.uri, [other.uri]);
        request = await nextRequest(fake, fake.sent.length + 1);
        assert.deepEqual(request.params.arguments, [{ goal: 'goal two', file_context: ['pkg/other.py'] }]);
        request.answer({ status: 'COMPLETE', content: 'ok', notes: {} });
        await done;
    });

    it('Run Workflow pre-fills the test command and shows the server\'s progress; cancel cancels the request', async () => {
        recorded.inputs.push('make tests pass', 'pytest -q -x');
        const fake = client();
        const count = fake.sent.length;
        const done = run(ClientCommand.runWorkflow);
        const request = await nextRequest(fake, count + 1);
        assert.equal(request.params.command, ServerCommand.workflowRun);
        assert.deepEqual(request.params.arguments, [{ goal: 'make tests pass', test_command: 'pytest -q -x' }]);
        assert.equal(typeof request.params.workDoneToken, 'string');
        assert.ok(fake.progressTokens.includes(request.params.workDoneToken ?? ''), 'listens on its own workDoneToken');

        // the server creates its own token and reports under it: routed to this notification
        const route = fake.clientOptions.middleware.handleWorkDoneProgress;
        assert.ok(route);
        const forwarded: unknown[] = [];
        const next = (_token: unknown, params: unknown): void => void forwarded.push(params);
        route('server-token-1', { kind: 'begin', title: 'Run workflow', cancellable: true }, next);
        route('server-token-1', { kind: 'report', message: 'Iteration 2/3: running tests' }, next);
        const progress = recorded.progress.at(-1);
        assert.ok(progress);
        assert.equal(progress.title, 'Aider workflow');
        assert.deepEqual(progress.messages, ['Iteration 2/3: running tests'], 'the server\'s title does not repeat the notification\'s');
        assert.ok(recorded.statusTexts.some((text) => text.includes('Iteration 2/3: running tests')), 'the status bar shows the phase');
        assert.deepEqual(forwarded, [], 'no second progress UI for the same work');

        progress.cancel.cancel();
        // the server's progress is stopped, so the server still answers and says what the run did
        assert.deepEqual(fake.notifications.at(-1), { method: 'window/workDoneProgress/cancel', params: { token: 'server-token-1' } });
        assert.equal(request.token?.isCancellationRequested, false, 'the request waits for the server\'s answer');
        route('server-token-1', { kind: 'end', message: 'cancelled' }, next);
        assert.equal(forwarded.length, 1, 'the end still reaches the client so it cleans up');
        request.answer({
            status: 'FAILED',
            content: 'the workflow was cancelled by the user; it had changed shapes/area.py (undo restores them)',
            notes: {
                error: { type: 'TASK_FAILURE', reason: 'cancelled', message: 'the workflow was cancelled by the user; it had changed shapes/area.py' },
                changed_files: ['shapes/area.py'],
                created_files: [],
                diff: 'D',
                checkpoint_id: 'c1',
            },
        });
        await done;
        assert.deepEqual(recorded.shown.at(-1), {
            kind: 'warning',
            text: 'Aider: Workflow: cancelled. It left shapes/area.py changed: Undo puts it back.',
            items: ['Show Diff', 'Undo'],
        });
        assert.ok(!recorded.statusTexts.at(-1)?.includes('Iteration'), 'the phase is gone from the status bar');
    });

    it('a cancel before the server began any progress cancels the request itself', async () => {
        recorded.inputs.push('make tests pass', '');
        const fake = client();
        const count = fake.sent.length;
        const done = run(ClientCommand.runWorkflow);
        const request = await nextRequest(fake, count + 1);
        const notified = fake.notifications.length;
        recorded.progress.at(-1)?.cancel.cancel();
        assert.equal(request.token?.isCancellationRequested, true);
        assert.equal(fake.notifications.length, notified);
        request.answer(undefined);
        await done;
        assert.deepEqual(recorded.shown.at(-1), { kind: 'warning', text: 'Aider: Aider workflow: cancelled.', items: [] });
    });

    it('a finished run says the goal was reached, in how many iterations, and what the tests said; its diff stays on the palette', async () => {
        recorded.inputs.push('fix area', 'pytest -q');
        const fake = client();
        const count = fake.sent.length;
        const done = run(ClientCommand.runWorkflow);
        const request = await nextRequest(fake, count + 1);
        const test = (exit: number, stdout: string, summary: string) => ({ command: 'pytest -q', scope: 'whole', exit_code: exit, timed_out: false, duration_s: 1, stdout, stderr: '', summary });
        request.answer({
            status: 'COMPLETE',
            content: 'area is right now',
            notes: {
                workflow: {
                    status: 'SUCCESS',
                    content: 'area is right now',
                    iterations: [
                        { iteration: 1, prompt: 'p', files: [], test: test(1, '1 failed in 0.1s\n', '1 failed in 0.1s') },
                        { iteration: 2, prompt: 'p', files: [], test: test(0, '..\n========== 2 passed in 0.02s ==========\n', '2 passed in 0.02s') },
                    ],
                },
                changed_files: ['shapes/area.py'],
                created_files: [],
                diff: AREA_DIFF,
            },
        });
        await done;
        assert.deepEqual(recorded.shown.at(-1), {
            kind: 'info',
            text: 'Aider: Workflow: goal reached in 2 iterations; the tests pass (pytest -q: 2 passed in 0.02s). Changed shapes/area.py.',
            items: ['Show Diff', 'Undo'],
        });
        recorded.reset();
        document('shapes/area.py', 'def area(r):\n    return 3.14159 * r * r\n');
        const opened = commands.executed.length;
        await run(ClientCommand.showLastDiff);
        const diff = commands.executed.slice(opened).find((call) => call.id === 'vscode.diff');
        assert.ok(diff, 'the last diff opens from the palette');
        assert.equal(diff.args[2], 'shapes/area.py (before Aider ↔ now)');
        assert.equal(recorded.shown.length, 0);
    });

    describe('runs in a worktree', () => {
        /** A workflow.run answer of an isolated run as the server writes it (results.py): `state` ready or discarded. */
        function isolatedAnswer(runId: string, state: string, files: string[] = ['calculator.py']): Record<string, unknown> {
            const test = { command: 'python -m unittest', scope: 'whole', exit_code: 0, timed_out: false, summary: 'OK' };
            return {
                status: 'COMPLETE',
                content: 'done',
                notes: {
                    workflow: { status: 'SUCCESS', content: 'done', iterations: [{ iteration: 1, prompt: 'p', files: [], test }] },
                    changed_files: files,
                    created_files: [],
                    diff: 'D',
                    checkpoint_id: null,
                    run_id: runId,
                    state,
                    isolation: 'worktree',
                    findings: [],
                },
            };
        }

        /** The request `count`: a worktree made ready while the user types the goal (answered as the server does). */
        async function prepared(fake: FakeLanguageClient, count: number): Promise<void> {
            const request = await nextRequest(fake, count);
            assert.equal(request.params.command, ServerCommand.prepareRuns, 'a worktree made ready before the goal is asked');
            assert.equal(request.params.workDoneToken, undefined, 'a quiet request: no notification');
            request.answer({ status: 'COMPLETE', content: 'A worktree is being made ready for the next isolated run.' });
        }

        it('Run Workflow in a Worktree… asks the same questions and sends isolation "worktree"; two run at once, each with its notification, the status item counting them', async () => {
            recorded.inputs.push('fix average', '', 'fix subtract', 'pytest -q');
            const fake = client();
            const count = fake.sent.length;
            const first = run(ClientCommand.runWorkflowInWorktree);
            await prepared(fake, count + 1);
            const a = await nextRequest(fake, count + 2);
            const second = run(ClientCommand.runWorkflowInWorktree);
            await prepared(fake, count + 3);
            const b = await nextRequest(fake, count + 4);
            assert.deepEqual(a.params.arguments, [{ goal: 'fix average', isolation: 'worktree' }]);
            assert.deepEqual(b.params.arguments, [{ goal: 'fix subtract', isolation: 'worktree', test_command: 'pytest -q' }]);
            assert.notEqual(a.params.workDoneToken, b.params.workDoneToken, 'each its own progress');
            assert.deepEqual(recorded.progress.map((entry) => entry.title), ['Aider workflow “fix average” in a worktree', 'Aider workflow “fix subtract” in a worktree']);
            assert.equal(recorded.statusTexts.at(-1), '$(git-branch) 2 runs');

            a.answer(isolatedAnswer('r1', 'ready'));
            await first;
            assert.deepEqual(recorded.shown.at(-1), {
                kind: 'info',
                text: 'Aider: “fix average” is ready: goal reached in 1 iteration; the tests pass (python -m unittest: OK). Changed calculator.py.',
                items: ['Apply', 'Show Diff', 'Discard'],
            });
            assert.equal(recorded.statusTexts.at(-1), '$(git-branch) 1 run');

            b.answer({ ...isolatedAnswer('r2', 'discarded', []), status: 'FAILED', notes: { ...(isolatedAnswer('r2', 'discarded', []).notes as object), error: { reason: 'cancelled', message: 'cancelled' } } });
            await second;
            assert.deepEqual(recorded.shown.at(-1), { kind: 'warning', text: 'Aider: “fix subtract”: cancelled. Your files are untouched.', items: [] });
            assert.deepEqual(recorded.statusHidden, ['$(git-branch) 1 run'], 'hidden once none runs');
        });

        it('Apply on the ready message: the run\'s change applied; over the user\'s changes on the same lines, the question names them and "Apply Anyway" forces it', async () => {
            recorded.inputs.push('fix average', '');
            recorded.answers.push('Apply');
            const fake = client();
            const count = fake.sent.length;
            const done = run(ClientCommand.runWorkflowInWorktree);
            await prepared(fake, count + 1);
            (await nextRequest(fake, count + 2)).answer(isolatedAnswer('r7', 'ready'));
            const apply = await nextRequest(fake, count + 3);
            assert.equal(apply.params.command, ServerCommand.applyRun);
            assert.deepEqual(apply.params.arguments, [{ run_id: 'r7' }]);
            assert.equal(recorded.progress.at(-1)?.title, 'Applying “fix average”');
            recorded.answers.push('Apply Anyway');
            const skipped = [{ path: 'calculator.py', reason: 'you changed lines 3-5 since the run started', kind: 'changed_since', lines: [[3, 5]] }];
            apply.answer({
                status: 'FAILED',
                content: '“fix average” was not applied',
                notes: { error: { reason: 'input_validation_failure', message: 'not applied' }, run_id: 'r7', state: 'ready', written: [], deleted: [], skipped, checkpoint_id: null },
            });
            const forced = await nextRequest(fake, count + 4);
            assert.deepEqual(forced.params.arguments, [{ run_id: 'r7', force: true }]);
            const question = recorded.shown.at(-1);
            assert.equal(question?.text, 'Aider: “fix average” was not applied: your changes to calculator.py meet the run\'s. Nothing was written.');
            assert.deepEqual(question?.items, ['Open the Merge', 'Apply Anyway']);
            assert.match(question?.detail ?? '', /^calculator\.py: you changed lines 3–5 too\n/);
            forced.answer({ status: 'COMPLETE', content: 'Applied “fix average”: calculator.py', notes: { run_id: 'r7', state: 'applied', written: ['calculator.py'], deleted: [], skipped: [], checkpoint_id: 'r7' } });
            await done;
            assert.deepEqual(recorded.shown.at(-1), { kind: 'info', text: 'Aider: Applied “fix average”: calculator.py', items: ['Undo'] });
        });

        /** A workflow.run answer of three attempts as the server writes it (results.py group_result): attempt 2 won. */
        function groupAnswer(): Record<string, unknown> {
            const attempt = (runId: string, number: number, fields: Record<string, unknown> = {}): Record<string, unknown> => ({
                run_id: runId, number, aider_model: null, planned: number % 2 === 0, state: 'ready', status: 'SUCCESS', green: true,
                tests: 'the tests pass (python -m unittest: OK)', lines_changed: 4, tokens: 1000, cost: 0.01, seconds: 12, stopped: null, ...fields,
            });
            const group = {
                group_id: 'group-g1',
                choose: 'compare',
                attempts: [attempt('a1', 1, { green: false, status: 'FAILURE', tests: 'the tests fail (1 failed)' }), attempt('a2', 2), attempt('a3', 3, { lines_changed: 9 })],
                winner: 'a2',
                reason: 'attempt 2: passed the tests with the smallest change',
            };
            return { status: 'COMPLETE', content: '3 attempt(s) (compare): attempt 2 wins.', notes: { group, run_id: 'a2' }, parsedContent: group };
        }

        it('Run Workflow: Several Attempts… asks how many and how the tests choose; Apply the Winner applies the group\'s winner and says its siblings were discarded', async () => {
            recorded.configuration['aiderLsp.chooseAttempt'] = 'first-green';
            try {
                recorded.inputs.push('fix average', '3', '');
                recorded.picks.push(1); // the second way: compare
                recorded.answers.push('Apply the Winner');
                const fake = client();
                const count = fake.sent.length;
                const done = run(ClientCommand.runWorkflowAttempts);
                await prepared(fake, count + 1);
                const request = await nextRequest(fake, count + 2);
                assert.deepEqual(request.params.arguments, [{ goal: 'fix average', attempts: 3, choose: 'compare' }]);
                assert.deepEqual(recorded.quickPicks[0]?.map((item) => (item as { choose: string }).choose), ['first-green', 'compare'], 'the setting\'s way first');
                assert.equal(recorded.progress.at(-1)?.title, 'Aider workflow “fix average”: 3 attempts');
                assert.equal(recorded.statusTexts.at(-1), '$(git-branch) 3 runs', 'each attempt counted');
                request.answer(groupAnswer());
                const apply = await nextRequest(fake, count + 3);
                assert.deepEqual([apply.params.command, apply.params.arguments], [ServerCommand.applyRun, [{ run_id: 'group-g1' }]]);
                const shown = recorded.shown.find((message) => message.items.includes('Apply the Winner'));
                assert.deepEqual(shown, { kind: 'info', text: 'Aider: “fix average”: 3 attempt(s) (compare): attempt 2 wins.', items: ['Apply the Winner', 'Show Attempts'] });
                apply.answer({
                    status: 'COMPLETE',
                    content: 'Applied “fix average”: calculator.py. Its other attempts are discarded: a1, a3.',
                    notes: { run_id: 'a2', state: 'applied', written: ['calculator.py'], deleted: [], skipped: [], checkpoint_id: 'a2', discarded: ['a1', 'a3'] },
                });
                await done;
                assert.deepEqual(recorded.shown.at(-1), {
                    kind: 'info',
                    text: 'Aider: Applied the winner of “fix average”: calculator.py. Its 2 other attempts were discarded (their worktrees removed).',
                    items: ['Undo'],
                });
                assert.equal(recorded.statusHidden.at(-1), '$(git-branch) 3 runs', 'none counted once the group ended');
            } finally {
                delete recorded.configuration['aiderLsp.chooseAttempt'];
            }
        });

        it('Show Attempts reveals the Runs view; a group without a winner offers only that', async () => {
            recorded.inputs.push('fix average', '2', '');
            recorded.answers.push('Show Attempts');
            const fake = client();
            const count = fake.sent.length;
            const done = run(ClientCommand.runWorkflowAttempts);
            await prepared(fake, count + 1);
            const request = await nextRequest(fake, count + 2);
            assert.deepEqual(request.params.arguments, [{ goal: 'fix average', attempts: 2, choose: 'first-green' }]);
            const answer = groupAnswer();
            const notes = answer.notes as { group: Record<string, unknown> };
            request.answer({ ...answer, status: 'FAILED', content: '2 attempt(s): no attempt passed the tests with a change.', notes: { group: { ...notes.group, winner: null }, run_id: null } });
            await done;
            assert.deepEqual(recorded.shown.at(-1), { kind: 'warning', text: 'Aider: “fix average”: 2 attempt(s): no attempt passed the tests with a change.', items: ['Show Attempts'] });
            assert.equal(commands.executed.at(-1)?.id, 'aider-lsp.runs.focus');
        });

        it('a number of attempts out of bounds runs nothing', async () => {
            recorded.inputs.push('fix average', '12');
            const fake = client();
            const count = fake.sent.length;
            const done = run(ClientCommand.runWorkflowAttempts);
            await prepared(fake, count + 1);
            await done;
            assert.equal(fake.sent.length, count + 1, 'only the worktree made ready');
            assert.equal(recorded.quickPicks.length, 0);
        });

        it('the isolation setting makes Run Workflow… a run in a worktree too: counted, and told as one', async () => {
            recorded.configuration['aiderLsp.isolation'] = 'worktree';
            try {
                recorded.inputs.push('fix average', '');
                const fake = client();
                const count = fake.sent.length;
                const done = run(ClientCommand.runWorkflow);
                await prepared(fake, count + 1);
                const request = await nextRequest(fake, count + 2);
                assert.deepEqual(request.params.arguments, [{ goal: 'fix average' }], 'the setting is the server\'s to apply');
                assert.equal(recorded.statusTexts.at(-1), '$(git-branch) 1 run');
                request.answer(isolatedAnswer('r9', 'ready'));
                await done;
                assert.deepEqual(recorded.shown.at(-1)?.items, ['Apply', 'Show Diff', 'Discard']);
            } finally {
                delete recorded.configuration['aiderLsp.isolation'];
            }
        });
    });

    it('progress that belongs to no command goes to VS Code\'s default handling', () => {
        const route = client().clientOptions.middleware.handleWorkDoneProgress;
        assert.ok(route);
        const forwarded: unknown[] = [];
        route('indexing', { kind: 'begin', title: 'Indexing workspace' }, (_t, p) => void forwarded.push(p));
        assert.equal(forwarded.length, 1);
    });

    it('Find Relevant Files opens the chosen match', async () => {
        recorded.inputs.push('parser');
        const fake = client();
        const count = fake.sent.length;
        const done = run(ClientCommand.findFiles);
        const request = await nextRequest(fake, count + 1);
        assert.deepEqual(request.params.arguments, [{ query: 'parser' }]);
        request.answer({ status: 'COMPLETE', content: '["p.py"]', notes: { file_paths: ['p.py'], matches: [{ id: 'p.py', content: 'def parse(): ...', source_path: 'p.py', relevance_score: 1 }] } });
        await done;
        assert.equal(recorded.shown.length, 0);
    });

    it('a code action\'s server command runs with progress and its result is shown', async () => {
        const execute = client().clientOptions.middleware.executeCommand;
        assert.ok(execute);
        const fake = client();
        const count = fake.sent.length;
        const done = execute(ServerCommand.automatic, [{ prompt: 'Fix: NameError', file_context: ['a.py'] }], undefined);
        const request = await nextRequest(fake, count + 1);
        assert.equal(request.params.command, ServerCommand.automatic);
        assert.ok(request.token);
        request.answer({ status: 'COMPLETE', content: 'no change', notes: {} });
        await done;
        assert.equal(recorded.progress.at(-1)?.title, 'Editing with Aider');
    });

    it('the server\'s "Edit selection with Aider" action asks for the instruction and sends the range\'s text', async () => {
        const doc = document('pkg/sel.py', 'a = 1\nb = 2\nc = 3\n');
        workspace.textDocuments = [doc];
        recorded.inputs.push('swap them');
        const fake = client();
        const count = fake.sent.length;
        const range = { start: { line: 0, character: 0 }, end: { line: 1, character: 5 } };
        const done = run(ClientCommand.editSelection, { uri: doc.uri.toString(), range });
        const request = await nextRequest(fake, count + 1);
        assert.deepEqual(request.params.arguments, [
            { prompt: 'swap them', file_context: ['pkg/sel.py'], selection: { uri: doc.uri.toString(), range, text: 'a = 1\nb = 2' } },
        ]);
        request.answer({ status: 'COMPLETE', content: '', notes: {} });
        await done;
    });

    it('an interactive session keeps the session id across turns and ends it on Esc', async () => {
        recorded.inputs.push('what does add do?', 'and sub?', undefined);
        const fake = client();
        const count = fake.sent.length;
        const done = run(ClientCommand.interactive);
        const first = await nextRequest(fake, count + 1);
        assert.deepEqual(first.params.arguments, [{ prompt: 'what does add do?' }]);
        first.answer({ status: 'CONTINUATION', content: 'It adds.', notes: { session_id: 's-1' } });
        const second = await nextRequest(fake, count + 2);
        assert.deepEqual(second.params.arguments, [{ prompt: 'and sub?', session_id: 's-1' }]);
        second.answer({ status: 'CONTINUATION', content: 'It subtracts.', notes: { session_id: 's-1' } });
        const end = await nextRequest(fake, count + 3);
        assert.deepEqual(end.params.arguments, [{ session_id: 's-1', end_session: true }]);
        end.answer({ status: 'COMPLETE', content: 'ended', notes: {} });
        await done;
        assert.ok(recorded.logLines.includes('line It subtracts.'), 'each answer is shown in the chat output');
    });

    describe('the Runs view', () => {
        const older = {
            id: '00000000000000000001-aaaaaaaa',
            created: Date.now() / 1000 - 7200,
            kind: 'edit',
            label: 'Add a docstring to add',
            status: 'COMPLETE',
            iterations: null,
            files: ['pkg/calc.py'],
            spend: null,
            duration_s: 4.2,
            undone: null,
        };
        const newer = {
            id: '00000000000000000002-bbbbbbbb',
            created: Date.now() / 1000 - 120,
            kind: 'workflow',
            label: 'Make the tests pass',
            goal: 'Make the tests pass',
            status: 'SUCCESS',
            iterations: 2,
            files: ['pkg/calc.py', 'tests/test_calc.py'],
            spend: '1500 tokens · $0.0100 (planning/analysis: 300 tokens · $0.0010; Aider: 1200 tokens · $0.0090)',
            duration_s: 31.0,
            undone: null,
        };
        type Node = unknown;

        function provider(): NonNullable<ReturnType<typeof recorded.treeViews.get>> {
            const view = recorded.treeViews.get('aider-lsp.runs');
            assert.ok(view, 'the Runs view is registered');
            return view;
        }

        /** The view's top level as VS Code asks for it, the history answered with `runs`. */
        async function listed(runs: unknown[]): Promise<Node[]> {
            const fake = client();
            const count = fake.sent.length;
            const children = provider().getChildren();
            const request = await nextRequest(fake, count + 1);
            assert.equal(request.params.command, ServerCommand.historyList);
            assert.equal(request.token, undefined, 'a quiet read: no notification to cancel');
            request.answer({ status: 'COMPLETE', content: '', notes: { runs }, parsedContent: runs });
            return children;
        }

        function state(): unknown {
            return commands.executed.filter((call) => call.id === 'setContext' && call.args[0] === 'aiderLsp.runs').at(-1)?.args[1];
        }

        it('shows each run with what was asked, how it ended, its iterations and spend, and its files under it', async () => {
            const [first, second] = await listed([newer, older]);
            const run = provider().getTreeItem(first);
            assert.equal(run.label, 'Make the tests pass');
            assert.equal(run.description, 'goal reached · 2 iterations · 1500 tokens · $0.0100 · 2 min ago');
            assert.equal(run.contextValue, 'aiderRun.workflow');
            assert.equal(run.collapsibleState, 2, 'the newest run is open');
            assert.match(run.tooltip ?? '', /Changed pkg\/calc\.py, tests\/test_calc\.py/);
            const edit = provider().getTreeItem(second);
            assert.equal(edit.label, 'Add a docstring to add');
            assert.equal(edit.description, 'done · 2 h ago');
            assert.equal(edit.contextValue, 'aiderRun.edit');
            assert.equal(edit.collapsibleState, 1);
            const files = (await provider().getChildren(first)).map((node) => provider().getTreeItem(node));
            assert.deepEqual(files.map((item) => [item.label, item.description]), [['calc.py', 'pkg'], ['test_calc.py', 'tests']]);
            assert.equal(state(), 'listed');
        });

        it('under a workflow run: its iterations (what the edit did, the test run, the analysis), then its files', async () => {
            // the steps as the server records them for the two-iteration story (tests/workflow/test_workflow.py)
            const steps = [
                {
                    iteration: 1,
                    edit: { changed_files: ['pkg/calc.py'], created_files: [], error: null },
                    test: { command: 'python -m unittest', scope: 'whole', exit_code: 1, timed_out: false, summary: 'FAILED (failures=1)', failed: 1, failing: ['test_calc.CalcTest.test_multiply'] },
                    analysis: { verdict: 'RETRY', message: 'multiply still fails\nit adds instead', overruled: null },
                },
                {
                    iteration: 2,
                    edit: { changed_files: ['pkg/calc.py'], created_files: [], error: null },
                    test: { command: 'python -m unittest', scope: 'whole', exit_code: 0, timed_out: false, summary: 'OK', failed: 0, failing: [] },
                    analysis: null,
                },
            ];
            const [first] = await listed([{ ...newer, steps }]);
            const children = await provider().getChildren(first);
            const items = children.map((node) => provider().getTreeItem(node));
            assert.deepEqual(items.map((item) => [item.label, item.description]), [
                ['Iteration 1', 'changed pkg/calc.py · tests fail (1 failed) · analysis: RETRY'],
                ['Iteration 2', 'changed pkg/calc.py · tests pass'],
                ['calc.py', 'pkg'],
                ['test_calc.py', 'tests'],
            ], 'the iterations come first, the run\'s files stay under it');
            assert.deepEqual(items.slice(0, 2).map((item) => item.iconPath?.id), ['error', 'pass']);
            assert.equal(items[0]?.collapsibleState, TreeItemCollapsibleState.Collapsed);
            assert.equal(items[0]?.command, undefined, 'an iteration opens, it runs nothing');
            assert.equal(items[2]?.command?.command, ClientCommand.openRunFile, 'a file still opens its diff');
            const [red, green] = children;
            const leaves = (await provider().getChildren(red)).map((node) => provider().getTreeItem(node));
            assert.deepEqual(leaves.map((item) => [item.label, item.description]), [
                ['Tests: 1 failed', 'FAILED (failures=1)'],
                ['Analysis: RETRY', 'multiply still fails'],
            ]);
            assert.equal(leaves[0]?.tooltip, '$ python -m unittest\nThe whole suite\nExit code 1\nFAILED (failures=1)\n\nFailing:\n  test_calc.CalcTest.test_multiply');
            assert.equal(leaves[1]?.tooltip, 'Analysis: RETRY\n\nmultiply still fails\nit adds instead');
            assert.ok(leaves.every((item) => item.collapsibleState === TreeItemCollapsibleState.None && item.command === undefined), 'leaves');
            const greenLeaves = (await provider().getChildren(green)).map((node) => provider().getTreeItem(node));
            assert.deepEqual(greenLeaves.map((item) => [item.label, item.description]), [['Tests pass', 'OK']], 'green: no analysis ran');
            assert.equal(new Set([...items, ...leaves, ...greenLeaves].map((item) => item.id)).size, 7, 'every item has its own id');
        });

        it('a click on a file opens the diff editor: before the run ↔ after it', async () => {
            const [first] = await listed([newer]);
            const [file] = await provider().getChildren(first);
            const click = provider().getTreeItem(file).command;
            assert.equal(click?.command, ClientCommand.openRunFile);
            const fake = client();
            const count = fake.sent.length;
            const done = run(click.command, ...(click.arguments ?? []));
            const request = await nextRequest(fake, count + 1);
            assert.equal(request.params.command, ServerCommand.historyDiff);
            assert.deepEqual(request.params.arguments, [{ run_id: newer.id, path: 'pkg/calc.py' }]);
            const before = 'def add(a, b):\n    return a - b\n';
            const after = 'def add(a, b):\n    return a + b\n';
            request.answer({
                status: 'COMPLETE',
                content: '',
                notes: { run: newer, files: [{ path: 'pkg/calc.py', before, after, existed_before: true, exists_after: true, binary: false }] },
            });
            await done;
            const diff = commands.executed.filter((call) => call.id === 'vscode.diff').at(-1);
            assert.ok(diff, 'the diff editor was opened');
            const [left, right, title] = diff.args as [Uri, Uri, string];
            assert.equal(title, 'pkg/calc.py (before ↔ after “Make the tests pass”)');
            const content = recorded.contentProviders.get(left.scheme);
            assert.equal(content?.provideTextDocumentContent(left), before);
            assert.equal(content?.provideTextDocumentContent(right), after);
        });

        it('Undo This Run sends the run\'s id, tells the answer as Undo does, and reads the history again', async () => {
            const [, second] = await listed([newer, older]);
            let refreshed = 0;
            provider().onDidChangeTreeData?.(() => { refreshed += 1; });
            const fake = client();
            const count = fake.sent.length;
            const done = run(ClientCommand.undoRun, second);
            const request = await nextRequest(fake, count + 1);
            assert.equal(request.params.command, ServerCommand.undo);
            assert.deepEqual(request.params.arguments, [{ run_id: older.id }]);
            request.answer({ status: 'COMPLETE', content: 'Reverted pkg/calc.py.', notes: { checkpoint: older.id, restored: ['pkg/calc.py'] } });
            await done;
            assert.deepEqual(recorded.shown.at(-1), { kind: 'info', text: 'Aider: Undo: Reverted pkg/calc.py.', items: [] });
            assert.ok(refreshed > 0, 'the view reads the history again');
            const [, undone] = await listed([newer, { ...older, undone: Date.now() / 1000 }]);
            assert.equal(provider().getTreeItem(undone).contextValue, 'aiderRun.edit.undone', 'no Undo on an undone run');
            assert.match(String(provider().getTreeItem(undone).description), /^undone · done/);
        });

        it('Run Again runs the workflow with the run\'s whole goal; Copy Goal copies it', async () => {
            const long = { ...newer, label: 'x'.repeat(150), goal: `${'x'.repeat(150)} and then some` };
            const [first] = await listed([long]);
            await run(ClientCommand.copyGoal, first);
            assert.equal(recorded.clipboard, long.goal);
            const fake = client();
            const count = fake.sent.length;
            const done = run(ClientCommand.runAgain, first);
            const request = await nextRequest(fake, count + 1);
            assert.equal(request.params.command, ServerCommand.workflowRun);
            assert.deepEqual(request.params.arguments, [{ goal: long.goal }]);
            request.answer({ status: 'COMPLETE', content: 'done', notes: { workflow: { status: 'SUCCESS', content: 'done', iterations: [] } } });
            await done;
        });

        const ready = {
            ...newer,
            id: '00000000000000000003-cccccccc',
            label: 'Fix average',
            goal: 'Fix average',
            state: 'ready',
            isolation: 'worktree',
            branch: 'aider-lsp/run-cccccccc',
            files: ['calculator.py'],
            findings: [{ path: 'test_calculator.py', line: 12, column: 0, message: 'AssertionError: 2 != 3\nmore', severity: 'error', source: 'unittest' }],
        };

        it('a ready run stands out, open, its findings and files under it; a running one has no diff to click yet', async () => {
            const [, readyNode, runningNode] = await listed([newer, ready, { ...ready, id: 'r-running', state: 'running', status: null, findings: [] }]);
            const item = provider().getTreeItem(readyNode);
            assert.equal(item.contextValue, 'aiderRun.workflow.ready.git');
            assert.equal(item.iconPath?.id, 'pass-filled', 'a ready icon: it waits for the user');
            assert.equal(item.id, `${ready.id}~ready`, 'a new item to VS Code once ready: shown open, whatever it was while it ran');
            assert.equal(item.collapsibleState, TreeItemCollapsibleState.Expanded, 'open, though not the newest');
            assert.match(String(item.description), /^ready to apply · goal reached/);
            const children = (await provider().getChildren(readyNode)).map((node) => provider().getTreeItem(node));
            assert.deepEqual(children.map((child) => [child.label, child.description, child.iconPath?.id]), [
                ['test_calculator.py:12', 'AssertionError: 2 != 3', 'error'],
                ['calculator.py', '', undefined],
            ]);
            assert.equal(children[1]?.command?.command, ClientCommand.openRunFile, 'its file opens the run\'s diff');
            const running = provider().getTreeItem(runningNode);
            assert.equal(running.contextValue, 'aiderRun.workflow.running');
            assert.equal(running.iconPath?.id, 'loading~spin');
            const [runningFile] = await provider().getChildren(runningNode);
            assert.equal(provider().getTreeItem(runningFile).command, undefined);
        });

        it('Apply from the view over the user\'s change: "Open the Merge" opens the run\'s version beside the user\'s file', async () => {
            const [readyNode] = await listed([ready]);
            let refreshed = 0;
            provider().onDidChangeTreeData?.(() => { refreshed += 1; });
            const fake = client();
            const count = fake.sent.length;
            recorded.answers.push('Open the Merge');
            const done = run(ClientCommand.applyRun, readyNode);
            const apply = await nextRequest(fake, count + 1);
            assert.deepEqual([apply.params.command, apply.params.arguments], [ServerCommand.applyRun, [{ run_id: ready.id }]]);
            const skipped = [{ path: 'calculator.py', reason: 'changed since', kind: 'changed_since', lines: [[4, 4]] }];
            apply.answer({ status: 'FAILED', content: 'not applied', notes: { error: { reason: 'input_validation_failure', message: 'not applied' }, run_id: ready.id, state: 'ready', skipped } });
            const diff = await nextRequest(fake, count + 2);
            assert.deepEqual([diff.params.command, diff.params.arguments], [ServerCommand.historyDiff, [{ run_id: ready.id, path: 'calculator.py' }]]);
            const theirs = 'def average(values):\n    return sum(values) / len(values) if values else 0\n';
            diff.answer({ status: 'COMPLETE', content: '', notes: { run: ready, files: [{ path: 'calculator.py', before: 'x', after: theirs, existed_before: true, exists_after: true }] } });
            await done;
            const opened = commands.executed.filter((call) => call.id === 'vscode.diff').at(-1);
            assert.ok(opened, 'the merge opened');
            const [left, right, title] = opened.args as [Uri, Uri, string];
            assert.equal(recorded.contentProviders.get(left.scheme)?.provideTextDocumentContent(left), theirs);
            assert.equal(right.toString(), Uri.joinPath(Uri.file(root), 'calculator.py').toString(), 'the user\'s own file, to edit');
            assert.equal(title, 'calculator.py (“Fix average” ↔ yours)');
            assert.ok(refreshed > 0, 'the view reads the history again');
        });

        it('Discard asks first, then discards; Keep as Branch keeps it; both tell what the server did', async () => {
            const [readyNode] = await listed([ready]);
            const fake = client();
            let count = fake.sent.length;
            recorded.answers.push(undefined); // "Discard?" dismissed: nothing sent
            await run(ClientCommand.discardRun, readyNode);
            assert.equal(fake.sent.length, count);
            assert.deepEqual(recorded.shown.at(-1), { kind: 'warning', text: 'Discard “Fix average”?', items: ['Discard'], detail: 'Its change is thrown away with its worktree. Your files are not touched.' });
            recorded.answers.push('Discard');
            const discarding = run(ClientCommand.discardRun, readyNode);
            const discard = await nextRequest(fake, count + 1);
            assert.deepEqual([discard.params.command, discard.params.arguments], [ServerCommand.discardRun, [{ run_id: ready.id }]]);
            discard.answer({ status: 'COMPLETE', content: 'Discarded “Fix average”.', notes: { run_id: ready.id, state: 'discarded' } });
            await discarding;
            assert.deepEqual(recorded.shown.at(-1), { kind: 'info', text: 'Aider: Discarded “Fix average”.', items: [] });

            count = fake.sent.length;
            const keeping = run(ClientCommand.keepRunBranch, readyNode);
            const keep = await nextRequest(fake, count + 1);
            assert.deepEqual([keep.params.command, keep.params.arguments], [ServerCommand.keepRunBranch, [{ run_id: ready.id }]]);
            keep.answer({ status: 'COMPLETE', content: 'Kept “Fix average” on branch aider-lsp/run-cccccccc (abc1234).', notes: { run_id: ready.id, state: 'kept', branch: ready.branch, commit: 'abc1234' } });
            await keeping;
            assert.equal(recorded.shown.at(-1)?.text, 'Aider: Kept “Fix average” on branch aider-lsp/run-cccccccc (abc1234).');
        });

        const attempt = (id: string, fields: Record<string, unknown>): Record<string, unknown> => ({
            ...ready, id, label: 'Fix average', goal: 'Fix average', group_id: 'group-g1', findings: [], ...fields,
        });

        it('the attempts of one goal under one group node, the winner starred and open; Apply the Winner sends the group\'s id', async () => {
            const group = [
                attempt('v3', { created: Date.now() / 1000 - 60, state: 'discarded', status: 'CANCELLED' }),
                attempt('v2', { created: Date.now() / 1000 - 61, state: 'ready', status: 'SUCCESS', won: true }),
                attempt('v1', { created: Date.now() / 1000 - 62, state: 'ready', status: 'FAILURE' }),
            ];
            const [groupNode, olderNode, ...rest] = await listed([...group, older]);
            assert.equal(rest.length, 0, 'the group is one node');
            const item = provider().getTreeItem(groupNode);
            assert.deepEqual([item.label, item.description, item.contextValue, item.iconPath?.id], [
                '3 attempts: “Fix average”', 'winner ready · 1 ready · 1 discarded · 1 min ago', 'aiderRunGroup.winner.compare', 'star-full',
            ]);
            assert.equal(item.collapsibleState, TreeItemCollapsibleState.Expanded);
            assert.equal(item.id, 'group:group-g1~ready');
            assert.equal(provider().getTreeItem(olderNode).label, 'Add a docstring to add');
            const attempts = await provider().getChildren(groupNode);
            const items = attempts.map((node) => provider().getTreeItem(node));
            assert.deepEqual(items.map((each) => [each.label, String(each.description).split(' · ')[0], each.iconPath?.id, each.contextValue, each.collapsibleState]), [
                ['Fix average', 'ready to apply', 'circle-large-filled', 'aiderRun.workflow.ready.git.compare', TreeItemCollapsibleState.Collapsed],
                ['Fix average', 'winner', 'star-full', 'aiderRun.workflow.ready.git.compare', TreeItemCollapsibleState.Expanded],
                ['Fix average', 'discarded', 'trash', 'aiderRun.workflow.discarded', TreeItemCollapsibleState.Collapsed],
            ], 'oldest first; each keeps its actions, the two with a change Compare (labelled by the goal: this window did not run the group)');

            const fake = client();
            const count = fake.sent.length;
            const done = run(ClientCommand.applyWinner, groupNode);
            const apply = await nextRequest(fake, count + 1);
            assert.deepEqual([apply.params.command, apply.params.arguments], [ServerCommand.applyRun, [{ run_id: 'group-g1' }]]);
            assert.equal(recorded.progress.at(-1)?.title, 'Applying “Fix average”');
            apply.answer({ status: 'COMPLETE', content: 'Applied', notes: { run_id: 'v2', state: 'applied', written: ['calculator.py'], discarded: ['v1'], checkpoint_id: 'v2' } });
            await done;
            assert.equal(recorded.shown.at(-1)?.text, 'Aider: Applied the winner of “Fix average”: calculator.py. Its other attempt was discarded (their worktrees removed).');
        });

        /** The history.diff answer of `id`: its files (path, before, after; null: absent). */
        function diffAnswer(id: string, files: [string, string | null, string | null][]): Record<string, unknown> {
            const sides = files.map(([file, before, after]) => ({ path: file, before, after, existed_before: before !== null, exists_after: after !== null, binary: false }));
            return { status: 'COMPLETE', content: '', notes: { run: attempt(id, { created: Date.now() / 1000 - 60 }), files: sides } };
        }

        /** The diff editors opened since `from`: title, left text, right text. */
        function diffsSince(from: number): [string, string, string][] {
            const content = recorded.contentProviders.get('aider-lsp-before');
            return commands.executed.slice(from).filter((call) => call.id === 'vscode.diff').map((call) => {
                const [left, right, title] = call.args as [Uri, Uri, string];
                return [title, content?.provideTextDocumentContent(left) ?? '?', content?.provideTextDocumentContent(right) ?? '?'];
            });
        }

        it('Compare Attempts… on a group of two: each one\'s diff read in its turn, one diff editor per file either changed, the first left', async () => {
            const group = [
                attempt('c2', { created: Date.now() / 1000 - 60, state: 'ready', status: 'SUCCESS', won: true, attempt: 2, aider_model: 'anthropic/claude', files: ['calculator.py', 'notes.md'] }),
                attempt('c1', { created: Date.now() / 1000 - 61, state: 'ready', status: 'FAILURE', attempt: 1, aider_model: 'openai/gpt-4.1', files: ['calculator.py'] }),
            ];
            const [groupNode] = await listed(group);
            assert.equal(provider().getTreeItem(groupNode).contextValue, 'aiderRunGroup.winner.compare');
            const fake = client();
            const count = fake.sent.length;
            const from = commands.executed.length;
            const done = run(ClientCommand.compareAttempts, groupNode);
            const first = await nextRequest(fake, count + 1);
            assert.deepEqual([first.params.command, first.params.arguments], [ServerCommand.historyDiff, [{ run_id: 'c1' }]]);
            first.answer(diffAnswer('c1', [['calculator.py', 'def mean(xs):\n    return 0\n', 'def mean(xs):\n    return sum(xs) / len(xs)\n']]));
            const second = await nextRequest(fake, count + 2);
            assert.deepEqual(second.params.arguments, [{ run_id: 'c2' }]);
            second.answer(diffAnswer('c2', [['calculator.py', 'def mean(xs):\n    return 0\n', 'def mean(xs):\n    return statistics.mean(xs)\n'], ['notes.md', null, 'why\n']]));
            await done;
            assert.equal(recorded.quickPicks.length, 0, 'two attempts: no question');
            assert.deepEqual(diffsSince(from), [
                ['calculator.py (Attempt 1 (openai/gpt-4.1) ↔ Attempt 2 (anthropic/claude))', 'def mean(xs):\n    return sum(xs) / len(xs)\n', 'def mean(xs):\n    return statistics.mean(xs)\n'],
                ['notes.md (Attempt 1 (openai/gpt-4.1) ↔ Attempt 2 (anthropic/claude), not in Attempt 1 (openai/gpt-4.1))', '', 'why\n'],
            ]);
        });

        it('Compare with Another Attempt… asks which other when there are several; one that changed nothing is not asked for its diff; a failure is told', async () => {
            const group = [
                attempt('d3', { created: Date.now() / 1000 - 60, state: 'ready', status: 'FAILURE', files: [] }),
                attempt('d2', { created: Date.now() / 1000 - 61, state: 'ready', status: 'SUCCESS', won: true }),
                attempt('d1', { created: Date.now() / 1000 - 62, state: 'ready', status: 'FAILURE' }),
            ];
            const [groupNode] = await listed(group);
            const [d1] = await provider().getChildren(groupNode);
            assert.equal(provider().getTreeItem(d1).contextValue, 'aiderRun.workflow.ready.git.compare');
            const fake = client();
            let count = fake.sent.length;
            let from = commands.executed.length;
            recorded.picks.push(1); // the second of the others: Attempt 3, which changed nothing
            let done = run(ClientCommand.compareAttempt, d1);
            const request = await nextRequest(fake, count + 1);
            assert.deepEqual(request.params.arguments, [{ run_id: 'd1' }]);
            request.answer(diffAnswer('d1', [['calculator.py', 'old\n', 'new\n']]));
            await done;
            const [picks] = recorded.quickPicks as { label: string }[][];
            assert.deepEqual(picks?.map((item) => item.label), ['Attempt 2', 'Attempt 3'], 'the others, named by their place (no number recorded)');
            assert.equal(fake.sent.length, count + 1, 'Attempt 3 changed nothing: no diff asked');
            assert.deepEqual(diffsSince(from), [['calculator.py (Attempt 1 ↔ Attempt 3, unchanged by Attempt 3)', 'new\n', 'old\n']]);

            count = fake.sent.length;
            from = commands.executed.length;
            recorded.picks.push(0);
            done = run(ClientCommand.compareAttempt, d1);
            const failing = await nextRequest(fake, count + 1);
            failing.answer({ status: 'FAILED', content: '', notes: { error: { reason: 'input_validation_failure', message: "no run 'd1' in this workspace's history" } } });
            await done;
            assert.equal(fake.sent.length, count + 1, 'the other is not asked once one failed');
            assert.deepEqual(diffsSince(from), []);
            assert.equal(recorded.shown.at(-1)?.text, "Aider: Compare Attempt 1 failed: no run 'd1' in this workspace's history");
        });

        it('Add a Note to This Run… on a running attempt or group sends its id and the note, and says the server\'s answer; from the palette, the run in place', async () => {
            const [groupNode] = await listed([attempt('a1', { state: 'running', status: null }), attempt('a2', { state: 'running', status: null })]);
            assert.equal(provider().getTreeItem(groupNode).contextValue, 'aiderRunGroup.running');
            const [first] = await provider().getChildren(groupNode);
            assert.equal(provider().getTreeItem(first).contextValue, 'aiderRun.workflow.running');
            const fake = client();
            let count = fake.sent.length;
            recorded.inputs.push('  negative numbers too ');
            let done = run(ClientCommand.addRunNote, first);
            let steer = await nextRequest(fake, count + 1);
            assert.deepEqual([steer.params.command, steer.params.arguments], [ServerCommand.steer, [{ run_id: 'a1', note: 'negative numbers too' }]]);
            steer.answer({ status: 'COMPLETE', content: 'The note reaches the run\'s next edit (its history keeps it).', notes: {} });
            await done;
            assert.deepEqual(recorded.shown.at(-1), { kind: 'info', text: 'Aider: Note added to “Fix average”. The note reaches the run\'s next edit (its history keeps it).', items: [] });

            count = fake.sent.length;
            recorded.inputs.push('do not touch the API');
            done = run(ClientCommand.addRunNote, groupNode);
            steer = await nextRequest(fake, count + 1);
            assert.deepEqual(steer.params.arguments, [{ run_id: 'group-g1', note: 'do not touch the API' }], 'a group: each of its attempts under way');
            steer.answer({ status: 'COMPLETE', content: 'ok', notes: {} });
            await done;

            count = fake.sent.length;
            recorded.inputs.push(undefined); // dismissed: nothing sent
            await run(ClientCommand.addNote);
            assert.equal(fake.sent.length, count);
            recorded.inputs.push('negative numbers too');
            done = run(ClientCommand.addNote);
            steer = await nextRequest(fake, count + 1);
            assert.deepEqual(steer.params.arguments, [{ note: 'negative numbers too' }], 'no run id: the run in place under way');
            steer.answer({ status: 'FAILED', content: 'none', notes: { error: { reason: 'input_validation_failure', message: 'no workflow run is under way in place: nothing to add the note to' } } });
            await done;
            assert.deepEqual(recorded.shown.at(-1), {
                kind: 'warning',
                text: 'Aider: The note was not added to the run under way: no workflow run is under way in place: nothing to add the note to.',
                items: [],
            });
        });

        it('a ready message still standing when its run is applied from the view: the toasts hidden, its Apply then says so instead of applying', async () => {
            const fake = client();
            let count = fake.sent.length;
            let answer: (choice: string | undefined) => void = () => undefined;
            recorded.inputs.push('Fix average', '');
            recorded.answers.push(new Promise<string | undefined>((resolve) => { answer = resolve; }));
            const running = run(ClientCommand.runWorkflowInWorktree);
            (await nextRequest(fake, count + 1)).answer({ status: 'COMPLETE', content: 'A worktree is being made ready.' });
            const request = await nextRequest(fake, count + 2);
            request.answer({
                status: 'COMPLETE',
                content: 'done',
                notes: { changed_files: ['calculator.py'], created_files: [], diff: 'D', run_id: ready.id, state: 'ready', isolation: 'worktree', findings: [] },
            });
            await until(() => (recorded.shown.some((message) => message.items.includes('Apply')) ? true : undefined));

            const [readyNode] = await listed([ready]);
            count = fake.sent.length;
            const applying = run(ClientCommand.applyRun, readyNode);
            const apply = await nextRequest(fake, count + 1);
            apply.answer({ status: 'COMPLETE', content: 'Applied “Fix average”: calculator.py.', notes: { run_id: ready.id, state: 'applied', written: ['calculator.py'], checkpoint_id: ready.id } });
            await applying;
            assert.ok(commands.executed.some((call) => call.id === 'notifications.hideToasts'), 'the standing toast hidden');

            count = fake.sent.length;
            answer('Apply'); // a click on the notification left in the notification center
            await running;
            assert.equal(fake.sent.length, count, 'nothing sent: the run is no longer ready');
            assert.deepEqual(recorded.shown.at(-1), { kind: 'info', text: 'Aider: “Fix average” was already applied: nothing to do.', items: [] });
        });

        it('with no run, the welcome says so; with no server, that it is not running', async () => {
            assert.deepEqual(await listed([]), []);
            assert.equal(state(), 'empty');
            const fake = client();
            fake.running = false;
            try {
                assert.deepEqual(await provider().getChildren(), []);
                assert.equal(state(), 'unavailable');
            } finally {
                fake.running = true;
            }
        });

        describe('in a window of two folders', () => {
            const folders = twoFolders();
            const { lib } = folders;
            const wsUri = Uri.file(root).toString();
            const libUri = Uri.file(lib).toString();

            /** The top level as VS Code asks for it: each folder's history asked with that folder, answered with `runs[its URI]`. */
            async function listedByFolder(runs: Record<string, unknown[]>): Promise<Node[]> {
                const fake = client();
                const count = fake.sent.length;
                const children = provider().getChildren();
                const requests = [await nextRequest(fake, count + 1), await nextRequest(fake, count + 2)];
                assert.deepEqual(requests.map((request) => [request.params.command, request.params.arguments]), [
                    [ServerCommand.historyList, [{ folder: wsUri }]],
                    [ServerCommand.historyList, [{ folder: libUri }]],
                ], 'each folder\'s history, asked with its folder');
                for (const [index, request] of requests.entries()) {
                    const list = runs[index === 0 ? wsUri : libUri] ?? [];
                    request.answer({ status: 'COMPLETE', content: '', notes: { runs: list }, parsedContent: list });
                }
                return children;
            }

            it('the top level is one node per folder, its runs\' count beside it, its own runs under it; with one folder again, the runs as before', async () => {
                const [wsNode, libNode, ...rest] = await listedByFolder({ [wsUri]: [newer, older], [libUri]: [ready] });
                assert.equal(rest.length, 0);
                const [wsItem, libItem] = [wsNode, libNode].map((node) => provider().getTreeItem(node));
                assert.deepEqual([wsItem?.label, wsItem?.description, wsItem?.collapsibleState], ['ws', '2 runs', TreeItemCollapsibleState.Expanded]);
                assert.deepEqual([libItem?.label, libItem?.description, libItem?.collapsibleState], ['lib', '1 run', TreeItemCollapsibleState.Expanded]);
                assert.equal(state(), 'listed');
                const wsRuns = (await provider().getChildren(wsNode)).map((node) => provider().getTreeItem(node));
                assert.deepEqual(wsRuns.map((item) => [item.label, item.collapsibleState]), [['Make the tests pass', TreeItemCollapsibleState.Expanded], ['Add a docstring to add', TreeItemCollapsibleState.Collapsed]]);
                const [libRun, ...none] = await provider().getChildren(libNode);
                assert.equal(none.length, 0);
                assert.equal(provider().getTreeItem(libRun).contextValue, 'aiderRun.workflow.ready.git');
                const file = (await provider().getChildren(libRun)).map((node) => provider().getTreeItem(node)).at(-1);
                assert.equal(file?.label, 'calculator.py');
                assert.equal(file?.resourceUri?.toString(), Uri.joinPath(Uri.file(lib), 'calculator.py').toString(), 'relative to its own folder');

                // the same run id in both folders: still one item id each (ids are the whole tree's)
                const [wsAgain, libAgain] = await listedByFolder({ [wsUri]: [], [libUri]: [newer] });
                assert.deepEqual([provider().getTreeItem(wsAgain).description, provider().getTreeItem(wsAgain).collapsibleState], ['no runs', TreeItemCollapsibleState.None]);
                const [libNewer] = await provider().getChildren(libAgain);
                assert.notEqual(provider().getTreeItem(libNewer).id, newer.id);
                assert.deepEqual(await listedByFolder({}), [], 'no run in any folder: the welcome\'s "No runs yet"');
                assert.equal(state(), 'empty');

                workspace.workspaceFolders = folders.single();
                try {
                    const fake = client();
                    const count = fake.sent.length;
                    const children = provider().getChildren();
                    const request = await nextRequest(fake, count + 1);
                    assert.deepEqual(request.params.arguments, [{}], 'one folder: the server\'s, not named');
                    request.answer({ status: 'COMPLETE', content: '', notes: { runs: [newer] }, parsedContent: [newer] });
                    const [only] = await children;
                    assert.equal(provider().getTreeItem(only).id, newer.id, 'a run at the top, as before');
                } finally {
                    workspace.workspaceFolders = folders.both();
                }
            });

            it('Show Diff, a file\'s click, Undo This Run, Apply (and its Undo), Discard, Keep as Branch and Run Again on a run of the second folder send that folder', async () => {
                const [, libNode] = await listedByFolder({ [wsUri]: [newer], [libUri]: [ready, older] });
                const [readyNode, olderNode] = await provider().getChildren(libNode);
                let refreshed = 0;
                provider().onDidChangeTreeData?.(() => { refreshed += 1; });
                const fake = client();
                /** Runs a client command and answers the one request it sends; resolves to [its command, its arguments]. */
                const sent = async (id: string, node: unknown, answer: Record<string, unknown>): Promise<[string, unknown[]]> => {
                    const count = fake.sent.length;
                    const done = run(id, node);
                    const request = await nextRequest(fake, count + 1);
                    request.answer(answer);
                    await done;
                    return [request.params.command, request.params.arguments];
                };
                const noFiles = { status: 'COMPLETE', content: '', notes: { run: ready, files: [] } };
                assert.deepEqual(await sent(ClientCommand.showRunDiff, readyNode, noFiles), [ServerCommand.historyDiff, [{ run_id: ready.id, folder: libUri }]]);
                const file = (await provider().getChildren(readyNode)).at(-1);
                const click = provider().getTreeItem(file).command;
                assert.equal(click?.command, ClientCommand.openRunFile);
                assert.deepEqual(await sent(click.command, click.arguments?.[0], noFiles), [ServerCommand.historyDiff, [{ run_id: ready.id, path: 'calculator.py', folder: libUri }]]);

                const reverted = { status: 'COMPLETE', content: 'Reverted pkg/calc.py.', notes: { checkpoint: older.id, restored: ['pkg/calc.py'] } };
                assert.deepEqual(await sent(ClientCommand.undoRun, olderNode, reverted), [ServerCommand.undo, [{ run_id: older.id, folder: libUri }]]);
                assert.equal(recorded.folderPickAsked, 0, 'the run says which folder');

                // Apply, then the Undo its message offers: both in the run's folder
                recorded.answers.push('Undo');
                let count = fake.sent.length;
                const applying = run(ClientCommand.applyRun, readyNode);
                const apply = await nextRequest(fake, count + 1);
                assert.deepEqual([apply.params.command, apply.params.arguments], [ServerCommand.applyRun, [{ run_id: ready.id, folder: libUri }]]);
                apply.answer({ status: 'COMPLETE', content: 'Applied “Fix average”: calculator.py', notes: { run_id: ready.id, state: 'applied', written: ['calculator.py'], deleted: [], skipped: [], checkpoint_id: ready.id } });
                const undoApplied = await nextRequest(fake, count + 2);
                assert.deepEqual([undoApplied.params.command, undoApplied.params.arguments], [ServerCommand.undo, [{ run_id: ready.id, folder: libUri }]]);
                undoApplied.answer(reverted);
                await applying;
                assert.equal(recorded.folderPickAsked, 0);

                recorded.answers.push('Discard');
                assert.deepEqual(await sent(ClientCommand.discardRun, readyNode, { status: 'COMPLETE', content: 'Discarded.', notes: { run_id: ready.id, state: 'discarded' } }), [ServerCommand.discardRun, [{ run_id: ready.id, folder: libUri }]]);
                assert.deepEqual(await sent(ClientCommand.keepRunBranch, readyNode, { status: 'COMPLETE', content: 'Kept.', notes: { run_id: ready.id, state: 'kept', branch: ready.branch, commit: 'abc1234' } }), [ServerCommand.keepRunBranch, [{ run_id: ready.id, folder: libUri }]]);

                count = fake.sent.length;
                const again = run(ClientCommand.runAgain, readyNode);
                const workflow = await nextRequest(fake, count + 1);
                assert.deepEqual([workflow.params.command, workflow.params.arguments], [ServerCommand.workflowRun, [{ goal: ready.goal, folder: libUri }]]);
                workflow.answer({ status: 'COMPLETE', content: 'done', notes: { workflow: { status: 'SUCCESS', content: 'done', iterations: [] } } });
                await again;
                assert.equal(recorded.folderPickAsked, 0, 'Run Again runs in the run\'s folder, not the one asked');
                assert.ok(refreshed > 0, 'the view reads the history again');
                await listedByFolder({ [wsUri]: [newer], [libUri]: [older] }); // and reads every folder's
            });

            it('Apply Anyway on a run of the second folder saves that folder\'s unsaved file first, not the file of the same name in the other folder', async () => {
                const [, libNode] = await listedByFolder({ [wsUri]: [], [libUri]: [ready] });
                const [readyNode] = await provider().getChildren(libNode);
                const theirs = document('lib/calculator.py', 'def average(xs): ...  # the user, unsaved\n', true);
                const other = document('calculator.py', 'OTHER = 1  # another folder\'s, unsaved\n', true);
                workspace.textDocuments = [theirs, other];
                try {
                    const fake = client();
                    const count = fake.sent.length;
                    recorded.answers.push('Apply Anyway');
                    const applying = run(ClientCommand.applyRun, readyNode);
                    const skipped = [{ path: 'calculator.py', reason: 'open in the editor with unsaved changes', kind: 'unsaved', lines: [] }];
                    (await nextRequest(fake, count + 1)).answer({
                        status: 'FAILED',
                        content: 'not applied',
                        notes: { error: { reason: 'input_validation_failure', message: 'not applied' }, run_id: ready.id, state: 'ready', written: [], deleted: [], skipped, checkpoint_id: null },
                    });
                    const forced = await nextRequest(fake, count + 2);
                    assert.deepEqual(forced.params.arguments, [{ run_id: ready.id, force: true, folder: libUri }]);
                    assert.deepEqual([theirs.isDirty, other.isDirty], [false, true], 'only the run\'s folder\'s file saved');
                    forced.answer({ status: 'COMPLETE', content: 'Applied.', notes: { run_id: ready.id, state: 'applied', written: ['calculator.py'], deleted: [], skipped: [], checkpoint_id: ready.id } });
                    await applying;
                } finally {
                    workspace.textDocuments = [];
                }
            });
        });
    });

    it('says the server is not running instead of failing', async () => {
        const fake = client();
        fake.running = false;
        recorded.inputs.push('anything');
        await run(ClientCommand.undo);
        assert.deepEqual(recorded.shown.at(-1), { kind: 'error', text: 'Aider: the server is not running.', items: ['Restart Server', 'Show Log'] });
        fake.running = true;
    });

    it('writes the server\'s log lines at their own levels, not all as errors', async () => {
        const options = client().clientOptions as unknown as { stdioOptions?: { stderr(input: PassThrough, channel: unknown): void } };
        assert.ok(options.stdioOptions, 'the client reads the server\'s stderr itself');
        const stderr = new PassThrough();
        const lines: string[] = [];
        const channel = Object.fromEntries(['trace', 'debug', 'info', 'warn', 'error'].map((level) => [level, (text: string) => void lines.push(`${level} ${text}`)]));
        options.stdioOptions.stderr(stderr, channel);
        stderr.end(
            [
                '2026-11-23 21:05:53,123 INFO aider_lsp.lsp.server: Server shutting down',
                '2026-11-23 21:05:53,124 INFO httpx: HTTP Request: POST http://127.0.0.1/v1/chat/completions "HTTP/1.1 200 OK"',
                '2026-11-23 21:05:53,125 WARNING aider_lsp.settings: aiderLsp.maxRetries: not a number',
                '2026-11-23 21:05:53,126 ERROR aider_lsp.lsp.runtime: command failed',
                'Traceback (most recent call last):',
                '  File "x.py", line 1',
                '',
            ].join('\n'),
        );
        await once(stderr, 'end');
        await new Promise((resolve) => setImmediate(resolve));
        assert.deepEqual(lines, [
            'info aider_lsp.lsp.server: Server shutting down',
            'info httpx: HTTP Request: POST http://127.0.0.1/v1/chat/completions "HTTP/1.1 200 OK"',
            'warn aider_lsp.settings: aiderLsp.maxRetries: not a number',
            'error aider_lsp.lsp.runtime: command failed',
            'error Traceback (most recent call last):',
            'error   File "x.py", line 1',
        ]);
    });

    it('Set API Key stores the key in secret storage and restarts the server with it', async () => {
        const before = clients.length;
        recorded.inputs.push('sk-new');
        await run(ClientCommand.setApiKey);
        assert.equal(secrets.get('aiderLsp.apiKey'), 'sk-new');
        assert.equal(clients.length, before + 1);
        assert.ok(clients[before - 1]?.stopped, 'the old server was stopped');
        assert.equal(client().serverOptions.options.env.AIDER_LSP_API_KEY, 'sk-new');
    });
});

describe('zero set-up', () => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'aider-lsp-setup-'));
    const calls = path.join(home, 'calls.log');
    const context = {
        subscriptions: [] as { dispose(): void }[],
        secrets: { get: () => Promise.resolve(undefined), store: () => Promise.resolve(), delete: () => Promise.resolve() },
        globalStorageUri: Uri.file(path.join(home, 'global')),
        extensionPath: home,
        extension: { packageJSON: manifest },
    };
    const savedPath = process.env.PATH;

    /** A stand-in for the user's Python that records its calls and builds a venv with an `aider-lsp`
     * (whose `setup-aider` prints a pip line, then takes `aiderSeconds`). */
    /** `aiderSeconds`: how long its `aider-lsp setup-aider` runs on; `until`: a file it waits for first (the test creates it). */
    function fakePython(version: 'True' | 'False', aiderSeconds = 0, until?: string): string {
        const file = path.join(home, `python-${version}`);
        const wait = until ? `while [ ! -e ${until} ]; do sleep 0.05; done\\n` : '';
        const aiderLsp = `#!/bin/sh\\nPATH=/usr/bin:/bin\\necho "aider-lsp $*" >> ${calls}\\necho "Collecting aider-chat==0.86.2"\\n${wait}sleep ${String(aiderSeconds)}\\n`;
        fs.writeFileSync(
            file,
            [
                '#!/bin/sh',
                'PATH=/usr/bin:/bin',
                `echo "python $*" >> ${calls}`,
                // -I: the set-up's Python runs isolated (no workspace folder on its import path)
                'case "$1 $2 $3" in',
                `  "-I -c "*) echo ${version} ;;`,
                `  "-I -m venv") mkdir -p "$5/bin" && cp "$0" "$5/bin/python" && printf '${aiderLsp}' > "$5/bin/aider-lsp" && chmod +x "$5/bin/aider-lsp" ;;`,
                '  "-I -m pip") echo "Successfully installed aider-lsp" ;;',
                'esac',
                '',
            ].join('\n'),
            { mode: 0o755 },
        );
        return file;
    }

    before(() => {
        fs.mkdirSync(path.join(home, 'server'));
        fs.writeFileSync(path.join(home, 'server', 'aider_lsp-0.1.0-py3-none-any.whl'), 'wheel');
        process.env.PATH = path.join(home, 'empty-bin');
    });

    after(() => {
        process.env.PATH = savedPath;
        fs.rmSync(home, { recursive: true, force: true });
    });

    beforeEach(async () => {
        await extension.deactivate();
        recorded.reset();
        fs.rmSync(calls, { force: true });
        fs.rmSync(path.join(home, 'global'), { recursive: true, force: true }); // no server set up yet
    });

    it('without Python, says what to do with a Show Log button', async () => {
        recorded.configuration = { 'aiderLsp.server.path': '', 'aiderLsp.server.python': '' };
        recorded.answers.push('Set Up');
        extension.activate(context as never);
        void run(ClientCommand.findFiles);
        const error = await until(() => recorded.shown.find((shown) => shown.kind === 'error'));
        assert.match(recorded.shown[0]?.text ?? '', /^Aider needs its server first: aider-lsp was not found/);
        assert.deepEqual(error, {
            kind: 'error',
            text: 'Aider: Python 3.11 or newer was not found: install it, or set aiderLsp.server.python to its path.',
            items: ['Show Log'],
        });
    });

    it('refuses a Python older than 3.11', async () => {
        recorded.configuration = { 'aiderLsp.server.path': '', 'aiderLsp.server.python': fakePython('False') };
        recorded.answers.push('Set Up');
        extension.activate(context as never);
        void run(ClientCommand.findFiles);
        const error = await until(() => recorded.shown.find((shown) => shown.kind === 'error'));
        assert.match(error.text, /is not Python 3\.11 or newer: set aiderLsp\.server\.python/);
        assert.ok(!fs.readFileSync(calls, 'utf8').includes('venv'), 'no environment was created');
    });

    it('says that a configured Python does not exist (not that it is too old)', async () => {
        recorded.configuration = { 'aiderLsp.server.path': '', 'aiderLsp.server.python': path.join(home, 'no', 'python3.12') };
        recorded.answers.push('Set Up');
        extension.activate(context as never);
        void run(ClientCommand.findFiles);
        const error = await until(() => recorded.shown.find((shown) => shown.kind === 'error'));
        assert.equal(
            error.text,
            `Aider: aiderLsp.server.python is ${path.join(home, 'no', 'python3.12')}, which does not exist: set it to a Python 3.11+ interpreter, or leave it empty to use python3 on PATH.`,
        );
    });

    it('a bad aiderLsp.server.path is an error to fix, not a set-up to offer', async () => {
        const bad = path.join(home, 'nowhere', 'aider-lsp');
        recorded.configuration = { 'aiderLsp.server.path': bad, 'aiderLsp.server.python': fakePython('True') };
        extension.activate(context as never);
        assert.equal(recorded.shown.length, 0, 'nothing is said before the server is needed');
        const reason = `aiderLsp.server.path is ${bad}, which is not an executable file: fix the setting or clear it`;
        recorded.inputs.push('never asked');
        await run(ClientCommand.edit);
        assert.deepEqual(recorded.shown[0], { kind: 'error', text: `Aider: ${reason}.`, items: ['Show Log'] });
        assert.deepEqual(recorded.shown.at(-1), { kind: 'error', text: `Aider: the server is not running: ${reason}.`, items: ['Restart Server', 'Show Log'] });
        assert.equal(recorded.inputs.length, 1, 'no instruction asked for a server that cannot run');
        recorded.inputs.length = 0;
    });

    it('a missing server is no error yet: the Runs view shown finds it missing, the status item offers the set-up', async () => {
        recorded.configuration = { 'aiderLsp.server.path': '', 'aiderLsp.server.python': fakePython('True') };
        extension.activate(context as never);
        assert.match(recorded.statusTexts.at(-1) ?? '', /sparkle/);
        const view = recorded.treeViews.get('aider-lsp.runs');
        assert.ok(view, 'the Runs view is there before any command');
        assert.deepEqual(await view.getChildren(), []);
        assert.equal(recorded.shown.length, 0, 'no question for a view looked at');
        const last = recorded.statusTexts.at(-1) ?? '';
        assert.ok(!last.includes('$(error)'), last);
        assert.match(last, /cloud-download/);
    });

    it('Edit with Aider offers the set-up first (modal), then asks for the instruction and edits; set-up is told when done', async () => {
        // Aider's set-up runs until the step's line with its elapsed time has been shown (whenever that is)
        const lineShown = path.join(home, 'line-shown');
        fs.rmSync(lineShown, { force: true });
        recorded.configuration = { 'aiderLsp.server.path': '', 'aiderLsp.server.python': fakePython('True', 0, lineShown) };
        extension.activate(context as never);
        const before = clients.length;
        recorded.answers.push('Set Up');
        recorded.inputs.push('add zero');
        const done = run(ClientCommand.edit);
        const stepLine = /^3\/3 installing Aider .* — \d+ s: Collecting aider-chat==0\.86\.2$/;
        const setUpLines = (): string[] => recorded.progress.find((entry) => entry.title === 'Aider: setting up the server')?.messages ?? [];
        try {
            await until(() => (setUpLines().some((message) => stepLine.test(message)) ? true : undefined));
        } finally {
            fs.writeFileSync(lineShown, ''); // the set-up goes on either way (nothing is left waiting)
        }
        const request = await until(() => (clients.length > before ? clients.at(-1)?.sent[0] : undefined));
        assert.equal(request.params.command, ServerCommand.automatic);
        assert.deepEqual(request.params.arguments, [{ prompt: 'add zero' }], 'the instruction reached the server');
        request.answer({ status: 'COMPLETE', content: 'done', notes: {} });
        await done;
        const texts = recorded.shown.map((shown) => shown.text);
        const modal = texts.findIndex((text) => text.startsWith('Aider needs its server first: aider-lsp was not found'));
        assert.ok(modal >= 0, JSON.stringify(texts));
        assert.ok(texts.includes('Aider: the server is set up and running.'), JSON.stringify(texts));
        assert.ok(!texts.some((text) => text.includes('not running')), JSON.stringify(texts));
        const messages = setUpLines();
        assert.ok(messages.includes('3/3 installing Aider (pip, a few minutes)'), JSON.stringify(messages));
        // the step's latest line with its elapsed time (how many seconds depends on the machine's load)
        assert.ok(messages.some((message) => stepLine.test(message)), JSON.stringify(messages));
    });

    it('runs one set-up at a time: a second palette command during the set-up joins it', async () => {
        recorded.configuration = { 'aiderLsp.server.path': '', 'aiderLsp.server.python': fakePython('True', 0.5) };
        extension.activate(context as never);
        const first = run(ClientCommand.setupServer);
        const second = run(ClientCommand.setupServer);
        assert.deepEqual(await Promise.all([first, second]), [true, true]);
        const venvs = fs.readFileSync(calls, 'utf8').split('\n').filter((line) => line.includes('-m venv'));
        assert.equal(venvs.length, 1, 'one environment created');
        assert.ok(recorded.shown.some((shown) => shown.text.includes('already being set up')));
    });

    it('creates the private environment, installs the bundled wheel, sets up Aider, then starts that server', async () => {
        const python = fakePython('True');
        recorded.configuration = { 'aiderLsp.server.path': '', 'aiderLsp.server.python': python };
        recorded.answers.push('Set Up');
        const before = clients.length;
        extension.activate(context as never);
        void run(ClientCommand.findFiles); // the modal offer is answered Set Up
        await until(() => (clients.length > before ? true : undefined));
        const venv = path.join(home, 'global', 'server-venv');
        const log = fs.readFileSync(calls, 'utf8');
        assert.match(log, new RegExp(`python -I -m venv --clear ${venv}`));
        assert.match(log, /python -I -m pip install --disable-pip-version-check .*server\/aider_lsp-0\.1\.0-py3-none-any\.whl/);
        assert.match(log, /aider-lsp setup-aider/);
        assert.equal(client().serverOptions.command, path.join(venv, 'bin', 'aider-lsp'));
        assert.equal(recorded.progress.at(-1)?.title, 'Aider: setting up the server');
        assert.ok(recorded.shown.every((shown) => shown.kind !== 'error'), JSON.stringify(recorded.shown));
    });
});
