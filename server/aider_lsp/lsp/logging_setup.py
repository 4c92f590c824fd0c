"""Server log filters: one line per client mistake, no traceback for the process's exit.

Installed by `aider-lsp serve` (cli/serve.py) before the server starts, never on import.
"""

from __future__ import annotations

import asyncio
import logging

from pygls.exceptions import JsonRpcException

PYGLS_LOGGERS = ("pygls.protocol.json_rpc", "pygls.server", "pygls.io_")


class OneLineClientErrors(logging.Filter):
    """A client's bad message is the client's mistake: log one line, not a pygls traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        message = record.getMessage()
        if message.startswith("Unable to deserialize message"):
            record.msg, record.args = "a client message did not decode (details follow)", ()
        elif isinstance(exc, (JsonRpcException, ValueError, RecursionError)):  # RecursionError: `[[[[…`
            record.msg, record.args = f"{message.splitlines()[0][:300]}: {str(exc)[:300]}", ()
            record.exc_info, record.exc_text = None, None
        return True


def not_the_exit(record: logging.LogRecord) -> bool:
    """pygls ends the process with sys.exit inside a message callback (TCP session end, `exit`
    without `shutdown`); asyncio would log that exit, and the tasks it cancels, as unhandled
    exceptions with tracebacks."""
    return not (record.exc_info and isinstance(record.exc_info[1], (SystemExit, asyncio.CancelledError)))


def install_log_filters() -> None:
    """Called by `aider-lsp serve` (after cli/main.py sends logs to stderr) before serving."""
    for name in PYGLS_LOGGERS:
        logger = logging.getLogger(name)
        logger.addFilter(OneLineClientErrors())
    logging.getLogger("asyncio").addFilter(not_the_exit)
