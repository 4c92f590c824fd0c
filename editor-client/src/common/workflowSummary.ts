/**
 * What a workflow run's answer says beyond its message: how many iterations it took and what
 * the last test run said, read from `notes.workflow` (the run's history, the server's
 * WorkflowResult: protocolResults.ts). Pure: a history of another shape gives an empty summary.
 */
import type { TaskResult } from '../protocol';
import { workflowRunNotes, type DecidingRun } from '../protocolResults';

/** The last test run of a workflow, as its history records it. */
interface TestSummary {
    command: string;
    exitCode: number | undefined;
    timedOut: boolean;
    /** The runner's own summary line, e.g. "3 passed in 0.02s" (the last line it printed). */
    line: string | undefined;
    /** How it ended in the server's one wording ("the tests pass (3 passed in 0.02s)"): what every screen says. */
    outcome: string | undefined;
}

interface WorkflowSummary {
    iterations: number;
    test: TestSummary | undefined;
}

function testOf(test: DecidingRun): TestSummary {
    // the runner's last word, as the server read it (suite/findings.py summary_line)
    return {
        command: test.command,
        exitCode: test.exit_code,
        timedOut: test.timed_out === true,
        line: test.summary || undefined,
        outcome: test.outcome || undefined,
    };
}

/** The iterations and last test run of a `aider-lsp.workflow.run` answer. */
export function workflowSummary(result: TaskResult): WorkflowSummary {
    const iterations = workflowRunNotes(result).workflow?.iterations ?? [];
    const tested = iterations.flatMap((iteration) => (iteration.test === undefined ? [] : [iteration.test]));
    const last = tested[tested.length - 1];
    return { iterations: iterations.length, test: last === undefined ? undefined : testOf(last) };
}

/**
 * The server's wording of the last test run ("the tests pass (3 passed in 0.02s)"), the same the
 * CLI, ACP and the Runs view show; an older server's answer, which has none, worded alike here.
 */
export function describeTests(test: TestSummary | undefined): string | undefined {
    if (test === undefined) {
        return undefined;
    }
    if (test.outcome !== undefined) {
        return test.outcome;
    }
    const said = test.line ? `: ${test.line}` : '';
    if (test.timedOut) {
        return `the tests timed out (${test.command})`;
    }
    if (test.exitCode === 0) {
        return `the tests pass (${test.command}${said})`;
    }
    return `the tests fail (${test.command}${said}, exit ${String(test.exitCode)})`;
}

/** "in 1 iteration", "in 3 iterations". */
export function iterationCount(count: number): string {
    return `in ${String(count)} iteration${count === 1 ? '' : 's'}`;
}
