/**
 * "Edit with Aider" (palette, editor and explorer menus) and the server's "Edit selection with
 * Aider" code action: save dirty files (asked first), ask for the instruction, run one Aider edit, tell the outcome.
 */
import * as vscode from 'vscode';
import { selectionArgument } from '../common/arguments';
import { resultMessage } from '../common/results';
import { ServerCommand, type CommandArgs, type EditSelectionArgs, type Selection } from '../protocol';
import { tell, type FlowContext } from '../ui/context';
import { chosenFiles, fromExplorer, placeOf, saveDirtyFiles, type Place } from '../ui/files';

/** The active file, the explorer's files and (not from the explorer) the editor's selection. */
export async function edit(ctx: FlowContext, clicked?: unknown, selected?: unknown): Promise<void> {
    const place = await placeOf(chosenFiles(clicked, selected), vscode.window.activeTextEditor?.document.uri);
    if (!place) {
        return;
    }
    const editor = vscode.window.activeTextEditor;
    const selection =
        !fromExplorer(clicked, selected) && editor
            ? selectionArgument(editor.document.uri.toString(), rangeOf(editor.selection), editor.document.getText(editor.selection))
            : undefined;
    await askAndEdit(ctx, 'Edit with Aider', place, selection);
}

/** The server's "Edit selection with Aider" code action: {uri, range} → an instruction → an edit. */
export async function editSelection(ctx: FlowContext, arg: unknown): Promise<void> {
    if (!isEditSelectionArgs(arg)) {
        return edit(ctx);
    }
    const uri = vscode.Uri.parse(arg.uri);
    const document = await vscode.workspace.openTextDocument(uri);
    const range = new vscode.Range(arg.range.start.line, arg.range.start.character, arg.range.end.line, arg.range.end.character);
    const selection = selectionArgument(arg.uri, arg.range, document.getText(range));
    const place = await placeOf([uri]);
    if (place) {
        await askAndEdit(ctx, 'Edit selection with Aider', place, selection);
    }
}

async function askAndEdit(ctx: FlowContext, title: string, place: Place, selection: Selection | undefined): Promise<void> {
    const { files, root, folder } = place;
    // first: a "no" to saving then costs no typed instruction
    if (!(await saveDirtyFiles())) {
        return;
    }
    const prompt = await vscode.window.showInputBox({
        title,
        prompt: files.length > 0 ? `Files: ${files.join(', ')}${selection ? ' (with the selection)' : ''}` : 'Aider picks the files',
        placeHolder: 'What should Aider change?',
        ignoreFocusOut: true,
    });
    if (!prompt) {
        return;
    }
    const arg: CommandArgs['aider-lsp.aider.automatic'] = {
        prompt,
        ...(files.length > 0 ? { file_context: files } : {}),
        ...(selection ? { selection } : {}),
    };
    const result = await ctx.server.run('Editing with Aider', ServerCommand.automatic, arg, folder);
    if (result) {
        await tell(ctx, resultMessage('Edit with Aider', result), root);
    }
}

function rangeOf(selection: vscode.Selection): EditSelectionArgs['range'] {
    return {
        start: { line: selection.start.line, character: selection.start.character },
        end: { line: selection.end.line, character: selection.end.character },
    };
}

function isEditSelectionArgs(value: unknown): value is EditSelectionArgs {
    if (typeof value !== 'object' || value === null) {
        return false;
    }
    const candidate = value as { uri?: unknown; range?: { start?: { line?: unknown }; end?: { line?: unknown } } };
    return (
        typeof candidate.uri === 'string' &&
        typeof candidate.range?.start?.line === 'number' &&
        typeof candidate.range?.end?.line === 'number'
    );
}
