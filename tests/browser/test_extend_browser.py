"""In a real browser: train a small English BPE, extend it from its page with a Chinese corpus
(a job with progress), read the report, and open the vocabulary diff with the base."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.live import LiveApp
from tests.webapp.training.extend_support import ENGLISH, chinese

pytestmark = pytest.mark.browser


def upload(page: Page, live_server: LiveApp, path: Path) -> str:
    """Upload ``path`` on the corpora page; return the new corpus's id."""
    page.goto(live_server.url + "corpora/")
    page.set_input_files('input[name="files"]', str(path))
    page.get_by_role("button", name="Upload").click()
    page.wait_for_url(re.compile(r"/corpora/\d+"))
    return re.search(r"/corpora/(\d+)", page.url).group(1)  # type: ignore[union-attr]


def test_extend_from_the_tokenizer_page_and_open_the_diff(page: Page, live_server: LiveApp, artifacts_dir: Path,
                                                          tmp_path: Path) -> None:
    english, han = tmp_path / "english.txt", tmp_path / "han-extend.txt"
    english.write_text(ENGLISH, encoding="utf-8")
    han.write_text(chinese(), encoding="utf-8")
    english_id = upload(page, live_server, english)
    upload(page, live_server, han)
    page.goto(f"{live_server.url}train?corpus={english_id}")
    page.fill('input[name="opt-vocab_size"]', "300")
    page.get_by_role("button", name="Start training").click()
    link = page.get_by_role("link", name=re.compile("open the tokenizer"))
    expect(link).to_be_visible(timeout=120_000)
    base_id = re.search(r"/tokenizers/(\d+)", link.get_attribute("href") or "").group(1)  # type: ignore[union-attr]

    page.goto(f"{live_server.url}tokenizers/{base_id}")
    form = page.locator("#extend-form")
    expect(form.locator('input[name="protected"]')).to_be_checked()  # protected by default
    form.get_by_role("checkbox", name=re.compile(r"^han-extend\.txt ")).check()
    form.locator('input[name="add"]').fill("30")
    page.screenshot(path=str(artifacts_dir / "extend-form.png"), full_page=True)
    form.get_by_role("button", name="Start extending").click()
    expect(page).to_have_url(re.compile(r"/jobs/\d+$"))
    report_link = page.get_by_test_id("extension-page")
    expect(report_link).to_be_visible(timeout=120_000)  # the job block polls itself until done
    page.screenshot(path=str(artifacts_dir / "extend-job-done.png"), full_page=True)

    report_link.click()
    expect(page.locator("h1")).to_have_text(re.compile(r" \+ 30 \(han-extend\.txt\)$"))
    expect(page.get_by_test_id("pieces-added")).to_have_text("30")
    expect(page.get_by_test_id("unreachable")).to_have_text("0")
    expect(page.get_by_test_id("new-rows")).to_have_text("30")
    expect(page.get_by_test_id("held_out-changed")).to_be_visible()
    page.screenshot(path=str(artifacts_dir / "extend-report.png"), full_page=True)

    page.get_by_test_id("extension-diff").click()
    expect(page).to_have_url(re.compile(rf"/tokenizers/diff\?a={base_id}&b=\d+$"))
    expect(page.get_by_test_id("diff-only-a")).to_have_text("0")
    expect(page.get_by_test_id("diff-only-b")).to_have_text("30")
    page.screenshot(path=str(artifacts_dir / "extend-diff.png"), full_page=True)
