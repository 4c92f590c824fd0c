"""The command line, one module per subcommand; main.py parses and dispatches (the `aider-lsp`
entry point and `python -m aider_lsp`). A front end like lsp/: it calls the Application and the
services, and nothing below imports it."""
