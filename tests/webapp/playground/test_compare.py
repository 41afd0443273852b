"""Unit tests of the comparison diff: which spans differ, and the shared regions."""

from __future__ import annotations

import re

import pytest
from flask import Flask
from flask.testing import FlaskClient

from tests.webapp.playground_samples import byte_bpe, store
from webapp.playground import encode_page
from webapp.playground.compare import ColumnFigures, Region, column_figures, mark_spans, regions, summary
from webapp.playground.spans import DisplaySpan, TokenPart, group_spans


def mark_differences(tokenizations: list[list[DisplaySpan]], mark: str = "all") -> list[set[int]]:
    length = max(s.end for spans in tokenizations for s in spans)
    return mark_spans(tokenizations, regions(tokenizations, length), mark)


def spans(*cuts: tuple[int, int], text: str = "the cat sat") -> list[DisplaySpan]:
    part = TokenPart(0, 0, "x", "78", False)
    return [DisplaySpan(a, b, text[a:b], [part]) for a, b in cuts]


def test_identical_tokenizations_have_no_differences() -> None:
    a = spans((0, 3), (3, 7), (7, 11))
    assert mark_differences([a, a]) == [set(), set()]
    assert summary([a, a], 11) == {"regions": 3, "differing": 0, "differing_chars": 0, "counts_differ": 0}


def test_a_split_word_is_marked_in_both_tokenizations() -> None:
    a = spans((0, 3), (3, 7), (7, 11))
    b = spans((0, 3), (3, 5), (5, 7), (7, 11))
    assert mark_differences([a, b]) == [{1}, {1, 2}]
    assert regions([a, b], 11) == [Region(0, 3, True, (1, 1)), Region(3, 7, False, (1, 2)), Region(7, 11, True, (1, 1))]


def test_three_way_comparison_needs_agreement_of_all() -> None:
    a = spans((0, 3), (3, 11))
    b = spans((0, 3), (3, 11))
    c = spans((0, 1), (1, 3), (3, 11))
    assert mark_differences([a, b, c]) == [{0}, {0}, {0, 1}]
    assert summary([a, b, c], 11) == {"regions": 2, "differing": 1, "differing_chars": 3, "counts_differ": 1}


def test_gaps_are_not_compared() -> None:
    a = spans((0, 3), (4, 7))
    a.insert(1, DisplaySpan(3, 4, " "))
    b = spans((0, 3), (3, 7))
    assert mark_differences([a, b]) == [{2}, {1}]


def test_real_tokenizers_differ_only_where_merges_apply() -> None:
    text = "the world"
    plain, merged = byte_bpe("plain", merges=[]), byte_bpe()
    a = group_spans(text, plain.encode_with_offsets(text), plain)
    b = group_spans(text, merged.encode_with_offsets(text), merged)
    diff_a, diff_b = mark_differences([a, b])
    assert [a[i].text for i in sorted(diff_a)] == ["t", "h", "e", " ", "w", "o"]
    assert [b[i].text for i in sorted(diff_b)] == ["the", " wo"]


def test_counts_mark_only_stretches_that_spend_different_numbers_of_tokens() -> None:
    """t|he against th|e: cut differently, two tokens each, marked under "all" only; " s|at" costs one more."""
    a = spans((0, 1), (1, 3), (3, 7), (7, 9), (9, 11))
    b = spans((0, 2), (2, 3), (3, 7), (7, 11))
    found = regions([a, b], 11)
    assert [r.counts for r in found] == [(2, 2), (1, 1), (2, 1)]
    assert mark_spans([a, b], found, "all") == [{0, 1, 3, 4}, {0, 1, 3}]
    assert mark_spans([a, b], found, "counts") == [{3, 4}, {3}]
    assert summary([a, b], 11, found) == {"regions": 3, "differing": 2, "differing_chars": 7, "counts_differ": 1}


def test_column_figures_count_marked_tokens_and_extra_tokens_per_tokenizer() -> None:
    a = spans((0, 1), (1, 3), (3, 7), (7, 9), (9, 11))
    b = spans((0, 2), (2, 3), (3, 7), (7, 11))
    c = spans((0, 3), (3, 5), (5, 7), (7, 11))
    found = regions([a, b, c], 11)
    assert [r.counts for r in found] == [(2, 2, 1), (1, 1, 2), (2, 1, 1)]
    assert column_figures(found, "counts", 3) == [
        ColumnFigures(marked_tokens=5, extra_tokens=2, leanest_in=1),
        ColumnFigures(marked_tokens=4, extra_tokens=1, leanest_in=2),
        ColumnFigures(marked_tokens=4, extra_tokens=1, leanest_in=2),
    ]
    assert [f.marked_tokens for f in column_figures(found, "all", 3)] == [5, 4, 4]


@pytest.mark.parametrize(("mark", "underlined", "figures"), [
    pytest.param("all", [["th", "e", "·", "c"], ["t", "he", "·c"]], ["4 tokens underlined", "3 tokens underlined"],
                 id="all"),
    pytest.param("counts", [["·", "c"], ["·c"]], ["2 tokens underlined", "1 token underlined"], id="counts"),
    pytest.param("nonsense", [["th", "e", "·", "c"], ["t", "he", "·c"]], ["4 tokens underlined", "3 tokens underlined"],
                 id="unknown-is-all"),
])
def test_compare_page_marks_by_the_chosen_toggle(client: FlaskClient, app: Flask, mark: str,
                                                  underlined: list[list[str]], figures: list[str]) -> None:
    """th|e against t|he is cut differently at equal cost; " c" costs the first one token more."""
    first = store(app, byte_bpe("th", merges=[(b"t", b"h")]))
    second = store(app, byte_bpe("he", merges=[(b"h", b"e"), (b" ", b"c")]))
    html = client.post("/compare", headers={"HX-Request": "true"}, data={
        "ids": [str(first), str(second)], "text": "the cat", "mark": mark, "show_ws": "on"}).get_data(as_text=True)
    columns = html.split('data-testid="compare-col"')[1:]
    assert [re.findall(r'class="tok c\d+ differs"[^>]*>([^<]*)<', c) for c in columns] == underlined
    figures_html = re.findall(r'data-testid="diff-count">(.*?)</p>', html, re.S)
    shown = [" ".join(re.sub(r"</?strong>", "", m).split()) for m in figures_html]
    assert shown == [f"{figures[0]} · 1 more than the fewest where counts differ",
                     f"{figures[1]} · the fewest wherever counts differ"]
    assert ("2 of 4 stretches of text are split differently (5 characters). "
            "1 of them takes a different number of tokens.") in html


def test_compare_page_offers_the_toggle_and_keeps_it_in_the_url(client: FlaskClient, app: Flask) -> None:
    first, second = store(app, byte_bpe("th", merges=[(b"t", b"h")])), store(app, byte_bpe("plain", merges=[]))
    html = client.get(f"/compare?ids={first}&ids={second}&text=the&mark=counts").get_data(as_text=True)
    assert re.search(r'<input type="radio" name="mark" value="counts" checked data-testid="mark-counts">', html)
    assert re.search(r'<input type="radio" name="mark" value="all" data-testid="mark-all">', html)
    assert "Underlined: stretches where the tokenizers spend a different number of tokens." in html


def test_a_grapheme_of_one_token_against_two_bytes_differs_in_both_marks() -> None:
    """ "é" is one display span in both, but one token against two: cut alike, still a difference."""
    one = byte_bpe("é", merges=[(b"\xc3", b"\xa9")])
    two = byte_bpe("bytes", merges=[])
    text = "café"
    a = group_spans(text, one.encode_with_offsets(text), one)
    b = group_spans(text, two.encode_with_offsets(text), two)
    found = regions([a, b], len(text))
    assert [(r.start, r.end, r.same, r.counts) for r in found] == [
        (0, 1, True, (1, 1)), (1, 2, True, (1, 1)), (2, 3, True, (1, 1)), (3, 4, False, (1, 2))]
    assert mark_spans([a, b], found, "all") == mark_spans([a, b], found, "counts") == [{3}, {3}]
    assert summary([a, b], len(text), found)["differing"] == summary([a, b], len(text), found)["counts_differ"] == 1


def test_the_compare_list_is_bounded_and_keeps_the_chosen_ones(client: FlaskClient, app: Flask,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(encode_page, "PICKER_ROWS", 2)
    ids = [store(app, byte_bpe(f"bpe-{i}")) for i in range(5)]
    offered = lambda html: [int(i) for i in re.findall(r'data-testid="compare-(\d+)"', html)]  # noqa: E731
    assert offered(client.get("/compare").get_data(as_text=True)) == [ids[4], ids[3]]  # the newest two
    page = client.get(f"/compare?ids={ids[0]}&ids={ids[4]}&text=the").get_data(as_text=True)
    assert offered(page) == [ids[0], ids[4], ids[3]]  # an older chosen one stays offered
