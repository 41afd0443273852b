"""The span and ids HTML built in Python: every text and attribute escaped, the same on repeat."""

from __future__ import annotations

import re

from markupsafe import escape

from tests.webapp.playground_samples import EOT, byte_bpe
from webapp.playground.encode_view import encode_for_display
from webapp.playground.spans_html import escaped, ids_markup, spans_markup


def test_text_and_hover_titles_are_escaped() -> None:
    tok = byte_bpe()
    text = f"""<script>"'&{EOT}<img onerror=x>"""
    html = str(spans_markup(encode_for_display(tok, text)))
    assert "<script" not in html and "<img" not in html and "<|" not in html
    titles = re.findall(r'title="([^"]*)"', html)
    assert len(titles) == len(re.findall(r"<span ", html))  # no title was cut short by a quote
    assert 'title="60  &lt;  [3c]"' in html and 'title="34  &#34;  [22]"' in html
    special_line = escape(f"261  {EOT}  [{EOT.encode().hex(' ')}]")
    assert f'title="{special_line}"' in html


def test_repeated_rendering_is_identical() -> None:
    tok = byte_bpe()
    result = encode_for_display(tok, "the <the> & the\n" * 20, show_ws=True)
    assert spans_markup(result) == spans_markup(result)
    assert ids_markup(result).count('class="tid"') == len(result.ids)


def test_escaped_matches_markupsafe_for_short_and_long_text() -> None:
    for text in ["<a href='x'>&\"", "<" * 1000]:
        assert escaped(text) == str(escape(text)) == escaped(text)


def test_the_spans_are_one_tab_stop() -> None:
    """Only the first token span is tabbable (the script roves it); gaps and the rest are not."""
    result = encode_for_display(byte_bpe(), " the the wé the " * 30)
    html = str(spans_markup(result))
    tokens = re.findall(r'<span class="tok[^"]*"[^>]*>', html)
    assert len(tokens) > 100
    assert html.count("tabindex") == 1 and ' tabindex="0"' in tokens[0]
    assert all("tabindex" not in tag for tag in tokens[1:])
    assert str(spans_markup(encode_for_display(byte_bpe(), ""))) == ""  # nothing to focus, no stop
