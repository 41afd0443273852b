"""The leaderboard in a real browser (issue 15, item 2): three tokenizers × two corpora, added the
way users add them (the import and upload forms), a board built with the form that fills in while
the page polls, and figures that equal ``tokenforge eval`` run on the board's own text with the
tokenizer's own downloaded ``tokenizer.json``. Then a sort by a column and the CSV export.
"""

from __future__ import annotations

import csv
import io
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import import_tokenizer_file
from tests.live import REPO, LiveApp
from tests.webapp.playground_samples import byte_bpe, unigram, wordpiece

pytestmark = pytest.mark.browser

CORPORA = {
    "lb-english.txt": "".join(f"the cat sat on the mat {i}\nhello world, unable to see {i % 5}\n" for i in range(60)),
    "lb-french.txt": "".join(f"le thé est très chaud {i}\nl'été à Paris, où ça ?\n" for i in range(40)),
}
FIGURES = ("bytes_per_token", "chars_per_token", "fertility", "unk_rate", "tokens", "vocab_utilisation")


def cli_eval(tokenizer: Path, text: Path) -> dict[str, object]:
    done = subprocess.run([sys.executable, "-m", "webapp.cli", "eval", "-t", str(tokenizer), str(text)],
                          capture_output=True, text=True, cwd=REPO, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_a_board_of_three_tokenizers_and_two_corpora_equals_tokenforge_eval(
        page: Page, live_server: LiveApp, tmp_path: Path, artifacts_dir: Path) -> None:
    ids = {}
    for tokenizer in (byte_bpe("lb-bpe"), wordpiece(), unigram()):
        path = tmp_path / f"{tokenizer.name}.json"
        path.write_text(tokenizer.to_json(), encoding="utf-8")
        name = f"lb-{tokenizer.name}"
        ids[name] = import_tokenizer_file(page, live_server, path, name)
    page.goto(live_server.url + "corpora/")
    for name, text in CORPORA.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    page.set_input_files('input[name="files"]', [str(tmp_path / name) for name in CORPORA])
    page.get_by_role("button", name="Upload").click()

    page.goto(live_server.url + "leaderboards")
    page.fill('input[name="name"]', "Browser board")
    for name in ids:
        page.get_by_label(name).check()
    for name in CORPORA:
        page.get_by_label(name).check()
    page.screenshot(path=str(artifacts_dir / "leaderboard-form.png"), full_page=True)
    page.get_by_role("button", name="Build the leaderboard").click()
    expect(page).to_have_url(re.compile(r"/leaderboards/\d+$"))
    board = page.get_by_test_id("board")
    expect(board).to_have_attribute("data-finished", "yes", timeout=120_000)  # htmx polls until done
    expect(page.get_by_test_id("pairs")).to_have_text("6 of 6 pairs evaluated")
    page.screenshot(path=str(artifacts_dir / "leaderboard.png"), full_page=True)

    sections = page.locator("section.board-corpus")
    expect(sections).to_have_count(2)
    for index in range(2):
        section = sections.nth(index)
        corpus_name = section.locator("h2").inner_text()
        text_path = tmp_path / f"slice-{index}.txt"
        href = section.get_by_role("link", name="the text").get_attribute("href")
        text_path.write_bytes(page.request.get(live_server.url.rstrip("/") + href).body())
        assert text_path.read_text(encoding="utf-8") == CORPORA[corpus_name]  # small: the whole corpus
        expect(section.locator("svg.chart rect.chart-bar")).to_have_count(3)
        for name, tokenizer_id in ids.items():
            download = page.request.get(f"{live_server.url}tokenizers/{tokenizer_id}/download/tokenizer.json/tokenizer.json")
            tokenizer_path = tmp_path / f"{tokenizer_id}.json"
            tokenizer_path.write_bytes(download.body())
            expected = cli_eval(tokenizer_path, text_path)
            row = section.locator(f'tr[data-tokenizer="{tokenizer_id}"]')
            for key in FIGURES:
                shown = row.locator(f'td[data-key="{key}"]').get_attribute("data-value")
                assert shown == str(expected[key]), (corpus_name, name, key)
            assert row.locator('td[data-key="lossless"]').inner_text() == ("lossless" if expected["lossless"] else "differs")

    # Sorting by a column goes through the address, and the rows follow the figures.
    first = sections.nth(0)
    first.get_by_role("link", name="Tokens / word").click()
    expect(page).to_have_url(re.compile(r"sort=fertility&order=asc"))
    # Lossy rows (data-lossy) rank after the lossless ones, each part by the column (issue 24, item 3).
    ranked = page.locator("section.board-corpus").nth(0).locator("tbody tr").evaluate_all(
        "rows => rows.map(r => [r.dataset.lossy === 'yes', Number(r.querySelector('td[data-key=fertility]').dataset.value)])")
    assert ranked == sorted(ranked) and len(ranked) == 3

    # At a phone's width the page does not scroll sideways: a wide table scrolls inside its box.
    page.set_viewport_size({"width": 390, "height": 844})
    page.screenshot(path=str(artifacts_dir / "leaderboard-390.png"), full_page=True)
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")

    exported = page.request.get(live_server.url.rstrip("/") + page.get_by_test_id("csv").get_attribute("href"))
    assert exported.headers["content-type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(exported.text())))
    assert len(rows) == 6 and {row["corpus"] for row in rows} == set(CORPORA)
