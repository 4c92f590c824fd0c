/**
 * What the status item says about the folder of the active editor: the model in use there and,
 * in its tooltip, both models and the test command. Pure, so it is tested without VS Code.
 */

/** The settings of one folder as the status item shows them (read with the folder's scope). */
export interface FolderStatus {
    /** The folder's name, in a window of several folders (else undefined: nothing to tell apart). */
    folder?: string;
    aiderModel?: string;
    model?: string;
    testCommand?: string;
}

export interface StatusSummary {
    /** Beside the state icon: the folder (multi-root) and the model Aider edits with. */
    label: string | undefined;
    /** Tooltip lines. */
    lines: string[];
}

const nonEmpty = (value: string | undefined): string | undefined => (value && value.trim() !== '' ? value : undefined);

export function statusSummary(status: FolderStatus): StatusSummary {
    const aider = nonEmpty(status.aiderModel);
    const planning = nonEmpty(status.model);
    const inUse = aider ?? planning; // without aiderModel the server derives Aider's from `model`
    const label = [status.folder, inUse].filter((part): part is string => part !== undefined).join(' · ');
    const lines = [
        ...(status.folder ? [`Folder: ${status.folder}`] : []),
        ...(inUse ? [`Aider model: ${aider ?? `from ${planning}`} (Aider: Select Model… to change)`] : []),
        ...(planning ? [`Planning model: ${planning}`] : []),
        `Test command: ${nonEmpty(status.testCommand) ?? 'the one aider-lsp detects'}`,
    ];
    return { label: label === '' ? undefined : label, lines };
}
