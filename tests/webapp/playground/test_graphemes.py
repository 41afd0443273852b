"""The fast search for positions inside grapheme clusters agrees with segmenting the whole text."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from webapp.playground.graphemes import inside_graphemes, inside_graphemes_reference

# Characters that take part in the joining rules, next to plain ASCII: CR/LF, combining marks,
# ZWJ, emoji and skin tones, regional indicators, Hangul jamo, a prepend mark, a spacing mark.
ALPHABET = list("ab \t\r\n1#*") + ["\u0301", "\u200d", "\ufe0f", "\u20e3", "👨", "👩", "🏽", "🇫", "🇷",
                                   "\u1100", "\u1161", "\u11a8", "\u0600", "\u0903", "é", "日", "\x00"]


@pytest.mark.parametrize(
    "text, inside",
    [
        pytest.param("plain ascii", set(), id="ascii"),
        pytest.param("a\r\nb", {2}, id="crlf"),
        pytest.param("e\u0301x", {1}, id="combining-mark-after-ascii"),
        pytest.param("\n\u0301", set(), id="nothing-joins-after-lf"),
        pytest.param("🇫🇷🇩🇪", {1, 3}, id="flags-pair-up"),
        pytest.param("x\u0600a", {2}, id="prepend-joins-the-ascii-after-it"),
    ],
)
def test_known_cases(text: str, inside: set[int]) -> None:
    assert inside_graphemes(text) == inside == inside_graphemes_reference(text)


@settings(max_examples=400)
@given(st.lists(st.sampled_from(ALPHABET), max_size=40).map("".join))
def test_agrees_with_the_reference(text: str) -> None:
    assert inside_graphemes(text) == inside_graphemes_reference(text)


@given(st.lists(st.sampled_from(ALPHABET), max_size=40).map("".join), st.integers(0, 45))
def test_a_prefix_is_found_up_to_endpos(text: str, endpos: int) -> None:
    reference = inside_graphemes_reference(text)
    assert {i for i in inside_graphemes(text, endpos) if i < endpos} == {i for i in reference if i < endpos}
