"""The Agent Client Protocol front end (`aider-lsp acp`), beside `lsp/` on the same Application.

Editors that host coding agents (Zed, JetBrains, Neovim, Emacs, VS Code's ACP client) start it
over stdio. Like `lsp/` it is thin: a prompt's content is parsed into the typed requests the
Application takes (prompt.py), its typed answers are rendered as `session/update`s (render.py,
diffs.py), and the three modes (modes.py) choose which Application method a turn calls
(turns.py). agent.py holds the session table and the protocol's methods; server.py serves it.
"""
