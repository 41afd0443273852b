"""BPE merge order on imported vocabularies, against the real Hugging Face ``tokenizers``.

A trained merge list is in creation order: a merge that uses a token comes after the merge
that made it. Imported files need not be: a merge may use a token that a *later* (higher
rank) merge creates. Then "merge every occurrence of the lowest-ranked pair" and "merge the
lowest-ranked pair once, leftmost, then look again" differ, and Hugging Face does the second
(a priority queue of (rank, position)). Both our merge loops must agree with it.
"""

from __future__ import annotations

import pytest
import tokenizers
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.presets import byte_level_bpe
from engine.tokenizer import Tokenizer


def tokenizer_with(merges: list[tuple[bytes, bytes]]) -> Tokenizer:
    vocab = {b: bytes([b]) for b in range(256)}
    for index, (left, right) in enumerate(merges):
        vocab[256 + index] = left + right
    return byte_level_bpe(vocab, merges, pretokenizer="gpt2")


def hf_ids(tokenizer: Tokenizer, text: str) -> list[int]:
    return tokenizers.Tokenizer.from_str(tokenizer.to_json()).encode(text, add_special_tokens=False).ids


# "ab" is made by rank 1, and rank 0 uses it: in "abab", Hugging Face merges the first "ab",
# then (ab, a) at rank 0 beats the second (a, b) at rank 1, giving [aba, b]; merging both
# occurrences of (a, b) first would give [ab, ab].
LATER_MERGES = [(b"ab", b"a"), (b"a", b"b")]


@pytest.mark.parametrize("text", ["abab", "ababab", "aabab", "abba"])
def test_both_merge_loops_follow_hugging_face_when_a_merge_uses_a_later_token(text: str) -> None:
    tokenizer = tokenizer_with(LATER_MERGES)
    expected = hf_ids(tokenizer, text)
    data = text.encode("utf-8")
    assert tokenizer.model.merge_fast(data) == expected  # type: ignore[attr-defined]
    assert tokenizer.model.encode_bytes(data) == expected  # type: ignore[attr-defined]


def test_later_token_example_ids() -> None:
    tokenizer = tokenizer_with(LATER_MERGES)
    assert tokenizer.model.encode_bytes(b"abab") == [256, ord("b")]  # type: ignore[attr-defined]


@st.composite
def shuffled_merges_and_text(draw: st.DrawFn) -> tuple[list[tuple[bytes, bytes]], str]:
    """Merges over a and b, each new token made once, put in a random rank order; and a text made
    of a few of the tokens, so that merges apply (random strings of a and b rarely show it)."""
    tokens = [b"a", b"b"]
    merges: list[tuple[bytes, bytes]] = []
    for _ in range(draw(st.integers(1, 8))):
        left = draw(st.sampled_from(tokens))
        right = draw(st.sampled_from(tokens))
        if left + right not in tokens:
            tokens.append(left + right)
            merges.append((left, right))
    text = b"".join(draw(st.lists(st.sampled_from(tokens), min_size=1, max_size=6)))
    return draw(st.permutations(merges)), text.decode("ascii")


@settings(max_examples=200, deadline=None)
@given(case=shuffled_merges_and_text())
def test_both_merge_loops_equal_hugging_face_on_shuffled_merges(case: tuple[list[tuple[bytes, bytes]], str]) -> None:
    merges, text = case
    tokenizer = tokenizer_with(merges)
    expected = hf_ids(tokenizer, text)
    data = text.encode("utf-8")
    assert tokenizer.model.merge_fast(data) == expected  # type: ignore[attr-defined]
    assert tokenizer.model.encode_bytes(data) == expected  # type: ignore[attr-defined]
