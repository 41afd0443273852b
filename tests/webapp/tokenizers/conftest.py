"""Fixtures shared by the preset tests: a local HTTP server standing in for the npm registry."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator

import pytest


@pytest.fixture
def served() -> Iterator[tuple[str, dict[str, bytes]]]:
    """A local HTTP server; put bytes in the dict under a path and GET them at the URL."""
    files: dict[str, bytes] = {}

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (the stdlib's name)
            body = files.get(self.path)
            self.send_response(200 if body is not None else 404)
            self.send_header("Content-Length", str(len(body or b"")))
            self.end_headers()
            self.wfile.write(body or b"")

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", files
    finally:
        server.shutdown()
        server.server_close()
