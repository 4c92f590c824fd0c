"""An HTTP server that answers every request with one status: an endpoint that refuses a key
(401), a base URL that is not an API's root (404), … (tests of doctor, login, the run)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@contextmanager
def answering(status: int, body: Any = None) -> Iterator[str]:
    """A server answering every GET and POST with `status` (`body` as JSON); its base URL."""

    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            data = json.dumps(body if body is not None else {"detail": "Not Found"}).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = _answer

        def log_message(self, *args: Any) -> None:
            """Quiet."""

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
