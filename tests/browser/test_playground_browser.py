"""The playground in a real browser: typing, whitespace, inspector, compare, GPT-2 import, download.

Tokenizers get into the live server the way users add them: through the import form. Screenshots
of the main pages go to ``artifacts_dir``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import import_json, shown_ids
from tests.live import LiveApp
from tests.shared_data import gpt2_files
from tests.webapp.playground_samples import EOT

pytestmark = pytest.mark.browser


def test_type_toggle_inspect_and_compare(page: Page, live_server: LiveApp, tmp_path: Path, artifacts_dir: Path) -> None:
    ref = import_json(page, live_server, tmp_path, "tiny-bpe")
    plain = import_json(page, live_server, tmp_path, "plain-bytes", merges=[])
    page.goto(f"{live_server.url}tokenizers/{ref}/play")
    box = page.get_by_test_id("text")
    box.fill("")
    box.press_sequentially("the wé 👋", delay=20)
    spans = page.locator(".spans .tok")
    expect(page.get_by_test_id("count-tokens")).to_have_text("8")
    expect(spans).to_have_count(5)
    expect(spans.nth(4)).to_have_text("👋")
    expect(page.get_by_test_id("count-bytes")).to_have_text("12")
    assert "\ufffd" not in page.locator(".spans").inner_text()

    page.get_by_test_id("show-ws").check()
    expect(spans.nth(1)).to_have_text("·w")

    spans.nth(0).hover()
    expect(page.locator(".tid.lit")).to_have_text("257")
    spans.nth(0).click()
    expect(page.get_by_test_id("inspector-id")).to_have_text("257")
    expect(page.get_by_test_id("inspector-hex")).to_have_text("74 68 65")
    expect(page.get_by_test_id("inspector-chain")).to_contain_text("th + e → the")
    page.screenshot(path=str(artifacts_dir / "playground-encode.png"), full_page=True)

    page.goto(f"{live_server.url}compare?ids={ref}&ids={plain}&text=the+cat")
    expect(page.get_by_test_id("compare-col")).to_have_count(2)
    expect(page.get_by_test_id("compare-summary")).to_contain_text("1 of 5 stretches")
    page.get_by_test_id("compare-text").fill("the the")
    expect(page.get_by_test_id("compare-summary")).to_contain_text("2 of 3 stretches")
    merged = page.locator(".compare-col", has=page.get_by_role("link", name="tiny-bpe", exact=True))
    expect(merged.locator(".tok.differs")).to_have_count(2)
    page.screenshot(path=str(artifacts_dir / "playground-compare.png"), full_page=True)

    page.goto(f"{live_server.url}tokenizers/{ref}/vocab")
    page.get_by_test_id("vocab-q").fill("th")
    expect(page.get_by_test_id("vocab-table")).to_contain_text("2 tokens match")
    page.screenshot(path=str(artifacts_dir / "playground-vocab.png"), full_page=True)


def test_gpt2_import_matches_tiktoken_and_download_loads_in_tokenizers(
        page: Page, live_server: LiveApp, tmp_path: Path, artifacts_dir: Path) -> None:
    tiktoken = pytest.importorskip("tiktoken")
    hf = pytest.importorskip("tokenizers")
    vocab_path, merges_path = gpt2_files()
    page.goto(live_server.url + "import")
    page.get_by_test_id("kind-gpt2").check()
    page.fill('input[name="name"]', "GPT-2")
    page.set_input_files('input[name="vocab"]', str(vocab_path))
    page.set_input_files('input[name="merges"]', str(merges_path))
    page.select_option('select[name="pattern"]', "gpt2")
    page.get_by_test_id("special-tokens").fill("")  # left empty: <|endoftext|> is found in vocab.json
    page.get_by_test_id("import-submit").click()
    expect(page).to_have_url(re.compile(r"/tokenizers/\d+/play$"), timeout=30_000)
    page.wait_for_load_state("load")  # htmx listens for input only once the page's scripts ran
    ref = int(page.url.split("/")[-2])

    from engine.byte_unicode import symbols_to_bytes
    from engine.pretokenizers import PATTERNS

    vocab = json.loads(vocab_path.read_text(encoding="utf-8"))
    enc = tiktoken.Encoding("gpt2-local", pat_str=PATTERNS["gpt2"], special_tokens={EOT: 50256},
                            mergeable_ranks={symbols_to_bytes(t): i for t, i in vocab.items() if t != EOT})
    text = "Hello world! Tokenizers are fun: naïve café 日本語 👩‍🚀\n\n   indented"
    page.get_by_test_id("text").fill(text)
    expected = enc.encode(text)
    expect(page.get_by_test_id("count-tokens")).to_have_text(str(len(expected)))
    shown = shown_ids(page)
    assert shown == expected
    page.screenshot(path=str(artifacts_dir / "playground-gpt2.png"), full_page=True)

    # Special tokens: named beside their box, which starts unticked, as the API's default is none.
    expect(page.get_by_test_id("tokenizer-specials")).to_have_text("This tokenizer's special tokens: <|endoftext|>.")
    box = page.get_by_test_id("allowed-special")
    expect(box).not_to_be_checked()
    page.get_by_test_id("text").fill(text + EOT)
    plain = enc.encode(text + EOT, disallowed_special=())
    expect(page.get_by_test_id("count-tokens")).to_have_text(str(len(plain)))
    assert shown_ids(page) == plain
    box.check()
    expect(page.get_by_test_id("count-tokens")).to_have_text(str(len(expected) + 1))
    assert shown_ids(page) == enc.encode(text + EOT, allowed_special="all")

    page.goto(f"{live_server.url}tokenizers/{ref}/downloads")
    page.screenshot(path=str(artifacts_dir / "playground-downloads.png"), full_page=True)
    with page.expect_download() as info:
        page.get_by_test_id("download-tokenizer.json").click()
    target = tmp_path / "tokenizer.json"
    info.value.save_as(target)
    assert hf.Tokenizer.from_file(str(target)).encode(text).ids == expected
