"""The main pages at a phone's width (390 px): nothing scrolls sideways, and a screenshot of each.

A page that is wider than the screen makes the whole page slide under a thumb, so the assertion is
the one a user feels: ``document.documentElement.scrollWidth <= innerWidth``. When it fails, the
message names the elements that stick out. Screenshots go to ``artifacts_dir`` as
``layout-390-<page>.png`` for a person to look at.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import Page

from tests.browser.conftest import import_json
from tests.live import LiveApp

pytestmark = pytest.mark.browser

WIDTH, HEIGHT = 390, 844  # an iPhone 12-15's CSS viewport
TEXT = "Hello world! Tokenizers split text into tokens: 日本語のテキスト, café, 👋🏽 and 12,345."

# Elements wider than the viewport, as "tag.class (right edge)", for a failure message.
OVERFLOWING = """() => Array.from(document.querySelectorAll('body *'))
  .filter(el => el.getBoundingClientRect().right > window.innerWidth + 0.5 && getComputedStyle(el).position !== 'fixed')
  .filter(el => !el.closest('[data-scrolls]') || el.matches('[data-scrolls]'))
  .slice(0, 8)
  .map(el => `${el.tagName.toLowerCase()}.${[...el.classList].join('.')}#${el.id} (${Math.round(el.getBoundingClientRect().right)} px)`)"""


def _pages(server: LiveApp, ref: int, other: int) -> dict[str, str]:
    text = re.sub(r"\s", "+", TEXT)
    return {
        "tokenizers": "tokenizers",
        "encode": f"tokenizers/{ref}/play?text={text}",
        "compare": f"compare?ids={ref}&ids={other}&text={text}",
        "summary": f"tokenizers/{ref}",
        "vocab": f"tokenizers/{ref}/vocab",
        "downloads": f"tokenizers/{ref}/downloads",
        "chat": f"tokenizers/{ref}/chat",
        "leaderboards": "leaderboards",
        "train": "train",
        "jobs": "jobs",
        "corpora": "corpora/",
        "import": "import",
        "account": "account",
        "api": "api",
    }


def test_main_pages_fit_a_390_px_screen(page: Page, live_server: LiveApp, tmp_path: Path,
                                         artifacts_dir: Path) -> None:
    ref = import_json(page, live_server, tmp_path, "layout-bpe")
    other = import_json(page, live_server, tmp_path, "layout-bytes", merges=[])
    page.set_viewport_size({"width": WIDTH, "height": HEIGHT})
    too_wide = {}
    for name, path in _pages(live_server, ref, other).items():
        response = page.goto(live_server.url + path)
        assert response is not None and response.status == 200, (name, path, response and response.status)
        page.wait_for_load_state("networkidle")
        page.screenshot(path=str(artifacts_dir / f"layout-{WIDTH}-{name}.png"), full_page=True)
        scroll_width = page.evaluate("document.documentElement.scrollWidth")
        inner_width = page.evaluate("window.innerWidth")
        assert inner_width == WIDTH
        if scroll_width > inner_width:
            too_wide[name] = (scroll_width, page.evaluate(OVERFLOWING))
    assert too_wide == {}, "\n".join(f"{name}: {width} px wide; {', '.join(culprits)}"
                                      for name, (width, culprits) in too_wide.items())


CJK_FACES = ("PingFang SC", "Hiragino Sans", "Microsoft YaHei", "Noto Sans CJK SC")


def test_text_and_tokens_name_cjk_fonts(page: Page, live_server: LiveApp, tmp_path: Path) -> None:
    """Chinese or Japanese text gets a CJK face on every platform, in prose and in the token spans."""
    ref = import_json(page, live_server, tmp_path, "cjk-bpe")
    page.goto(f"{live_server.url}tokenizers/{ref}/play?text=日本語のテキスト")
    prose = page.evaluate("getComputedStyle(document.body).fontFamily")
    tokens = page.evaluate("getComputedStyle(document.querySelector('.spans')).fontFamily")
    assert all(face in prose for face in CJK_FACES), prose
    assert all(face in tokens for face in CJK_FACES) and tokens.startswith("ui-monospace"), tokens
