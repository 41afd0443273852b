"""A WSGI app for the web-process balancing tests: it names the process that answered, and
``/hold`` does not answer while the file named by ``TOKENFORGE_TEST_HOLD`` exists, so a test
can keep a thread busy for as long as it needs and then let it go. On entering ``/hold`` it
creates that name plus ``.entered``, so the test knows the request has its thread."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable
from typing import Any

HOLD_FILE = os.environ.get("TOKENFORGE_TEST_HOLD", "")
HOLD_SECONDS = 30.0


def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
    if environ["PATH_INFO"] == "/hold":
        with open(HOLD_FILE + ".entered", "w"):
            pass
        deadline = time.monotonic() + HOLD_SECONDS
        while os.path.exists(HOLD_FILE) and time.monotonic() < deadline:
            time.sleep(0.01)
    body = str(os.getpid()).encode()
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
    return [body]
