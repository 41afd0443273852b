"""Unit tests of the comparison diff: which spans differ, and the shared regions."""

from __future__ import annotations

from tests.webapp.playground_samples import byte_bpe
from webapp.compare import Region, mark_differences, regions, summary
from webapp.spans import DisplaySpan, TokenPart


def spans(*cuts: tuple[int, int], text: str = "the cat sat") -> list[DisplaySpan]:
    part = TokenPart(0, 0, "x", "78", False)
    return [DisplaySpan(a, b, text[a:b], [part]) for a, b in cuts]


def test_identical_tokenizations_have_no_differences() -> None:
    a = spans((0, 3), (3, 7), (7, 11))
    assert mark_differences([a, a]) == [set(), set()]
    assert summary([a, a], 11) == {"regions": 3, "differing": 0, "differing_chars": 0}


def test_a_split_word_is_marked_in_both_tokenizations() -> None:
    a = spans((0, 3), (3, 7), (7, 11))
    b = spans((0, 3), (3, 5), (5, 7), (7, 11))
    assert mark_differences([a, b]) == [{1}, {1, 2}]
    assert regions([a, b], 11) == [Region(0, 3, True), Region(3, 7, False), Region(7, 11, True)]


def test_three_way_comparison_needs_agreement_of_all() -> None:
    a = spans((0, 3), (3, 11))
    b = spans((0, 3), (3, 11))
    c = spans((0, 1), (1, 3), (3, 11))
    assert mark_differences([a, b, c]) == [{0}, {0}, {0, 1}]
    assert summary([a, b, c], 11) == {"regions": 2, "differing": 1, "differing_chars": 3}


def test_gaps_are_not_compared() -> None:
    a = spans((0, 3), (4, 7))
    a.insert(1, DisplaySpan(3, 4, " "))
    b = spans((0, 3), (3, 7))
    assert mark_differences([a, b]) == [{2}, {1}]


def test_real_tokenizers_differ_only_where_merges_apply() -> None:
    from webapp.spans import group_spans

    text = "the world"
    plain, merged = byte_bpe("plain", merges=[]), byte_bpe()
    a = group_spans(text, plain.encode_with_offsets(text), plain)
    b = group_spans(text, merged.encode_with_offsets(text), merged)
    diff_a, diff_b = mark_differences([a, b])
    assert [a[i].text for i in sorted(diff_a)] == ["t", "h", "e", " ", "w", "o"]
    assert [b[i].text for i in sorted(diff_b)] == ["the", " wo"]
