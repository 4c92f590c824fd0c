/**
 * What a workflow run's answer says beyond its message: how many iterations it took and what
 * the last test run said, read from `notes.workflow` (the run's history, server models.py
 * WorkflowResult). Pure and defensive: a history of another shape gives an empty summary.
 */
import type { TaskResult } from '../protocol';

/** The last test run of a workflow, as its history records it. */
interface TestSummary {
    command: string;
    exitCode: number | undefined;
    timedOut: boolean;
    /** The runner's own summary line, e.g. "3 passed in 0.02s" (the last line it printed). */
    line: string | undefined;
}

interface WorkflowSummary {
    iterations: number;
    test: TestSummary | undefined;
}

function isRecord(value: unknown): value is Record<string, unknown> {
    return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function testOf(iteration: Record<string, unknown>): TestSummary | undefined {
    const test = iteration.test;
    if (!isRecord(test) || typeof test.command !== 'string') {
        return undefined;
    }
    // the runner's last word, as the server read it (suite/findings.py summary_line)
    const line = typeof test.summary === 'string' && test.summary ? test.summary : undefined;
    return {
        command: test.command,
        exitCode: typeof test.exit_code === 'number' ? test.exit_code : undefined,
        timedOut: test.timed_out === true,
        line,
    };
}

/** The iterations and last test run of a `aider-lsp.workflow.run` answer. */
export function workflowSummary(result: TaskResult): WorkflowSummary {
    const history = result.notes.workflow;
    const iterations = isRecord(history) && Array.isArray(history.iterations) ? history.iterations.filter(isRecord) : [];
    let test: TestSummary | undefined;
    for (const iteration of iterations) {
        test = testOf(iteration) ?? test;
    }
    return { iterations: iterations.length, test };
}

/** "the tests pass (pytest -q: 3 passed in 0.02s)", "the tests fail (…, exit 1)", or undefined. */
export function describeTests(test: TestSummary | undefined): string | undefined {
    if (test === undefined) {
        return undefined;
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
