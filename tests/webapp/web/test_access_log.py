"""``tokenforge serve --access-log`` (issue 24, finding 11): a line per request, in a file or on
stderr, without query strings or link tokens."""

from __future__ import annotations

import re
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.live import LiveApp, wait_for
from webapp.cli import build_parser, cmd_serve
from webapp.web.access_log import ACCESS_LOG_FORMAT, AccessLogger, options, redact

LINE = re.compile(r'127\.0\.0\.1 \[\d\d/\w{3}/\d{4}:\d\d:\d\d:\d\d [+-]\d{4}\] "(GET|POST) (\S+) HTTP/1\.1" (\d{3}) (\d+|-) '
                  r'(\d+)ms "([^"]*)"')
TOKEN = "A" * 43


@pytest.mark.parametrize("path, shown", [
    pytest.param(f"/s/{TOKEN}", "/s/AAAAAA…", id="share-link"),
    pytest.param(f"/s/{TOKEN}/vocab", "/s/AAAAAA…/vocab", id="share-page"),
    pytest.param(f"/join/{TOKEN}", "/join/AAAAAA…", id="invite"),
    pytest.param("/tokenizers/3/play", "/tokenizers/3/play", id="plain"),
    pytest.param("/sessions/x", "/sessions/x", id="not-a-link"),
])
def test_link_tokens_are_cut(path: str, shown: str) -> None:
    assert redact(path) == shown


def test_no_access_log_unless_asked() -> None:
    assert options(None) == {}
    assert options("-") == {"accesslog": "-", "access_log_format": ACCESS_LOG_FORMAT, "logger_class": AccessLogger}
    assert "%(q)s" not in ACCESS_LOG_FORMAT and "%(r)s" not in ACCESS_LOG_FORMAT and "%(f)s" not in ACCESS_LOG_FORMAT


def test_an_unwritable_file_stops_serve_with_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "missing" / "access.log"
    args = build_parser().parse_args(["serve", "--access-log", str(target)])
    assert cmd_serve(args) == 1
    assert capsys.readouterr().err == (
        f"tokenforge serve: error: --access-log {target}: the file cannot be opened for appending (No such file or "
        "directory); name a file in a folder that exists and is writable, or - for stderr.\n")


def get(url: str) -> int:
    request = urllib.request.Request(url, headers={"User-Agent": "access-log-test"})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        exc.close()
        return exc.code


def serve_with(tmp_path: Path, target: str) -> LiveApp:
    server = LiveApp(tmp_path / "data", workers=1, threads=2, job_worker=False)
    server.args += ["--access-log", target]
    return server


def lines_in(text: str) -> list[tuple[str, ...]]:
    return [match.groups() for match in LINE.finditer(text)]


def ours(text: str) -> list[tuple[str, ...]]:
    """This test's requests (``LiveApp.start`` polls /healthz too)."""
    return [line for line in lines_in(text) if line[-1] == "access-log-test"]


@pytest.mark.slow
def test_requests_are_appended_to_the_file(tmp_path: Path) -> None:
    log = tmp_path / "access.log"
    log.write_text("kept\n", encoding="utf-8")
    server = serve_with(tmp_path, str(log))
    server.start()
    try:
        assert get(server.url + "healthz?text=my+secret+text") == 200
        assert get(server.url + f"s/{TOKEN}?text=secret") == 404
        wait_for(lambda: len(ours(log.read_text(encoding="utf-8"))) >= 2, "two access-log lines", limit=20)
    finally:
        assert server.stop() == 0
    text = log.read_text(encoding="utf-8")
    assert text.startswith("kept\n")  # appended
    assert [(method, path, status) for method, path, status, _sent, _ms, _agent in ours(text)] == [
        ("GET", "/healthz", "200"), ("GET", "/s/AAAAAA…", "404")]
    assert "secret" not in text and TOKEN not in text


@pytest.mark.slow
def test_dash_writes_to_stderr(tmp_path: Path) -> None:
    server = serve_with(tmp_path, "-")
    server.start()
    try:
        assert get(server.url + "login?next=/x") == 200
        wait_for(lambda: [line[:3] for line in ours(server.log.read_text(encoding="utf-8"))] == [("GET", "/login", "200")],
                 "the access-log line on stderr", limit=20)
    finally:
        assert server.stop() == 0
