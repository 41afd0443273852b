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

from tests.browser.conftest import import_json, shown_ids
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


def drawn_spans(page: Page) -> int:
    return page.locator(".spans .tok").count()


def test_a_long_answer_draws_a_screenful_then_the_rest(page: Page, live_server: LiveApp, tmp_path: Path) -> None:
    """A keystroke's answer draws the spans of the first 2,000 characters and the first 500 ids;
    the rest (data blocks of 400) are drawn when the box is scrolled near its end, when an id or
    the End key needs them, and when typing pauses. The page's clock is stopped so that only
    what the test does draws anything."""
    ref = import_json(page, live_server, tmp_path, "lazy-bpe")
    page.clock.install()
    page.goto(f"{live_server.url}tokenizers/{ref}/play")
    page.wait_for_load_state("load")
    page.clock.pause_at(time.time() * 1000 + 60_000)
    box, spans = page.get_by_test_id("text"), page.get_by_test_id("spans")
    text = "the wé " * 600
    tokens = len(byte_bpe().encode(text, allowed_special=set(), disallowed_special=()))
    box.fill(text)
    expect(page.get_by_test_id("count-tokens")).to_have_text(f"{tokens:,}")
    drawn = drawn_spans(page)
    assert 2000 <= len(shown_text(page)) < 2010 and drawn < tokens - 1200  # the text's first 2,000 characters
    expect(spans.locator("script[data-rest]")).to_have_count(-(-(tokens - drawn) // 400))
    expect(spans).to_have_attribute("aria-busy", "true")
    assert len(shown_ids(page)) == 500

    spans.evaluate("box => { box.scrollTop = box.scrollHeight; }")  # near the end: one more block
    expect(page.locator(".spans .tok")).to_have_count(drawn + 400)
    page.locator(".ids").hover()  # the ids become elements, all of them
    page.locator(".ids .tid").last.hover()  # and the last one's span is drawn to light it
    expect(page.locator(".tok.lit")).to_have_attribute("data-t", str(tokens - 1))
    expect(page.locator(".spans .tok")).to_have_count(tokens)
    expect(spans).not_to_have_attribute("aria-busy", "true")
    assert shown_text(page) == text

    box.fill(text + "the")  # a new answer: a screenful drawn again
    expect(page.get_by_test_id("count-tokens")).to_have_text(f"{tokens + 1:,}")
    assert drawn_spans(page) == drawn
    page.locator(".spans .tok").first.focus()
    page.keyboard.press("End")  # the roving focus goes to the last token, drawn for it
    expect(page.locator(".tok:focus")).to_have_attribute("data-t", str(tokens))

    box.fill(text + "wé")
    expect(page.get_by_test_id("count-chars")).to_have_text(f"{len(text) + 2:,}")
    assert drawn_spans(page) == drawn
    page.clock.run_for(1000)  # typing paused: the rest is drawn without anything asking
    expect(spans.locator("script[data-rest]")).to_have_count(0)
    expect(spans).not_to_have_attribute("aria-busy", "true")
    expect_encoding_of(page, text + "wé")
