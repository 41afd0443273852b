"""Attacks on what one request may cost: body sizes (finding 2 of issue #11), slow senders (6) and
the playground's hot path (14).

Every finding of issue #11 has its tests; the others stand beside the code they guard:

- 1, 3, 5, 12 (imports and pattern time): ``tests/engine/test_limits.py``,
  ``tests/engine/test_import_fuzz.py``, ``tests/webapp/test_import_attacks.py``; one long piece
  in any model: ``tests/engine/test_long_pieces.py``; pages of a pathological stored
  tokenizer: ``tests/webapp/test_attacks_inputs.py``;
- 4, 13 (options, time limit, fair queue, workers, orphans): ``tests/webapp/test_attacks_jobs.py``,
  ``tests/engine/test_trainer_limits.py``, ``tests/webapp/test_jobs.py``,
  ``tests/webapp/test_worker.py``, ``tests/webapp/test_faults.py``;
- 7, 8, 9, 11 (invites, sessions, the shared limiter, team deletion):
  ``tests/webapp/test_attacks_access.py`` and ``tests/webapp/test_security.py``;
- 10 (no input gives a 500; API errors are JSON): ``tests/webapp/test_attacks_inputs.py``,
  which walks every route.

Bodies are fed through a stream that counts what the app read, so "refused before reading"
is asserted as bytes, not as time.
"""

from __future__ import annotations

import socket
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from flask import Flask
from flask.testing import FlaskClient

from tests.live import LiveApp
from tests.webapp.conftest import CountingBody, login_as, make_app
from tests.webapp.playground_samples import byte_bpe, store
from webapp.web.requests import BODY_BYTES, REFUSED_BODY_BYTES
from webapp.web.server import HEAD_SECONDS

GIB = 1 << 30


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
    assert status == 413 and "may carry at most 64 KiB; it declared 5,120 MiB." in text
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
    assert status == 413 and "at most 5 MiB" in text and body.read_bytes == 0
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


# --- Slow senders and oversized bodies against a real ``tokenforge serve`` --------------------

@pytest.mark.parametrize("raw, complete", [
    (b"GET / HTTP/1.1\r\nHost: x\r\n", False),
    (b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", True),
    (b"POST /login HTTP/1.1\r\nContent-Length: 5\r\n\r\nab", False),
    (b"POST /login HTTP/1.1\r\ncontent-length: 5\r\n\r\nabcde", True),
    (b"POST /corpora/ HTTP/1.1\r\nContent-Length: 5368709120\r\n\r\n", True),  # a thread reads it
    (b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", True),
    (b"POST / HTTP/1.1\r\nContent-Length: 1x\r\n\r\n", True),  # malformed: gunicorn's 400
    (b"GET /" + b"a" * (65 << 10), True),  # no end in sight: gunicorn's header limits apply
], ids=["partial-head", "head", "partial-small-body", "small-body", "large-body", "chunked",
        "bad-length", "endless-head"])
def test_a_request_is_complete_when_its_head_and_small_body_arrived(raw: bytes, complete: bool) -> None:
    from webapp.web.server import head_complete

    assert head_complete(raw) is complete


@pytest.fixture
def live(tmp_path: Path) -> Iterator[LiveApp]:
    app = LiveApp(tmp_path / "data", workers=1, threads=2, job_worker=False)
    app.start()
    yield app
    app.stop()


def _healthz(live: LiveApp) -> int:
    with urllib.request.urlopen(live.url + "healthz", timeout=3) as answer:
        return int(answer.status)


@pytest.mark.slow
def test_slow_senders_do_not_starve_other_clients(live: LiveApp) -> None:
    """Ten clients trickling a login form hold no thread: /healthz answers all along."""
    sockets = [socket.create_connection(("127.0.0.1", live.port)) for _ in range(10)]
    try:
        for sock in sockets:
            sock.sendall(b"POST /login HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\n")
        statuses = []
        for _ in range(3):
            for sock in sockets:
                sock.sendall(b"X")  # one byte of a header line each second
            statuses.append(_healthz(live))
            time.sleep(1)
        assert statuses == [200, 200, 200]
        # The heads never finish: each connection is closed once HEAD_SECONDS have passed.
        for sock in sockets:
            sock.settimeout(HEAD_SECONDS + 10)
            assert sock.recv(100) == b""
    finally:
        for sock in sockets:
            sock.close()


@pytest.mark.slow
def test_an_oversized_body_is_answered_without_being_read(live: LiveApp) -> None:
    """A 5 GiB body declared to a logged-out upload: a 413, and the socket closes unread."""
    with socket.create_connection(("127.0.0.1", live.port)) as sock:
        sock.sendall(b"POST /corpora/ HTTP/1.1\r\nHost: x\r\nContent-Length: 5368709120\r\n"
                     b"Content-Type: multipart/form-data; boundary=zz\r\n\r\n" + b"x" * 4096)
        sock.settimeout(10)
        answer = b""
        while chunk := sock.recv(65536):  # ends when the server closes the connection
            answer += chunk
        assert answer.startswith(b"HTTP/1.1 413 ")
    assert _healthz(live) == 200


# --- The playground's hot path (finding 14) ---------------------------------------------------

def test_an_encode_never_reads_the_training_statistics(app: Flask, client: FlaskClient) -> None:
    """The stats column (half a megabyte for a 32k BPE) stays unread by encodes; pages that show it read it."""
    from sqlalchemy import event

    from webapp.store import db

    ref = store(app, byte_bpe(), stats={"merges": [[[104, 101], 7]], "curve": []})
    statements: list[str] = []
    with app.app_context():
        engine = db.get_engine(app)

    def record(_conn: object, _cursor: object, statement: str, *_: object) -> None:
        statements.append(statement)

    event.listen(engine, "before_cursor_execute", record)
    try:
        assert client.post(f"/tokenizers/{ref}/encode", data={"text": "hello"}).status_code == 200
        assert client.post("/api/v1/encode", json={"tokenizer": ref, "text": "hello"}).status_code == 200
        assert client.post("/api/v1/encode", json={"tokenizer": str(ref), "text": "hi"}).status_code == 200
        assert not [s for s in statements if "tokenizers.stats" in s]
        assert client.get(f"/tokenizers/{ref}/inspect?token=104").status_code in (200, 404)
    finally:
        event.remove(engine, "before_cursor_execute", record)


@pytest.mark.parametrize("ref", ["²", "１", " 7 ", 2**63, -1, True, 1.0, [1], {"id": 1}, "9" * 40])
def test_api_tokenizer_references_never_break(client: FlaskClient, ref: object) -> None:
    response = client.post("/api/v1/encode", json={"tokenizer": ref, "text": "hi"})
    assert response.status_code in (400, 404) and "error" in response.get_json()
