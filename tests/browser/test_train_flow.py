"""In a real browser: upload a corpus, see its analysis arrive, train a small BPE, and open the
finished tokenizer."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import Page, Route, expect

from tests.live import LiveApp

pytestmark = pytest.mark.browser
WORDS = ("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november "
         "oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee zulu").split()
CORPUS = "".join(f"{WORDS[i % 26]} {WORDS[i * 7 % 26]} {WORDS[i * 11 % 26]} number {i}\n"
                 for i in range(200))


def test_upload_train_and_see_the_tokenizer(page: Page, live_server: LiveApp,
                                            artifacts_dir: Path, tmp_path: Path) -> None:
    from webapp.training.form import available_algorithms

    algorithm = "bpe" if "bpe" in available_algorithms() else "wordpiece"
    vocab = "300" if algorithm == "bpe" else "80"
    corpus = tmp_path / "words.txt"
    corpus.write_text(CORPUS, encoding="utf-8")

    page.goto(live_server.url + "corpora/")
    page.set_input_files('input[name="files"]', str(corpus))
    page.get_by_role("button", name="Upload").click()
    expect(page.locator("h1")).to_have_text("words.txt")
    expect(page.locator("dl.stats")).to_contain_text("Lines")
    expect(page.locator("dl.stats")).to_contain_text("200")
    # The worker analyses the corpus in the background; the block polls itself until the figures
    # are in (no reload), then stops.
    expect(page.locator("dl.stats")).to_contain_text("split on", timeout=120_000)  # a niced child
    expect(page.get_by_test_id("analysis")).to_have_count(0)
    expect(page.locator("#corpus-stats")).not_to_have_attribute("hx-trigger", re.compile("every"))
    page.screenshot(path=str(artifacts_dir / "corpus.png"), full_page=True)

    page.get_by_role("link", name="Train on this corpus").click()
    # htmx binds the algorithm select once the page has loaded; a change before that sends nothing
    page.wait_for_url(re.compile(r"/train(\?|$)"), wait_until="load")
    # The live server is shared: other tests' corpora are listed too, unchecked.
    expect(page.get_by_role("checkbox", name=re.compile(r"^words\.txt "))).to_be_checked()
    expect(page.locator('input[name="corpus_ids"]:checked')).to_have_count(1)
    with page.expect_response(re.compile(r"/train\?algorithm=")):  # htmx swaps the options
        page.select_option('select[name="algorithm"]', algorithm)
    expect(page.locator("#options legend")).to_have_text(f"Options for {algorithm}")
    page.fill('input[name="opt-vocab_size"]', "1")
    page.get_by_role("button", name="Start training").click()
    expect(page.locator(".field.invalid .field-error")).to_be_visible()  # vocabulary too small
    page.screenshot(path=str(artifacts_dir / "train-form-error.png"), full_page=True)

    page.fill('input[name="opt-vocab_size"]', vocab)
    trainings = lambda: live_server.rows("SELECT count(*) FROM jobs WHERE kind = 'train'")[0][0]  # noqa: E731
    before = trainings()
    held: list[Route] = []  # the first submission waits here, as on a slow connection
    page.route(re.compile(r"/train$"), lambda route: held.append(route) if route.request.method == "POST"
               else route.continue_())
    start = page.get_by_role("button", name="Start training")
    start.scroll_into_view_if_needed()
    box = start.bounding_box()
    assert box is not None
    # Two clicks of the mouse itself (Playwright's own clicks would wait for the navigation):
    # the second while the first submission is on its way.
    page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.wait_for_timeout(300)
    page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.wait_for_timeout(300)  # time for a second request to reach the route, if one were sent
    assert len(held) == 1  # the form sent once
    held[0].continue_()
    expect(page).to_have_url(re.compile(r"/jobs/\d+$"))
    page.unroute(re.compile(r"/train$"))
    assert trainings() == before + 1
    link = page.get_by_role("link", name=re.compile("open the tokenizer"))
    expect(link).to_be_visible(timeout=120_000)  # the job component polls until done
    page.screenshot(path=str(artifacts_dir / "job-done.png"), full_page=True)

    link.click()
    expect(page).to_have_url(re.compile(r"/tokenizers/\d+/play$"))  # opening a tokenizer lands on Encode
    page.get_by_role("navigation", name="This tokenizer").get_by_role("link", name="Summary").click()
    expect(page.get_by_test_id("vocab-size")).to_have_text(vocab)
    expect(page.get_by_test_id("training-time")).to_have_text(re.compile(r"\d+(\.\d+)? s"))
    page.screenshot(path=str(artifacts_dir / "tokenizer.png"), full_page=True)
