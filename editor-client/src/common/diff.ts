/**
 * Reading the server's unified diffs to rebuild a file's content before the edit, so VS Code's
 * diff editor can show before/after. An edit's diff and a workflow run's diff have one format
 * (the bundled Aider server's `unified_diff`): per file a `diff --git a/X b/X` header,
 * `new file mode …` / `deleted file mode …` lines, then difflib's `---`/`+++` lines and hunks. Plain
 * `git diff` output (`diff --git a/X b/X`, the public aider-mcp-server's own) reads the same way.
 */

/**
 * Each file's section of a multi-file unified diff, keyed by workspace-relative path: a section
 * starts at a `diff --… a/X b/X` header. Lines inside hunks never start with `diff --` (they
 * start with ` `, `+`, `-` or `\`), so a removed `-- comment` line is no header.
 */
export function splitDiff(diff: string): Map<string, string> {
    const files = new Map<string, string>();
    let current: string | undefined;
    let body: string[] = [];
    const flush = (): void => {
        if (current !== undefined) {
            files.set(current, body.join('\n'));
        }
    };
    for (const line of diff.split('\n')) {
        const header = /^diff --\S+ a\/(.+) b\/(.+)$/.exec(line);
        if (header) {
            flush();
            current = header[2];
            body = [line];
        } else if (current !== undefined) {
            body.push(line);
        }
    }
    flush();
    return files;
}

interface Hunk {
    newStart: number;
    lines: string[];
}

/** The hunks of one file's section: where each starts in the new content, and its lines. */
function parseHunks(fileDiff: string): Hunk[] {
    const hunks: Hunk[] = [];
    for (const line of fileDiff.split('\n')) {
        const head = /^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@/.exec(line);
        if (head) {
            const start = Number(head[1]);
            const count = head[2] === undefined ? 1 : Number(head[2]);
            hunks.push({ newStart: count === 0 ? start : start - 1, lines: [] });
        } else if (hunks.length > 0 && /^[ +\-\\]/.test(line)) {
            hunks[hunks.length - 1].lines.push(line);
        }
    }
    return hunks;
}

/** Lines with their end-of-line kept, the way difflib compares them. */
function splitKeepingEnds(text: string): string[] {
    return text.match(/[^\n]*\n|[^\n]+$/g) ?? [];
}

/**
 * The content before the edit, from the content after it and its diff; undefined when the file
 * no longer matches the diff (changed since) or the diff carries no hunks (binary, too large).
 */
export function contentBefore(after: string, fileDiff: string): string | undefined {
    if (/^new file(?: mode \d+)?$/m.test(fileDiff)) {
        return '';
    }
    const hunks = parseHunks(fileDiff);
    if (hunks.length === 0) {
        return undefined;
    }
    const current = splitKeepingEnds(after);
    const out: string[] = [];
    let index = 0;
    for (const hunk of hunks) {
        if (hunk.newStart < index || hunk.newStart > current.length) {
            return undefined;
        }
        out.push(...current.slice(index, hunk.newStart));
        index = hunk.newStart;
        const body = hunk.lines;
        for (let i = 0; i < body.length; i++) {
            const line = body[i];
            if (line.startsWith('\\')) {
                continue;
            }
            const noEol = body[i + 1]?.startsWith('\\') ?? false;
            const text = line.slice(1) + (noEol ? '' : '\n');
            if (line[0] === ' ' || line[0] === '+') {
                if (current[index] !== text) {
                    return undefined;
                }
                index += 1;
            }
            if (line[0] === ' ' || line[0] === '-') {
                out.push(text);
            }
        }
    }
    out.push(...current.slice(index));
    return out.join('');
}
