/** The pure parts: command arguments, settings → initializationOptions, result → message, diffs. */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { fileContext, selectionArgument } from '../src/common/arguments';
import { contentBefore, splitDiff } from '../src/common/diff';
import { missingKey, modelChoices, planningModelOf } from '../src/common/models';
import { statusSummary } from '../src/common/statusSummary';
import { ProgressRouter } from '../src/common/progress';
import { requestErrorMessage, resultMessage, workflowMessage } from '../src/common/results';
import { ago, analysisTooltip, runDescription, runFileSides, runRecords, runState, runTooltip, shortLabel, stepDescription, stepState, stepTooltip, testLabel, testTooltip } from '../src/common/runs';
import { parseServerLine } from '../src/common/serverLog';
import { initializationOptions, SERVER_SETTING_KEYS, serverEnvironment } from '../src/common/settings';
import { asTaskResult, ClientCommand, contextMatches, type TaskResult } from '../src/protocol';
import { RESULT_MODELS } from '../src/protocolResults';
import { list, num, object, optional, presences, required, str } from '../src/wire';

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
    it('covers every setting of the configuration guide\'s table', () => {
        const guide = fs.readFileSync(path.resolve(__dirname, '..', '..', '..', 'docs', 'configuration.md'), 'utf8');
        const table = guide.split(/^## /m).find((section) => section.startsWith('The settings\n')) ?? '';
        const rows = [...table.matchAll(/^\| `(\w+)` \| `AIDER_LSP_\w+` \|/gm)].map((match) => match[1]);
        assert.deepEqual(rows.filter((key) => key !== 'apiKey'), [...SERVER_SETTING_KEYS]);
    });
    it('puts the key in the server environment', () => {
        assert.equal(serverEnvironment({ PATH: '/bin' }, 'k').AIDER_LSP_API_KEY, 'k');
        assert.equal(serverEnvironment({ PATH: '/bin' }).AIDER_LSP_API_KEY, undefined);
        assert.equal(serverEnvironment({ PATH: '/bin' }, undefined, '/ws/.env/bin/python').AIDER_LSP_PYTHON_INTERPRETER, '/ws/.env/bin/python');
        assert.equal(serverEnvironment({ PATH: '/bin' }).AIDER_LSP_PYTHON_INTERPRETER, undefined);
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
    it('says what the failing tests said after Fix with Aider re-ran them', () => {
        const passing = result('COMPLETE', '', { changed_files: ['a.py'], retest: { command: 'pytest t::x', exit_code: 0 } });
        assert.equal(resultMessage('Editing with Aider', passing).text, 'Editing with Aider: changed a.py. The tests that failed pass now.');
        const failing = result('COMPLETE', '', { changed_files: ['a.py'], retest: { command: 'pytest t::x', exit_code: 1 } });
        assert.equal(resultMessage('Editing with Aider', failing).text, 'Editing with Aider: changed a.py. The tests that failed still fail (exit code 1).');
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

describe('progress routing', () => {
    it('a run the server reports under its own token takes no other progress, and its cancel targets only cancellable ones', () => {
        const router = new ProgressRouter();
        const messages: string[] = [];
        const run = router.start((message) => void messages.push(message));
        const forwarded: unknown[] = [];
        const next = (_token: unknown, params: unknown): void => void forwarded.push(params);
        router.route(run.token, { kind: 'begin', title: 'Aider workflow', cancellable: true }, next);
        router.route('indexing', { kind: 'begin', title: 'Indexing workspace' }, next);
        router.route(run.token, { kind: 'report', message: 'Planning' }, next);
        assert.deepEqual(messages, ['Planning'], 'the title is not repeated as a message');
        assert.equal(forwarded.length, 1, 'the index\'s progress is VS Code\'s to show');
        assert.deepEqual(run.begun(), [run.token]);
        router.route(run.token, { kind: 'end' }, next);
        assert.deepEqual(run.begun(), []);
        run.dispose();
    });
});

describe('workflow messages', () => {
    // notes.workflow as the server writes it (a WorkflowResult), with these iterations
    const history = (...iterations: Record<string, unknown>[]) => ({ status: 'SUCCESS', content: 'ok', iterations: iterations.map((iteration, index) => ({ iteration: index + 1, prompt: 'p', files: [], ...iteration })) });
    const failed = (reason: string, notes: Record<string, unknown> = {}) =>
        result('FAILED', '', { error: { type: 'TASK_FAILURE', reason, message: `it ended: ${reason}` }, ...notes });
    it('a run that ended without reaching the goal says after how many iterations and what the tests said', () => {
        const red = history({ test: { command: 'pytest', scope: 'whole', exit_code: 1, stdout: 'FAILED t.py::x\n=== 1 failed in 0.1s ===\n', stderr: '', summary: '1 failed in 0.1s' } });
        const message = workflowMessage('Workflow', failed('max_retries_reached', { workflow: { ...red, status: 'FAILURE' } }));
        assert.equal(message.text, 'Workflow failed: it ended: max_retries_reached (after 1 iteration; the tests fail (pytest: 1 failed in 0.1s, exit 1)).');
        assert.equal(message.undoable, false);
    });
    it('the tests are told in the server\'s own wording when its answer carries one', () => {
        const red = history({ test: { command: 'pytest', scope: 'whole', exit_code: 1, summary: '1 failed in 0.1s', outcome: 'the tests fail (1 failed)' } });
        const message = workflowMessage('Workflow', failed('max_retries_reached', { workflow: { ...red, status: 'FAILURE' } }));
        assert.equal(message.text, 'Workflow failed: it ended: max_retries_reached (after 1 iteration; the tests fail (1 failed)).');
    });
    it('a cancelled run that changed nothing says only that', () => {
        assert.deepEqual(workflowMessage('Workflow', failed('cancelled')), { severity: 'warning', text: 'Workflow: cancelled.', changedFiles: [], undoable: false });
    });
    it('a goal reached without a test run or changes says so', () => {
        assert.equal(workflowMessage('Workflow', result('COMPLETE', 'ok', { workflow: history({}) })).text, 'Workflow: goal reached in 1 iteration. No file changed.');
    });
    it('reads no history from a WorkflowResult of another shape (a required field missing)', () => {
        const noContent: Record<string, unknown> = history({});
        delete noContent.content;
        assert.equal(workflowMessage('Workflow', result('COMPLETE', 'ok', { workflow: noContent })).text, 'Workflow: goal reached in 0 iterations. No file changed.');
    });
    it('shows the runner\'s last word as the server read it, and none when it sent none', () => {
        const run = (test: Record<string, unknown>) =>
            workflowMessage('Workflow', result('COMPLETE', 'ok', { workflow: history({ test: { command: 'python -m unittest', scope: 'whole', exit_code: 0, ...test } }) })).text;
        assert.match(run({ stdout: '', stderr: 'Ran 4 tests\n\nOK\n', summary: 'OK' }), /the tests pass \(python -m unittest: OK\)/);
        assert.match(run({ stdout: 'ignored by the client', stderr: '' }), /the tests pass \(python -m unittest\)/);
    });
});

describe('server log levels', () => {
    it('reads Python logging\'s level and keeps a traceback at its record\'s level', () => {
        assert.deepEqual(parseServerLine('2026-11-23 21:05:53,123 INFO pygls.server: Server shutting down', 'error'), { level: 'info', text: 'pygls.server: Server shutting down' });
        assert.deepEqual(parseServerLine('2026-11-23 21:05:53,123 CRITICAL x: y', 'info'), { level: 'error', text: 'x: y' });
        assert.deepEqual(parseServerLine('  File "a.py", line 3', 'error'), { level: 'error', text: '  File "a.py", line 3' });
        assert.equal(parseServerLine('Traceback (most recent call last):', 'info').level, 'error');
        assert.equal(parseServerLine('litellm says hi', 'info').level, 'info');
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
        const withMatches = result('COMPLETE', '[]', { matches: [{ id: 'a.py', content: 'x = 1', source_path: 'a.py', relevance_score: 0.9 }, { id: 'b.py', source_path: 'b.py' }, 'junk'] });
        assert.deepEqual(contextMatches(withMatches), [{ path: 'a.py', score: 0.9 }]);
        assert.deepEqual(contextMatches(result('COMPLETE', '[]', { file_paths: ['b.py', 3] })), [{ path: 'b.py' }]);
    });
});

describe('reading the server\'s JSON (wire.ts)', () => {
    interface Shape { name: string; size?: number; tags?: string[] }
    const decode = object<Shape>({ name: required(str), size: optional(num), tags: optional(list(str)) });
    it('reads an object of the shape, leaving out absent, null and wrongly typed optional fields', () => {
        assert.deepEqual(decode({ name: 'a', size: 2, tags: ['x', 3, 'y'], extra: true }), { name: 'a', size: 2, tags: ['x', 'y'] });
        assert.deepEqual(decode({ name: 'a', size: null, tags: 'x' }), { name: 'a' });
    });
    it('refuses an object without a required field, or of the wrong type', () => {
        assert.equal(decode({ size: 2 }), undefined);
        assert.equal(decode({ name: null }), undefined);
        assert.equal(decode({ name: 7 }), undefined);
        assert.equal(decode(['a']), undefined);
    });
    it('reads a list of lists as lists (a SkippedFile\'s [first, last] line ranges), each inner list kept whole', () => {
        assert.deepEqual(list(list(num))([[3, 5], [9, 9], 'x', [1, 'y']]), [[3, 5], [9, 9], [1]]);
    });
    it('says which fields are required, as the protocol test compares them with the server\'s schemas', () => {
        assert.deepEqual(presences(RESULT_MODELS.RunFileDiff), { path: 'required', before: 'optional', after: 'optional', existed_before: 'required', exists_after: 'required', binary: 'optional' });
    });
});

describe('diff → content before the edit', () => {
    // A run's diff as the server writes it (orchestrator.changes() and an edit alike): the output of
    // aider_mcp.snapshots.unified_diff for each file, joined, pasted as it came. Made with
    //   PYTHONPATH=server python -c 'from aider_mcp.snapshots import unified_diff; print(unified_diff(...) + …, end="")'
    // from CALC_BEFORE → CALC_AFTER, a new pkg/new.py, schema.sql's first line `-- tables` → `++ tables`,
    // old.py deleted, notes.txt `old` → `new` without a newline at the end.
    const CALC_BEFORE = 'def f0():\n    return 0\n\n\ndef f1():\n    return 1\n\n\ndef f2():\n    return 2\n\n\ndef f3():\n    return 3\n\n\n';
    const CALC_AFTER = CALC_BEFORE.replace('return 0', 'return 0 + 0').replace('return 3', 'return 3 + 0');
    const runDiff = [
        'diff --git a/pkg/calc.py b/pkg/calc.py',
        '--- a/pkg/calc.py',
        '+++ b/pkg/calc.py',
        '@@ -1,5 +1,5 @@',
        ' def f0():',
        '-    return 0',
        '+    return 0 + 0',
        ' ',
        ' ',
        ' def f1():',
        '@@ -11,6 +11,6 @@',
        ' ',
        ' ',
        ' def f3():',
        '-    return 3',
        '+    return 3 + 0',
        ' ',
        ' ',
        'diff --git a/pkg/new.py b/pkg/new.py',
        'new file mode 100644',
        '--- /dev/null',
        '+++ b/pkg/new.py',
        '@@ -0,0 +1 @@',
        '+x = 1',
        'diff --git a/schema.sql b/schema.sql',
        '--- a/schema.sql',
        '+++ b/schema.sql',
        '@@ -1,2 +1,2 @@',
        '--- tables',
        '+++ tables',
        ' create table t (id int);',
        'diff --git a/old.py b/old.py',
        'deleted file mode 100644',
        '--- a/old.py',
        '+++ /dev/null',
        '@@ -1 +0,0 @@',
        '-y = 2',
        'diff --git a/notes.txt b/notes.txt',
        '--- a/notes.txt',
        '+++ b/notes.txt',
        '@@ -1 +1 @@',
        '-old',
        '\\ No newline at end of file',
        '+new',
        '\\ No newline at end of file',
        '',
    ].join('\n');
    const sections = splitDiff(runDiff);
    const section = (name: string): string => sections.get(name) ?? assert.fail(`no section for ${name}`);

    it('splits a multi-file diff by path', () => {
        assert.deepEqual([...sections.keys()], ['pkg/calc.py', 'pkg/new.py', 'schema.sql', 'old.py', 'notes.txt']);
        assert.ok(section('pkg/calc.py').startsWith('diff --git a/pkg/calc.py b/pkg/calc.py\n'));
    });
    it('rebuilds the old content from the new one, hunk by hunk', () => {
        assert.equal(contentBefore(CALC_AFTER, section('pkg/calc.py')), CALC_BEFORE);
    });
    it('gives an empty before for a new file', () => {
        assert.equal(contentBefore('x = 1\n', section('pkg/new.py')), '');
    });
    it('gives the old content of a deleted file', () => {
        assert.equal(contentBefore('', section('old.py')), 'y = 2\n');
    });
    it('takes removed or added lines that look like ---/+++ headers as content', () => {
        assert.equal(contentBefore('++ tables\ncreate table t (id int);\n', section('schema.sql')), '-- tables\ncreate table t (id int);\n');
    });
    it('handles a missing newline at the end of the file', () => {
        assert.equal(contentBefore('new', section('notes.txt')), 'old');
    });
    it('refuses when the file changed since the edit', () => {
        assert.equal(contentBefore('something else\n', section('pkg/calc.py')), undefined);
        assert.equal(contentBefore(CALC_AFTER.replace('return 3 + 0', 'return 3 + 1'), section('pkg/calc.py')), undefined);
    });
    it('refuses a section without hunks (a binary or large file)', () => {
        const binary = splitDiff('diff --git a/logo.png b/logo.png\nBinary files differ\n').get('logo.png');
        assert.equal(binary, 'diff --git a/logo.png b/logo.png\nBinary files differ\n');
        assert.equal(contentBefore('anything', binary), undefined);
    });

    // Plain `git diff` output (git 2.39, `git diff --cached` after `git add -A`), pasted as it came:
    // `diff --git` headers, `index` lines, `new file mode` (with no hunk for an empty file).
    const gitDiff = [
        'diff --git a/empty.py b/empty.py',
        'new file mode 100644',
        'index 0000000..e69de29',
        'diff --git a/new.py b/new.py',
        'new file mode 100644',
        'index 0000000..7d4290a',
        '--- /dev/null',
        '+++ b/new.py',
        '@@ -0,0 +1 @@',
        '+x = 1',
        'diff --git a/old.py b/old.py',
        'deleted file mode 100644',
        'index 47643d4..0000000',
        '--- a/old.py',
        '+++ /dev/null',
        '@@ -1 +0,0 @@',
        '-y = 2',
        'diff --git a/pkg/calc.py b/pkg/calc.py',
        'index 4693ad3..bd9ca2a 100644',
        '--- a/pkg/calc.py',
        '+++ b/pkg/calc.py',
        '@@ -1,2 +1,2 @@',
        ' def add(a, b):',
        '-    return a + b',
        '+    return a + b + 0',
        '',
    ].join('\n');
    it('reads plain `git diff` output the same way', () => {
        const git = splitDiff(gitDiff);
        assert.deepEqual([...git.keys()], ['empty.py', 'new.py', 'old.py', 'pkg/calc.py']);
        assert.equal(contentBefore('', git.get('empty.py') ?? ''), '');
        assert.equal(contentBefore('x = 1\n', git.get('new.py') ?? ''), '');
        assert.equal(contentBefore('', git.get('old.py') ?? ''), 'y = 2\n');
        assert.equal(contentBefore('def add(a, b):\n    return a + b + 0\n', git.get('pkg/calc.py') ?? ''), 'def add(a, b):\n    return a + b\n');
    });
});

describe('the run history → the Runs view', () => {
    const now = Date.UTC(2026, 10, 25, 21, 30) ;
    // a history.list answer as the server writes it (results.py history_result)
    const answer: TaskResult = {
        status: 'COMPLETE',
        content: '',
        notes: {
            runs: [
                {
                    id: 'r2', created: now / 1000 - 30, kind: 'workflow', label: 'make the parser tests pass', goal: 'make the parser tests pass',
                    status: 'FAILURE', iterations: 3, files: ['parser.py'], spend: '9000 tokens · cost n/a (planning/analysis: …)', duration_s: 95.4, undone: null,
                },
                { id: 'r1', created: now / 1000 - 3 * 86400, kind: 'edit', label: 'rename x\nto y', goal: null, status: null, iterations: null, files: [], spend: null, duration_s: null, undone: now / 1000 - 60 },
                { id: 7, created: 'yesterday' },
                'not a run',
            ],
        },
    };

    it('reads the records field by field, leaving out what is not a run', () => {
        const runs = runRecords(answer);
        assert.deepEqual(runs.map((run) => run.id), ['r2', 'r1']);
        // a server that says no state: a run on the user's files, applied as it edited
        const defaults = { state: 'applied', isolation: 'none', findings: [], won: false };
        assert.deepEqual(runs[1], { id: 'r1', created: now / 1000 - 3 * 86400, kind: 'edit', label: 'rename x\nto y', files: [], steps: [], undone: now / 1000 - 60, ...defaults });
        assert.deepEqual(runRecords({ status: 'COMPLETE', content: 'No runs yet.', notes: { runs: [] } }), []);
    });

    it('says how each run ended, in how many iterations, what it spent and when', () => {
        const [failed, undone] = runRecords(answer);
        assert.ok(failed && undone);
        assert.equal(runDescription(failed, now), 'failed · 3 iterations · 9000 tokens · cost n/a · just now');
        assert.equal(runDescription(undone, now), 'undone · unfinished · 3 d ago');
        assert.deepEqual([runState(failed), runState(undone)], ['failed', 'undone']);
        assert.equal(shortLabel(undone), 'rename x');
        assert.equal(shortLabel({ ...failed, label: 'y'.repeat(100) }, 10), `${'y'.repeat(10)}…`);
        assert.equal(ago(now / 1000 - 90 * 60, now), '2 h ago');
        const tooltip = runTooltip(failed);
        assert.match(tooltip, /^make the parser tests pass\n\nWorkflow run, \d{4}-\d\d-\d\d \d\d:\d\d: failed\n3 iterations\nChanged parser\.py\nSpent 9000 tokens/);
        assert.match(tooltip, /Took 95 s\nRun id r2$/);
        // what the run went on without is said on the run
        const noted = runRecords({ status: 'COMPLETE', content: '', notes: { runs: [{ id: 'r3', created: now / 1000, kind: 'workflow', label: 'x', files: [], note: 'No plan was made: planning failed' }] } });
        const [first] = noted;
        assert.ok(first);
        assert.match(runTooltip(first), /\nNo plan was made: planning failed\n/);
    });

    // a workflow run's steps as the server writes them (workflow/steps.py): red, then a timeout, then an edit that changed nothing
    const steps = [
        {
            iteration: 1,
            edit: { changed_files: ['parser.py'], created_files: ['lexer.py'], error: null },
            test: {
                command: 'pytest -q', scope: 'whole', exit_code: 1, timed_out: false, summary: '8 failed, 2 passed in 0.31s', failed: 8,
                failing: ['tests/test_parse.py::test_0', 'tests/test_parse.py::test_1', 'tests/test_parse.py::test_2', 'tests/test_parse.py::test_3', 'tests/test_parse.py::test_4'],
            },
            analysis: { verdict: 'RETRY', message: 'The lexer drops the last token.\nSee lexer.next.', overruled: null },
        },
        { iteration: 2, edit: { changed_files: ['lexer.py'], created_files: [] }, test: { command: 'pytest -q', scope: 'failing', exit_code: null, timed_out: true, summary: '', failed: null, failing: [] }, analysis: null },
        { iteration: 3, edit: { changed_files: [], created_files: [], error: 'Aider changed no file' }, test: null, analysis: { verdict: 'FAILURE', message: 'no way forward', overruled: null } },
        { iteration: 4, edit: null, test: null, analysis: null },
        { iteration: 'five' },
    ];

    it('reads a workflow run\'s iterations field by field: the edit, the test run, the analysis', () => {
        const [run] = runRecords({ status: 'COMPLETE', content: '', notes: { runs: [{ id: 'r3', created: now / 1000, kind: 'workflow', label: 'x', files: ['parser.py'], steps }] } });
        assert.deepEqual(run?.steps.map((step) => step.iteration), [1, 2, 3, 4]);
        const [red, timedOut, nothing, cancelled] = run?.steps ?? [];
        assert.ok(red && timedOut && nothing && cancelled);
        assert.deepEqual(red.edit, { changedFiles: ['parser.py'], createdFiles: ['lexer.py'] });
        assert.deepEqual(red.analysis, { verdict: 'RETRY', message: 'The lexer drops the last token.\nSee lexer.next.' });
        assert.equal(red.test?.failed, 8);
        assert.deepEqual([timedOut.test?.exitCode, timedOut.test?.timedOut, timedOut.analysis], [undefined, true, undefined]);
        assert.deepEqual(cancelled, { iteration: 4, notes: [] });
    });

    it('says what each iteration did in a line, and its test run and analysis in full', () => {
        const [run] = runRecords({ status: 'COMPLETE', content: '', notes: { runs: [{ id: 'r3', created: now / 1000, kind: 'workflow', label: 'x', files: [], steps }] } });
        const [red, timedOut, nothing, cancelled] = run?.steps ?? [];
        assert.ok(red?.test && red.analysis && timedOut?.test && nothing && cancelled);
        assert.equal(stepDescription(red), 'changed parser.py, created lexer.py · tests fail (8 failed) · analysis: RETRY');
        assert.equal(stepDescription(timedOut), 'changed lexer.py · tests timed out');
        assert.equal(stepDescription(nothing), 'changed nothing · no test run · analysis: FAILURE');
        assert.equal(stepDescription(cancelled), 'the edit did not finish · no test run');
        assert.deepEqual([red, timedOut, nothing, cancelled].map(stepState), ['failed', 'failed', 'failed', 'unfinished']);
        assert.equal(stepTooltip(nothing), 'Iteration 3\nEdit: changed nothing\nAider changed no file\nNo test run\nAnalysis: FAILURE');
        assert.equal(testLabel(red.test), 'Tests: 8 failed');
        assert.equal(testLabel(timedOut.test), 'Tests timed out');
        assert.equal(testLabel({ ...red.test, exitCode: 0, failed: 0, failing: [] }), 'Tests pass');
        assert.equal(testLabel({ ...red.test, failed: undefined, failing: [], exitCode: 2 }), 'Tests fail (exit code 2)');
        // the server's one wording, where it sends it, is shown as it is
        const worded = { ...red, test: { ...red.test, outcome: 'the tests fail (8 failed)' } };
        assert.equal(stepDescription(worded), 'changed parser.py, created lexer.py · the tests fail (8 failed) · analysis: RETRY');
        const tooltip = testTooltip(red.test);
        assert.match(tooltip, /^\$ pytest -q\nThe whole suite\nExit code 1\n8 failed, 2 passed in 0\.31s\n\nFailing:\n {2}tests\/test_parse\.py::test_0\n/);
        assert.match(tooltip, /test_4\n {2}… and 3 more$/);
        assert.match(testTooltip(timedOut.test), /^\$ pytest -q\nOnly the tests that failed before\nTimed out$/);
        assert.equal(analysisTooltip(red.analysis), 'Analysis: RETRY\n\nThe lexer drops the last token.\nSee lexer.next.');
    });

    it('reads a run\'s files: text before and after, created, deleted, binary', () => {
        const files = runFileSides({
            status: 'COMPLETE',
            content: '',
            notes: {
                run: { id: 'r1', created: now / 1000, kind: 'edit', label: 'x' },
                files: [
                    { path: 'new.py', before: null, after: 'x = 1\n', existed_before: false, exists_after: true, binary: false },
                    { path: 'logo.png', before: null, after: null, existed_before: true, exists_after: true, binary: true },
                    { before: 'no path' },
                ],
            },
        });
        assert.deepEqual(files, [
            { path: 'new.py', after: 'x = 1\n', existedBefore: false, existsAfter: true, binary: false },
            { path: 'logo.png', existedBefore: true, existsAfter: true, binary: true },
        ]);
    });
});

describe('package.json', () => {
    const manifest = JSON.parse(fs.readFileSync(path.resolve(__dirname, '..', '..', 'package.json'), 'utf8')) as {
        contributes: {
            commands: { command: string; category: string }[];
            configuration: { properties: Record<string, { default?: unknown }> };
            views: Record<string, { id: string }[]>;
            viewsContainers: { activitybar: { id: string; icon: string }[] };
            viewsWelcome: { view: string; contents: string; when: string }[];
            menus: Record<string, { command: string; when?: string }[]>;
        };
    };
    it('contributes every server setting plus server.path and server.python, and no apiKey', () => {
        const expected = [...SERVER_SETTING_KEYS.map((key) => `aiderLsp.${key}`), 'aiderLsp.server.path', 'aiderLsp.server.python'];
        assert.deepEqual(Object.keys(manifest.contributes.configuration.properties), expected);
    });
    it('reads server.path and server.python wherever users put them, remote windows included (not machine scope)', () => {
        const properties = manifest.contributes.configuration.properties as Record<string, { scope?: string }>;
        for (const key of ['aiderLsp.server.path', 'aiderLsp.server.python']) {
            assert.equal(properties[key]?.scope, 'window', key);
        }
    });
    it('puts the Runs view in an Aider container whose icon ships, its welcome and menus naming client commands', () => {
        const { views, viewsContainers, viewsWelcome, menus } = manifest.contributes;
        const container = viewsContainers.activitybar.find((item) => item.id === 'aider');
        assert.ok(container && fs.existsSync(path.resolve(__dirname, '..', '..', container.icon)), 'the activity bar icon exists');
        assert.ok(fs.readFileSync(path.resolve(__dirname, '..', '..', '.vscodeignore'), 'utf8').includes('!resources/**'), 'and is packaged');
        assert.deepEqual(views.aider?.map((view) => view.id), ['aider-lsp.runs']);
        const links = viewsWelcome.flatMap((item) => [...item.contents.matchAll(/\(command:([^)]+)\)/g)].map((found) => found[1]));
        assert.ok(viewsWelcome.some((item) => item.when === 'aiderLsp.runs == empty' && item.contents.startsWith('No runs yet')));
        assert.ok(links.includes(ClientCommand.runWorkflow) && links.includes(ClientCommand.edit));
        const clientIds = new Set<string>(Object.values(ClientCommand));
        for (const id of [...links, ...(menus['view/item/context'] ?? []).map((item) => item.command)]) {
            assert.ok(id !== undefined && clientIds.has(id), `${id ?? '(none)'} is a client command`);
        }
        // the items' actions follow their contextValue (ui/runsView.ts): no Undo on an undone run, Run Again on workflows only
        const when = (command: string): string[] => (menus['view/item/context'] ?? []).filter((item) => item.command === command).map((item) => item.when ?? '');
        const matches = (clause: string, value: string): boolean => new RegExp(/=~ \/(.+)\/$/.exec(clause)?.[1] ?? '^$').test(value);
        for (const clause of when(ClientCommand.undoRun)) {
            const items = ['aiderRun.workflow', 'aiderRun.edit', 'aiderRun.edit.undone', 'aiderRunFile', 'aiderRunIteration', 'aiderRunTests', 'aiderRunAnalysis'];
            assert.deepEqual(items.map((value) => matches(clause, value)), [true, true, false, false, false, false, false]);
        }
        for (const clause of when(ClientCommand.runAgain)) {
            assert.deepEqual(['aiderRun.workflow', 'aiderRun.workflow.undone', 'aiderRun.edit'].map((value) => matches(clause, value)), [true, true, false]);
        }
    });

    it('lists every client command under the category Aider', () => {
        const listed = manifest.contributes.commands.filter((command) => command.category === 'Aider').map((command) => command.command);
        assert.deepEqual(listed.sort(), Object.values(ClientCommand).sort());
    });
});

describe('Aider models for the picker', () => {
    it('lists each model once, sorted, with its provider (no prefix: OpenAI)', () => {
        const result = { status: 'COMPLETE' as const, content: '', notes: {}, parsedContent: ['gpt-4o', 'anthropic/claude-3', 'gpt-4o', 7] };
        assert.deepEqual(modelChoices(result), [
            { name: 'anthropic/claude-3', provider: 'anthropic' },
            { name: 'gpt-4o', provider: 'openai' },
        ]);
        assert.deepEqual(modelChoices({ status: 'COMPLETE', content: 'ollama/qwen\n\n', notes: {} }), [{ name: 'ollama/qwen', provider: 'ollama' }]);
    });

    it('names the missing key variable, unless it is set, a key is stored, or the provider needs none', () => {
        assert.equal(missingKey('anthropic', {}, false), 'ANTHROPIC_API_KEY');
        assert.equal(missingKey('anthropic', { ANTHROPIC_API_KEY: 'k' }, false), undefined);
        assert.equal(missingKey('gemini', { GOOGLE_API_KEY: 'k' }, false), undefined);
        assert.equal(missingKey('anthropic', {}, true), undefined);
        assert.equal(missingKey('ollama', {}, false), undefined);
    });
});

describe('a model of Aider\'s list as the planning model', () => {
    it('is spelled provider:name, with pydantic-ai\'s provider names; no prefix is OpenAI', () => {
        assert.equal(planningModelOf('anthropic/claude-sonnet-4-5'), 'anthropic:claude-sonnet-4-5');
        assert.equal(planningModelOf('gpt-4.1'), 'openai:gpt-4.1');
        assert.equal(planningModelOf('gemini/gemini-2.5-pro'), 'google-gla:gemini-2.5-pro');
        assert.equal(planningModelOf('ollama_chat/qwen2.5-coder'), 'ollama:qwen2.5-coder');
        assert.equal(planningModelOf('openrouter/meta-llama/llama-3-70b'), 'openrouter:meta-llama/llama-3-70b');
    });
    it('is none for a provider the planner does not speak to', () => {
        assert.equal(planningModelOf('bedrock/anthropic.claude-v2'), undefined);
    });
});

describe('the status item\'s summary of a folder', () => {
    it('shows the folder (several open) and Aider\'s model; the tooltip both models and the test command', () => {
        const summary = statusSummary({ folder: 'lib', aiderModel: 'openai/gpt-4.1', model: 'anthropic:claude-sonnet-4-5', testCommand: 'pytest -q' });
        assert.equal(summary.label, 'lib · openai/gpt-4.1');
        assert.deepEqual(summary.lines, [
            'Folder: lib',
            'Aider model: openai/gpt-4.1 (Aider: Select Model… to change)',
            'Planning model: anthropic:claude-sonnet-4-5',
            'Test command: pytest -q',
        ]);
    });
    it('without aiderModel, says Aider\'s comes from the planning model; nothing set, nothing beside the state', () => {
        const derived = statusSummary({ model: 'openai:gpt-4.1', testCommand: '' });
        assert.equal(derived.label, 'openai:gpt-4.1');
        assert.ok(derived.lines.includes('Aider model: from openai:gpt-4.1 (Aider: Select Model… to change)'));
        assert.ok(derived.lines.includes('Test command: the one aider-lsp detects'));
        assert.equal(statusSummary({}).label, undefined);
    });
});
