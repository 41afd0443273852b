"""Continuity in a real browser: the text survives the picker, reloads and Compare; share links
are copied with their button and open in a fresh browser at their own URL, under a banner; the
token spans are one tab stop.

Tokenizers get into the live server through the import form, as users add them.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.browser.conftest import import_json
from tests.live import LiveApp

pytestmark = pytest.mark.browser

LONG = "the cat sat on the mat. " * 200  # 4,800 characters: too long for a URL, kept in the browser


def url_text(page: Page) -> str | None:
    """The ``?text=`` of the address bar, or None."""
    return parse_qs(urlsplit(page.url).query).get("text", [None])[0]


def test_text_kept_across_picker_reload_and_compare(page: Page, live_server: LiveApp, tmp_path: Path,
                                                    artifacts_dir: Path) -> None:
    merged = import_json(page, live_server, tmp_path, "keep-merged")
    plain = import_json(page, live_server, tmp_path, "keep-bytes", merges=[])
    page.goto(f"{live_server.url}tokenizers/{merged}/play")
    box = page.get_by_test_id("text")
    box.fill("the wé wo")
    expect(page.get_by_test_id("count-tokens")).to_have_text("4")  # "the", " w", "é", " wo"
    expect(page).to_have_url(re.compile(r"\?text=the\+w%C3%A9\+wo$"))  # a short text lives in the URL

    page.get_by_test_id("show-ws").check()  # a toggle joins the text in the URL
    expect(page.locator(".spans .tok").nth(1)).to_have_text("·w")
    page.reload()
    expect(box).to_have_value("the wé wo")
    expect(page.get_by_test_id("count-tokens")).to_have_text("4")
    expect(page.get_by_test_id("show-ws")).to_be_checked()
    expect(page.locator(".spans .tok").nth(1)).to_have_text("·w")

    # The picker opens the other tokenizer with the same text, in its URL too.
    page.get_by_test_id("picker").select_option(str(plain))
    expect(page).to_have_url(re.compile(rf"/tokenizers/{plain}/play\?text=the\+w%C3%A9\+wo$"))
    expect(box).to_have_value("the wé wo")
    expect(page.get_by_test_id("count-tokens")).to_have_text("10")  # one token per byte

    # Compare starts with the same text and the tokenizer it was opened from.
    page.get_by_test_id("nav-compare").click()
    expect(page.get_by_test_id("compare-text")).to_have_value("the wé wo")
    expect(page.get_by_test_id(f"compare-{plain}")).to_be_checked()

    # A long text leaves the URL and is kept in session storage, across reload, picker and Compare.
    page.goto(f"{live_server.url}tokenizers/{merged}/play")
    box.fill(LONG)
    expect(page.get_by_test_id("count-chars")).to_have_text(f"{len(LONG):,}")
    expect(page).to_have_url(re.compile(rf"/tokenizers/{merged}/play$"))
    assert url_text(page) is None
    page.reload()
    expect(box).to_have_value(LONG)
    expect(page.get_by_test_id("count-chars")).to_have_text(f"{len(LONG):,}")
    page.get_by_test_id("picker").select_option(str(plain))
    expect(page).to_have_url(re.compile(rf"/tokenizers/{plain}/play$"))
    expect(box).to_have_value(LONG)
    expect(page.get_by_test_id("count-tokens")).to_have_text(f"{len(LONG):,}")  # bytes only: one per character
    page.get_by_test_id("nav-compare").click()
    expect(page.get_by_test_id("compare-text")).to_have_value(LONG)
    page.get_by_test_id(f"compare-{merged}").check()
    expect(page.get_by_test_id("compare-col")).to_have_count(2)
    page.screenshot(path=str(artifacts_dir / "continuity-compare.png"), full_page=True)
    page.reload()  # the choice of tokenizers is in the URL, the long text in the browser
    expect(page.get_by_test_id("compare-col")).to_have_count(2)
    expect(page.get_by_test_id("compare-text")).to_have_value(LONG)

    # The tokenizer list opens Encode, with the kept text.
    page.goto(f"{live_server.url}tokenizers")
    page.get_by_role("link", name="keep-merged", exact=True).click()
    expect(page).to_have_url(re.compile(rf"/tokenizers/{merged}/play$"))
    expect(box).to_have_value(LONG)


def test_share_link_copied_and_opened_in_a_fresh_browser(page: Page, browser: Browser, live_server: LiveApp,
                                                         tmp_path: Path, artifacts_dir: Path) -> None:
    ref = import_json(page, live_server, tmp_path, "shared-bpe")
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live_server.url.rstrip("/"))
    page.goto(f"{live_server.url}tokenizers/{ref}/share")
    page.get_by_role("button", name="Create a share link").click()
    page.get_by_test_id("copy-share-url").click()
    expect(page.get_by_test_id("copy-share-url")).to_have_text("Copied")
    copied = page.evaluate("navigator.clipboard.readText()")
    assert re.fullmatch(rf"{re.escape(live_server.url)}s/[A-Za-z0-9_-]{{43}}", copied)

    context = browser.new_context()  # someone else's browser: no login, no session
    try:
        visitor = context.new_page()
        visitor.goto(copied)
        expect(visitor).to_have_url(copied)  # served at the link, not redirected away
        banner = visitor.get_by_test_id("share-banner")
        expect(banner).to_contain_text("Shared with you, read-only.")
        expect(banner).to_contain_text("shared-bpe")
        expect(visitor.get_by_test_id("share-vocab-size")).to_have_text("262 tokens")
        visitor.get_by_test_id("text").fill("the wé")
        expect(visitor.get_by_test_id("count-tokens")).to_have_text("3")
        expect(visitor).to_have_url(copied + "?text=the+w%C3%A9")  # still the share URL, now with the text
        visitor.screenshot(path=str(artifacts_dir / "share-visitor.png"), full_page=True)
        visitor.reload()
        expect(visitor.get_by_test_id("text")).to_have_value("the wé")
        visitor.get_by_role("navigation", name="This tokenizer").get_by_role("link", name="Vocabulary").click()
        expect(visitor).to_have_url(copied + "/vocab")
        expect(visitor.get_by_test_id("share-banner")).to_be_visible()

        page.goto(f"{live_server.url}tokenizers/{ref}/share")
        page.once("dialog", lambda dialog: dialog.accept())  # "Revoke this share link? …"
        page.get_by_role("button", name="Revoke").click()
        expect(page.get_by_test_id("share-url")).to_have_count(0)
        visitor.goto(copied)
        expect(visitor.get_by_role("heading", level=1)).to_have_text("This share link was revoked")
        expect(visitor.locator("body")).not_to_contain_text("shared-bpe")
    finally:
        context.close()


def test_token_spans_are_one_tab_stop(page: Page, live_server: LiveApp, tmp_path: Path) -> None:
    ref = import_json(page, live_server, tmp_path, "keys-bpe")
    page.goto(f"{live_server.url}tokenizers/{ref}/play?text=the+w%C3%A9+wo")
    spans = page.locator(".spans .tok")
    expect(spans).to_have_count(4)
    page.get_by_test_id("text").focus()
    visited = []  # every tab stop from the text box to the ids' Copy button
    while not visited or visited[-1] != "copy-ids":
        assert len(visited) < 30, visited
        page.keyboard.press("Tab")
        visited.append(page.evaluate("(el => el.matches('.tok') ? 'tok ' + el.dataset.t"
                                     " : el.dataset.testid || el.tagName)(document.activeElement)"))
    assert [stop for stop in visited if stop.startswith("tok")] == ["tok 0"]  # the tokens are one stop
    page.keyboard.press("Shift+Tab")
    expect(spans.nth(0)).to_be_focused()
    page.keyboard.press("ArrowRight")
    expect(spans.nth(1)).to_be_focused()
    page.keyboard.press("End")
    expect(spans.nth(3)).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.get_by_test_id("inspector-id")).to_have_text("259")  # the last token, " wo"
    page.keyboard.press("Tab")
    page.keyboard.press("Shift+Tab")  # the tab stop stayed on the token last focused
    expect(spans.nth(3)).to_be_focused()
