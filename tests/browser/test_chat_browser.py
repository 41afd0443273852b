"""The chat page in a real browser (issue 15, item 1): GPT-2 imported through the form with ChatML's
special tokens, a chat of three messages typed in, and the exact counts, checked against tiktoken
on the same rendered prompt. A screenshot goes to ``artifacts_dir``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.live import LiveApp
from tests.shared_data import gpt2_files
from tests.webapp.playground_samples import EOT

pytestmark = pytest.mark.browser
IM_START, IM_END = "<|im_start|>", "<|im_end|>"
MESSAGES = [("system", "You are a concise assistant."),
            ("user", "How many tokens is this chat? Ünïcode too: 日本語"),
            ("assistant", "Let me count: quite a few!")]


def tiktoken_count(vocab_path: Path) -> int:
    """The rendered ChatML prompt's length under tiktoken with GPT-2's ranks and the same special ids."""
    tiktoken = pytest.importorskip("tiktoken")
    from engine.byte_unicode import symbols_to_bytes
    from engine.pretokenizers import PATTERNS

    vocab = json.loads(vocab_path.read_text(encoding="utf-8"))
    enc = tiktoken.Encoding("gpt2-chatml", pat_str=PATTERNS["gpt2"],
                            special_tokens={EOT: 50256, IM_START: 50257, IM_END: 50258},
                            mergeable_ranks={symbols_to_bytes(t): i for t, i in vocab.items() if t != EOT})
    text = "".join(f"{IM_START}{role}\n{content}{IM_END}\n" for role, content in MESSAGES)
    return len(enc.encode(text, allowed_special="all"))


def test_chatml_chat_of_three_messages_on_imported_gpt2(page: Page, live_server: LiveApp, artifacts_dir: Path) -> None:
    vocab_path, merges_path = gpt2_files()
    page.goto(live_server.url + "import")
    page.get_by_test_id("kind-gpt2").check()
    page.fill('input[name="name"]', "GPT-2 ChatML")
    page.set_input_files('input[name="vocab"]', str(vocab_path))
    page.set_input_files('input[name="merges"]', str(merges_path))
    page.select_option('select[name="pattern"]', "gpt2")
    page.get_by_test_id("special-tokens").fill(f"{EOT}\n{IM_START}\n{IM_END}")
    page.get_by_test_id("import-submit").click()
    expect(page).to_have_url(re.compile(r"/tokenizers/\d+/play$"), timeout=30_000)

    page.get_by_test_id("nav-chat").click()
    expect(page).to_have_url(re.compile(r"/tokenizers/\d+/chat$"))
    page.select_option('[data-testid="chat-template"]', "chatml")
    rows = page.get_by_test_id("chat-message")
    expect(rows).to_have_count(3)
    # Add a fourth message in place (chat.js), then remove it: the form is three messages again.
    page.get_by_test_id("chat-add").click()
    expect(rows).to_have_count(4)
    expect(rows.nth(3).get_by_test_id("chat-role")).to_have_value("user")
    rows.nth(3).get_by_role("button", name="Remove message 4").click()
    expect(rows).to_have_count(3)

    for row, (role, content) in zip(range(3), MESSAGES):
        rows.nth(row).get_by_test_id("chat-role").fill(role)
        box = rows.nth(row).get_by_test_id("chat-content")
        box.fill("")
        box.press_sequentially(content, delay=5)

    expect(page.get_by_test_id("chat-total")).to_have_text("50")
    assert tiktoken_count(vocab_path) == 50
    expect(page.get_by_test_id("chat-message-count")).to_have_text(["6", "20", "8"])
    expect(page.get_by_test_id("chat-overhead")).to_have_text("16")
    expect(page.locator("#chat-result .tok.special")).to_have_count(6)
    expect(page.get_by_test_id("chat-missing")).to_have_count(0)
    page.screenshot(path=str(artifacts_dir / "playground-chat.png"), full_page=True)

    # At a phone's width the messages stack and nothing scrolls sideways.
    page.set_viewport_size({"width": 390, "height": 844})
    page.reload()
    expect(page.get_by_test_id("chat-total")).to_be_visible()
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    page.screenshot(path=str(artifacts_dir / "playground-chat-390.png"), full_page=True)
