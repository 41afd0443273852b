"""Typing on the encode page: every keystroke re-encodes at once, and the last text always wins.

The page posts on every ``input`` event (no debounce) with ``hx-sync="this:queue last"``: while
one answer is on its way only the latest text waits, so an answer can never arrive after a
newer one and overwrite it, and nothing is aborted (htmx logs an aborted request as a console
error). These tests check the behaviour, not the speed: ``benchmarks/typing_bench.py`` times it.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import import_json
from tests.live import LiveApp
from tests.webapp.playground_samples import byte_bpe

pytestmark = pytest.mark.browser


class EncodeTraffic:
    """The encode requests a page sends and the answers it gets, and its console errors."""

    def __init__(self, page: Page) -> None:
        self.sent = self.answered = 0
        self.errors: list[str] = []
        page.on("request", lambda r: self._count(r, "sent"))
        page.on("requestfinished", lambda r: self._count(r, "answered"))
        page.on("requestfailed", lambda r: self._count(r, "answered"))
        page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: self.errors.append(str(e)))

    def _count(self, request: Any, what: str) -> None:
        if request.method == "POST" and request.url.endswith("/encode"):
            setattr(self, what, getattr(self, what) + 1)

    def settle(self, page: Page, limit: float = 20) -> None:
        """Wait until every encode request sent has been answered (and a queued one has left)."""
        deadline = time.monotonic() + limit
        quiet_since = None
        while time.monotonic() < deadline:
            page.wait_for_timeout(50)
            if self.sent == self.answered:
                quiet_since = quiet_since or time.monotonic()
                if time.monotonic() - quiet_since > 0.4:
                    return
            else:
                quiet_since = None
        raise AssertionError(f"{self.sent} encode requests sent, {self.answered} answered")


def shown_text(page: Page) -> str:
    return page.locator(".spans").inner_text()


def expect_encoding_of(page: Page, text: str) -> None:
    ids = byte_bpe().encode(text, allowed_special=set(), disallowed_special=())
    expect(page.get_by_test_id("count-chars")).to_have_text(f"{len(text):,}")
    expect(page.get_by_test_id("count-tokens")).to_have_text(f"{len(ids):,}")
    expect(page.get_by_test_id("ids")).to_have_text(" ".join(map(str, ids)))
    assert shown_text(page) == text


def test_typing_fast_shows_the_final_text_with_no_console_error(
        page: Page, live_server: LiveApp, tmp_path: Path) -> None:
    ref = import_json(page, live_server, tmp_path, "typing-bpe")
    traffic = EncodeTraffic(page)
    page.goto(f"{live_server.url}tokenizers/{ref}/play")
    page.wait_for_load_state("load")
    assert page.locator("#encode-form").get_attribute("hx-trigger") == "submit, input"  # no delay
    box = page.get_by_test_id("text")
    box.fill("")
    final = "the wé the wo the wé the"
    box.press_sequentially(final, delay=0)  # faster than any answer comes back
    traffic.settle(page)
    expect_encoding_of(page, final)
    expect(page.locator(".spans .tok").first).to_have_text("the")
    assert traffic.sent <= len(final) + 1  # one per keystroke at most, plus the emptied box
    assert traffic.errors == []


def test_a_slow_answer_never_overwrites_a_newer_text(page: Page, live_server: LiveApp, tmp_path: Path) -> None:
    ref = import_json(page, live_server, tmp_path, "stale-bpe")
    traffic = EncodeTraffic(page)
    page.goto(f"{live_server.url}tokenizers/{ref}/play")
    page.wait_for_load_state("load")
    box = page.get_by_test_id("text")
    # A long text takes the server far longer than a short one; the short one typed right after
    # it must be what stays on the page, whichever answer the server finishes first.
    box.fill("the wé " * 20_000)
    box.fill("the wo")
    traffic.settle(page)
    expect_encoding_of(page, "the wo")
    page.wait_for_timeout(300)  # nothing late comes in after the settle either
    expect_encoding_of(page, "the wo")
    assert traffic.errors == []


def test_hovering_a_span_still_lights_its_id_after_typing(page: Page, live_server: LiveApp, tmp_path: Path) -> None:
    ref = import_json(page, live_server, tmp_path, "hover-bpe")
    page.goto(f"{live_server.url}tokenizers/{ref}/play")
    page.wait_for_load_state("load")
    box = page.get_by_test_id("text")
    box.fill("")
    box.press_sequentially("wé the", delay=0)
    expect(page.get_by_test_id("count-chars")).to_have_text("6")
    page.locator(".spans .tok").last.hover()
    expect(page.locator(".tid.lit")).to_have_text("257")
    expect(page.locator(".ids .tid")).to_have_text(["119", "260", "32", "257"])
    expect(page.locator(".spans .tok").last).to_have_attribute("title", "257  the  [74 68 65]")
    page.locator(".ids .tid").first.hover()  # and an id lights its span
    expect(page.locator(".tok.lit")).to_have_text("w")
