"""The span and ids HTML built in Python: every text and attribute escaped, the same from the escape cache,
and the hover lines one per distinct id."""

from __future__ import annotations

import json
import re
from collections.abc import Collection
from html import unescape

import pytest
from flask import Flask
from flask.testing import FlaskClient
from markupsafe import escape

from tests.webapp.conftest import HX, shown_ids
from tests.webapp.playground_samples import EOT, byte_bpe, store, wordpiece
from webapp.playground.encode_view import Encoded, encode_for_display
from webapp.playground.spans_html import (
    ALL,
    _escape_short,
    escaped,
    escaped_all,
    first_spans,
    hover_lines,
    ids_markup,
    spans_markup,
)


def test_text_is_escaped_and_the_hover_lines_are_one_per_id() -> None:
    tok = byte_bpe()
    text = f"""<script>"'&{EOT}<img onerror=x> <script>"""
    result = encode_for_display(tok, text, allowed_special=True)
    html = str(spans_markup(result))
    assert "<script" not in html and "<img" not in html and "<|" not in html and "title=" not in html
    lines = json.loads(hover_lines(result))
    assert lines["60"] == "60  <  [3c]" and lines["34"] == '34  "  [22]'  # escaped where the template puts them
    assert lines["261"] == f"261  {EOT}  [{EOT.encode().hex(' ')}]"
    assert sorted(map(int, lines)) == sorted(set(result.ids))  # one line per distinct id


def test_the_hover_lines_are_the_json_of_each_distinct_ids_line_cold_and_warm() -> None:
    # The members are memoised already encoded; joined they must be exactly what encoding the
    # dict gives, in order of first appearance, whether each id's member is made now or reused.
    tok = byte_bpe()
    text = f'the "quoted" \\ back\tslash\x01 café 👩‍🚀 {EOT} the "'
    result = encode_for_display(tok, text, allowed_special=True)
    lines = {i: f"{i}  {tok.id_to_token(i)}  [{tok.token_bytes(i).hex(' ')}]" for i in result.ids}
    expected = json.dumps(lines, ensure_ascii=False, separators=(",", ":"))
    assert hover_lines(result) == expected  # cold: this tokenizer's memo is new
    assert hover_lines(encode_for_display(tok, text, allowed_special=True)) == expected  # warm


def test_the_hover_lines_are_escaped_in_the_page(client: FlaskClient, app: Flask) -> None:
    ref = store(app, byte_bpe())
    html = client.post(f"/tokenizers/{ref}/encode", data={"text": '<"the">'}, headers=HX).get_data(as_text=True)
    found = re.search(r'data-lines="([^"]*)"', html)
    assert found is not None and "<" not in found.group(1)
    assert json.loads(unescape(found.group(1)))["60"] == "60  <  [3c]"


def _token(index: int, token_id: int, text: str) -> str:
    stop = ' tabindex="0"' if index == 0 else ""
    return f'<span class="tok c{index}"{stop} role="button" data-t="{index}" data-ids="{token_id}">{text}</span>'


EXPECTED_SPANS = "".join([
    _token(0, 257, "the"), _token(1, 32, "·"), _token(2, 60, "&lt;"), _token(3, 257, "the"), _token(4, 62, "&gt;"),
    _token(5, 32, "·"), _token(6, 38, "&amp;"), _token(7, 32, "·"), _token(8, 257, "the"), _token(9, 10, "↵\n"),
])


def test_rendering_gives_the_same_markup_with_the_escape_cache_cold_and_warm() -> None:
    result = encode_for_display(byte_bpe(), "the <the> & the\n", show_ws=True)
    assert result.ids == [257, 32, 60, 257, 62, 32, 38, 32, 257, 10]
    _escape_short.cache_clear()
    assert str(spans_markup(result)) == EXPECTED_SPANS  # every string escaped for the first time
    assert str(spans_markup(result)) == EXPECTED_SPANS  # every string from the cache
    assert str(ids_markup(result)) == "257 32 60 257 62 32 38 32 257 10"


def test_escaped_matches_markupsafe_for_short_and_long_text() -> None:
    assert escaped("<a href='x'>&\"") == "&lt;a href=&#39;x&#39;&gt;&amp;&#34;"
    for text in ["<a href='x'>&\"", "<" * 1000]:  # short ones go through the cache, long ones do not
        _escape_short.cache_clear()
        assert escaped(text) == str(escape(text))
        assert escaped(text) == str(escape(text))  # again, from the cache if it is short
    assert _escape_short.cache_info().currsize == 0  # the long one was not cached


def test_escaped_all_is_escaped_on_each_text_nul_or_not() -> None:
    """One escape of the texts joined with a NUL, split again; a text holding a NUL of its own
    (the joined texts would split wrongly) sends them all through ``escaped`` one by one."""
    for texts in (["<a", "", "b'&", '"', "\n", "x" * 300], ["a\0b", "<", ""], ["\0"], [""], []):
        assert escaped_all(texts) == [str(escape(text)) for text in texts]
    result = encode_for_display(byte_bpe(), "a\0<b>\0")
    assert str(spans_markup(result)).count("&lt;") == 1 and "\0" in str(spans_markup(result))


def test_the_spans_are_one_tab_stop() -> None:
    """Only the first token span is tabbable (the script roves it); gaps and the rest are not."""
    result = encode_for_display(byte_bpe(), " the the wé the " * 30)
    html = str(spans_markup(result))
    tokens = re.findall(r'<span class="tok[^"]*"[^>]*>', html)
    assert len(tokens) == len(result.ids) == 270  # one span per token: nothing merged or dropped
    assert html.count("tabindex") == 1 and ' tabindex="0"' in tokens[0]
    assert all("tabindex" not in tag for tag in tokens[1:])
    assert str(spans_markup(encode_for_display(byte_bpe(), ""))) == ""  # nothing to focus, no stop


def test_an_htmx_answer_draws_a_screenful_and_sends_the_rest_as_data_blocks(client: FlaskClient, app: Flask) -> None:
    """The spans of the first 2,000 characters and the first 500 ids are drawn; the rest are in
    data blocks of 400 that the script draws later. A full page draws everything."""
    ref = store(app, byte_bpe())
    text = "the wé " * 600
    ids = byte_bpe().encode(text, allowed_special=set(), disallowed_special=())
    answer = client.post(f"/tokenizers/{ref}/encode", data={"text": text}, headers=HX).get_data(as_text=True)
    spans = answer[answer.index('data-testid="spans"'):answer.index('class="ids-pane"')]
    drawn = spans[:spans.index("<script")]
    blocks = re.findall(r'<script type="text/html" data-rest>(.*?)</script>', spans)
    texts = [unescape(t) for t in re.findall(r">([^<]*)</span>", drawn)]
    assert sum(map(len, texts)) >= 2000 > sum(map(len, texts[:-1]))  # whole spans, up to the 2,000th character
    drawn_tokens = drawn.count('class="tok')
    *full, last = [b.count('class="tok') for b in blocks]
    assert full == [400] * len(full) and drawn_tokens + 400 * len(full) + last == len(ids) and 0 < last <= 400
    assert shown_ids(answer) == [str(i) for i in ids]
    pane = answer[answer.index('data-testid="ids">'):]
    assert len(pane[len('data-testid="ids">'):pane.index("<script")].split()) == 500
    page = client.post(f"/tokenizers/{ref}/encode", data={"text": text}).get_data(as_text=True)
    assert "data-rest" not in page and page.count('class="tok') == len(ids) and shown_ids(page) == shown_ids(answer)


def test_no_text_can_end_a_data_block_early() -> None:
    """A data block is raw text up to ``</script``, and ``<!--`` in it changes how the parser reads
    on: escaped text has neither, so every block holds exactly its spans."""
    text = "</script><script>alert(1)</script><!-- <script> </SCRIPT " * 30
    result = encode_for_display(byte_bpe(), text)
    html = str(spans_markup(result, drawn=10))
    blocks = re.findall(r'<script type="text/html" data-rest>(.*?)</script>', html, flags=re.S)
    assert len(blocks) == html.count("<script") == -(-(len(result.shown) - 10) // 400)
    for block in blocks:
        assert "<!--" not in block and re.sub(r'</?span[^>]*>', "", block).count("<") == 0
    assert unescape(re.sub(r"<[^>]*>", "", html)) == text


def test_first_spans_counts_characters_and_a_newline_as_a_line() -> None:
    assert first_spans(["ab"] * 10, chars=6) == 3
    assert first_spans(["a\n", "b", "c"], chars=50) == 1  # the newline fills a line's worth
    assert first_spans(["ab"] * 2, chars=100) == 2


def _reference_spans(result: Encoded, differs: Collection[int]) -> str:
    """Every span written out on its own, the obvious way (the fast path reuses ready-made openings)."""
    out, stop = [], True
    for position, span in enumerate(result.spans):
        text = escape(result.shown[position])
        if span.is_gap:
            out.append(f'<span class="gap">{text}</span>')
            continue
        classes = " ".join(["tok", f"c{span.colour}", *(["special"] if span.special else []),
                            *(["differs"] if position in differs else [])])
        tab = ' tabindex="0"' if stop else ""
        out.append(f'<span class="{classes}"{tab} role="button" data-t="{span.indices}" data-ids="{span.ids}">{text}</span>')
        stop = False
    return "".join(out)


@pytest.mark.parametrize("differs", [(), (0,), (1, 3, 4, 9), (2, 999)], ids=["none", "first", "some", "past-the-end"])
def test_the_spans_are_the_reference_spans(differs: tuple[int, ...]) -> None:
    text = f"{EOT}the wo café 👩‍🚀 <&> {EOT}\n\tthe thé" * 3
    for allowed in (True, False):
        result = encode_for_display(byte_bpe(), text, allowed_special=allowed)
        assert any(len(span.parts) > 1 for span in result.spans) and len({s.colour for s in result.spans}) > 6
        assert str(spans_markup(result, set(differs), drawn=ALL)) == _reference_spans(result, differs)


@pytest.mark.parametrize("text", ["  the cat  sat\n", "\n\nthe", "the  ", "", "   "], ids=range(5))
def test_the_spans_with_gaps_are_the_reference_spans(text: str) -> None:
    # WordPiece drops whitespace: gaps before, between and after the tokens, or nothing but a gap.
    result = encode_for_display(wordpiece(), text)
    assert str(spans_markup(result, drawn=ALL)) == _reference_spans(result, ())
    truncated = encode_for_display(wordpiece(), text, limit=1)
    assert str(spans_markup(truncated, {0}, drawn=ALL)) == _reference_spans(truncated, {0})
