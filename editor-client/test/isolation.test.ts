/** Isolated runs, the pure parts: the answers read, the Runs view's wording and actions, the messages and the question. */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import {
    conflictQuestion,
    isolatedAnswer,
    isolatedRunMessage,
    isolatedRunsLabel,
    isolatedRunsTooltip,
    lineRanges,
    runActionMessage,
} from '../src/common/isolation';
import { findingLabel, findingTooltip, hasDiff, runContextValue, runDescription, runRecords, runState, runTooltip, type RunRecord } from '../src/common/runs';
import { ClientCommand, type TaskResult } from '../src/protocol';
import { runAction } from '../src/protocolResults';

const now = Date.UTC(2026, 10, 27, 15, 0);

function result(status: TaskResult['status'], content: string, notes: Record<string, unknown> = {}): TaskResult {
    return { status, content, notes };
}

/** One isolated run of a history.list answer as the server writes it (models/history.py RunRecord). */
function record(fields: Record<string, unknown>): RunRecord {
    const base = { id: 'r1', created: now / 1000 - 120, kind: 'workflow', label: 'fix average', goal: 'fix average', files: ['calculator.py'], isolation: 'worktree' };
    const [run] = runRecords(result('COMPLETE', '', { runs: [{ ...base, ...fields }] }));
    assert.ok(run, 'read as a run');
    return run;
}

describe('an isolated run in the history', () => {
    it('reads its state, isolation, branch and findings (their defaults filled in); a state it does not know is left out', () => {
        const run = record({
            state: 'ready',
            status: 'SUCCESS',
            branch: 'aider-lsp/run-r1',
            findings: [{ path: 'test_calc.py', line: 12, message: 'AssertionError: 1 != 2' }, { line: 3 }],
        });
        assert.equal(run.state, 'ready');
        assert.equal(run.isolation, 'worktree');
        assert.equal(run.branch, 'aider-lsp/run-r1');
        assert.deepEqual(run.findings, [{ path: 'test_calc.py', line: 12, column: 0, message: 'AssertionError: 1 != 2', severity: 'error', source: 'tests' }]);
        assert.equal(record({ state: 'paused' }).state, 'applied');
    });

    it('says where it stands first in its line, its icon and its tooltip following', () => {
        const running = record({ state: 'running', status: null });
        assert.equal(runDescription(running, now), 'running in a worktree · 2 min ago');
        const ready = record({ state: 'ready', status: 'SUCCESS', iterations: 2, branch: 'aider-lsp/run-r1' });
        assert.equal(runDescription(ready, now), 'ready to apply · goal reached · 2 iterations · 2 min ago');
        assert.match(runTooltip(ready), /\nReady in a worktree on branch aider-lsp\/run-r1: Apply lays its change on your files; Discard drops it; Keep as Branch commits it there\n/);
        const copy = record({ state: 'ready', status: 'FAILURE' });
        assert.match(runTooltip(copy), /\nReady in a copy of the folder: Apply lays its change on your files; Discard drops it\n/);
        assert.equal(runDescription(record({ state: 'kept', status: 'SUCCESS', branch: 'aider-lsp/run-r1' }), now), 'kept on branch aider-lsp/run-r1 · goal reached · 2 min ago');
        assert.equal(runDescription(record({ state: 'discarded', status: 'CANCELLED' }), now), 'discarded · cancelled · 2 min ago');
        // applied, it is an ordinary run of the history
        assert.equal(runDescription(record({ state: 'applied', status: 'SUCCESS' }), now), 'goal reached · 2 min ago');
        assert.deepEqual(
            ['running', 'ready', 'discarded', 'kept', 'applied', 'undone'].map((state) => runState(record({ state, status: 'SUCCESS' }))),
            ['running', 'ready', 'discarded', 'kept', 'passed', 'undone'],
        );
    });

    it('gives each state the contextValue its actions are chosen by; only a ready or finished run has a diff', () => {
        const value = (fields: Record<string, unknown>): string => runContextValue(record(fields));
        assert.equal(value({ state: 'running' }), 'aiderRun.workflow.running');
        assert.equal(value({ state: 'ready', branch: 'aider-lsp/run-r1' }), 'aiderRun.workflow.ready.git');
        assert.equal(value({ state: 'ready' }), 'aiderRun.workflow.ready', 'no git: no Keep as Branch');
        assert.equal(value({ state: 'discarded' }), 'aiderRun.workflow.discarded');
        assert.equal(value({ state: 'kept', branch: 'b' }), 'aiderRun.workflow.kept');
        assert.equal(value({ state: 'applied' }), 'aiderRun.workflow');
        assert.equal(value({ state: 'undone' }), 'aiderRun.workflow.undone');
        assert.equal(value({ state: 'applied', undone: now / 1000 }), 'aiderRun.workflow.undone');
        assert.deepEqual(['running', 'ready', 'discarded', 'kept', 'applied', 'undone'].map((state) => hasDiff(record({ state }))), [false, true, false, false, true, true]);
    });

    it('names a finding by its file and line, the whole message in its tooltip', () => {
        const [finding] = record({ findings: [{ path: 'test_calc.py', line: 12, column: 5, message: 'AssertionError\n1 != 2', severity: 'error', source: 'unittest' }] }).findings;
        assert.ok(finding);
        assert.equal(findingLabel(finding), 'test_calc.py:12');
        assert.equal(findingTooltip(finding), 'test_calc.py, line 12, column 5 (unittest, error)\n\nAssertionError\n1 != 2');
        assert.equal(findingLabel({ ...finding, line: 0 }), 'test_calc.py');
    });
});

describe('a workflow answer in a worktree', () => {
    const test = (exit: number, summary: string) => ({ command: 'python -m unittest', scope: 'whole', exit_code: exit, summary });
    const green = {
        workflow: { status: 'SUCCESS', content: 'done', iterations: [{ iteration: 1, prompt: 'p', files: [], test: test(1, 'FAILED (failures=1)') }, { iteration: 2, prompt: 'p', files: [], test: test(0, 'OK') }] },
        changed_files: ['calculator.py'],
        created_files: ['notes.md'],
        diff: 'D',
        checkpoint_id: null,
        run_id: 'r7',
        state: 'ready',
        isolation: 'worktree',
        findings: [],
    };

    it('is read by its notes: the run id, its state and its findings; a run in place has none', () => {
        assert.deepEqual(isolatedAnswer(result('COMPLETE', 'done', green)), { runId: 'r7', state: 'ready', findings: [] });
        assert.equal(isolatedAnswer(result('COMPLETE', 'done', { ...green, isolation: 'none' })), undefined);
        assert.equal(isolatedAnswer(result('COMPLETE', 'done', { changed_files: ['calculator.py'] })), undefined);
    });

    it('ready and green: “goal” is ready, how it ended and what it changed', () => {
        const answer = result('COMPLETE', 'done', green);
        const run = isolatedAnswer(answer);
        assert.ok(run);
        assert.deepEqual(isolatedRunMessage('Fix average\nand more', answer, run), {
            severity: 'info',
            text: '“Fix average” is ready: goal reached in 2 iterations; the tests pass (python -m unittest: OK). Changed calculator.py, notes.md.',
            ready: true,
        });
    });

    it('ready but the goal not reached: a warning that still offers the change', () => {
        const error = { type: 'TASK_FAILURE', reason: 'max_retries_reached', message: 'The tests still fail after 2 iterations' };
        const notes = { ...green, error, workflow: { ...green.workflow, status: 'FAILURE', iterations: [green.workflow.iterations[0]] } };
        const answer = result('FAILED', 'The tests still fail after 2 iterations', notes);
        const run = isolatedAnswer(answer);
        assert.ok(run);
        assert.deepEqual(isolatedRunMessage('Fix average', answer, run), {
            severity: 'warning',
            text: '“Fix average” is ready, its goal not reached after 1 iteration: The tests still fail after 2 iterations; the tests fail (python -m unittest: FAILED (failures=1), exit 1). Changed calculator.py, notes.md.',
            ready: true,
        });
    });

    it('discarded: cancelled, or it changed nothing; the user\'s files untouched either way', () => {
        const cancelled = result('FAILED', 'cancelled', { ...green, state: 'discarded', error: { reason: 'cancelled', message: 'the workflow was cancelled by the user' } });
        const run = isolatedAnswer(cancelled);
        assert.ok(run);
        assert.deepEqual(isolatedRunMessage('Fix average', cancelled, run), { severity: 'warning', text: '“Fix average”: cancelled. Your files are untouched.', ready: false });
        const nothing = result('FAILED', 'Aider changed no file', { ...green, state: 'discarded', error: { reason: 'tool_execution_error', message: 'Aider changed no file' } });
        assert.equal(isolatedRunMessage('Fix average', nothing, run).text, '“Fix average”: changed nothing to apply (Aider changed no file). Your files are untouched.');
    });
});

describe('Apply over the user\'s own changes', () => {
    it('words line ranges', () => {
        assert.equal(lineRanges([[3, 3]]), 'line 3');
        assert.equal(lineRanges([[3, 5]]), 'lines 3–5');
        assert.equal(lineRanges([[3, 5], [9, 9], [12, 14]]), 'lines 3–5, 9 and 12–14');
        assert.equal(lineRanges([]), '');
    });

    it('names each file and its lines, and what Apply Anyway and Open the Merge do', () => {
        const skipped = [
            { path: 'calculator.py', reason: 'you changed lines 3-5 since', kind: 'changed_since', lines: [[3, 5], [9, 9]] },
            { path: 'util.py', reason: 'unsaved', kind: 'unsaved' },
        ];
        assert.deepEqual(conflictQuestion('Fix average', skipped), {
            message: 'Aider: “Fix average” was not applied: your changes to calculator.py, util.py meet the run\'s. Nothing was written.',
            detail: [
                'calculator.py: you changed lines 3–5 and 9 too',
                'util.py: has unsaved changes in the editor',
                '',
                'Apply Anyway: the run\'s version of calculator.py, util.py replaces yours in each; Undo takes it back.',
                'Open the Merge: calculator.py beside the run\'s version, to take its change by hand.',
            ].join('\n'),
        });
        assert.equal(conflictQuestion('x', [{ path: 'a.py', reason: 'permission denied', kind: 'unwritable' }]), undefined, 'nothing the user can decide');
    });

    it('reads an action\'s notes, and tells what it did or why not', () => {
        const applied = result('COMPLETE', 'Applied “Fix average”: calculator.py', { run_id: 'r7', state: 'applied', written: ['calculator.py'], deleted: [], skipped: [], checkpoint_id: 'r7' });
        assert.deepEqual(runAction(applied), { run_id: 'r7', state: 'applied', written: ['calculator.py'], deleted: [], skipped: [], checkpoint_id: 'r7' });
        assert.deepEqual(runActionMessage('Apply', applied), { severity: 'info', text: 'Applied “Fix average”: calculator.py' });
        const kept = result('COMPLETE', '', { run_id: 'r7', state: 'kept', branch: 'aider-lsp/run-r7', commit: 'abc123' });
        assert.deepEqual(runActionMessage('Keep as Branch', kept), { severity: 'info', text: 'Keep as Branch: done on branch aider-lsp/run-r7.' });
        const refused = result('FAILED', '', { error: { reason: 'configuration_error', message: 'this folder has no git: there is no branch to keep' } });
        assert.deepEqual(runActionMessage('Keep as Branch', refused), { severity: 'error', text: 'Keep as Branch failed: this folder has no git: there is no branch to keep' });
    });
});

describe('the status item of the runs under way', () => {
    it('counts them, hidden at 0', () => {
        assert.deepEqual([0, 1, 2].map(isolatedRunsLabel), [undefined, '$(git-branch) 1 run', '$(git-branch) 2 runs']);
        assert.match(isolatedRunsTooltip(2), /^2 Aider workflow runs are under way, each in a worktree of its own/);
    });
});

describe('package.json for isolated runs', () => {
    const manifest = JSON.parse(fs.readFileSync(path.resolve(__dirname, '..', '..', 'package.json'), 'utf8')) as {
        contributes: {
            commands: { command: string; title: string }[];
            configuration: { properties: Record<string, { default?: unknown; enum?: string[]; minimum?: number; maximum?: number; markdownDescription?: string }> };
            menus: Record<string, { command: string; when?: string; group?: string }[]>;
        };
    };
    const items = manifest.contributes.menus['view/item/context'] ?? [];
    /** Whether the menus offer `command` on an item of `value`. */
    function offered(command: string, value: string): boolean {
        return items
            .filter((item) => item.command === command)
            .some((item) => {
                const when = item.when ?? '';
                const regex = /viewItem =~ \/(.+)\/$/.exec(when)?.[1];
                return regex !== undefined ? new RegExp(regex).test(value) : when.endsWith(`viewItem == ${value}`);
            });
    }

    it('offers each state its actions: Apply, Discard, Show Diff on a ready run, Keep as Branch with git, no Undo until applied', () => {
        const values = ['aiderRun.workflow.running', 'aiderRun.workflow.ready', 'aiderRun.workflow.ready.git', 'aiderRun.workflow.discarded', 'aiderRun.workflow.kept', 'aiderRun.workflow', 'aiderRun.workflow.undone'];
        const row = (command: string): boolean[] => values.map((value) => offered(command, value));
        assert.deepEqual(row(ClientCommand.applyRun), [false, true, true, false, false, false, false]);
        assert.deepEqual(row(ClientCommand.discardRun), [false, true, true, false, false, false, false]);
        assert.deepEqual(row(ClientCommand.keepRunBranch), [false, false, true, false, false, false, false]);
        assert.deepEqual(row(ClientCommand.showRunDiff), [false, true, true, false, false, true, true]);
        assert.deepEqual(row(ClientCommand.undoRun), [false, false, false, false, false, true, false]);
        assert.deepEqual(row(ClientCommand.runAgain), [true, true, true, true, true, true, true]);
        // a ready run's inline buttons: Apply first
        const inline = items.filter((item) => item.group?.startsWith('inline') && offered(item.command, 'aiderRun.workflow.ready.git'));
        assert.deepEqual(inline.sort((a, b) => (a.group ?? '').localeCompare(b.group ?? '')).map((item) => item.command), [ClientCommand.applyRun, ClientCommand.showRunDiff, ClientCommand.discardRun]);
    });

    it('puts "Run Workflow in a Worktree…" in the palette, and the run actions only on the view', () => {
        const titles = new Map(manifest.contributes.commands.map((command) => [command.command, command.title]));
        assert.equal(titles.get(ClientCommand.runWorkflowInWorktree), 'Run Workflow in a Worktree…');
        const hidden = (manifest.contributes.menus.commandPalette ?? []).filter((item) => item.when === 'false').map((item) => item.command);
        for (const id of [ClientCommand.applyRun, ClientCommand.discardRun, ClientCommand.keepRunBranch]) {
            assert.ok(hidden.includes(id), `${id} is not in the palette`);
        }
        assert.ok(!hidden.includes(ClientCommand.runWorkflowInWorktree));
    });

    it('has the settings isolation (none | worktree) and maxIsolatedRuns (1..16), each saying an Aider server runs per run', () => {
        const { properties } = manifest.contributes.configuration;
        const isolation = properties['aiderLsp.isolation'];
        const max = properties['aiderLsp.maxIsolatedRuns'];
        assert.deepEqual([isolation?.enum, isolation?.default], [['none', 'worktree'], 'none']);
        assert.deepEqual([max?.default, max?.minimum, max?.maximum], [3, 1, 16]);
        for (const setting of [isolation, max]) {
            assert.match(setting?.markdownDescription ?? '', /Aider server .*330 MB/);
        }
    });
});
