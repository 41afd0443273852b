"""Chat renders run in the render lane (``webapp/web/server.py``), never in a request thread.

A real ``tokenforge serve`` with one request thread renders a chat template that loops until its
deadline, and ``/healthz`` and a page still answer at once; without the lane they waited for the
render's deadline. The classifier that picks the lane is tested on request heads directly: the
chat routes in, look-alikes and query strings out. The one bound below proves "not blocked"
(a second, against a 2 s render); no test times performance.
"""

from __future__ import annotations

import json
import re
import socket
import threading
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import pytest

from engine.presets import byte_level_bpe
from tests.live import Answer, Client, LiveApp, wait_for
from webapp.web.server import renders_chat

BURNER = "{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}"
NOT_BLOCKED = 1.0  # seconds; the burner's render runs for 2
HOST = "127.0.0.1"


def head(line: str, body: bytes | None = None) -> bytes:
    """A request head with ``line`` as its request line (and ``body``, with its length)."""
    if body is None:
        return f"{line}\r\nHost: x\r\n\r\n".encode()
    return f"{line}\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body


@pytest.mark.parametrize("line", [
    "GET /tokenizers/1/chat HTTP/1.1",
    "HEAD /tokenizers/1/chat HTTP/1.1",
    "POST /tokenizers/42/chat HTTP/1.1",
    "GET /tokenizers/1/chat?template=chatml HTTP/1.1",
    "GET /s/Ab-_9xYz/chat HTTP/1.1",
    "GET /tokenizers/1/%63hat HTTP/1.1",  # Werkzeug decodes it to /chat
    "GET http://example.com/tokenizers/1/chat HTTP/1.1",  # absolute form: gunicorn takes its path
], ids=["page", "head", "post", "query", "share-link", "percent-encoded", "absolute-uri"])
def test_chat_render_requests_go_to_the_render_lane(line: str) -> None:
    assert renders_chat(head(line))


@pytest.mark.parametrize("line", [
    "GET /tokenizers/1/chatter HTTP/1.1",
    "GET /tokenizers/1/chat/ HTTP/1.1",
    "GET /tokenizers/1/encode?next=/tokenizers/1/chat HTTP/1.1",
    "POST /tokenizers/1/encode HTTP/1.1",
    "GET /tokenizers/chat HTTP/1.1",
    "GET /s/abc HTTP/1.1",
    "GET /healthz HTTP/1.1",
    "DELETE /tokenizers/1/chat HTTP/1.1",
    "get /tokenizers/1/chat HTTP/1.1",  # gunicorn keeps the case, Flask answers 405
    "GET /tokenizers/1/chat",  # no version: gunicorn's 400
    "GET  /tokenizers/1/chat HTTP/1.1",
], ids=["chatter", "trailing-slash", "in-query", "encode", "no-id", "share-link-page", "healthz", "delete",
        "lower-case", "no-version", "two-spaces"])
def test_other_requests_stay_with_the_request_threads(line: str) -> None:
    assert not renders_chat(head(line))


@pytest.mark.parametrize(("body", "lane"), [
    (b'{"tokenizer": 1, "messages": [{"role": "user", "content": "hi"}]}', True),
    (b'{"tokenizer": 1, "\\u006dessages": []}', True),  # the key as JSON decodes it
    (b'{"tokenizer": 1, "text": "messages"}', False),
    (b'["messages"]', False),
    (b'{"messages": ', False),  # not JSON: the API answers 400
    (b"[" * 50_000 + b"]" * 50_000, False),  # too deep for the parser: a 400 too
], ids=["chat", "escaped-key", "word-in-text", "not-an-object", "broken", "deep"])
def test_the_apis_chat_branch_is_told_by_its_body(body: bytes, lane: bool) -> None:
    assert renders_chat(head("POST /api/v1/encode HTTP/1.1", body)) is lane
    assert not renders_chat(head("POST /api/v1/decode HTTP/1.1", body))


def test_an_api_encode_whose_body_is_not_buffered_goes_to_the_render_lane() -> None:
    assert renders_chat(b"POST /api/v1/encode HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")


@pytest.fixture
def one_thread(tmp_path: Path) -> Iterator[LiveApp]:
    """A server with a single request thread, and renders stopped after 2 s."""
    app = LiveApp(tmp_path / "data", workers=1, threads=1, job_worker=False,
                  env={"TOKENFORGE_CHAT_RENDER_SECONDS": "2"})
    app.start()
    yield app
    app.stop()


def import_burner(client: Client) -> int:
    """Import a tiny tokenizer whose chat template loops until it is stopped; its id."""
    boundary = "renderlanetest"
    token = client.token("import")
    files = {"file": ("tokenizer.json", byte_level_bpe({i: bytes([i]) for i in range(256)}, []).to_json()),
             "config": ("tokenizer_config.json", json.dumps({"chat_template": BURNER}))}
    parts = [f'--{boundary}\r\nContent-Disposition: form-data; name="{k}"\r\n\r\n{v}\r\n'
             for k, v in {"csrf_token": token, "kind": "tokenizer_json", "name": "burner"}.items()]
    parts += [f'--{boundary}\r\nContent-Disposition: form-data; name="{field}"; filename="{name}"\r\n'
              f"Content-Type: application/json\r\n\r\n{data}\r\n" for field, (name, data) in files.items()]
    body = ("".join(parts) + f"--{boundary}--\r\n").encode()
    answer = client.request("import", body, {"Content-Type": f"multipart/form-data; boundary={boundary}"})
    found = re.search(r"/tokenizers/(\d+)", answer.url)
    assert answer.status == 200 and found is not None, (answer.status, answer.url)
    return int(found.group(1))


def timed(client: Client, path: str) -> tuple[int, float]:
    started = time.monotonic()
    answer = client.request(path, timeout=10)
    return answer.status, time.monotonic() - started


@pytest.mark.slow
def test_a_running_chat_render_holds_no_request_thread(one_thread: LiveApp) -> None:
    member = Client(one_thread.url)
    member.signup()
    tokenizer_id = import_burner(member)
    fields = {"role": "user", "content": "hello"}
    assert member.post(f"tokenizers/{tokenizer_id}/chat", {"template": "chatml", **fields}).status == 200
    before = set(one_thread.processes())  # the sandbox's forkserver runs now
    result: list[Answer] = []
    burner = threading.Thread(target=lambda: result.append(
        member.post(f"tokenizers/{tokenizer_id}/chat", {"template": "tokenizer", **fields})))
    burner.start()
    try:
        wait_for(lambda: bool(set(one_thread.processes()) - before), "the render's sandboxed child", limit=30)
        visitor = Client(one_thread.url)
        quick = [timed(visitor, "healthz"), timed(visitor, "login")]
        still_rendering = burner.is_alive()
    finally:
        burner.join(timeout=60)
    assert [status for status, _ in quick] == [200, 200]
    assert all(seconds < NOT_BLOCKED for _, seconds in quick), quick
    assert still_rendering  # the answers came while the render ran, not after it
    assert result[0].status == 422  # stopped at its deadline


def read_answer(sock: socket.socket) -> bytes:
    """One whole answer (head and its Content-Length body) from ``sock``."""
    data = b""
    while b"\r\n\r\n" not in data:
        data += sock.recv(65536)
    head, _, body = data.partition(b"\r\n\r\n")
    length = re.search(rb"(?i)\r\ncontent-length: *(\d+)", head)
    assert length is not None, head
    while len(body) < int(length.group(1)):
        body += sock.recv(65536)
    return data


@pytest.mark.slow
def test_a_render_pipelined_behind_another_request_still_goes_to_the_render_lane(one_thread: LiveApp) -> None:
    """gunicorn's parser keeps what a client sent after its request; the next request is judged
    from those bytes, not from whatever arrives later to wake the connection."""
    member = Client(one_thread.url)
    member.signup()
    tokenizer_id = import_burner(member)
    fields = {"role": "user", "content": "hello"}
    assert member.post(f"tokenizers/{tokenizer_id}/chat", {"template": "chatml", **fields}).status == 200
    before = set(one_thread.processes())
    form = urllib.parse.urlencode({"csrf_token": member.token(), "template": "tokenizer", **fields}).encode()
    healthz = f"GET /healthz HTTP/1.1\r\nHost: {HOST}\r\n\r\n".encode()
    render = (f"POST /tokenizers/{tokenizer_id}/chat HTTP/1.1\r\nHost: {HOST}\r\nCookie: {member.cookie_header()}\r\n"
              f"Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {len(form)}\r\n\r\n").encode() + form
    with socket.create_connection(("127.0.0.1", one_thread.port), timeout=30) as sock:
        sock.sendall(healthz + render)  # two requests in one send, the render second
        assert read_answer(sock).startswith(b"HTTP/1.1 200")
        sock.sendall(healthz)  # wakes the connection: the render is parsed now
        wait_for(lambda: bool(set(one_thread.processes()) - before), "the render's sandboxed child", limit=30)
        status, seconds = timed(Client(one_thread.url), "healthz")
        assert status == 200 and seconds < NOT_BLOCKED, seconds
        assert read_answer(sock).startswith(b"HTTP/1.1 422")  # the render, stopped at its deadline
