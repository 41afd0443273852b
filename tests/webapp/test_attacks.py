"""Attacks on what one request may cost: body sizes (finding 2 of issue #11) and slow senders (6).

The other findings have their tests beside the code they guard: ``test_attacks_access.py``
(sessions, invites, the shared limiter, team deletion), ``test_attacks_inputs.py`` (strict
numbers and bounded pages), ``test_attacks_jobs.py`` (workers, orphans, the time limit, the
fair queue) and the engine's import and pattern-time tests.

Bodies are fed through a stream that counts what the app read, so "refused before reading"
is asserted as bytes, not as time.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from flask import Flask
from flask.testing import FlaskClient

from tests.webapp.conftest import login_as, make_app
from webapp.requests import BODY_BYTES, REFUSED_BODY_BYTES

GIB = 1 << 30


class CountingBody(io.RawIOBase):
    """An endless body of ``x`` bytes that records how many were read."""

    def __init__(self) -> None:
        self.read_bytes = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        size = len(buffer)
        buffer[:size] = b"x" * size
        self.read_bytes += size
        return size


def _post(client: FlaskClient, path: str, body: CountingBody, *, declared: int | None,
          content_type: str = "multipart/form-data; boundary=zz") -> tuple[int, str]:
    environ = {"wsgi.input": body, "CONTENT_TYPE": content_type}
    if declared is None:
        environ["wsgi.input_terminated"] = True  # a chunked body, as gunicorn reports it
    else:
        environ["CONTENT_LENGTH"] = str(declared)
    response = client.open(path, method="POST", environ_overrides=environ)
    return response.status_code, response.get_data(as_text=True)


def _tmp_files(app: Flask) -> list[Path]:
    return list(Path(app.config["UPLOAD_TMP_DIR"]).iterdir())


@pytest.fixture
def csrf_app(tmp_path: Path) -> Flask:
    """The app as deployed: the CSRF check parses forms before the login gate runs."""
    return make_app(tmp_path, f"sqlite:///{tmp_path / 'csrf.sqlite3'}", WTF_CSRF_ENABLED=True)


def test_logged_out_upload_declaring_5_gib_is_refused_unread(csrf_app: Flask) -> None:
    body = CountingBody()
    status, text = _post(csrf_app.test_client(), "/corpora/", body, declared=5 * GIB)
    assert status == 413 and "at most 0.06 MiB" in text
    assert body.read_bytes == 0 and _tmp_files(csrf_app) == []


def test_logged_out_chunked_upload_stops_at_the_small_limit(csrf_app: Flask) -> None:
    body = CountingBody()
    status, _ = _post(csrf_app.test_client(), "/corpora/", body, declared=None)
    assert status == 413
    assert body.read_bytes <= REFUSED_BODY_BYTES + (64 << 10)  # one read buffer of slack
    assert _tmp_files(csrf_app) == []


def test_signed_in_upload_is_capped_by_the_upload_setting(tmp_path: Path) -> None:
    app = make_app(tmp_path, f"sqlite:///{tmp_path / 'a.sqlite3'}", MAX_UPLOAD_BYTES=1 << 20)
    client = login_as(app.test_client(), 1)
    body = CountingBody()
    status, text = _post(client, "/corpora/", body, declared=(4 << 20) + (1 << 20) + 1)
    assert status == 413 and "at most 5.00 MiB" in text and body.read_bytes == 0
    body = CountingBody()
    status, _ = _post(client, "/corpora/", body, declared=None)  # chunked: cut at the limit
    assert status == 413 and body.read_bytes <= (5 << 20) + (64 << 10)


def test_signed_in_form_and_api_bodies_have_the_general_limit(client: FlaskClient) -> None:
    body = CountingBody()
    status, text = _post(client, "/api/v1/encode", body, declared=BODY_BYTES + 1,
                         content_type="application/json")
    assert status == 413 and body.read_bytes == 0
    body = CountingBody()
    status, _ = _post(client, "/tokenizers/1/encode", body, declared=BODY_BYTES + 1,
                      content_type="application/x-www-form-urlencoded")
    assert status == 413 and body.read_bytes == 0


def test_a_login_form_is_still_accepted(anon_client: FlaskClient) -> None:
    response = anon_client.post("/login", data={"email": "alice@example.com", "password": "wrong"})
    assert response.status_code in (200, 401, 422)  # a re-rendered form, not a 413
