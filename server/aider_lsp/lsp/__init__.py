"""The LSP layer: translates the protocol into Application calls and owns no business logic.

lsp/server.py creates the one server and registers each feature module's `register(server)`
(lifecycle, configuration, documents, indexing, the command runtime). Each module does one
job: protocol.py the JSON-RPC patches, runtime.py running a command, progress.py work-done
progress, cancellation.py the one link to a pygls internal, documents.py the editor's buffers.
"""
