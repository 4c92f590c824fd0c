/** Several attempts at one goal and notes for a run under way, the pure parts: the answers read, the messages, the Runs view's groups, the status bar's phase. */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import {
    APPLY_WINNER,
    attemptAppliedText,
    attemptGroup,
    attemptsTitle,
    attemptsTyped,
    chooseItems,
    defaultAttempts,
    groupMessage,
    KnownAttempts,
    noteProblem,
    SHOW_ATTEMPTS,
    steerArgs,
    steerMessage,
    winnerOf,
} from '../src/common/attempts';
import { phaseText, ProgressRouter } from '../src/common/progress';
import { alreadySettledText, ReadyNotices } from '../src/common/readyNotices';
import {
    attemptLabel,
    groupContextValue,
    groupDescription,
    groupGoal,
    groupHistory,
    groupIcon,
    groupLabel,
    groupState,
    groupTooltip,
    groupWinner,
    type RunGroup,
} from '../src/common/runGroups';
import { runDescription, runIcon, runRecords, stepDescription, stepTooltip, type RunRecord } from '../src/common/runs';
import { SERVER_SETTING_KEYS } from '../src/common/settings';
import { ClientCommand, type TaskResult } from '../src/protocol';
import { runAction, workflowRunNotes } from '../src/protocolResults';

const now = Date.UTC(2026, 11, 2, 10, 0);

function result(status: TaskResult['status'], content: string, notes: Record<string, unknown> = {}): TaskResult {
    return { status, content, notes };
}

/** An attempt as the server writes it (models/history.py Attempt, model_dump(mode="json")). */
function attempt(fields: Record<string, unknown>): Record<string, unknown> {
    return {
        run_id: 'r1', number: 1, aider_model: null, planned: false, state: 'ready', status: 'SUCCESS', green: true,
        tests: 'the tests pass (pytest -q: 3 passed)', lines_changed: 4, tokens: 1200, cost: 0.01, seconds: 14.2, stopped: null,
        ...fields,
    };
}

/** A first-green group's answer (results.py group_result): attempt 2 won, 1 failed, 3 was stopped. */
const WON = 'COMPLETE';
const wonNotes = {
    group: {
        group_id: 'group-g1',
        choose: 'first-green',
        attempts: [
            attempt({ run_id: 'r1', number: 1, state: 'ready', status: 'FAILURE', green: false, tests: 'the tests fail (1 failed)', lines_changed: 2 }),
            attempt({ run_id: 'r2', number: 2, planned: true }),
            attempt({ run_id: 'r3', number: 3, aider_model: 'openai/gpt-4.1', state: 'discarded', status: null, green: false, tests: '', lines_changed: 0, stopped: 'attempt 2 passed the tests first' }),
            { number: 'four' },
        ],
        winner: 'r2',
        reason: 'attempt 2 passed the tests first (the tests pass (pytest -q: 3 passed))',
    },
    run_id: 'r2',
};
const wonContent =
    '3 attempt(s) (first-green): attempt 2 wins (attempt 2 passed the tests first (the tests pass (pytest -q: 3 passed))); run r2 is ready: apply it (its siblings are discarded with it). Attempt 1: the tests fail (1 failed), 2 line(s) changed, 1200 tokens, 14 s.';

describe('a group\'s answer (notes.group)', () => {
    it('is read field by field, its defaults filled in; an attempt of another shape is left out', () => {
        const group = attemptGroup(result(WON, wonContent, wonNotes));
        assert.ok(group);
        assert.deepEqual([group.groupId, group.choose, group.winner, group.reason], ['group-g1', 'first-green', 'r2', wonNotes.group.reason]);
        assert.deepEqual(group.attempts.map((each) => each.number), [1, 2, 3]);
        assert.deepEqual(group.attempts[2], {
            runId: 'r3', number: 3, aiderModel: 'openai/gpt-4.1', planned: false, state: 'discarded', green: false, tests: '', linesChanged: 0,
            tokens: 1200, cost: 0.01, seconds: 14.2, stopped: 'attempt 2 passed the tests first',
        });
        assert.equal(winnerOf(group)?.number, 2);
        assert.equal(workflowRunNotes(result(WON, wonContent, wonNotes)).run_id, 'r2', 'notes.run_id: the winner\'s');
    });

    it('is none for a single run, in place or in a worktree, and for a group of another shape', () => {
        assert.equal(attemptGroup(result('COMPLETE', 'done', { changed_files: ['a.py'] })), undefined);
        assert.equal(attemptGroup(result('COMPLETE', 'done', { run_id: 'r7', state: 'ready', isolation: 'worktree' })), undefined);
        assert.equal(attemptGroup(result('COMPLETE', 'x', { group: { group_id: 'group-g1', choose: 'best-of' } })), undefined, 'a choice the client does not know');
    });

    it('says the goal and the server\'s sentence; a winner ready: Apply the Winner and Show Attempts', () => {
        const answer = result(WON, wonContent, wonNotes);
        const group = attemptGroup(answer);
        assert.ok(group);
        assert.deepEqual(groupMessage('Fix average\nand more', answer, group), { severity: 'info', text: `“Fix average”: ${wonContent}`, buttons: [APPLY_WINNER, SHOW_ATTEMPTS] });
        assert.deepEqual([APPLY_WINNER, SHOW_ATTEMPTS], ['Apply the Winner', 'Show Attempts']);
    });

    it('no winner: a warning with the reason, only Show Attempts', () => {
        const notes = { group: { ...wonNotes.group, winner: null, reason: 'no attempt passed the tests with a change' }, run_id: null, error: { reason: 'goal_not_reached', message: '3 attempt(s) (compare): no attempt passed the tests with a change.' } };
        const answer = result('FAILED', '3 attempt(s) (compare): no attempt passed the tests with a change.', notes);
        const group = attemptGroup(answer);
        assert.ok(group);
        assert.equal(group.winner, undefined);
        assert.deepEqual(groupMessage('Fix average', answer, group), {
            severity: 'warning',
            text: '“Fix average”: 3 attempt(s) (compare): no attempt passed the tests with a change.',
            buttons: [SHOW_ATTEMPTS],
        });
    });

    it('names the group in its progress notification', () => {
        assert.equal(attemptsTitle('Fix average\nand more', 3), 'Aider workflow “Fix average”: 3 attempts');
    });

    it('an attempt applied: what was written, and that its siblings were discarded', () => {
        const applied = result('COMPLETE', 'Applied “Fix average”: calculator.py. Its other attempts are discarded: r1, r3.', {
            run_id: 'r2', state: 'applied', written: ['calculator.py'], deleted: ['old.py'], skipped: [], checkpoint_id: 'r2', discarded: ['r1', 'r3'],
        });
        assert.deepEqual(runAction(applied).discarded, ['r1', 'r3']);
        assert.equal(
            attemptAppliedText('Fix average', runAction(applied), true),
            'Applied the winner of “Fix average”: calculator.py, old.py (deleted). Its 2 other attempts were discarded (their worktrees removed).',
        );
        assert.equal(
            attemptAppliedText('Fix average', { ...runAction(applied), discarded: ['r1'] }, false),
            'Applied “Fix average”: calculator.py, old.py (deleted). Its other attempt was discarded (their worktrees removed).',
        );
        assert.equal(attemptAppliedText('Fix average', { ...runAction(applied), discarded: [] }, true), undefined, 'no sibling: told as any apply');
        assert.equal(attemptAppliedText('Fix average', { run_id: 'r2', state: 'ready', discarded: ['r1'] }, true), undefined, 'not applied');
    });
});

describe('the palette\'s questions', () => {
    it('pre-fills the attempts setting when it asks for several, else 3', () => {
        assert.deepEqual([defaultAttempts(5), defaultAttempts(1), defaultAttempts(undefined), defaultAttempts(12), defaultAttempts(2.5)], [5, 3, 3, 3, 3]);
    });

    it('takes a whole number from 2 to 8, and says why not otherwise', () => {
        assert.equal(attemptsTyped(' 4 '), 4);
        for (const wrong of ['1', '9', 'three', '2.5', '', '-3']) {
            assert.match(String(attemptsTyped(wrong)), /^A whole number from 2 to 8/, wrong);
        }
    });

    it('offers the two ways the tests choose, in words, the setting\'s first', () => {
        const items = chooseItems(undefined);
        assert.deepEqual(items.map((item) => [item.choose, item.label, item.description]), [
            ['first-green', 'The first that passes the tests', 'first-green (your setting)'],
            ['compare', 'Compare them all', 'compare'],
        ]);
        assert.match(items[0]?.detail ?? '', /the others are stopped at once/);
        assert.match(items[1]?.detail ?? '', /the smaller change first, then the lower cost/);
        assert.deepEqual(chooseItems('compare').map((item) => item.choose), ['compare', 'first-green']);
    });
});

describe('a note for a run under way', () => {
    it('sends the note trimmed, with the run or group it is for (none: the run in place under way)', () => {
        assert.deepEqual(steerArgs('  negative numbers too \n'), { note: 'negative numbers too' });
        assert.deepEqual(steerArgs('do not touch the API', 'group-g1'), { run_id: 'group-g1', note: 'do not touch the API' });
        assert.equal(noteProblem('   '), 'Say what the run should take into account, e.g. “negative numbers too”.');
        assert.equal(noteProblem('x'), undefined);
    });

    it('says the server\'s answer: the note reaches the next edit, or why not', () => {
        const ok = result('COMPLETE', 'The note reaches the run\'s next edit (its history keeps it).');
        assert.deepEqual(steerMessage('“Fix average”', ok), { severity: 'info', text: 'Note added to “Fix average”. The note reaches the run\'s next edit (its history keeps it).' });
        const none = result('FAILED', 'no workflow run is under way in place: nothing to add the note to', {
            error: { reason: 'input_validation_failure', message: 'no workflow run is under way in place: nothing to add the note to' },
        });
        assert.deepEqual(steerMessage('the run under way', none), {
            severity: 'warning',
            text: 'The note was not added to the run under way: no workflow run is under way in place: nothing to add the note to.',
        });
    });

    it('shows on the iteration whose edit carried it', () => {
        const [run] = runRecords(result('COMPLETE', '', {
            runs: [{ id: 'r1', created: now / 1000, kind: 'workflow', label: 'x', steps: [{ iteration: 2, edit: { changed_files: ['a.py'] }, notes: ['negative numbers too'] }] }],
        }));
        const [step] = run?.steps ?? [];
        assert.ok(step);
        assert.equal(stepDescription(step), 'changed a.py · no test run · your note');
        assert.match(stepTooltip(step), /\nYour note: negative numbers too$/);
    });
});

/** A history.list answer's records as the server writes them: a group's attempts among other runs. */
function history(records: Record<string, unknown>[]): RunRecord[] {
    const base = { kind: 'workflow', label: 'Fix average', goal: 'Fix average', files: ['calculator.py'], isolation: 'worktree', group_id: 'group-g1' };
    return runRecords(result('COMPLETE', '', { runs: records.map((fields) => ({ ...base, ...fields })) }));
}

describe('the Runs view: a group of attempts', () => {
    const runs = history([
        { id: 'e9', created: now / 1000 - 10, kind: 'edit', label: 'rename x', goal: null, isolation: 'none', group_id: null, status: 'COMPLETE' },
        { id: 'r3', created: now / 1000 - 130, state: 'discarded', status: 'CANCELLED' },
        { id: 'r2', created: now / 1000 - 131, state: 'ready', status: 'SUCCESS', iterations: 2, won: true },
        { id: 'w1', created: now / 1000 - 200, state: 'ready', status: 'SUCCESS', group_id: null, label: 'Fix subtract', goal: 'Fix subtract' },
        { id: 'r1', created: now / 1000 - 132, state: 'ready', status: 'FAILURE' },
    ]);

    it('gathers a group\'s attempts in one entry, at its newest attempt\'s place, oldest first', () => {
        const entries = groupHistory(runs);
        assert.deepEqual(entries.map((entry) => (entry.kind === 'run' ? entry.run.id : entry.group.groupId)), ['e9', 'group-g1', 'w1']);
        const [, entry] = entries;
        assert.ok(entry?.kind === 'group');
        assert.deepEqual(entry.group.runs.map((run) => run.id), ['r1', 'r2', 'r3']);
        assert.equal(groupWinner(entry.group)?.id, 'r2');
        assert.equal(groupGoal(entry.group), 'Fix average');
        assert.deepEqual(groupHistory(runs.filter((run) => run.groupId === undefined)).map((each) => each.kind), ['run', 'run'], 'no group: the runs as they are');
    });

    function group(): RunGroup {
        const entry = groupHistory(runs)[1];
        assert.ok(entry?.kind === 'group');
        return entry.group;
    }

    it('labels the group by its count and goal, and says where it stands first', () => {
        assert.equal(groupLabel(group()), '3 attempts: “Fix average”');
        assert.equal(groupDescription(group(), now), 'winner ready · 1 ready · 1 discarded · 2 min ago');
        assert.equal(groupState(group()), 'ready');
        assert.deepEqual(groupIcon(group()), { id: 'star-full', color: 'charts.yellow' });
        assert.equal(groupContextValue(group()), 'aiderRunGroup.winner', 'Apply the Winner');
        assert.match(groupTooltip(group()), /^Fix average\n\n3 attempts at this goal, each in a worktree of its own: the tests choose\.\nThe winner \(★\) is ready: Apply the Winner/);
        assert.match(groupTooltip(group()), /\nGroup id group-g1$/);
    });

    it('while attempts run: how many, no winner yet, Add a Note; none won: says so', () => {
        const running: RunGroup = { groupId: 'group-g2', runs: history([{ id: 'a', created: now / 1000, state: 'running' }, { id: 'b', created: now / 1000, state: 'running' }]) };
        assert.equal(groupDescription(running, now), '2 running · just now');
        assert.equal(groupContextValue(running), 'aiderRunGroup.running');
        assert.equal(groupIcon(running).id, 'loading~spin');
        const lost: RunGroup = { groupId: 'group-g3', runs: history([{ id: 'a', created: now / 1000 - 3600, state: 'ready', status: 'FAILURE' }, { id: 'b', created: now / 1000 - 3600, state: 'discarded', status: 'FAILURE' }]) };
        assert.equal(groupDescription(lost, now), 'no winner · 1 ready · 1 discarded · 1 h ago');
        assert.equal(groupContextValue(lost), 'aiderRunGroup', 'no winner to apply');
        assert.equal(groupIcon(lost).id, 'circle-large-filled', 'ready, its goal not reached');
        assert.equal(groupLabel({ groupId: 'g', runs: lost.runs.slice(0, 1) }), '1 attempt: “Fix average”');
    });

    it('after Apply the Winner: the winner applied, the others discarded', () => {
        const settled: RunGroup = { groupId: 'group-g1', runs: history([{ id: 'r1', created: now / 1000, state: 'discarded', status: 'FAILURE' }, { id: 'r2', created: now / 1000, state: 'applied', status: 'SUCCESS', won: true }]) };
        assert.equal(groupDescription(settled, now), 'winner applied · 1 discarded · just now');
        assert.equal(groupState(settled), 'passed');
        assert.equal(groupContextValue(settled), 'aiderRunGroup');
    });

    it('marks the winner: a star, "winner" first in its line; an attempt is labelled by its number and model when this window ran it', () => {
        const [failed, winner, stopped] = group().runs;
        assert.ok(failed && winner && stopped);
        assert.equal(runDescription(winner, now), 'winner · ready to apply · goal reached · 2 iterations · 2 min ago');
        assert.deepEqual(runIcon(winner), { id: 'star-full', color: 'charts.yellow' });
        assert.equal(runDescription(failed, now), 'ready to apply · failed · 2 min ago');
        assert.deepEqual(runIcon(failed), { id: 'circle-large-filled', color: 'charts.blue' }, 'ready, its goal not reached');
        assert.equal(runIcon(stopped).id, 'trash');
        const known = new KnownAttempts();
        const answered = attemptGroup(result(WON, wonContent, wonNotes));
        assert.ok(answered);
        known.remember(answered);
        assert.equal(attemptLabel(winner, known.get('r2')), 'Attempt 2');
        assert.equal(attemptLabel(stopped, known.get('r3')), 'Attempt 3 (openai/gpt-4.1)');
        assert.equal(attemptLabel(winner, known.get('unknown')), 'Fix average', 'an older server after a reload: the goal');
        const recorded = { ...winner, attempt: 2, aiderModel: 'openai/fixes' };
        assert.equal(attemptLabel(recorded, undefined), 'Attempt 2 (openai/fixes)', 'after a reload: from the record');
    });
});

describe('a run\'s line starts with where it stands, its icon says it too', () => {
    const one = (fields: Record<string, unknown>): RunRecord => {
        const [run] = history([{ id: 'r', created: now / 1000 - 60, group_id: null, ...fields }]);
        assert.ok(run);
        return run;
    };
    it('running, ready, discarded, kept, applied, undone', () => {
        const cases: [Record<string, unknown>, string, string][] = [
            [{ state: 'running', status: null }, 'running in a worktree · 1 min ago', 'loading~spin'],
            [{ state: 'ready', status: 'SUCCESS' }, 'ready to apply · goal reached · 1 min ago', 'pass-filled'],
            [{ state: 'discarded', status: 'CANCELLED' }, 'discarded · cancelled · 1 min ago', 'trash'],
            [{ state: 'kept', status: 'SUCCESS', branch: 'aider-lsp/r' }, 'kept on branch aider-lsp/r · goal reached · 1 min ago', 'git-branch'],
            [{ state: 'applied', status: 'SUCCESS', isolation: 'none' }, 'goal reached · 1 min ago', 'pass'],
            [{ state: 'undone', status: 'FAILURE', isolation: 'none' }, 'undone · failed · 1 min ago', 'discard'],
        ];
        for (const [fields, description, icon] of cases) {
            assert.equal(runDescription(one(fields), now), description);
            assert.equal(runIcon(one(fields)).id, icon, description);
        }
        assert.equal(runIcon(one({ state: 'ready', status: 'SUCCESS' })).color, 'charts.blue', 'ready stands out');
    });
});

describe('a ready message still standing', () => {
    it('learns that its run was applied, discarded or kept elsewhere; one answered or closed learns nothing more', () => {
        const notices = new ReadyNotices();
        const single = notices.open(['r7']);
        const group = notices.open(['group-g1', 'r1', 'r2', '']);
        assert.equal(notices.settle(['r9'], 'applied'), false, 'no notice about it');
        assert.equal(notices.settle(['r2', 'r1'], 'applied'), true, 'an attempt applied: its group\'s notice');
        assert.equal(notices.settle(['r1'], 'discarded'), false, 'already settled');
        assert.equal(notices.close(group), 'applied');
        assert.equal(notices.close(single), undefined, 'its own run still waits');
        assert.equal(notices.settle(['r7'], 'discarded'), false, 'closed: nothing stands');
        assert.equal(alreadySettledText('“Fix average”', 'discarded'), '“Fix average” was already discarded: nothing to do.');
    });
});

describe('the status bar\'s phase when several runs are under way', () => {
    it('says which run, and goes back to another\'s phase when one ends', () => {
        assert.equal(phaseText('Iteration 1/3: Aider is editing', 0, 1), 'Iteration 1/3: Aider is editing');
        assert.equal(phaseText('Iteration 1/3: Aider is editing', 1, 3), 'Run 2 of 3: Iteration 1/3: Aider is editing');
        const router = new ProgressRouter();
        const phases: (string | undefined)[] = [];
        router.onPhase = (phase) => { phases.push(phase); };
        const first = router.start(() => undefined);
        first.report('Iteration 1/3: Aider is editing');
        const second = router.start(() => undefined);
        second.report('Iteration 1/3: running tests');
        first.report('Iteration 2/3: Aider is editing');
        second.dispose();
        first.dispose();
        assert.deepEqual(phases, [
            'Iteration 1/3: Aider is editing',
            'Run 2 of 2: Iteration 1/3: running tests',
            'Run 1 of 2: Iteration 2/3: Aider is editing',
            'Iteration 2/3: Aider is editing',
            undefined,
        ]);
    });
});

describe('package.json for several attempts and notes', () => {
    const manifest = JSON.parse(fs.readFileSync(path.resolve(__dirname, '..', '..', 'package.json'), 'utf8')) as {
        capabilities: { untrustedWorkspaces: { restrictedConfigurations: string[] } };
        contributes: {
            commands: { command: string; title: string }[];
            configuration: { properties: Record<string, { type?: unknown; default?: unknown; enum?: string[]; minimum?: number; maximum?: number; markdownDescription?: string }> };
            menus: Record<string, { command: string; when?: string; group?: string }[]>;
        };
    };
    const items = manifest.contributes.menus['view/item/context'] ?? [];
    function offered(command: string, value: string): boolean {
        return items
            .filter((item) => item.command === command)
            .some((item) => {
                const when = item.when ?? '';
                const regex = /viewItem =~ \/(.+)\/$/.exec(when)?.[1];
                return regex !== undefined ? new RegExp(regex).test(value) : when.endsWith(`viewItem == ${value}`);
            });
    }

    it('names the palette commands; the view\'s actions are not in the palette', () => {
        const titles = new Map(manifest.contributes.commands.map((command) => [command.command, command.title]));
        assert.equal(titles.get(ClientCommand.runWorkflowAttempts), 'Run Workflow: Several Attempts…');
        assert.equal(titles.get(ClientCommand.addNote), 'Add a Note to the Run Under Way…');
        assert.equal(titles.get(ClientCommand.applyWinner), 'Apply the Winner');
        assert.equal(titles.get(ClientCommand.addRunNote), 'Add a Note to This Run…');
        const hidden = (manifest.contributes.menus.commandPalette ?? []).filter((item) => item.when === 'false').map((item) => item.command);
        assert.ok(hidden.includes(ClientCommand.applyWinner) && hidden.includes(ClientCommand.addRunNote));
        assert.ok(!hidden.includes(ClientCommand.runWorkflowAttempts) && !hidden.includes(ClientCommand.addNote));
    });

    it('offers Apply the Winner on a group whose winner is ready, Add a Note on a running run or group, and the ready actions on each attempt', () => {
        const values = ['aiderRunGroup.winner', 'aiderRunGroup.running', 'aiderRunGroup', 'aiderRun.workflow.running', 'aiderRun.workflow.ready.git', 'aiderRun.workflow'];
        const row = (command: string): boolean[] => values.map((value) => offered(command, value));
        assert.deepEqual(row(ClientCommand.applyWinner), [true, false, false, false, false, false]);
        assert.deepEqual(row(ClientCommand.addRunNote), [false, true, false, true, false, false]);
        assert.deepEqual(row(ClientCommand.applyRun), [false, false, false, false, true, false]);
        assert.deepEqual(row(ClientCommand.copyGoal), [false, false, false, true, true, true], 'a group is no run: no Copy Goal, no Run Again');
    });

    it('has the settings attempts (1..8), chooseAttempt (first-green | compare) and attemptModels (a list), after isolation as the server lists them', () => {
        const { properties } = manifest.contributes.configuration;
        const attempts = properties['aiderLsp.attempts'];
        const choose = properties['aiderLsp.chooseAttempt'];
        const models = properties['aiderLsp.attemptModels'];
        assert.deepEqual([attempts?.type, attempts?.default, attempts?.minimum, attempts?.maximum], ['integer', 1, 1, 8]);
        assert.deepEqual([choose?.enum, choose?.default], [['first-green', 'compare'], 'first-green']);
        assert.deepEqual([models?.type, models?.default], ['array', []]);
        for (const setting of [attempts, choose, models]) {
            assert.ok(setting?.markdownDescription, 'described');
        }
        const keys = [...SERVER_SETTING_KEYS];
        assert.deepEqual(keys.slice(keys.indexOf('isolation'), keys.indexOf('isolation') + 5), ['isolation', 'attempts', 'chooseAttempt', 'attemptModels', 'maxIsolatedRuns']);
        assert.ok(manifest.capabilities.untrustedWorkspaces.restrictedConfigurations.includes('aiderLsp.attemptModels'), 'a repository does not choose the models');
    });
});
