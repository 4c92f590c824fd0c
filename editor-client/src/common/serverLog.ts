/**
 * The server's stderr in the log at the server's own levels. `aider-lsp serve` logs with
 * Python's logging, one record a line: `2026-11-23 21:05:53,123 INFO aider_lsp.app: message`
 * (server cli.py). The language client's default writes every stderr line as an error; here
 * the level prefix is read, and lines without one (a traceback's body, a child's output) take
 * the level of the record they follow.
 */
import * as readline from 'node:readline';
import type * as stream from 'node:stream';
import type * as vscode from 'vscode';

type LogLevel = 'trace' | 'debug' | 'info' | 'warn' | 'error';

const RECORD = /^\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[,.]\d+)? (DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL) (.*)$/;

const LEVELS: Record<string, LogLevel> = {
    DEBUG: 'debug',
    INFO: 'info',
    WARNING: 'warn',
    WARN: 'warn',
    ERROR: 'error',
    CRITICAL: 'error',
    FATAL: 'error',
};

/** One stderr line: its level and its text without the timestamp and level (the log adds its own). */
export function parseServerLine(line: string, previous: LogLevel): { level: LogLevel; text: string } {
    const record = RECORD.exec(line);
    if (record) {
        return { level: LEVELS[record[1] ?? ''] ?? 'info', text: record[2] ?? '' };
    }
    // a Python crash before logging is set up has no record line before its traceback
    return { level: line.startsWith('Traceback (most recent call last)') ? 'error' : previous, text: line };
}

/** Reads the server's stderr into `channel` line by line, each at its level. */
export function pipeServerLog(input: stream.Readable, channel: vscode.LogOutputChannel): void {
    let level: LogLevel = 'info';
    readline.createInterface({ input, crlfDelay: Infinity, terminal: false, historySize: 0 }).on('line', (line: string) => {
        const parsed = parseServerLine(line, level);
        level = parsed.level;
        channel[level](parsed.text);
    });
}

/** The language client's default for a server's stdout (used only by transports other than stdio). */
export function pipeServerStdout(input: stream.Readable, channel: vscode.LogOutputChannel): void {
    readline.createInterface({ input, crlfDelay: Infinity, terminal: false, historySize: 0 }).on('line', (line: string) => {
        channel.info(line);
    });
}
