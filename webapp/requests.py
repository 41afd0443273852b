"""The request class: uploaded file parts go straight to disk and are always closed.

Werkzeug spools each uploaded file part into a temporary file while parsing the form. Ours are
created in the corpus store's ``tmp`` folder (the same disk as the store, never RAM-backed
``/tmp``) and remembered, so they are closed at the end of the request even when the client
disconnected halfway and the form never finished parsing.
"""

from __future__ import annotations

import tempfile
from typing import IO

from flask import Flask, Request, current_app, g


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


def _close_uploads(_exc: BaseException | None) -> None:
    for stream in g.pop("upload_streams", []):
        stream.close()


def init_app(app: Flask) -> None:
    """Use :class:`UploadRequest` and close its temp files after every request."""
    app.request_class = UploadRequest
    app.teardown_request(_close_uploads)
