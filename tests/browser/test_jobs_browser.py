"""In a real browser: a finished job's "Train again with these options" opens the training form
filled with that job's corpus, name and options, starts nothing until submitted, and the jobs
list shows each job's progress and duration (issue 16, item 6)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.live import LiveApp

pytestmark = pytest.mark.browser
CORPUS = "".join(f"the quick brown fox {i} jumps over the lazy dog {i % 7}\n" for i in range(300))


def test_train_again_prefills_the_form_and_waits_for_submit(page: Page, live_server: LiveApp,
                                                            artifacts_dir: Path, tmp_path: Path) -> None:
    corpus = tmp_path / "foxes.txt"
    corpus.write_text(CORPUS, encoding="utf-8")
    page.goto(live_server.url + "corpora/")
    page.set_input_files('input[name="files"]', str(corpus))
    page.get_by_role("button", name="Upload").click()
    expect(page.locator("h1")).to_have_text("foxes.txt")
    corpus_id = re.search(r"/corpora/(\d+)", page.url).group(1)  # type: ignore[union-attr]

    page.goto(f"{live_server.url}train?corpus={corpus_id}")
    page.fill('input[name="name"]', "foxes again")
    page.fill('input[name="opt-vocab_size"]', "290")
    page.fill('input[name="opt-min_frequency"]', "3")
    page.fill('textarea[name="opt-special_tokens"]', "<|endoftext|>\n<pad>")
    page.get_by_role("button", name="Start training").click()
    expect(page).to_have_url(re.compile(r"/jobs/\d+$"))
    first_job = page.url
    expect(page.get_by_role("link", name=re.compile("open the tokenizer"))).to_be_visible(timeout=120_000)
    expect(page.get_by_test_id("options")).to_contain_text("<pad>")  # options shown as chips, not a list repr

    page.get_by_test_id("train-again").click()
    expect(page).to_have_url(re.compile(r"/train\?again=\d+$"))
    expect(page.locator(f'input[name="corpus_ids"][value="{corpus_id}"]')).to_be_checked()
    expect(page.locator('input[name="name"]')).to_have_value("foxes again")
    expect(page.locator('input[name="opt-vocab_size"]')).to_have_value("290")
    expect(page.locator('input[name="opt-min_frequency"]')).to_have_value("3")
    expect(page.locator('textarea[name="opt-special_tokens"]')).to_have_value("<|endoftext|>\n<pad>")
    page.screenshot(path=str(artifacts_dir / "train-again.png"), full_page=True)

    page.goto(live_server.url + "jobs")  # opening the form started nothing
    rows = page.locator("tbody tr", has_text="foxes again")
    expect(rows).to_have_count(1)
    expect(rows.first.get_by_test_id("progress")).to_have_text("done")
    expect(rows.first.get_by_test_id("duration")).to_have_text(re.compile(r"^\d+(\.\d+)? s$|^\d+ min \d+ s$"))

    page.go_back()
    page.fill('input[name="opt-vocab_size"]', "295")
    page.get_by_role("button", name="Start training").click()
    expect(page).to_have_url(re.compile(r"/jobs/\d+$"))
    assert page.url != first_job
    expect(page.get_by_test_id("options")).to_contain_text("295")
    page.goto(live_server.url + "jobs")
    expect(page.locator("tbody tr", has_text="foxes again")).to_have_count(2)
