/**
 * The protocol against the REAL Python server over stdio (vscode-languageserver-protocol/node),
 * with the same argument shapes the extension sends: getContext, a real Aider edit and a real
 * workflow run answered by the scripted LLM server (Show Diff reads both diffs), runs in a
 * worktree (one applied then undone, one discarded), and cancelled long commands whose test
 * process must be gone. The argument types of src/protocol.ts and the
 * result types of src/protocolResults.ts are compared with the server's own JSON schemas, the
 * hand-built notes with real answers, and the extension's client capabilities get it the "Edit
 * selection with Aider" action.
 *
 * The server: env AIDER_LSP_SERVER, else ../.venv/bin/aider-lsp (made by scripts/bootstrap). Its
 * Python (and the schema script's) reads this checkout's server/ first (PYTHONPATH), so a git
 * worktree sharing another checkout's .venv tests its own server, not the one installed there.
 */
import * as assert from 'node:assert/strict';
import { execFileSync, spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as readline from 'node:readline';
import { after, before, describe, it } from 'node:test';
import {
    CancellationTokenSource,
    CodeActionRequest,
    createProtocolConnection,
    ExecuteCommandRequest,
    ExitNotification,
    InitializedNotification,
    InitializeRequest,
    ShutdownRequest,
    StreamMessageReader,
    StreamMessageWriter,
    WorkDoneProgressCancelNotification,
    WorkDoneProgressCreateRequest,
    type ClientCapabilities,
    type Command,
    type ProtocolConnection,
} from 'vscode-languageserver-protocol/node';
import { fileContext } from '../src/common/arguments';
import { attemptGroup, steerArgs, steerMessage } from '../src/common/attempts';
import { ClientCommandsFeature } from '../src/common/capabilities';
import { contentBefore, splitDiff } from '../src/common/diff';
import { isolatedAnswer } from '../src/common/isolation';
import { groupContextValue, groupHistory, groupWinner } from '../src/common/runGroups';
import { runFileSides, runRecords } from '../src/common/runs';
import {
    asTaskResult,
    ClientCommand,
    contextMatches,
    ServerCommand,
    type CommandArgs,
    type Position,
    type Range,
    type Selection,
    type ServerCommandId,
    type TaskResult,
} from '../src/protocol';
import { changeNotes, NOTES, RESULT_ENUMS, RESULT_MODELS, restoreReport, runAction, workflowRunNotes } from '../src/protocolResults';
import { presences, type Field } from '../src/wire';

const repoRoot = path.resolve(__dirname, '..', '..', '..');
const serverExe = process.env.AIDER_LSP_SERVER ?? path.join(repoRoot, '.venv', 'bin', 'aider-lsp');
const python = fs.existsSync(path.join(path.dirname(serverExe), 'python')) ? path.join(path.dirname(serverExe), 'python') : 'python3';
/** This checkout's server/ before the installed one: what the server and the scripts below import. */
const serverEnv = { ...process.env, PYTHONPATH: [path.join(repoRoot, 'server'), process.env.PYTHONPATH].filter(Boolean).join(path.delimiter) };

const ORIGINAL = 'def add(a, b):\n    return a + b\n';
const EDITED = 'def add(a, b):\n    return a + b + 0  # edited\n';

/** Each property of T as protocol.ts declares it: required or optional. */
type Shape<T> = { [K in keyof T]-?: Partial<Pick<T, K>> extends Pick<T, K> ? 'optional' : 'required' };

/**
 * protocol.ts's argument types, spelled out. The type checker holds this table to protocol.ts
 * (a property missing, extra or of the other kind does not compile); the test below holds it to
 * the server's schemas. Together protocol.ts cannot drift from the server.
 */
const DECLARED: { [C in ServerCommandId]: Shape<CommandArgs[C]> } = {
    'aider-lsp.system.readFiles': { file_paths: 'required' },
    'aider-lsp.tools.list': {},
    'aider-lsp.system.getContext': { query: 'required', history: 'optional', target_files: 'optional', max_results: 'optional' },
    'aider-lsp.handler.primeContext': { query: 'optional', initial_files: 'optional' },
    'aider-lsp.handler.reset': {},
    'aider-lsp.system.runTests': { command: 'optional' },
    'aider-lsp.aider.automatic': { prompt: 'required', file_context: 'optional', selection: 'optional', rerun_failing_tests: 'optional' },
    'aider-lsp.aider.interactive': { prompt: 'optional', file_context: 'optional', session_id: 'optional', end_session: 'optional' },
    'aider-lsp.aider.listModels': { substring: 'optional' },
    'aider-lsp.workflow.undo': { run_id: 'optional', force: 'optional', files: 'optional' },
    'aider-lsp.history.list': {},
    'aider-lsp.history.diff': { run_id: 'required', path: 'optional' },
    'aider-lsp.workflow.run': {
        goal: 'required',
        context: 'optional',
        test_command: 'optional',
        max_retries: 'optional',
        file_context: 'optional',
        plan: 'optional',
        isolation: 'optional',
        attempts: 'optional',
        choose: 'optional',
        aider_models: 'optional',
        images: 'optional',
    },
    'aider-lsp.workflow.steer': { run_id: 'optional', note: 'required' },
    'aider-lsp.diagnostics.clear': {},
    'aider-lsp.runs.apply': { run_id: 'required', force: 'optional' },
    'aider-lsp.runs.discard': { run_id: 'required' },
    'aider-lsp.runs.keepBranch': { run_id: 'required' },
    'aider-lsp.runs.prepare': {},
};

/** The objects inside the arguments, by the name of the server's model (the schemas' `$defs`). */
const DECLARED_MODELS: { Selection: Shape<Selection>; Range: Shape<Range>; Position: Shape<Position> } = {
    Selection: { uri: 'required', range: 'optional', text: 'optional' },
    Range: { start: 'required', end: 'required' },
    Position: { line: 'required', character: 'required' },
};

interface JsonSchema {
    enum?: unknown[];
    properties?: Record<string, unknown>;
    required?: string[];
    $defs?: Record<string, JsonSchema>;
}

/** command id → its argument model's JSON schema and the other names a property is accepted under. */
type CommandSchemas = Record<string, { schema: JsonSchema; aliases: Record<string, string> }>;

/** The server's own schemas: its commands' arguments, and its result models by class name. */
interface ServerSchemas {
    arguments: CommandSchemas;
    results: Record<string, JsonSchema | undefined>;
}

/** The server's own schemas (test/command_schemas.py, run with the server's Python). */
function serverSchemas(): ServerSchemas {
    const script = path.join(repoRoot, 'editor-client', 'test', 'command_schemas.py');
    return JSON.parse(execFileSync(python, [script], { encoding: 'utf8', env: serverEnv })) as ServerSchemas;
}

/** The declared notes keys a real answer does not carry (a hand-built notes table against the wire). */
function missingNotes(table: Record<string, Field<unknown>>, result: TaskResult): string[] {
    return Object.keys(table).filter((key) => !(key in result.notes));
}

/** A schema's properties as `name: required|optional`, sorted by name. */
function schemaShape(schema: JsonSchema): [string, string][] {
    const required = new Set(schema.required ?? []);
    return Object.keys(schema.properties ?? {})
        .map((name): [string, string] => [name, required.has(name) ? 'required' : 'optional'])
        .sort();
}

/** A declared shape under the server's property names (an alias such as `prompt` → `query`), sorted. */
function declaredShape(shape: Record<string, string>, aliases: Record<string, string> = {}): [string, string][] {
    return Object.entries(shape)
        .map(([name, kind]): [string, string] => [aliases[name] ?? name, kind])
        .sort();
}

function processAlive(pid: number): boolean {
    try {
        process.kill(pid, 0);
        return true;
    } catch {
        return false;
    }
}

async function waitFor(what: string, probe: () => boolean, seconds = 60): Promise<void> {
    const deadline = Date.now() + seconds * 1000;
    while (!probe()) {
        if (Date.now() > deadline) {
            throw new Error(`gave up waiting: ${what}`);
        }
        await new Promise((resolve) => setTimeout(resolve, 50));
    }
}

/** The scripted LLM server (aider_lsp_testing.llm_server) in its own process. */
async function startLlmServer(args: string[]): Promise<{ baseUrl: string; process: ChildProcessWithoutNullStreams }> {
    const child = spawn(python, [path.join(repoRoot, 'editor-client', 'test', 'llm_server_cli.py'), ...args], { env: serverEnv });
    child.stderr.on('data', (chunk: Buffer) => process.stderr.write(chunk));
    const line = await new Promise<string>((resolve, reject) => {
        readline.createInterface({ input: child.stdout }).once('line', resolve);
        child.once('exit', (code) => { reject(new Error(`llm server exited (${String(code)})`)); });
    });
    const { base_url: baseUrl } = JSON.parse(line) as { base_url: string };
    return { baseUrl, process: child };
}

class Server {
    readonly progress: { token: string | number; value: { kind: string; message?: string; title?: string } }[] = [];
    readonly commands: string[] = [];
    private constructor(
        readonly connection: ProtocolConnection,
        readonly child: ChildProcessWithoutNullStreams,
    ) {}

    static async start(workspace: string, initializationOptions: Record<string, unknown>, capabilities: ClientCapabilities): Promise<Server> {
        const child = spawn(serverExe, ['serve'], { cwd: workspace, env: serverEnv });
        child.stderr.on('data', () => undefined); // logs; keep the pipe drained
        const connection = createProtocolConnection(new StreamMessageReader(child.stdout), new StreamMessageWriter(child.stdin));
        const server = new Server(connection, child);
        connection.onRequest(WorkDoneProgressCreateRequest.type, () => undefined);
        connection.onRequest('workspace/configuration', (params: { items: unknown[] }) => params.items.map(() => initializationOptions));
        connection.onRequest('client/registerCapability', () => null);
        connection.onRequest('workspace/applyEdit', () => ({ applied: false }));
        connection.onNotification('$/progress', (params: Server['progress'][number]) => {
            server.progress.push(params);
        });
        connection.listen();
        const init = await connection.sendRequest(InitializeRequest.type, {
            processId: process.pid,
            // eslint-disable-next-line @typescript-eslint/no-deprecated -- still a required field of InitializeParams
            rootUri: `file://${workspace}`,
            workspaceFolders: [{ uri: `file://${workspace}`, name: 'ws' }],
            capabilities,
            initializationOptions,
        });
        server.commands.push(...(init.capabilities.executeCommandProvider?.commands ?? []));
        await connection.sendNotification(InitializedNotification.type, {});
        return server;
    }

    async execute<C extends ServerCommandId>(command: C, arg: CommandArgs[C], cancel?: CancellationTokenSource): Promise<TaskResult> {
        const answer: unknown = await this.connection.sendRequest(ExecuteCommandRequest.type, { command, arguments: [arg] }, cancel?.token);
        const result = asTaskResult(answer);
        assert.ok(result, `a TaskResult: ${JSON.stringify(answer)}`);
        return result;
    }

    async stop(): Promise<void> {
        try {
            await this.connection.sendRequest(ShutdownRequest.type);
            await this.connection.sendNotification(ExitNotification.type);
        } catch {
            // already gone
        }
        await waitFor('the server exits', () => this.child.exitCode !== null || this.child.signalCode !== null, 30).catch(() => this.child.kill());
        this.connection.dispose();
    }
}

/** Runs `command` with a slow test command, cancels it once the test process runs, and checks that process is gone. */
async function cancelWhileTesting(server: Server, workspace: string, command: 'aider-lsp.system.runTests' | 'aider-lsp.workflow.run', arg: CommandArgs[typeof command]): Promise<void> {
    const pidFile = path.join(workspace, 'test.pid');
    fs.rmSync(pidFile, { force: true });
    const cancel = new CancellationTokenSource();
    const request = server.execute(command, arg, cancel);
    let settled: string | undefined;
    request.then(
        (result) => (settled = `${result.status}: ${result.content}`),
        (error: unknown) => (settled = String(error)),
    );
    await waitFor('the test process starts', () => {
        if (settled !== undefined) {
            throw new Error(`${command} ended before its test process started: ${settled}`);
        }
        return fs.existsSync(pidFile) && fs.readFileSync(pidFile, 'utf8').length > 0;
    }, 120);
    const pid = Number(fs.readFileSync(pidFile, 'utf8'));
    assert.ok(processAlive(pid), 'the test process runs');
    cancel.cancel();
    await assert.rejects(request, (error: { code?: number }) => error.code === -32800, 'the request is answered as cancelled');
    await waitFor(`test process ${pid} is gone`, () => !processAlive(pid), 30);
}

describe('the real aider-lsp server over stdio', { skip: fs.existsSync(serverExe) ? false : `no server at ${serverExe} (run scripts/bootstrap or set AIDER_LSP_SERVER)` }, () => {
    let workspace = '';
    let server: Server;
    let llm: { baseUrl: string; process: ChildProcessWithoutNullStreams };

    before(async () => {
        workspace = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'aider-lsp-protocol-')));
        fs.mkdirSync(path.join(workspace, 'pkg'));
        fs.writeFileSync(path.join(workspace, 'pkg', 'calc.py'), ORIGINAL);
        fs.writeFileSync(path.join(workspace, 'pkg', 'parser.py'), 'def parse_tokens(text):\n    return text.split()\n');
        fs.writeFileSync(path.join(workspace, 'README.md'), 'A calculator.\n');
        llm = await startLlmServer([
            '--whole', `pkg/calc.py=${EDITED}`,
            '--plan', JSON.stringify({ instructions: 'mark add as edited', files: ['pkg/calc.py'] }),
            '--analysis', JSON.stringify({ verdict: 'SUCCESS', message: 'the tests pass' }),
        ]);
        const slowTest = `${python} -c "import os, time; open('test.pid', 'w').write(str(os.getpid())); time.sleep(600)"`;
        // what the extension's language client sends, its experimental capability included
        const capabilities: ClientCapabilities = { window: { workDoneProgress: true }, workspace: { configuration: true, workspaceFolders: true } };
        new ClientCommandsFeature().fillClientCapabilities(capabilities);
        server = await Server.start(workspace, {
            baseUrl: llm.baseUrl,
            model: 'openai:scripted-planner',
            apiKey: 'sk-test',
            aiderModel: 'openai/scripted-coder',
            aiderServer: { args: ['--edit-format', 'whole'] },
            timeouts: { aider: 120 },
            testCommand: slowTest,
            // the cancelling tests stop a workflow in its tests after its edit: none before it
            testsBeforeFirstEdit: false,
        }, capabilities);
    });

    after(async () => {
        await server.stop();
        llm.process.stdin.end();
        fs.rmSync(workspace, { recursive: true, force: true });
    });

    it('offers exactly the commands protocol.ts declares, whose arguments match the server\'s schemas', () => {
        const schemas = serverSchemas().arguments;
        const declaredIds = Object.keys(DECLARED).sort();
        assert.deepEqual(Object.values(ServerCommand).sort(), declaredIds);
        assert.deepEqual([...server.commands].sort(), declaredIds, 'the commands the server advertises');
        assert.deepEqual(Object.keys(schemas).sort(), declaredIds, 'the server\'s command table');
        const models: Record<string, JsonSchema> = {};
        const enums: Record<string, unknown[]> = {};
        for (const id of Object.values(ServerCommand)) {
            const { schema, aliases } = schemas[id];
            assert.deepEqual(declaredShape(DECLARED[id], aliases), schemaShape(schema), `the argument of ${id}`);
            for (const [name, def] of Object.entries(schema.$defs ?? {})) {
                if (def.enum === undefined) {
                    models[name] = def;
                } else {
                    enums[name] = def.enum;
                }
            }
        }
        assert.deepEqual(enums, { Isolation: [...RESULT_ENUMS.Isolation], Choose: [...RESULT_ENUMS.Choose] }, 'the enumerations inside the arguments');
        assert.deepEqual(Object.keys(models).sort(), Object.keys(DECLARED_MODELS).sort(), 'the objects inside the arguments');
        for (const [name, shape] of Object.entries(DECLARED_MODELS)) {
            assert.deepEqual(declaredShape(shape), schemaShape(models[name]), `the ${name} object`);
        }
    });

    it('answers with the result models protocolResults.ts declares: same names, same properties, same required ones', () => {
        const { results } = serverSchemas();
        for (const [name, table] of Object.entries(RESULT_MODELS)) {
            const schema = results[name];
            assert.ok(schema, `the server has a result model named ${name} (aider_lsp.models)`);
            assert.deepEqual(declaredShape(presences(table)), schemaShape(schema), `the ${name} result`);
        }
        // the enumerations the results name: the same values (a state the client does not know would be dropped)
        const defs = Object.assign({}, ...Object.values(results).map((schema) => schema?.$defs ?? {})) as Record<string, JsonSchema>;
        for (const [name, values] of Object.entries(RESULT_ENUMS)) {
            assert.deepEqual(defs[name]?.enum, [...values], `the ${name} values`);
        }
    });

    it('offers "Edit selection with Aider" to the extension, which announces the client command', async () => {
        const uri = `file://${path.join(workspace, 'pkg', 'parser.py')}`;
        const range = { start: { line: 0, character: 0 }, end: { line: 1, character: 10 } };
        const actions = await server.connection.sendRequest(CodeActionRequest.type, {
            textDocument: { uri },
            range,
            context: { diagnostics: [], only: ['refactor.rewrite'] },
        });
        const commands = (actions ?? []).map((action) => ('kind' in action ? action.command : action) as Command | undefined);
        assert.deepEqual(
            commands.map((command) => [command?.title, command?.command, command?.arguments]),
            [['Edit selection with Aider', ClientCommand.editSelection, [{ uri, range }]]],
        );
    });

    it('getContext finds the file a query is about', async () => {
        assert.ok(server.commands.includes(ServerCommand.getContext), 'the server lists its commands (the workflow test relies on it)');
        const result = await server.execute(ServerCommand.getContext, { query: 'parse tokens' });
        assert.equal(result.status, 'COMPLETE', result.content);
        assert.deepEqual(missingNotes(NOTES.context, result), [], 'getContext\'s notes');
        assert.equal(contextMatches(result)[0]?.path, 'pkg/parser.py');
    });

    it('a real Aider edit, with the arguments the extension builds, changes the file on disk', async () => {
        const files = fileContext([path.join(workspace, 'pkg', 'calc.py')], workspace);
        const result = await server.execute(ServerCommand.automatic, { prompt: 'mark add as edited', file_context: files });
        assert.equal(result.status, 'COMPLETE', result.content);
        assert.equal(fs.readFileSync(path.join(workspace, 'pkg', 'calc.py'), 'utf8'), EDITED);
        assert.deepEqual(missingNotes(NOTES.change, result), ['retest'], 'an edit\'s notes: all but the re-run of Fix with Aider');
        assert.deepEqual(changeNotes(result).changed_files, ['pkg/calc.py']);
        // "Show Diff" rebuilds the file before the edit from the server's diff
        const section = splitDiff(changeNotes(result).diff ?? '').get('pkg/calc.py');
        assert.ok(section, 'the diff has a section for the file');
        assert.equal(contentBefore(EDITED, section), ORIGINAL);
        // the Runs view: the edit is the newest run, and its diff has both sides of the file
        const [run] = runRecords(await server.execute(ServerCommand.historyList, {}));
        assert.deepEqual([run?.kind, run?.files, run?.id], ['edit', ['pkg/calc.py'], changeNotes(result).checkpoint_id]);
        const sides = runFileSides(await server.execute(ServerCommand.historyDiff, { run_id: run?.id ?? '' }));
        assert.deepEqual(sides, [{ path: 'pkg/calc.py', before: ORIGINAL, after: EDITED, existedBefore: true, existsAfter: true, binary: false }]);
        const undo = await server.execute(ServerCommand.undo, {});
        assert.equal(undo.status, 'COMPLETE', undo.content);
        assert.deepEqual(restoreReport(undo).restored, ['pkg/calc.py']);
        assert.equal(fs.readFileSync(path.join(workspace, 'pkg', 'calc.py'), 'utf8'), ORIGINAL);
    });

    it('a real workflow run\'s diff has the edit\'s format, so Show Diff rebuilds the file before the run', async () => {
        const passing = `${python} -c "pass"`;
        const result = await server.execute(ServerCommand.workflowRun, { goal: 'mark add as edited', test_command: passing, max_retries: 1 });
        assert.equal(result.status, 'COMPLETE', result.content);
        assert.equal(fs.readFileSync(path.join(workspace, 'pkg', 'calc.py'), 'utf8'), EDITED);
        const inPlace = missingNotes(NOTES.workflowRun, result).filter((key) => !(key in NOTES.isolatedRun));
        assert.deepEqual(inPlace, ['group'], 'a workflow run\'s notes: all but several attempts\' group');
        const notes = workflowRunNotes(result);
        assert.deepEqual(notes.changed_files, ['pkg/calc.py']);
        assert.equal(notes.workflow?.iterations?.length, 1, 'the run\'s history, read as a WorkflowResult');
        const diff = notes.diff ?? '';
        assert.ok(diff.startsWith('diff --git a/pkg/calc.py b/pkg/calc.py\n'), `the run's diff: ${diff}`);
        const sections = splitDiff(diff);
        assert.deepEqual([...sections.keys()], ['pkg/calc.py']);
        assert.equal(contentBefore(EDITED, sections.get('pkg/calc.py') ?? ''), ORIGINAL);
        const undo = await server.execute(ServerCommand.undo, {});
        assert.equal(undo.status, 'COMPLETE', undo.content);
        assert.equal(fs.readFileSync(path.join(workspace, 'pkg', 'calc.py'), 'utf8'), ORIGINAL);
    });

    it('a run in a worktree leaves the files alone until Apply: ready in the history with its diff, then applied, and undone by its id', async (t) => {
        // a failure here still leaves the next tests the file they start from
        t.after(() => { fs.writeFileSync(path.join(workspace, 'pkg', 'calc.py'), ORIGINAL); });
        const passing = `${python} -c "pass"`;
        const result = await server.execute(ServerCommand.workflowRun, { goal: 'mark add as edited', test_command: passing, max_retries: 1, isolation: 'worktree' });
        assert.equal(result.status, 'COMPLETE', result.content);
        assert.deepEqual(missingNotes(NOTES.workflowRun, result), ['group'], 'an isolated run\'s notes: all but several attempts\' group');
        const answer = isolatedAnswer(result);
        assert.equal(answer?.state, 'ready');
        assert.deepEqual(workflowRunNotes(result).changed_files, ['pkg/calc.py'], 'against the files it started from');
        assert.equal(fs.readFileSync(path.join(workspace, 'pkg', 'calc.py'), 'utf8'), ORIGINAL, 'the user\'s file untouched');
        const runId = answer?.runId ?? '';
        const listed = runRecords(await server.execute(ServerCommand.historyList, {})).find((run) => run.id === runId);
        assert.deepEqual([listed?.state, listed?.isolation, listed?.branch], ['ready', 'worktree', undefined], 'no git here: a copy, no branch');
        const sides = runFileSides(await server.execute(ServerCommand.historyDiff, { run_id: runId }));
        assert.deepEqual(sides, [{ path: 'pkg/calc.py', before: ORIGINAL, after: EDITED, existedBefore: true, existsAfter: true, binary: false }]);
        const kept = await server.execute(ServerCommand.keepRunBranch, { run_id: runId });
        assert.equal(kept.status, 'FAILED', 'no git: no branch to keep');
        const applied = await server.execute(ServerCommand.applyRun, { run_id: runId });
        assert.equal(applied.status, 'COMPLETE', applied.content);
        assert.deepEqual([runAction(applied).state, runAction(applied).written], ['applied', ['pkg/calc.py']]);
        assert.equal(fs.readFileSync(path.join(workspace, 'pkg', 'calc.py'), 'utf8'), EDITED);
        const undo = await server.execute(ServerCommand.undo, { run_id: runId });
        assert.equal(undo.status, 'COMPLETE', undo.content);
        assert.equal(fs.readFileSync(path.join(workspace, 'pkg', 'calc.py'), 'utf8'), ORIGINAL);
    });

    it('a ready run discarded is gone from what can be applied; the user\'s files never changed', async (t) => {
        t.after(() => { fs.writeFileSync(path.join(workspace, 'pkg', 'calc.py'), ORIGINAL); });
        const passing = `${python} -c "pass"`;
        const result = await server.execute(ServerCommand.workflowRun, { goal: 'mark add as edited', test_command: passing, max_retries: 1, isolation: 'worktree' });
        const runId = isolatedAnswer(result)?.runId ?? '';
        assert.ok(runId, result.content);
        const discarded = await server.execute(ServerCommand.discardRun, { run_id: runId });
        assert.equal(discarded.status, 'COMPLETE', discarded.content);
        assert.equal(runAction(discarded).state, 'discarded');
        const listed = runRecords(await server.execute(ServerCommand.historyList, {})).find((run) => run.id === runId);
        assert.equal(listed?.state, 'discarded');
        assert.equal((await server.execute(ServerCommand.applyRun, { run_id: runId })).status, 'FAILED', 'nothing left to apply');
        assert.equal(fs.readFileSync(path.join(workspace, 'pkg', 'calc.py'), 'utf8'), ORIGINAL);
    });

    it('several attempts: the group\'s answer names each and the winner, nothing applied; the history gathers them; the group\'s id applies the winner and discards the other', async (t) => {
        t.after(() => { fs.writeFileSync(path.join(workspace, 'pkg', 'calc.py'), ORIGINAL); });
        const calc = path.join(workspace, 'pkg', 'calc.py');
        const passing = `${python} -c "pass"`;
        const result = await server.execute(ServerCommand.workflowRun, { goal: 'mark add as edited', test_command: passing, max_retries: 1, attempts: 2, choose: 'compare' });
        assert.equal(result.status, 'COMPLETE', result.content);
        assert.deepEqual(missingNotes(NOTES.attempts, result), [], 'a group\'s notes');
        const group = attemptGroup(result);
        assert.ok(group, `read as a group: ${JSON.stringify(result.notes)}`);
        assert.equal(group.choose, 'compare');
        assert.deepEqual(group.attempts.map((attempt) => [attempt.number, attempt.state, attempt.green]), [[1, 'ready', true], [2, 'ready', true]]);
        assert.ok(group.attempts.some((attempt) => attempt.runId === group.winner), `the winner is one of them: ${String(group.winner)}`);
        assert.equal(workflowRunNotes(result).run_id, group.winner, 'notes.run_id: the winner\'s');
        assert.equal(fs.readFileSync(calc, 'utf8'), ORIGINAL, 'nothing applied by itself');
        const entries = groupHistory(runRecords(await server.execute(ServerCommand.historyList, {})));
        const listed = entries.find((entry) => entry.kind === 'group' && entry.group.groupId === group.groupId);
        assert.ok(listed?.kind === 'group', 'the attempts gathered in one entry');
        assert.deepEqual(listed.group.runs.map((run) => run.id).sort(), group.attempts.map((attempt) => attempt.runId).sort());
        assert.equal(groupWinner(listed.group)?.id, group.winner, 'the history marks the winner');
        assert.equal(groupContextValue(listed.group), 'aiderRunGroup.winner', 'Apply the Winner is offered');
        const applied = await server.execute(ServerCommand.applyRun, { run_id: group.groupId });
        assert.equal(applied.status, 'COMPLETE', applied.content);
        const action = runAction(applied);
        assert.equal(action.run_id, group.winner);
        assert.deepEqual(action.discarded, group.attempts.filter((attempt) => attempt.runId !== group.winner).map((attempt) => attempt.runId));
        assert.equal(fs.readFileSync(calc, 'utf8'), EDITED);
        const undo = await server.execute(ServerCommand.undo, { run_id: group.winner });
        assert.equal(undo.status, 'COMPLETE', undo.content);
        assert.equal(fs.readFileSync(calc, 'utf8'), ORIGINAL);
    });

    it('a note for a run that is not under way is refused, saying so', async () => {
        const inPlace = await server.execute(ServerCommand.steer, steerArgs('negative numbers too'));
        assert.equal(inPlace.status, 'FAILED', inPlace.content);
        assert.match(steerMessage('the run under way', inPlace).text, /^The note was not added to the run under way: .*under way/);
        const isolated = await server.execute(ServerCommand.steer, steerArgs('negative numbers too', 'no-such-run'));
        assert.equal(isolated.status, 'FAILED', isolated.content);
    });

    it('cancelling runTests stops the server\'s test process', async () => {
        await cancelWhileTesting(server, workspace, ServerCommand.runTests, {});
        assert.ok(server.progress.some((p) => p.value.kind === 'begin'), 'the server reported progress');
        const after = await server.execute(ServerCommand.getContext, { query: 'calculator' });
        assert.equal(after.status, 'COMPLETE', 'the server still answers after a cancel');
    });

    // Runs by itself once the server offers aider-lsp.workflow.run (nothing to edit here then).
    it('cancelling workflow.run during its tests stops the server\'s test process', async (t) => {
        if (!server.commands.includes(ServerCommand.workflowRun)) {
            t.skip('the server does not offer aider-lsp.workflow.run yet');
            return;
        }
        await cancelWhileTesting(server, workspace, ServerCommand.workflowRun, { goal: 'mark add as edited', max_retries: 1 });
        const progressMessages = server.progress.map((p) => p.value.message ?? p.value.title ?? '');
        assert.ok(progressMessages.some((message) => /test/i.test(message)), `a progress message about the tests: ${progressMessages.join(' | ')}`);
    });

    it('a workflow cancelled as the extension cancels (its progress) answers with the files it changed, for Undo', async () => {
        const pidFile = path.join(workspace, 'test.pid');
        fs.rmSync(pidFile, { force: true });
        fs.writeFileSync(path.join(workspace, 'pkg', 'calc.py'), ORIGINAL);
        const token = 'aider-lsp-client-test-1'; // the request's own workDoneToken, as server/execute.ts sends it
        const answer = server.connection.sendRequest(ExecuteCommandRequest.type, {
            command: ServerCommand.workflowRun,
            arguments: [{ goal: 'mark add as edited', max_retries: 1 }],
            workDoneToken: token,
        });
        await waitFor('the test process starts', () => fs.existsSync(pidFile) && fs.readFileSync(pidFile, 'utf8').length > 0, 120);
        const pid = Number(fs.readFileSync(pidFile, 'utf8'));
        assert.ok(server.progress.some((p) => p.token === token && p.value.kind === 'begin' && p.value.title !== undefined), 'the server reports under the request\'s token');
        await server.connection.sendNotification(WorkDoneProgressCancelNotification.type, { token });
        const result = asTaskResult(await answer);
        assert.ok(result, 'the request is answered, not dropped');
        assert.equal(result.status, 'FAILED');
        assert.equal((result.notes.error as { reason?: string } | undefined)?.reason, 'cancelled');
        assert.deepEqual(changeNotes(result).changed_files, ['pkg/calc.py']);
        assert.match(result.content, /pkg\/calc\.py/);
        await waitFor(`test process ${String(pid)} is gone`, () => !processAlive(pid), 30);
        const undo = await server.execute(ServerCommand.undo, {});
        assert.equal(undo.status, 'COMPLETE', undo.content);
        assert.equal(fs.readFileSync(path.join(workspace, 'pkg', 'calc.py'), 'utf8'), ORIGINAL);
    });
});
