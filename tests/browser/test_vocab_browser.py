"""In a real browser: the vocabulary browser's search, sort and filter go into the address as they
change (htmx pushes it), survive a reload, and paging keeps them (issue 16, item 7)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.live import LiveApp

pytestmark = pytest.mark.browser
CORPUS = "".join(f"the thinking thing thought {i} then there therefore {i % 9}\n" for i in range(300))


def test_the_query_lives_in_the_url(page: Page, live_server: LiveApp, artifacts_dir: Path, tmp_path: Path) -> None:
    corpus = tmp_path / "things.txt"
    corpus.write_text(CORPUS, encoding="utf-8")
    page.goto(live_server.url + "corpora/")
    page.set_input_files('input[name="files"]', str(corpus))
    page.get_by_role("button", name="Upload").click()
    page.wait_for_url(re.compile(r"/corpora/\d+"))
    corpus_id = re.search(r"/corpora/(\d+)", page.url).group(1)  # type: ignore[union-attr]
    page.goto(f"{live_server.url}train?corpus={corpus_id}")
    page.fill('input[name="opt-vocab_size"]', "300")
    page.get_by_role("button", name="Start training").click()
    link = page.get_by_role("link", name=re.compile("open the tokenizer"))
    expect(link).to_be_visible(timeout=120_000)
    tokenizer_url = link.get_attribute("href")
    tokenizer_id = re.search(r"/tokenizers/(\d+)", tokenizer_url or "").group(1)  # type: ignore[union-attr]

    page.goto(f"{live_server.url}tokenizers/{tokenizer_id}/vocab")
    with page.expect_response(re.compile(r"/vocab\?.*sort=length")):
        page.select_option('select[name="sort"]', "length")
    expect(page).to_have_url(re.compile(r"sort=length"))
    with page.expect_response(re.compile(r"/vocab\?.*kind=word-initial")):
        page.select_option('select[name="kind"]', "word-initial")
    expect(page).to_have_url(re.compile(r"kind=word-initial"))
    first = page.locator("#vocab-table tbody tr").first.locator("td").nth(1)
    expect(first).to_have_text(re.compile(r"^␣"))  # the longest word-initial token starts with a space
    longest = first.inner_text()

    page.reload()  # the query survives
    expect(page.locator('select[name="sort"]')).to_have_value("length")
    expect(page.locator('select[name="kind"]')).to_have_value("word-initial")
    expect(page.locator("#vocab-table tbody tr").first.locator("td").nth(1)).to_have_text(longest)
    page.screenshot(path=str(artifacts_dir / "vocab-query.png"), full_page=True)

    page.goto(f"{live_server.url}tokenizers/{tokenizer_id}/vocab?sort=rank")
    expect(page.get_by_test_id("next-page")).to_be_visible()
    page.get_by_test_id("next-page").click()
    expect(page).to_have_url(re.compile(r"page=2.*sort=rank|sort=rank.*page=2"))
    expect(page.locator("#vocab-table")).to_contain_text("page 2 of")
