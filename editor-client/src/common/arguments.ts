/**
 * Command arguments from what the user has in front of them: the active file, the files chosen
 * in the explorer and the selection. Pure functions on paths, so they are tested without VS Code.
 */
import * as path from 'node:path';
import type { Range, Selection } from '../protocol';

/**
 * Workspace-relative, `/`-separated paths for `file_context`: duplicates dropped, files outside
 * the workspace left out (the server would refuse them anyway), order kept (active file first).
 */
export function fileContext(filePaths: readonly string[], workspaceRoot: string, sep: string = path.sep): string[] {
    const pathApi = sep === '\\' ? path.win32 : path.posix;
    const root = pathApi.resolve(workspaceRoot);
    const seen = new Set<string>();
    const out: string[] = [];
    for (const filePath of filePaths) {
        const rel = pathApi.relative(root, pathApi.resolve(root, filePath));
        if (rel === '' || rel.startsWith('..') || pathApi.isAbsolute(rel)) {
            continue;
        }
        const portable = rel.split(pathApi.sep).join('/');
        if (!seen.has(portable)) {
            seen.add(portable);
            out.push(portable);
        }
    }
    return out;
}

/** The `selection` argument, or undefined for an empty selection (nothing to point Aider at). */
export function selectionArgument(uri: string, range: Range, text: string): Selection | undefined {
    const empty = range.start.line === range.end.line && range.start.character === range.end.character;
    if (empty || text.trim() === '') {
        return undefined;
    }
    return { uri, range, text };
}

