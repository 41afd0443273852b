"""In a real browser: from the vocabulary diff of two imported Unigrams, open the merge page, read
both policies' costs, save one, and land on the merged tokenizer's playground."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import import_tokenizer_file
from tests.live import LiveApp
from tests.webapp.playground_samples import chinese_unigram, unigram

pytestmark = pytest.mark.browser


def test_merge_from_the_diff_page(page: Page, live_server: LiveApp, artifacts_dir: Path, tmp_path: Path) -> None:
    ids = {}
    for name, tokenizer in (("english-unigram", unigram()), ("chinese-unigram", chinese_unigram())):
        path = tmp_path / f"{name}.json"
        path.write_text(tokenizer.to_json(), encoding="utf-8")
        ids[name] = import_tokenizer_file(page, live_server, path, name)
    page.goto(f"{live_server.url}tokenizers/diff?a={ids['english-unigram']}&b={ids['chinese-unigram']}")
    page.get_by_test_id("diff-merge-link").click()
    expect(page).to_have_url(re.compile(r"/tokenizers/merge\?a=\d+&b=\d+$"))
    page.get_by_test_id("merge-reference").fill("the cat\nthe")
    page.get_by_test_id("merge-held-out").fill("中国人\n中国")
    page.get_by_test_id("merge-preview").click()
    expect(page.get_by_test_id("merge-costs")).to_be_visible()
    for policy in ("zero", "after"):
        expect(page.get_by_test_id(f"merge-unreachable-{policy}")).to_have_text("0")
        expect(page.get_by_test_id(f"merge-changed-{policy}")).to_have_text("0 of 2")
    page.screenshot(path=str(artifacts_dir / "merge-costs.png"), full_page=True)
    page.get_by_test_id("merge-policy-after").check()
    page.get_by_test_id("merge-save").click()
    expect(page).to_have_url(re.compile(r"/tokenizers/\d+/play$"))
    expect(page.locator("h1")).to_contain_text("english-unigram + chinese-unigram (after)")
