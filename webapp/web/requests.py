"""What a request body may cost: its size limit, and where uploaded file parts go.

- **Size.** Before anything reads the body (the CSRF check parses forms, and it runs before
  the login gate), :func:`limit_body` gives each request its byte limit: the corpus upload and
  the tokenizer import accept large bodies from signed-in users only; every other request,
  and any request the login gate would turn away, gets a small limit. A declared
  ``Content-Length`` beyond the limit is a 413 at once, with nothing read; a chunked body is
  cut off with a 413 when it passes the limit. (The HTTP server then closes the connection
  instead of draining the rest: ``server.py``.)
- **Spooling.** Werkzeug spools each uploaded file part into a temporary file while parsing
  the form. Ours are created in the corpus store's ``tmp`` folder (the same disk as the store,
  never RAM-backed ``/tmp``) and remembered, so they are closed at the end of the request even
  when the client disconnected halfway and the form never finished parsing.
- **Admission.** A view whose body is expensive to receive (an upload) may register a gate
  (:func:`add_gate`) that runs right after the size check, before anything reads the body:
  a budget it finds spent (uploads running at once, a disk quota) is answered before one byte
  of the body is spooled.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Collection
from typing import IO

from flask import Flask, Request, current_app, g, request
from flask_login import current_user
from werkzeug.exceptions import RequestEntityTooLarge
from werkzeug.wrappers import Response

#: Every request that is not a signed-in upload: forms, share-link encodes and the JSON API. A
#: decode of the API's 1,000,000 ids is about 7 MB of JSON, and the longest text it encodes
#: (200,000 characters, each possibly a 12-byte escaped surrogate pair) about 2.4 MB.
BODY_BYTES = 16 << 20
#: A request the login gate will refuse anyway needs no more than a login form.
REFUSED_BODY_BYTES = 64 << 10
_OPEN_ENDPOINTS = "tokenforge.open_endpoints"  # app.extensions key: endpoints open to visitors
_GATES = "tokenforge.body_gates"  # app.extensions key: endpoint -> its admission check
#: WSGI environ key the server sets (``server.py``): a callable that says whether it ended this
#: request's body early because it arrived too slowly.
CUT_OFF_KEY = "tokenforge.body_cut_off"
#: The largest tokenizer file an import reads (one part; an import sends up to four of them).
MAX_IMPORT_BYTES = 64 << 20


class _CountingStream:
    """Wraps the WSGI input to count the body bytes the form parser actually received."""

    def __init__(self, stream: IO[bytes]) -> None:
        self.stream = stream
        self.count = 0

    def read(self, size: int = -1) -> bytes:
        data = self.stream.read(size)
        self.count += len(data)
        return data

    def readline(self, size: int = -1) -> bytes:
        data = self.stream.readline(size)
        self.count += len(data)
        return data


class UploadRequest(Request):
    """Spools uploads to disk in the store's tmp folder and counts the body bytes received."""

    _counter: _CountingStream | None = None

    def _get_stream_for_parsing(self) -> IO[bytes]:
        self._counter = _CountingStream(super()._get_stream_for_parsing())
        return self._counter  # type: ignore[return-value]

    @property
    def body_cut_short(self) -> bool:
        """Whether the parsed body was shorter than its Content-Length (client went away)."""
        received = self._counter.count if self._counter is not None else 0
        return received < (self.content_length or 0)

    def _get_file_stream(self, total_content_length: int | None, content_type: str | None,
                         filename: str | None = None,
                         content_length: int | None = None) -> IO[bytes]:
        tmp_dir = current_app.config["UPLOAD_TMP_DIR"]
        stream: IO[bytes] = tempfile.TemporaryFile("wb+", dir=tmp_dir)  # type: ignore[assignment]
        g.setdefault("upload_streams", []).append(stream)
        return stream


def _upload_limits() -> dict[str, int]:
    """Endpoint -> body limit of the views that take files; several files may come at once."""
    corpus_file = int(current_app.config["MAX_UPLOAD_BYTES"])
    return {"corpora.upload": 4 * corpus_file + (1 << 20),
            "transfer.import_upload": 4 * MAX_IMPORT_BYTES + (1 << 20)}


def body_limit() -> int:
    """The most bytes the current request's body may have (see the module docstring)."""
    endpoint = request.endpoint or ""
    if current_user.is_authenticated:
        return _upload_limits().get(endpoint, BODY_BYTES)
    if endpoint in current_app.extensions[_OPEN_ENDPOINTS]:
        return BODY_BYTES
    return REFUSED_BODY_BYTES


def body_cut_off() -> bool:
    """Whether the server ended this request's body for arriving too slowly (``UPLOAD_*`` settings)."""
    told = request.environ.get(CUT_OFF_KEY)
    return bool(told()) if callable(told) else False


def size_text(count: int) -> str:
    """A byte count as people read it: ``100 bytes``, ``64 KiB``, ``1.5 MiB``, ``5,120 MiB``."""
    for unit, size in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if count >= size:
            return f"{count / size:,.1f}".removesuffix(".0") + f" {unit}"
    return f"{count:,} byte{'s' if count != 1 else ''}"


def limit_body() -> Response | None:
    """Before every other check: refuse a body declared too large, cap one that is chunked, then
    run the view's admission gate (its answer, if any, is given with the body unread)."""
    limit = body_limit()
    request.max_content_length = limit
    if (request.content_length or 0) > limit:
        raise RequestEntityTooLarge(f"This request may carry at most {size_text(limit)}; "
                                    f"it declared {size_text(request.content_length or 0)}.")
    gate = current_app.extensions.get(_GATES, {}).get(request.endpoint or "")
    return gate() if gate is not None else None


def add_gate(app: Flask, endpoint: str, gate: Callable[[], Response | None]) -> None:
    """Run ``gate`` before the body of a request to ``endpoint`` is read; a response it returns is the answer."""
    app.extensions.setdefault(_GATES, {})[endpoint] = gate


def _close_uploads(_exc: BaseException | None) -> None:
    for stream in g.pop("upload_streams", []):
        stream.close()


def init_app(app: Flask, *, open_endpoints: Collection[str]) -> None:
    """Use :class:`UploadRequest`, limit bodies first thing, close temp files after every request.

    ``open_endpoints`` are the views a visitor who is not signed in may reach (the login gate's
    public and shareable ones, which the access area defines): only they get more than
    :data:`REFUSED_BODY_BYTES` from such a visitor. Call before any other extension registers a
    ``before_request`` that may read the body.
    """
    app.extensions[_OPEN_ENDPOINTS] = frozenset(open_endpoints)
    app.request_class = UploadRequest
    app.before_request(limit_body)
    app.teardown_request(_close_uploads)
