"""Browser-test fixtures: Debian's Chromium through Playwright, and a live Tokenforge server.

Reusable by every browser test (the playground's too):

- ``browser_type_launch_args`` makes pytest-playwright's ``browser``/``page`` fixtures launch
  ``/usr/bin/chromium`` (never ``playwright install``, which downloads and fails offline);
- ``live_server`` runs the real ``tokenforge serve`` (migrations, gunicorn, its job workers) on a
  free port with its data in a temp folder, and stops it with SIGTERM afterwards;
- ``live_server`` signs up one account (the admin, ``LIVE_EMAIL``/``LIVE_PASSWORD``) through the
  real sign-up form, and ``page`` (pytest-playwright's, overridden here) starts logged in as it;
  ``anon_page`` is a browser that has not logged in;
- ``artifacts_dir`` is where screenshots go: ``$TOKENFORGE_TEST_ARTIFACTS`` if set, else
  ``<tmp>/tokenforge-test-artifacts`` (never the working directory).
"""

from __future__ import annotations

import http.cookiejar
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.webapp.playground_samples import byte_bpe

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
LIVE_EMAIL = "admin@example.com"
LIVE_PASSWORD = "correct horse battery staple"
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync",
]


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args: dict[str, Any]) -> dict[str, Any]:
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} is missing; install Debian's chromium package")
    return {**browser_type_launch_args, "executable_path": CHROMIUM, "args": CHROMIUM_ARGS,
            "headless": True}


@pytest.fixture(scope="session")
def artifacts_dir() -> Path:
    path = Path(os.environ.get("TOKENFORGE_TEST_ARTIFACTS")
                or Path(tempfile.gettempdir()) / "tokenforge-test-artifacts")
    path.mkdir(parents=True, exist_ok=True)
    return path


@dataclass
class LiveServer:
    url: str  # with a trailing slash
    data_dir: Path
    log: Path


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="session")
def live_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """``tokenforge serve`` on 127.0.0.1 with a fresh SQLite database and corpus store."""
    data_dir = tmp_path_factory.mktemp("live-server")
    log = data_dir / "serve.log"
    port = _free_port()
    # Every browser test logs in through the form, more than the default login limit (10 in
    # 5 minutes) allows in one run; the limiter has tests of its own (test_auth, test_security).
    env = {**os.environ, "TOKENFORGE_DATA_DIR": str(data_dir), "PYTHONPATH": str(REPO),
           "TOKENFORGE_HEARTBEAT_SECONDS": "0.5", "TOKENFORGE_LOGIN_RATE_LIMIT": "1000/300"}
    env.pop("DATABASE_URL", None)
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "webapp.cli", "serve", "--host", "127.0.0.1",
             "--port", str(port), "--workers", "1", "--threads", "4"],
            cwd=data_dir, env=env, stdout=out, stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}/"
    deadline = time.monotonic() + 60
    while True:
        try:
            with urllib.request.urlopen(url + "healthz", timeout=2) as response:
                if response.status == 200:
                    break
        except (urllib.error.URLError, ConnectionError):
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            raise RuntimeError(f"tokenforge serve did not start:\n{log.read_text()}")
        time.sleep(0.1)
    signup(url, LIVE_EMAIL, LIVE_PASSWORD)
    yield LiveServer(url, data_dir, log)
    process.send_signal(signal.SIGTERM)
    try:
        code = process.wait(timeout=60)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        raise
    assert code == 0, log.read_text()


def signup(url: str, email: str, password: str, name: str = "Admin") -> urllib.request.OpenerDirector:
    """Sign up through the real form (CSRF token and all); return an opener holding the session."""
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))
    with opener.open(url + "signup", timeout=10) as response:
        form = response.read().decode("utf-8")
    token = re.search(r'name="csrf_token" value="([^"]+)"', form)
    if token is None:
        raise RuntimeError("the sign-up form has no CSRF token")
    body = urllib.parse.urlencode({"csrf_token": token.group(1), "email": email, "name": name,
                                   "password": password, "confirm": password}).encode()
    with opener.open(url + "signup", data=body, timeout=30) as response:
        if "/tokenizers" not in response.geturl():
            raise RuntimeError(f"sign-up did not log in: ended at {response.geturl()}")
    return opener


@pytest.fixture
def page(page: Any, live_server: LiveServer) -> Any:
    """pytest-playwright's page, logged in as the live server's admin through the login form."""
    page.goto(live_server.url + "login")
    page.fill('input[name="email"]', LIVE_EMAIL)
    page.fill('input[name="password"]', LIVE_PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(re.compile(r"/tokenizers/?$"))
    return page


@pytest.fixture
def anon_page(browser: Any) -> Iterator[Any]:
    """A page in a fresh browser context that has never logged in."""
    context = browser.new_context()
    yield context.new_page()
    context.close()


def import_tokenizer_file(page: Any, server: LiveServer, path: Path, name: str) -> int:
    """Import a ``tokenizer.json`` through the import form, as a user does; the new tokenizer's id."""
    page.goto(server.url + "import")
    page.get_by_test_id("kind-tokenizer_json").check()
    page.fill('input[name="name"]', name)
    page.set_input_files('input[name="file"]', str(path))
    page.get_by_test_id("import-submit").click()
    expect(page).to_have_url(re.compile(r"/tokenizers/\d+/play$"))
    return int(page.url.split("/")[-2])


def import_json(page: Any, server: LiveServer, tmp_path: Path, name: str, merges: list[Any] | None = None) -> int:
    """Import a small byte-level BPE (``playground_samples.byte_bpe``) named ``name``; its id."""
    path = tmp_path / f"{name}.json"
    path.write_text(byte_bpe(name, merges=merges).to_json(), encoding="utf-8")
    return import_tokenizer_file(page, server, path, name)
