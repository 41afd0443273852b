"""BPE merge order on imported vocabularies, against the real Hugging Face ``tokenizers``.

A trained merge list is in creation order: a merge that uses a token comes after the merge
that made it. Imported files need not be: a merge may use a token that a *later* (higher
rank) merge creates. Then "merge every occurrence of the lowest-ranked pair" and "merge the
lowest-ranked pair once, leftmost, then look again" differ, and Hugging Face does the second
(a priority queue of (rank, position)). Our merge loop (``bpe_merge.merge``, through
``BPE.encode_bytes``) and the slow reference (``bpe_encode_reference``) must agree with it, on
shuffled merge lists, runs of one character and long random texts.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.models.bpe import BPE, LONG_PIECE_BYTES
from engine.presets import byte_level_bpe
from engine.tokenizer import Tokenizer
from tests.engine.bpe_encode_reference import reference_encode

tokenizers = pytest.importorskip("tokenizers")  # Hugging Face's library, the reference these tests compare with


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
def test_the_merge_loop_follows_hugging_face_when_a_merge_uses_a_later_token(text: str) -> None:
    tokenizer = tokenizer_with(LATER_MERGES)
    expected = hf_ids(tokenizer, text)
    data = text.encode("utf-8")
    assert model_of(tokenizer).encode_bytes(data) == expected
    assert reference_encode(model_of(tokenizer), data) == expected


def model_of(tokenizer: Tokenizer) -> BPE:
    model = tokenizer.model
    if not isinstance(model, BPE):
        raise TypeError(f"expected a BPE model, not {type(model).__name__}")
    return model


def test_later_token_example_ids() -> None:
    tokenizer = tokenizer_with(LATER_MERGES)
    assert model_of(tokenizer).encode_bytes(b"abab") == [256, ord("b")] == reference_encode(model_of(tokenizer), b"abab")


# Imported files may list a pair twice. Hugging Face keeps its later rank (the merge map is built
# by inserting each line in turn): with (b, c) at ranks 0 and 2, (a, b) at rank 1 applies first.
TWICE_LISTED = [(b"b", b"c"), (b"a", b"b"), (b"b", b"c")]


@pytest.mark.parametrize("text", ["abc", "abcabc", "bcab", "a" + "bc" * 40])
def test_a_pair_listed_twice_has_its_later_rank_as_in_hugging_face(text: str) -> None:
    vocab = {b: bytes([b]) for b in range(256)} | {256: b"ab", 257: b"bc"}
    tokenizer = byte_level_bpe(vocab, TWICE_LISTED, pretokenizer="gpt2")
    expected = hf_ids(tokenizer, text)
    data = text.encode("utf-8")
    assert model_of(tokenizer).encode_bytes(data) == expected
    assert reference_encode(model_of(tokenizer), data) == expected
    assert tokenizer.encode(text) == expected


def test_a_pair_listed_twice_example_ids() -> None:
    vocab = {b: bytes([b]) for b in range(256)} | {256: b"ab", 257: b"bc"}
    assert byte_level_bpe(vocab, TWICE_LISTED, pretokenizer="gpt2").encode("abc") == [256, ord("c")]


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
    text = b"".join(draw(st.lists(st.sampled_from(tokens), min_size=1, max_size=draw(st.sampled_from([6, 60])))))
    return draw(st.permutations(merges)), text.decode("ascii")


@settings(max_examples=200, deadline=None)
@given(case=shuffled_merges_and_text())
def test_the_merge_loop_and_the_reference_equal_hugging_face_on_shuffled_merges(
        case: tuple[list[tuple[bytes, bytes]], str]) -> None:
    merges, text = case
    tokenizer = tokenizer_with(merges)
    expected = hf_ids(tokenizer, text)
    data = text.encode("utf-8")
    assert model_of(tokenizer).encode_bytes(data) == expected
    assert reference_encode(model_of(tokenizer), data) == expected


# ----------------------------------------------------------------------------- long pieces
def test_the_merge_loop_handles_empty_and_one_byte() -> None:
    model = model_of(tokenizer_with(LATER_MERGES))
    assert model.encode_bytes(b"") == []
    assert model.encode_bytes(b"a") == [ord("a")]
    assert model.encode_bytes(b"xyz") == [ord("x"), ord("y"), ord("z")]  # no pair merges


# Merges of "a" runs in an order where later ranks build tokens earlier ranks use, so how a run
# of n "a"s ends up depends on n and on merging one occurrence at a time.
RUN_MERGES = [(b"aa", b"a"), (b"a", b"aaa"), (b"a", b"a"), (b"aaaa", b"aaaa"), (b"aa", b"aa")]


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8, 63, 64, 65, 66, 129, 300, 1001])
def test_runs_of_one_character_merge_as_hugging_face(n: int) -> None:
    tokenizer = tokenizer_with(RUN_MERGES)
    data = b"a" * n
    expected = hf_ids(tokenizer, data.decode("ascii"))
    assert model_of(tokenizer).encode_bytes(data) == expected
    assert reference_encode(model_of(tokenizer), data) == expected


def test_run_of_aaaa_example_ids() -> None:
    # Ids: 256 "aaa", 257 "aaaa", 258 "aa". Only (a, a), rank 2, applies at first; once the
    # leftmost "aa" exists, (aa, a) at rank 0 takes the next "a" before any other (a, a), and
    # the same again on the rest: [aaa, aaa]. Merging every (a, a) at once would give
    # [aa, aa, aa], then (aa, aa): [aaaa, aa].
    model = model_of(tokenizer_with(RUN_MERGES))
    assert model.encode_bytes(b"aaaaaa") == [256, 256] == reference_encode(model, b"aaaaaa")


@st.composite
def merges_and_long_text(draw: st.DrawFn) -> tuple[list[tuple[bytes, bytes]], bytes]:
    """Up to 30 merges over a three-letter alphabet, in a random rank order, and a text of up to
    2,000 bytes mixing those letters, their tokens and one letter no merge uses."""
    tokens = [b"a", b"b", b"c"]
    merges: list[tuple[bytes, bytes]] = []
    for _ in range(draw(st.integers(1, 30))):
        left, right = draw(st.sampled_from(tokens)), draw(st.sampled_from(tokens))
        if left + right not in tokens and len(left + right) <= 16:
            tokens.append(left + right)
            merges.append((left, right))
    text = b"".join(draw(st.lists(st.sampled_from([*tokens, b"d"]), max_size=draw(st.sampled_from([40, 400])))))
    return draw(st.permutations(merges)), text[:2000]


@settings(max_examples=150, deadline=None)
@given(case=merges_and_long_text())
def test_the_merge_loop_equals_the_reference_on_long_random_texts(case: tuple[list[tuple[bytes, bytes]], bytes]) -> None:
    merges, data = case
    model = model_of(tokenizer_with(merges))
    assert model.encode_bytes(data) == reference_encode(model, data)


@settings(max_examples=40, deadline=None)
@given(case=merges_and_long_text())
def test_the_merge_loop_equals_the_reference_and_hugging_face(case: tuple[list[tuple[bytes, bytes]], bytes]) -> None:
    merges, data = case
    data = data[:300]  # the reference scans every pair at each merge
    tokenizer = tokenizer_with(merges)
    expected = reference_encode(model_of(tokenizer), data)
    assert model_of(tokenizer).encode_bytes(data) == expected
    if data.isalpha():  # then the gpt2 pattern keeps it one piece, as the model sees it
        assert hf_ids(tokenizer, data.decode("ascii")) == expected


def test_long_pieces_get_the_same_ids_as_hugging_face() -> None:
    merges = [(b"a", b"b"), (b"ab", b"c"), (b" ", b"abc"), (b"c", b"c"), (b"cc", b"a")]
    vocab = {b: bytes([b]) for b in range(256)} | {256 + i: left + right for i, (left, right) in enumerate(merges)}
    tokenizer = byte_level_bpe(vocab, merges, pretokenizer=r"[\s\S]+")  # the whole text is one piece
    text = "abc ccabc abcc " * 40
    assert len(text.encode("utf-8")) > LONG_PIECE_BYTES
    ids = tokenizer.encode(text)
    assert ids == hf_ids(tokenizer, text)
    assert ids == reference_encode(model_of(tokenizer), text.encode("utf-8"))
    # abc, " ", cc, abc, " abc", c, then the next copy's " abc": (ab, c) beats (c, c) in "abcc".
    assert ids[:7] == [257, 32, 259, 257, 258, ord("c"), 258]


# ----------------------------------------------------------------------------- dropout
@pytest.mark.parametrize("text", ["abab", "aaaaaa", "abc ccabc abcc " * 8], ids=repr)
def test_dropout_samples_spell_the_piece_and_its_extremes_are_the_merges_and_the_bytes(text: str) -> None:
    model = model_of(tokenizer_with(RUN_MERGES + LATER_MERGES + [(b"b", b"c"), (b" ", b"a")]))
    data = text.encode("utf-8")
    assert model.sample(text, rng=random.Random(0), dropout=0.0) == model.encode_bytes(data)
    assert model.sample(text, rng=random.Random(0), dropout=1.0) == list(data)  # every merge skipped
    seen = set()
    for seed in range(40):
        ids = model.sample(text, rng=random.Random(seed), dropout=0.3)
        assert b"".join(map(model.token_bytes, ids)) == data
        assert ids == model.sample(text, rng=random.Random(seed), dropout=0.3)  # a seed gives one sample
        seen.add(tuple(ids))
    assert len(seen) > 1
