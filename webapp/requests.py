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


class UploadRequest(Request):
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
