"""Presets in a real browser: the list shows them, their encode page gives tiktoken's ids, and
Compare puts Llama 2, Gemma 3 and Qwen 3 side by side with Hugging Face's counts.

The presets are installed into the live server the way an administrator does it, with
``tokenforge presets install``, from the rank tables in ``$TOKENFORGE_TEST_PRESETS_DIR``
(``scripts/test.sh`` fetches them once; without them these tests skip). The rows are removed
afterwards, so the other browser tests see the server as they left it.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect
from sqlalchemy import create_engine, text

from engine.presets import OPEN_MODELS, TIKTOKEN_ENCODINGS
from tests.browser.conftest import shown_ids
from tests.live import LiveApp
from tests.preset_tables import presets_dir, tiktoken_encoding

pytestmark = pytest.mark.browser
SAMPLE = "Grüße aus München! 我们学习分词器。It's 12345 tokens 🤖 — they'll see.\n    def f(x): return x**2"


@pytest.fixture(scope="module")
def installed(live_server: LiveApp) -> Iterator[Path]:
    """The presets registered in the live server's database; the cache folder they came from."""
    folder = presets_dir()
    subprocess.run([sys.executable, "-m", "webapp.cli", "presets", "install", "--from", str(folder)],
                   env=live_server.env, check=True, capture_output=True, timeout=300)
    yield folder
    engine = create_engine(f"sqlite:///{live_server.database}")
    with engine.begin() as conn:
        conn.execute(text("DELETE FROM tokenizers WHERE preset IS NOT NULL"))
    engine.dispose()


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_a_presets_encode_page_gives_tiktokens_ids(page: Page, live_server: LiveApp, installed: Path,
                                                   artifacts_dir: Path, name: str) -> None:
    page.goto(live_server.url + "tokenizers")
    presets = page.get_by_test_id("presets")
    expect(presets.get_by_role("link")).to_have_count(len(TIKTOKEN_ENCODINGS) + len(OPEN_MODELS))
    presets.get_by_role("link", name=TIKTOKEN_ENCODINGS[name].title).click()
    expect(page).to_have_url(re.compile(r"/tokenizers/\d+/play"))
    expected = tiktoken_encoding(installed, name).encode(SAMPLE)
    page.get_by_test_id("text").fill(SAMPLE)
    expect(page.get_by_test_id("count-tokens")).to_have_text(f"{len(expected):,}")
    ids = shown_ids(page)
    assert ids == expected
    nav = page.get_by_role("navigation", name="This tokenizer")
    expect(nav.get_by_role("link", name="Delete…")).to_have_count(0)
    expect(nav.get_by_role("link", name="Share")).to_have_count(0)
    page.screenshot(path=str(artifacts_dir / f"preset-{name}.png"), full_page=True)


def test_deleting_a_preset_is_refused_with_the_reason(page: Page, live_server: LiveApp, installed: Path) -> None:
    page.goto(live_server.url + "tokenizers")
    page.get_by_test_id("presets").get_by_role("link", name=TIKTOKEN_ENCODINGS["r50k_base"].title).click()
    expect(page).to_have_url(re.compile(r"/tokenizers/\d+/play"))
    preset = re.search(r"/tokenizers/(\d+)/play", page.url).group(1)  # type: ignore[union-attr]
    answer = page.goto(f"{live_server.url}tokenizers/{preset}/delete")
    assert answer is not None and answer.status == 403
    expect(page.locator("body")).to_contain_text("shared read-only with every team")


# The sentence the team's source document compares these models on.
SENTENCE = "人工智能是计算机科学、心理学、哲学等学科融合的交叉学科。"


def test_compare_puts_three_open_models_side_by_side_with_hugging_faces_counts(
        page: Page, live_server: LiveApp, installed: Path, artifacts_dir: Path) -> None:
    tokenizers = pytest.importorskip("tokenizers")
    names = ["llama2", "gemma3", "qwen3"]
    engine = create_engine(f"sqlite:///{live_server.database}")
    with engine.begin() as conn:
        ids = dict(conn.execute(text("SELECT preset, id FROM tokenizers WHERE preset IN ('llama2', 'gemma3', 'qwen3')")).all())
    engine.dispose()
    expected = [len(tokenizers.Tokenizer.from_file(str(installed / "open" / name / "tokenizer.json")).encode(SENTENCE).ids)
                for name in names]
    query = "&".join(f"ids={ids[name]}" for name in names)
    page.goto(f"{live_server.url}compare?{query}&text={SENTENCE}")
    columns = page.get_by_test_id("compare-col")
    expect(columns).to_have_count(3)
    for index, count in enumerate(expected):
        expect(columns.nth(index).get_by_test_id("count-tokens")).to_have_text(f"{count:,}")
    assert expected[0] > 1.8 * expected[1]  # Llama 2 spells most of these characters in byte pieces
    page.screenshot(path=str(artifacts_dir / "compare-open-models.png"), full_page=True)
