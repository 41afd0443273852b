"""Browser-test fixtures: Debian's Chromium through Playwright, and a live Tokenforge server.

Reusable by every browser test (the playground's too):

- ``browser_type_launch_args`` makes pytest-playwright's ``browser``/``page`` fixtures launch
  ``/usr/bin/chromium`` (never ``playwright install``, which downloads and fails offline);
- ``live_server`` runs the real ``tokenforge serve`` (migrations, gunicorn, its job workers) on a
  free port with its data in a temp folder through the shared harness (``tests/live.py``'s
  ``LiveApp``), and stops it with SIGTERM afterwards;
- ``live_server`` signs up one account (the admin, ``tests.live.EMAIL``/``PASSWORD``) through the
  real sign-up form, and ``page`` (pytest-playwright's, overridden here) starts logged in as it;
  ``anon_page`` is a browser that has not logged in;
- ``artifacts_dir`` is where screenshots go: ``$TOKENFORGE_TEST_ARTIFACTS`` if set, else
  ``<tmp>/tokenforge-test-artifacts`` (never the working directory).
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.live import EMAIL, PASSWORD, Client, LiveApp
from tests.webapp.playground_samples import byte_bpe

CHROMIUM = "/usr/bin/chromium"
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


@pytest.fixture(scope="session")
def live_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveApp]:
    """``tokenforge serve`` on 127.0.0.1 with a fresh SQLite database and corpus store, and an admin."""
    # Every browser test logs in through the form, more than the default login limit (10 in
    # 5 minutes) allows in one run; the limiter has tests of its own (test_auth, test_security).
    server = LiveApp(tmp_path_factory.mktemp("live-server"), workers=1, threads=4,
                     env={"TOKENFORGE_HEARTBEAT_SECONDS": "0.5", "TOKENFORGE_LOGIN_RATE_LIMIT": "1000/300"})
    server.start()
    try:
        Client(server.url).signup()
        yield server
    finally:
        code = server.stop()
    assert code == 0, server.log.read_text()


@pytest.fixture
def page(page: Any, live_server: LiveApp) -> Any:
    """pytest-playwright's page, logged in as the live server's admin through the login form."""
    page.goto(live_server.url + "login")
    page.fill('input[name="email"]', EMAIL)
    page.fill('input[name="password"]', PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(re.compile(r"/tokenizers/?$"))
    return page


@pytest.fixture
def anon_page(browser: Any) -> Iterator[Any]:
    """A page in a fresh browser context that has never logged in."""
    context = browser.new_context()
    yield context.new_page()
    context.close()


def import_tokenizer_file(page: Any, server: LiveApp, path: Path, name: str) -> int:
    """Import a ``tokenizer.json`` through the import form, as a user does; the new tokenizer's id."""
    page.goto(server.url + "import")
    page.get_by_test_id("kind-tokenizer_json").check()
    page.fill('input[name="name"]', name)
    page.set_input_files('input[name="file"]', str(path))
    page.get_by_test_id("import-submit").click()
    expect(page).to_have_url(re.compile(r"/tokenizers/\d+/play$"))
    return int(page.url.split("/")[-2])


def import_json(page: Any, server: LiveApp, tmp_path: Path, name: str, merges: list[Any] | None = None) -> int:
    """Import a small byte-level BPE (``playground_samples.byte_bpe``) named ``name``; its id."""
    path = tmp_path / f"{name}.json"
    path.write_text(byte_bpe(name, merges=merges).to_json(), encoding="utf-8")
    return import_tokenizer_file(page, server, path, name)
