/** Two attempts of a group side by side, the pure parts: which attempts, their names, each file's two sides and title, the menus. */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import type { AttemptAnswer } from '../src/common/attempts';
import {
    attemptCompareValue,
    attemptPicks,
    cannotCompareText,
    comparableAttempts,
    comparedFiles,
    groupCompareValue,
    nothingToCompareText,
    type AttemptChange,
    type ComparedFile,
} from '../src/common/compareAttempts';
import { groupContextValue, type RunGroup } from '../src/common/runGroups';
import { runContextValue, runRecords, type RunFileSides, type RunRecord } from '../src/common/runs';
import { ClientCommand } from '../src/protocol';

const now = Date.UTC(2026, 11, 2, 10, 0);

/** A group's attempts as the history lists them (models/history.py RunRecord), oldest first. */
function attempts(records: Record<string, unknown>[]): RunRecord[] {
    const base = { kind: 'workflow', label: 'Fix average', goal: 'Fix average', files: ['calc.py'], isolation: 'worktree', group_id: 'group-g1', created: now / 1000 - 120 };
    return runRecords({ status: 'COMPLETE', content: '', notes: { runs: records.map((fields) => ({ ...base, ...fields })) } });
}

function group(records: Record<string, unknown>[]): RunGroup {
    return { groupId: 'group-g1', runs: attempts(records) };
}

/** A file of history.diff, read (common/runs.ts runFileSides): changed text on both sides unless told. */
function file(filePath: string, fields: Partial<RunFileSides> = {}): RunFileSides {
    return { path: filePath, before: 'old\n', after: 'new\n', existedBefore: true, existsAfter: true, binary: false, ...fields };
}

function change(name: string, files: RunFileSides[]): AttemptChange {
    return { name, files };
}

function titleOf(compared: ComparedFile | undefined): string | undefined {
    return compared === undefined || compared.binary ? undefined : compared.title;
}

describe('comparing two attempts: each file either changed', () => {
    it('a file both changed: each one\'s version', () => {
        const a = change('Attempt 1', [file('calc.py', { after: 'def add(a, b):\n    return a + b\n' })]);
        const b = change('Attempt 2', [file('calc.py', { after: 'def add(a, b):\n    return sum((a, b))\n' })]);
        assert.deepEqual(comparedFiles(a, b), [
            { path: 'calc.py', binary: false, left: 'def add(a, b):\n    return a + b\n', right: 'def add(a, b):\n    return sum((a, b))\n', title: 'calc.py (Attempt 1 ↔ Attempt 2)' },
        ]);
    });

    it('a file one changed: the other has it as they both started (the changer\'s before)', () => {
        const a = change('Attempt 1 (openai/gpt-4.1)', [file('calc.py', { before: 'v0\n', after: 'v1\n' })]);
        const b = change('Attempt 2 (anthropic/claude)', [file('util.py', { before: 'u0\n', after: 'u2\n' })]);
        assert.deepEqual(comparedFiles(a, b), [
            { path: 'calc.py', binary: false, left: 'v1\n', right: 'v0\n', title: 'calc.py (Attempt 1 (openai/gpt-4.1) ↔ Attempt 2 (anthropic/claude), unchanged by Attempt 2 (anthropic/claude))' },
            { path: 'util.py', binary: false, left: 'u0\n', right: 'u2\n', title: 'util.py (Attempt 1 (openai/gpt-4.1) ↔ Attempt 2 (anthropic/claude), unchanged by Attempt 1 (openai/gpt-4.1))' },
        ]);
    });

    it('a file neither changed is not listed; the files come sorted by path', () => {
        const a = change('Attempt 1', [file('src/z.py'), file('b.py')]);
        const b = change('Attempt 2', [file('a.py'), file('b.py', { after: 'other\n' })]);
        assert.deepEqual(comparedFiles(a, b).map((each) => each.path), ['a.py', 'b.py', 'src/z.py']);
    });

    it('neither changed a file: nothing to compare', () => {
        assert.deepEqual(comparedFiles(change('Attempt 1', []), change('Attempt 2', [])), []);
        assert.equal(nothingToCompareText('Attempt 1', 'Attempt 2'), 'Attempt 1 and Attempt 2 changed no file: nothing to compare.');
    });

    it('a file one created is empty on the other\'s side, "not in" it', () => {
        const a = change('Attempt 1', [file('new.py', { before: undefined, after: 'x = 1\n', existedBefore: false })]);
        const b = change('Attempt 2', []);
        assert.deepEqual(comparedFiles(a, b), [{ path: 'new.py', binary: false, left: 'x = 1\n', right: '', title: 'new.py (Attempt 1 ↔ Attempt 2, not in Attempt 2)' }]);
        const both = change('Attempt 2', [file('new.py', { before: undefined, after: 'x = 2\n', existedBefore: false })]);
        assert.equal(titleOf(comparedFiles(a, both)[0]), 'new.py (Attempt 1 ↔ Attempt 2)', 'created by both, differently');
    });

    it('a file one deleted is empty on its side; deleted by both, said so', () => {
        const a = change('Attempt 1', []);
        const b = change('Attempt 2', [file('old.py', { before: 'gone\n', after: undefined, existsAfter: false })]);
        assert.deepEqual(comparedFiles(a, b), [{ path: 'old.py', binary: false, left: 'gone\n', right: '', title: 'old.py (Attempt 1 ↔ Attempt 2, unchanged by Attempt 1, not in Attempt 2)' }]);
        const deleted = change('Attempt 1', [file('old.py', { before: 'gone\n', after: undefined, existsAfter: false })]);
        assert.deepEqual(comparedFiles(deleted, b), [{ path: 'old.py', binary: false, left: '', right: '', title: 'old.py (Attempt 1 ↔ Attempt 2, deleted by both)' }]);
    });

    it('the same change in both: said in the title', () => {
        const same = [file('calc.py', { after: 'same\n' })];
        assert.equal(titleOf(comparedFiles(change('Attempt 1', same), change('Attempt 2', same))[0]), 'calc.py (Attempt 1 ↔ Attempt 2, the same in both)');
    });

    it('a binary file, on either side or as the base of the side that did not change it: no sides', () => {
        const logo = file('logo.png', { before: undefined, after: undefined, binary: true });
        const a = change('Attempt 1', [logo, file('calc.py')]);
        const b = change('Attempt 2', [file('logo.png', { after: 'now text\n' })]);
        assert.deepEqual(comparedFiles(a, b), [
            { path: 'calc.py', binary: false, left: 'new\n', right: 'old\n', title: 'calc.py (Attempt 1 ↔ Attempt 2, unchanged by Attempt 2)' },
            { path: 'logo.png', binary: true },
        ]);
        assert.deepEqual(comparedFiles(change('Attempt 1', []), change('Attempt 2', [logo])), [{ path: 'logo.png', binary: true }], 'the other\'s side is its binary base');
    });
});

describe('the attempts that can be compared', () => {
    const runs: Record<string, unknown>[] = [
        { id: 'a1', state: 'ready', status: 'FAILURE', attempt: 1, aider_model: 'openai/gpt-4.1' },
        { id: 'a2', state: 'ready', status: 'SUCCESS', won: true },
        { id: 'a3', state: 'discarded', status: 'CANCELLED' },
        { id: 'a4', state: 'applied', status: 'SUCCESS', files: [] },
        { id: 'a5', state: 'running' },
        { id: 'a6', state: 'kept', status: 'SUCCESS', branch: 'aider-lsp/a6' },
    ];

    it('are those with a change to show (ready, applied, undone), named by their record, this window\'s answer, else their place', () => {
        const known = new Map<string, AttemptAnswer>([['a2', { runId: 'a2', number: 2, aiderModel: 'anthropic/claude', planned: false, state: 'ready', green: true, tests: '', linesChanged: 1, tokens: 0, cost: 0, seconds: 0 }]]);
        const named = comparableAttempts(group(runs), (runId) => known.get(runId));
        assert.deepEqual(named.map((each) => [each.run.id, each.name]), [['a1', 'Attempt 1 (openai/gpt-4.1)'], ['a2', 'Attempt 2 (anthropic/claude)'], ['a4', 'Attempt 4']]);
        assert.deepEqual(comparableAttempts(group(runs)).map((each) => each.name), ['Attempt 1 (openai/gpt-4.1)', 'Attempt 2', 'Attempt 4']);
    });

    it('the quick pick shows each one\'s name, where it stands and its files', () => {
        const picks = attemptPicks(comparableAttempts(group(runs)), now);
        assert.deepEqual(picks.map((pick) => [pick.label, pick.description.split(' · ')[0], pick.detail]), [
            ['Attempt 1 (openai/gpt-4.1)', 'ready to apply', 'Changed calc.py'],
            ['Attempt 2', 'winner', 'Changed calc.py'],
            ['Attempt 4', 'goal reached', 'Changed no file'],
        ]);
        assert.equal(picks[1]?.attempt.run.id, 'a2');
    });

    it('mark a group with two of them and each of those attempts; the others not', () => {
        const two = group(runs);
        assert.equal(groupCompareValue(groupContextValue(two), two), 'aiderRunGroup.winner.compare');
        const value = (id: string): string | undefined => {
            const run = two.runs.find((each) => each.id === id);
            return run === undefined ? undefined : attemptCompareValue(runContextValue(run), run, two);
        };
        assert.deepEqual(['a1', 'a2', 'a3', 'a4', 'a5'].map(value), [
            'aiderRun.workflow.ready.compare',
            'aiderRun.workflow.ready.compare',
            'aiderRun.workflow.discarded',
            'aiderRun.workflow.compare',
            'aiderRun.workflow.running',
        ]);
        const settled = group([{ id: 'b1', state: 'applied', status: 'SUCCESS', won: true }, { id: 'b2', state: 'discarded', status: 'FAILURE' }]);
        const [applied] = settled.runs;
        assert.ok(applied);
        assert.equal(groupCompareValue(groupContextValue(settled), settled), 'aiderRunGroup', 'one attempt left with a change: nothing to compare');
        assert.equal(attemptCompareValue(runContextValue(applied), applied, settled), 'aiderRun.workflow');
        assert.equal(cannotCompareText('“Fix average”'), 'Fewer than two attempts of “Fix average” have a change to show (a running, discarded or kept attempt has none): nothing to compare.');
    });
});

describe('package.json for Compare', () => {
    const manifest = JSON.parse(fs.readFileSync(path.resolve(__dirname, '..', '..', 'package.json'), 'utf8')) as {
        contributes: { commands: { command: string; title: string }[]; menus: Record<string, { command: string; when?: string; group?: string }[]> };
    };
    const items = manifest.contributes.menus['view/item/context'] ?? [];
    function offered(command: string, value: string, inline = false): boolean {
        return items
            .filter((item) => item.command === command && (item.group?.startsWith('inline') ?? false) === inline)
            .some((item) => {
                const when = item.when ?? '';
                const regex = /viewItem =~ \/(.+)\/$/.exec(when)?.[1];
                return regex !== undefined ? new RegExp(regex).test(value) : when.endsWith(`viewItem == ${value}`);
            });
    }

    it('names the commands, not in the palette', () => {
        const titles = new Map(manifest.contributes.commands.map((command) => [command.command, command.title]));
        assert.equal(titles.get(ClientCommand.compareAttempt), 'Compare with Another Attempt…');
        assert.equal(titles.get(ClientCommand.compareAttempts), 'Compare Attempts…');
        const hidden = (manifest.contributes.menus.commandPalette ?? []).filter((item) => item.when === 'false').map((item) => item.command);
        assert.ok(hidden.includes(ClientCommand.compareAttempt) && hidden.includes(ClientCommand.compareAttempts));
    });

    it('offers Compare on a marked attempt (its menu) and a marked group (its menu and inline), nowhere else', () => {
        const values = ['aiderRun.workflow.ready.git.compare', 'aiderRun.workflow.compare', 'aiderRun.workflow.undone.compare', 'aiderRun.workflow.ready.git', 'aiderRun.workflow', 'aiderRunGroup.winner.compare', 'aiderRunGroup.running.compare', 'aiderRunGroup.compare', 'aiderRunGroup.winner', 'aiderRunFile'];
        assert.deepEqual(values.map((value) => offered(ClientCommand.compareAttempt, value)), [true, true, true, false, false, false, false, false, false, false]);
        assert.deepEqual(values.map((value) => offered(ClientCommand.compareAttempts, value)), [false, false, false, false, false, true, true, true, false, false]);
        assert.deepEqual(values.map((value) => offered(ClientCommand.compareAttempts, value, true)), [false, false, false, false, false, true, true, true, false, false]);
    });

    it('keeps every other action on a marked item', () => {
        const pairs: [string, string][] = [
            [ClientCommand.applyWinner, 'aiderRunGroup.winner.compare'],
            [ClientCommand.addRunNote, 'aiderRunGroup.running.compare'],
            [ClientCommand.applyRun, 'aiderRun.workflow.ready.git.compare'],
            [ClientCommand.discardRun, 'aiderRun.workflow.ready.compare'],
            [ClientCommand.keepRunBranch, 'aiderRun.workflow.ready.git.compare'],
            [ClientCommand.showRunDiff, 'aiderRun.workflow.ready.compare'],
            [ClientCommand.showRunDiff, 'aiderRun.workflow.undone.compare'],
            [ClientCommand.undoRun, 'aiderRun.workflow.compare'],
            [ClientCommand.runAgain, 'aiderRun.workflow.compare'],
            [ClientCommand.copyGoal, 'aiderRun.workflow.compare'],
        ];
        for (const [command, value] of pairs) {
            assert.ok(offered(command, value), `${command} on ${value}`);
        }
        assert.ok(!offered(ClientCommand.keepRunBranch, 'aiderRun.workflow.ready.compare'), 'no git: no Keep as Branch');
        assert.ok(!offered(ClientCommand.undoRun, 'aiderRun.workflow.undone.compare'), 'undone: no Undo');
        assert.ok(!offered(ClientCommand.applyWinner, 'aiderRunGroup.compare'), 'no winner ready');
    });
});
