/**
 * What this extension tells the server beyond the LSP: the client-side commands it has
 * (`capabilities.experimental.aiderLsp.clientCommands`). The server offers a code action that
 * points at a client command ("Edit selection with Aider") only to a client that lists it, so
 * editors without the command (Neovim, Helix) never get an action they cannot run.
 * No runtime import of vscode: the protocol test sends these capabilities to the real server.
 */
import type { ClientCapabilities, FeatureState, StaticFeature } from 'vscode-languageclient/node';
import { ClientCommand } from '../protocol';

/** The key of our experimental client capabilities (server: lsp/code_actions.py). */
const EXPERIMENTAL_KEY = 'aiderLsp';

/** The experimental capabilities with ours added; what the client already had is kept. */
function withClientCommands(experimental: unknown): Record<string, unknown> {
    const others = typeof experimental === 'object' && experimental !== null ? (experimental as Record<string, unknown>) : {};
    return { ...others, [EXPERIMENTAL_KEY]: { clientCommands: Object.values(ClientCommand) } };
}

/** A static feature of the language client: it only fills the capabilities sent at initialize. */
export class ClientCommandsFeature implements StaticFeature {
    fillClientCapabilities(capabilities: ClientCapabilities): void {
        capabilities.experimental = withClientCommands(capabilities.experimental);
    }

    getState(): FeatureState {
        return { kind: 'static' };
    }

    initialize(): void {
        // nothing to set up: the capability is all this feature is
    }

    clear(): void {
        // nothing to tear down
    }
}
