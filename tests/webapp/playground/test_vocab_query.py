"""The vocabulary browser's sorts, filters, search and shareable query (issue 16 item 7, issue 24 item 7)."""

from __future__ import annotations

import re

import pytest
from flask import Flask
from flask.testing import FlaskClient

from engine import Tokenizer, token_scripts
from engine.decoders import MetaspaceDecoder
from engine.models.unigram import BYTE_PIECES, Unigram
from engine.pretokenizers import Metaspace
from tests.webapp.conftest import HX
from tests.webapp.playground_samples import byte_bpe, gpt2, store, unigram, wordpiece
from webapp.playground import vocab_browser


def ids_in(html: str) -> list[int]:
    return [int(i) for i in re.findall(r'<tr(?: class="special")?><td><a href="/tokenizers/\d+/tokens/(\d+)"', html)]


@pytest.mark.parametrize(("data", "script"), [
    ("the".encode(), "Latin"), (" Привет".encode(), "Cyrillic"), ("中文".encode(), "Han"), ("カタ".encode(), "Katakana"),
    (b" 2024!", token_scripts.NO_LETTERS), ("aб".encode(), token_scripts.MIXED), (b"\xe4\xb8", token_scripts.PARTIAL),
    ("ሰላም".encode(), "Ethiopic"), ("ᚠᚢ".encode(), token_scripts.OTHER),
], ids=lambda v: repr(v))
def test_token_scripts(data: bytes, script: str) -> None:
    assert token_scripts.token_script(data) == script


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
    assert ids_in(html) == [1, 6, 2, 3, 4, 5, 8, 9, 7, 0]  # -1.0 (▁the), -1.5 (▁cat), -2.0 (▁), …; <unk> last


def spm_like() -> Tokenizer:
    """A Unigram laid out as sentencepiece writes one: ``<unk>``, ``<s>``, ``</s>`` and the 256 byte
    pieces first, all scored 0 (ids 0-258), then the real pieces (259-266). Only ``<s>``, ``</s>`` are special."""
    pieces = [("<unk>", 0.0), ("<s>", 0.0), ("</s>", 0.0), *((piece, 0.0) for piece in BYTE_PIECES),
              ("▁the", -1.0), ("▁", -2.0), ("t", -3.0), ("h", -3.0), ("e", -3.0), ("m", -4.0), ("▁theme", -5.0),
              ("the", -6.0)]
    control = {"<s>": 1, "</s>": 2}
    return Tokenizer(Unigram(pieces, unk_id=0, byte_fallback=True, special_tokens=control), pre_tokenizer=Metaspace(),
                     special_tokens=control, decoder=MetaspaceDecoder(), name="spm-like")


def test_a_score_sort_lists_unknown_control_and_byte_pieces_after_the_real_ones(client: FlaskClient, app: Flask) -> None:
    """They all score 0, sentencepiece's top score, yet the model never matches them in text."""
    tokenizer = spm_like()
    by_score = [r.id for r in vocab_browser.search(tokenizer, sort="score", page_size=1000).rows]
    assert by_score == [259, 260, 261, 262, 263, 264, 265, 266, *range(259)]
    reserved = vocab_browser.search(tokenizer, kind="reserved", page_size=1000)
    assert [r.id for r in reserved.rows] == list(range(259))
    assert [r.token for r in reserved.rows[:5]] == ["<unk>", "<s>", "</s>", "<0x00>", "<0x01>"]
    # never matched in text, so neither word-initial (not even <0x20>, a space) nor inside a word
    assert [r.id for r in vocab_browser.search(tokenizer, kind="word-initial").rows] == [259, 260, 265]
    assert [r.id for r in vocab_browser.search(tokenizer, kind="inside").rows] == [261, 262, 263, 264, 266]
    tokenizer_id = store(app, tokenizer)
    html = client.get(f"/tokenizers/{tokenizer_id}/vocab?sort=score").get_data(as_text=True)
    assert ids_in(html)[:9] == [259, 260, 261, 262, 263, 264, 265, 266, 0]
    assert '<option value="reserved">unknown, control and byte pieces</option>' in html
    html = client.get(f"/tokenizers/{tokenizer_id}/vocab?kind=reserved&sort=score", headers=HX).get_data(as_text=True)
    assert "259 tokens; page 1 of 3." in html and ids_in(html) == list(range(100))


def test_the_reserved_kind_is_offered_only_where_it_says_more_than_special_tokens() -> None:
    """In GPT-2 and the tiny Unigram (whose <unk> is a special token) it would list the special tokens again."""
    assert "reserved" in vocab_browser.kinds_for(spm_like())
    assert vocab_browser.kinds_for(unigram()) == ["", "byte", "special", "word-initial", "inside"]
    assert vocab_browser.kinds_for(byte_bpe()) == ["", "byte", "special", "word-initial", "inside"]


def test_sentencepiece_spaces_are_shown_as_spaces_and_start_words() -> None:
    rows = vocab_browser.search(unigram(), kind="word-initial").rows
    assert [(r.token, r.text, r.byte_length) for r in rows] == [("▁the", "␣the", 4), ("▁", "␣", 1), ("▁cat", "␣cat", 4)]


@pytest.mark.parametrize(("query", "texts"), [
    (" w", ["␣w", "␣wo"]),
    ("w", ["W", "w", "␣w", "␣wo"]),  # case ignored
    ("␣w", ["␣w", "␣wo"]),  # the page's own notation for a space
    ("Ġw", ["␣w", "␣wo"]),  # the vocabulary string
    ("w ", []),  # a trailing space counts too
    (" 257 ", ["the"]),  # an id, spaces around it or not
], ids=repr)
def test_a_search_keeps_its_spaces_byte_level_bpe(query: str, texts: list[str]) -> None:
    assert [r.text for r in vocab_browser.search(byte_bpe(), query).rows] == texts


@pytest.mark.parametrize(("query", "ids"), [
    (" the", [259, 265]), ("the", [259, 265, 266]), ("▁the", [259, 265]), ("the ", []), (" theme", [265]),
], ids=repr)
def test_a_search_keeps_its_spaces_sentencepiece(query: str, ids: list[int]) -> None:
    assert [r.id for r in vocab_browser.search(spm_like(), query).rows] == ids


@pytest.mark.parametrize(("query", "tokens"), [
    (" un", ["un"]), ("able", ["##able"]), (" able", []), (" h", ["hello", "h"]), ("##", ["##able", "##s", "##e"]),
], ids=repr)
def test_a_search_keeps_its_spaces_wordpiece(query: str, tokens: list[str]) -> None:
    """WordPiece stores no spaces: a word-initial token counts as starting with one, a ## piece as not."""
    assert [r.token for r in vocab_browser.search(wordpiece(), query).rows] == tokens


def test_a_search_for_space_the_finds_gpt2_tokens_with_a_space_before_the(client: FlaskClient, app: Flask) -> None:
    """It found 324 with the space dropped, ``ther`` and ``other`` among them; with it, 78 (case ignored)."""
    tokenizer = gpt2()
    spaced = vocab_browser.search(tokenizer, " the", page_size=1000)
    assert spaced.total == 78 and vocab_browser.search(tokenizer, "the", page_size=1000).total == 324
    assert [(r.id, r.text) for r in spaced.rows[:6]] == [(262, "␣the"), (383, "␣The"), (484, "␣they"),
                                                         (511, "␣their"), (606, "␣them"), (612, "␣there")]
    assert all("␣the" in r.text.casefold() for r in spaced.rows)
    assert [r.id for r in vocab_browser.search(tokenizer, "Ġthe", page_size=1000).rows] == [r.id for r in spaced.rows]
    tokenizer_id = store(app, tokenizer)
    html = client.get(f"/tokenizers/{tokenizer_id}/vocab", query_string={"q": " the"}).get_data(as_text=True)
    assert '78 tokens match <code>␣the</code>; page 1 of 1.' in html
    assert 'value=" the"' in html and 'data-testid="vocab-search-help">A search keeps its spaces' in html
    html = client.get(f"/tokenizers/{tokenizer_id}/vocab", query_string={"q": " th"}).get_data(as_text=True)
    assert '241 tokens match <code>␣th</code>; page 1 of 3.' in html
    assert f'href="/tokenizers/{tokenizer_id}/vocab?page=2&amp;q=+th"' in html  # the pager keeps the space


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
        "Latin": 47_004, "Numbers and symbols": 2_670, token_scripts.PARTIAL: 344, "Katakana": 95, "Han": 42,
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
    for query in ("sort=rank", "sort=%00" * 50, "kind=nope", "kind=reserved", "script=Klingon", "script=" + "x" * 10_000):
        response = client.get(f"/tokenizers/{tokenizer_id}/vocab?{query}", headers=HX)
        assert response.status_code == 200
        assert ids_in(response.get_data(as_text=True))[:3] == [0, 1, 2]
