"""The vocabulary browser's sorts, filters and shareable query (issue 16, item 7)."""

from __future__ import annotations

import re

import pytest
from flask import Flask
from flask.testing import FlaskClient

from tests.webapp.conftest import HX
from tests.webapp.playground_samples import byte_bpe, gpt2, store, unigram, wordpiece
from webapp.playground import scripts, vocab_browser


def ids_in(html: str) -> list[int]:
    return [int(i) for i in re.findall(r'<tr(?: class="special")?><td><a href="/tokenizers/\d+/tokens/(\d+)"', html)]


@pytest.mark.parametrize(("data", "script"), [
    ("the".encode(), "Latin"), (" Привет".encode(), "Cyrillic"), ("中文".encode(), "Han"), ("カタ".encode(), "Katakana"),
    (b" 2024!", scripts.NO_LETTERS), ("aб".encode(), scripts.MIXED), (b"\xe4\xb8", scripts.PARTIAL),
    ("ሰላም".encode(), "Ethiopic"), ("ᚠᚢ".encode(), scripts.OTHER),
], ids=lambda v: repr(v))
def test_token_scripts(data: bytes, script: str) -> None:
    assert scripts.token_script(data) == script


def test_sorting_by_length_and_rank(client: FlaskClient, app: Flask) -> None:
    tokenizer_id = store(app, byte_bpe())  # merges: th, the, ␣w, ␣wo, é (ids 256-260), <|endoftext|> 261
    by_length = client.get(f"/tokenizers/{tokenizer_id}/vocab?sort=length", headers=HX).get_data(as_text=True)
    assert ids_in(by_length)[:7] == [261, 257, 259, 256, 258, 260, 0]  # 13 bytes, 3, 3, then 2 each by id
    by_rank = client.get(f"/tokenizers/{tokenizer_id}/vocab?sort=rank", headers=HX).get_data(as_text=True)
    assert ids_in(by_rank)[:5] == [256, 257, 258, 259, 260]
    assert vocab_browser.sorts_for(byte_bpe()) == ["id", "length", "rank"]
    assert vocab_browser.sorts_for(unigram()) == ["id", "length", "score"]


def test_unigram_sorts_by_score(client: FlaskClient, app: Flask) -> None:
    tokenizer_id = store(app, unigram())
    html = client.get(f"/tokenizers/{tokenizer_id}/vocab?sort=score", headers=HX).get_data(as_text=True)
    assert ids_in(html)[:3] == [0, 1, 6]  # scores 0.0, -1.0 (▁the), -1.5 (▁cat)


@pytest.mark.parametrize(("kind", "expected"), [
    ("special", [260]), ("word-initial", [32, 258, 259]), ("byte", list(range(256))),
], ids=str)
def test_filtering_by_kind(client: FlaskClient, app: Flask, kind: str, expected: list[int]) -> None:
    tokenizer = byte_bpe(merges=[(b"t", b"h"), (b"th", b"e"), (b" ", b"w"), (b" w", b"o")])
    tokenizer_id = store(app, tokenizer)
    pages = vocab_browser.search(tokenizer, "", 1, kind=kind, page_size=1000)
    assert [r.id for r in pages.rows] == expected
    html = client.get(f"/tokenizers/{tokenizer_id}/vocab?kind={kind}", headers=HX).get_data(as_text=True)
    assert ids_in(html) == expected[:vocab_browser.PAGE_SIZE]


def test_wordpiece_word_initial_and_inside(app: Flask) -> None:
    tokenizer = wordpiece()
    inside = [r.token for r in vocab_browser.search(tokenizer, kind="inside").rows]
    initial = [r.token for r in vocab_browser.search(tokenizer, kind="word-initial").rows]
    assert inside == ["##able", "##s", "##e"]
    assert initial == ["hello", "world", "un", "!", "h"]


def test_script_filter_lists_the_scripts_with_counts(client: FlaskClient, app: Flask) -> None:
    tokenizer = gpt2()
    found = dict(vocab_browser.scripts_in(tokenizer))
    assert found == {  # GPT-2's 50,256 non-special tokens, each in exactly one group
        "Latin": 47_004, "Numbers and symbols": 2_670, scripts.PARTIAL: 344, "Katakana": 95, "Han": 42,
        "Hiragana": 29, "Greek": 21, "Arabic": 18, "Cyrillic": 17, "Hebrew": 11, "Hangul": 2, "Mixed": 2,
        "Devanagari": 1,
    }
    tokenizer_id = store(app, tokenizer)
    html = client.get(f"/tokenizers/{tokenizer_id}/vocab?script=Latin&kind=word-initial&sort=length").get_data(as_text=True)
    assert '<option value="Latin" selected>Latin (' in html and '<option value="length" selected>' in html
    rows = re.findall(r"<td><code>([^<]*)</code></td><td><code>[^<]*</code></td><td>[\d,]+</td>\s*<td>[^<]*</td><td>Latin</td>", html)
    assert rows and all(r.startswith("␣") for r in rows)
    lengths = [len(r.encode()) for r in rows]
    assert lengths == sorted(lengths, reverse=True)


def test_the_query_is_kept_in_the_pager_links_and_pushed_to_the_url(client: FlaskClient, app: Flask) -> None:
    tokenizer_id = store(app, gpt2())
    html = client.get(f"/tokenizers/{tokenizer_id}/vocab?q=ing&sort=length&kind=word-initial&page=2").get_data(as_text=True)
    assert "page 2 of" in html
    assert f'href="/tokenizers/{tokenizer_id}/vocab?page=3&amp;q=ing&amp;sort=length&amp;kind=word-initial"' in html
    assert f'href="/tokenizers/{tokenizer_id}/vocab?page=1&amp;q=ing&amp;sort=length&amp;kind=word-initial"' in html
    assert html.count('hx-push-url="true"') == 3  # the form and both pager links
    assert 'value="ing"' in html and '<option value="word-initial" selected>' in html


def test_unknown_sorts_and_filters_fall_back(client: FlaskClient, app: Flask) -> None:
    tokenizer_id = store(app, unigram())
    for query in ("sort=rank", "sort=%00" * 50, "kind=nope", "script=Klingon", "script=" + "x" * 10_000):
        response = client.get(f"/tokenizers/{tokenizer_id}/vocab?{query}", headers=HX)
        assert response.status_code == 200
        assert ids_in(response.get_data(as_text=True))[:3] == [0, 1, 2]
