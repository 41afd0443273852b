"""Special-token matching: the trie pattern against the obvious flat alternation.

The reference is what ``special_tokens`` built before the trie: every token escaped, longest
first, joined by ``|``. Both must find the same spans in any text, for any token set (shared
prefixes, tokens that are prefixes of others, regex metacharacters, whitespace tokens).
"""

from __future__ import annotations

import regex
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.special_tokens import SpecialTokens, _alternation


def flat_spans(tokens: list[str], text: str) -> list[tuple[int, int]]:
    ordered = sorted(set(tokens), key=lambda t: (-len(t), t))
    pattern = regex.compile("|".join(map(regex.escape, ordered)))
    return [match.span() for match in pattern.finditer(text)]


def trie_spans(tokens: list[str], text: str) -> list[tuple[int, int]]:
    pattern = _alternation(set(tokens), {})
    assert pattern is not None
    return [match.span() for match in pattern.finditer(text)]


ALPHABET = "ab<|>.*\\ \n["
tokens_strategy = st.lists(st.text(ALPHABET, min_size=1, max_size=6), min_size=1, max_size=12)


@settings(max_examples=300, deadline=None)
@given(tokens=tokens_strategy, text=st.text(ALPHABET, max_size=60))
def test_trie_finds_what_the_flat_alternation_finds(tokens: list[str], text: str) -> None:
    assert trie_spans(tokens, text) == flat_spans(tokens, text)


def test_longest_token_wins_at_one_position() -> None:
    tokens = ["<|a|>", "<|a|><|a|>", "<|", "<|ab"]
    assert trie_spans(tokens, "x<|a|><|a|><|a|>y<|abc") == [(1, 11), (11, 16), (17, 21)]


def test_a_token_deeper_than_the_recursion_limit() -> None:
    deep = "x" * 1024
    tokens = [deep, deep[:-1] + "y", "x"]
    assert trie_spans(tokens, deep + "x") == [(0, 1024), (1024, 1025)]


def test_strip_flags_take_the_surrounding_whitespace() -> None:
    specials = SpecialTokens({"<mask>": 5, "<s>": 1}, strip={"<mask>": (True, True)})
    text = "a  <mask>\t b<s>"
    assert list(specials.split(text, frozenset({"<mask>", "<s>"}))) == [
        (0, 1, None), (1, 11, 5), (11, 12, None), (12, 15, 1)]


def test_gemma_sized_sets_compile_to_one_walk_per_position() -> None:
    tokens = [f"<unused{i}>" for i in range(6000)] + ["<start_of_turn>", "<end_of_turn>"]
    text = "hi <unused59><unused5999> <start_of_turn>user"
    assert trie_spans(tokens, text) == flat_spans(tokens, text) == [(3, 13), (13, 25), (26, 41)]
