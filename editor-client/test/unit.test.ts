/** The pure parts: command arguments, settings → initializationOptions, result → message, diffs. */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { fileContext, selectionArgument } from '../src/common/arguments';
import { contentBefore, splitDiff } from '../src/common/diff';
import { requestErrorMessage, resultMessage } from '../src/common/results';
import { initializationOptions, SERVER_SETTING_KEYS, serverEnvironment } from '../src/common/settings';
import { asTaskResult, ClientCommand, contextMatches, type TaskResult } from '../src/protocol';

const range = (a: number, b: number, c: number, d: number) => ({ start: { line: a, character: b }, end: { line: c, character: d } });

describe('file_context', () => {
    it('is workspace-relative with / separators, active file first, duplicates and outside files dropped', () => {
        const got = fileContext(['/ws/src/a.py', '/ws/lib/b.py', '/ws/src/a.py', '/elsewhere/c.py', '/ws'], '/ws', '/');
        assert.deepEqual(got, ['src/a.py', 'lib/b.py']);
    });
    it('handles Windows paths', () => {
        assert.deepEqual(fileContext(['C:\\ws\\src\\a.py', 'D:\\x.py'], 'C:\\ws', '\\'), ['src/a.py']);
    });
    it('does not let a sibling folder with the same prefix in', () => {
        assert.deepEqual(fileContext(['/ws-other/a.py'], '/ws', '/'), []);
    });
});

describe('selection', () => {
    it('carries uri, range and text', () => {
        assert.deepEqual(selectionArgument('file:///ws/a.py', range(1, 0, 2, 4), 'x = 1\ny'), {
            uri: 'file:///ws/a.py',
            range: range(1, 0, 2, 4),
            text: 'x = 1\ny',
        });
    });
    it('is left out when empty or blank', () => {
        assert.equal(selectionArgument('file:///a', range(3, 2, 3, 2), ''), undefined);
        assert.equal(selectionArgument('file:///a', range(3, 0, 4, 0), '  \n'), undefined);
    });
});

describe('settings → initializationOptions', () => {
    const values: Record<string, unknown> = {
        model: 'openai:gpt-4.1',
        baseUrl: '',
        aiderModel: null,
        testCommand: 'pytest -q',
        maxRetries: 2,
        timeouts: { llm: 30, aider: 300, test: 300, shell: 60 },
        budget: { maxTokens: 1000, maxCost: null },
        contextExcludes: ['build/**'],
        'server.path': '/opt/aider-lsp',
        apiKey: 'from-settings-json',
    };
    const options = initializationOptions((key) => values[key], 'sk-secret');

    it('passes set values by their server names and leaves unset, null and empty ones to the server', () => {
        assert.equal(options.model, 'openai:gpt-4.1');
        assert.equal(options.testCommand, 'pytest -q');
        assert.equal(options.maxRetries, 2);
        assert.deepEqual(options.timeouts, { llm: 30, aider: 300, test: 300, shell: 60 });
        assert.deepEqual(options.budget, { maxTokens: 1000, maxCost: null });
        assert.deepEqual(options.contextExcludes, ['build/**']);
        assert.ok(!('baseUrl' in options) && !('aiderModel' in options) && !('outputMode' in options));
    });
    it('never sends client-only settings, and takes the key from secret storage, not settings.json', () => {
        assert.ok(!Object.keys(options).some((key) => key.startsWith('server')));
        assert.equal(options.apiKey, 'sk-secret');
        assert.equal(initializationOptions((key) => values[key]).apiKey, undefined);
    });
    it('covers every setting of the README table', () => {
        assert.equal(SERVER_SETTING_KEYS.length, 15);
    });
    it('puts the key in the server environment', () => {
        assert.equal(serverEnvironment({ PATH: '/bin' }, 'k').AIDER_LSP_API_KEY, 'k');
        assert.equal(serverEnvironment({ PATH: '/bin' }).AIDER_LSP_API_KEY, undefined);
    });
});

function result(status: TaskResult['status'], content: string, notes: Record<string, unknown> = {}): TaskResult {
    return { status, content, notes };
}

describe('result → message', () => {
    it('names the changed and created files and keeps the diff for Show Diff', () => {
        const message = resultMessage('Edit with Aider', result('COMPLETE', 'diff…', { changed_files: ['a.py'], created_files: ['b.py'], diff: 'D' }));
        assert.deepEqual(message, { severity: 'info', text: 'Edit with Aider: changed a.py, b.py.', changedFiles: ['a.py', 'b.py'], diff: 'D' });
    });
    it('shortens a long list of files', () => {
        const files = ['a', 'b', 'c', 'd', 'e'];
        assert.equal(resultMessage('Workflow', result('COMPLETE', '', { changed_files: files })).text, 'Workflow: changed a, b, c and 2 more.');
    });
    it('shows the error message of a FAILED result', () => {
        const failed = result('FAILED', 'raw', { error: { type: 'TASK_FAILURE', reason: 'configuration_error', message: 'set aiderLsp.aiderModel' } });
        assert.deepEqual(resultMessage('Edit with Aider', failed), { severity: 'error', text: 'Edit with Aider failed: set aiderLsp.aiderModel', changedFiles: [] });
    });
    it('falls back to the content when a failure has no error note', () => {
        assert.equal(resultMessage('Tests', result('FAILED', 'exit 1')).text, 'Tests failed: exit 1');
    });
    it('calls a cancelled result a warning', () => {
        const cancelled = result('FAILED', '', { error: { type: 'TASK_FAILURE', reason: 'cancelled', message: 'Run tests: cancelled by the user' } });
        assert.deepEqual(resultMessage('Tests', cancelled), { severity: 'warning', text: 'Tests: cancelled.', changedFiles: [] });
    });
    it('summarises a result without changes by its content', () => {
        assert.equal(resultMessage('Undo', result('COMPLETE', 'Nothing to undo.')).text, 'Undo: Nothing to undo.');
    });
    it('turns JSON-RPC errors into messages', () => {
        assert.equal(requestErrorMessage('Edit', { code: -32800, message: 'cancelled' }).severity, 'warning');
        assert.equal(requestErrorMessage('Edit', new Error('InvalidParams: prompt')).text, 'Edit failed: InvalidParams: prompt');
    });
});

describe('protocol', () => {
    it('accepts a TaskResult and refuses other shapes', () => {
        assert.deepEqual(asTaskResult({ status: 'COMPLETE', content: 'x', notes: { a: 1 } }), { status: 'COMPLETE', content: 'x', notes: { a: 1 }, parsedContent: undefined });
        assert.equal(asTaskResult({ status: 'DONE', content: 'x' }), undefined);
        assert.equal(asTaskResult(null), undefined);
        assert.equal(asTaskResult([]), undefined);
    });
    it('reads getContext matches with scores, else file_paths', () => {
        const withMatches = result('COMPLETE', '[]', { matches: [{ id: 'a.py', source_path: 'a.py', relevance_score: 0.9 }, 'junk'] });
        assert.deepEqual(contextMatches(withMatches), [{ path: 'a.py', score: 0.9 }]);
        assert.deepEqual(contextMatches(result('COMPLETE', '[]', { file_paths: ['b.py', 3] })), [{ path: 'b.py' }]);
    });
});

describe('diff → content before the edit', () => {
    const diff = [
        'diff --aider-mcp a/pkg/calc.py b/pkg/calc.py',
        '--- a/pkg/calc.py',
        '+++ b/pkg/calc.py',
        '@@ -1,3 +1,3 @@',
        ' def add(a, b):',
        '-    return a + b',
        '+    return a + b + 0',
        ' # end',
        'diff --aider-mcp a/new.py b/new.py',
        'new file',
        '--- /dev/null',
        '+++ b/new.py',
        '@@ -0,0 +1 @@',
        '+x = 1',
        '',
    ].join('\n');

    it('splits a multi-file diff by path', () => {
        assert.deepEqual([...splitDiff(diff).keys()], ['pkg/calc.py', 'new.py']);
    });
    it('rebuilds the old content from the new one', () => {
        const section = splitDiff(diff).get('pkg/calc.py') ?? '';
        assert.equal(contentBefore('def add(a, b):\n    return a + b + 0\n# end\nmore\n', section), 'def add(a, b):\n    return a + b\n# end\nmore\n');
    });
    it('gives an empty before for a new file', () => {
        assert.equal(contentBefore('x = 1\n', splitDiff(diff).get('new.py') ?? ''), '');
    });
    it('refuses when the file changed since the edit', () => {
        assert.equal(contentBefore('something else\n', splitDiff(diff).get('pkg/calc.py') ?? ''), undefined);
    });
    it('reads the workflow\'s summary diff, which has no `diff --` headers', () => {
        const summary = ['--- a/pkg/calc.py', '+++ b/pkg/calc.py', '@@ -1,2 +1,2 @@', ' def add(a, b):', '-    return a + b', '+    return a + b + 0', '--- /dev/null', '+++ b/new.py', '@@ -0,0 +1 @@', '+x = 1', ''].join('\n');
        const sections = splitDiff(summary);
        assert.deepEqual([...sections.keys()], ['pkg/calc.py', 'new.py']);
        assert.equal(contentBefore('def add(a, b):\n    return a + b + 0\n', sections.get('pkg/calc.py') ?? ''), 'def add(a, b):\n    return a + b\n');
        assert.equal(contentBefore('x = 1\n', sections.get('new.py') ?? ''), '');
    });
    it('handles a missing newline at the end of the file', () => {
        const noEol = ['diff --aider-mcp a/a b/a', '--- a/a', '+++ b/a', '@@ -1 +1 @@', '-old', '\\ No newline at end of file', '+new', '\\ No newline at end of file', ''].join('\n');
        assert.equal(contentBefore('new', splitDiff(noEol).get('a') ?? ''), 'old');
    });
});

describe('package.json', () => {
    const manifest = JSON.parse(fs.readFileSync(path.resolve(__dirname, '..', '..', 'package.json'), 'utf8')) as {
        contributes: { commands: { command: string; category: string }[]; configuration: { properties: Record<string, { default?: unknown }> } };
    };
    it('contributes every server setting plus server.path and server.python, and no apiKey', () => {
        const expected = [...SERVER_SETTING_KEYS.map((key) => `aiderLsp.${key}`), 'aiderLsp.server.path', 'aiderLsp.server.python'];
        assert.deepEqual(Object.keys(manifest.contributes.configuration.properties), expected);
    });
    it('lists every client command under the category Aider', () => {
        const listed = manifest.contributes.commands.filter((command) => command.category === 'Aider').map((command) => command.command);
        assert.deepEqual(listed.sort(), Object.values(ClientCommand).sort());
    });
});
