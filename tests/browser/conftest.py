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
  ``<tmp>/tokenforge-test-artifacts`` (never the working directory);
- ``console_guard`` fails a test at teardown if any page it watches logged a console error or an
  uncaught exception: a CSP violation ("Refused to apply inline style…"), an htmx error event, a
  script error. ``page`` and ``anon_page`` are watched; a test that opens another page passes it
  to ``console_guard.watch``, and one that provokes an error on purpose names it with
  ``console_guard.allow(pattern)``. A 4xx answer to a page or an htmx request is the server
  refusing as designed (Chromium logs it as "Failed to load resource"), so it is not counted,
  except for files under ``/static/``, which must all exist.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
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
    # 5 minutes) allows in one run, and the admin imports more tokenizers than the hourly import
    # budget; the limiters have tests of their own (test_auth, test_security, test_import_budgets).
    server = LiveApp(tmp_path_factory.mktemp("live-server"), workers=1, threads=4,
                     env={"TOKENFORGE_HEARTBEAT_SECONDS": "0.5", "TOKENFORGE_LOGIN_RATE_LIMIT": "1000/300",
                          "TOKENFORGE_IMPORT_RATE_LIMIT": "100000/3600"})
    server.start()
    try:
        Client(server.url).signup()
        yield server
    finally:
        code = server.stop()
    assert code == 0, server.log.read_text()


REFUSED = re.compile(r"Failed to load resource: the server responded with a status of 4\d\d")


@dataclass
class ConsoleGuard:
    """The console errors and uncaught exceptions of the pages it watches, less those allowed."""

    seen: list[str] = field(default_factory=list)
    allowed: list[re.Pattern[str]] = field(default_factory=list)

    def watch(self, page: Any) -> Any:
        """Record ``page``'s console errors and page errors from now on; return the page."""
        page.on("console", lambda message: self._console(page, message))
        page.on("pageerror", lambda error: self.seen.append(f"{page.url}: uncaught {error}"))
        return page

    def allow(self, pattern: str) -> None:
        """Do not count errors whose text matches ``pattern`` (a test that provokes them)."""
        self.allowed.append(re.compile(pattern))

    def _console(self, page: Any, message: Any) -> None:
        if message.type != "error":
            return
        source = (message.location or {}).get("url", "")
        if REFUSED.search(message.text) and "/static/" not in source:
            return
        self.seen.append(f"{page.url}: {message.text} (at {source or 'the page'})")

    def problems(self) -> list[str]:
        return [text for text in self.seen if not any(p.search(text) for p in self.allowed)]


@pytest.fixture
def console_guard() -> Iterator[ConsoleGuard]:
    """Fails the test at teardown if a watched page logged a console error (see the module docstring)."""
    guard = ConsoleGuard()
    yield guard
    problems = guard.problems()
    if problems:
        pytest.fail("The browser logged errors:\n" + "\n".join(problems), pytrace=False)


@pytest.fixture
def page(page: Any, live_server: LiveApp, console_guard: ConsoleGuard) -> Any:
    """pytest-playwright's page, logged in as the live server's admin through the login form."""
    console_guard.watch(page)
    page.goto(live_server.url + "login")
    page.fill('input[name="email"]', EMAIL)
    page.fill('input[name="password"]', PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(re.compile(r"/tokenizers/?$"))
    return page


@pytest.fixture
def anon_page(browser: Any, console_guard: ConsoleGuard) -> Iterator[Any]:
    """A page in a fresh browser context that has never logged in."""
    context = browser.new_context()
    yield console_guard.watch(context.new_page())
    context.close()


def shown_ids(page: Any) -> list[int]:
    """The ids in the page's ids pane (plain text until the first hover splits it), in order."""
    return [int(i) for i in page.get_by_test_id("ids").first.inner_text().split() if i.isdigit()]


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
