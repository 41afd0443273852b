"""The byte-level BPE trainer (engine/trainers/bpe.py, bpe_merge.py): exact merges and ids."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.byte_unicode import bytes_to_symbols, symbols_to_bytes
from engine.errors import ConfigError, TrainingCancelled
from engine.trainers import bpe_merge, option_specs, train
from engine.trainers.bpe import GPT2_BYTE_ORDER, BpeOptions, corpus_size, learn
from engine.trainers.bpe_merge import merge_words
from engine.trainers.bpe_step import _group_dense, group, stable_order
from engine.trainers.byte_table import ByteTable
from engine.trainers.limits import max_workers
from engine.trainers.packed import CountedWords, PackedStrings
from tests.engine.bpe_reference import train_reference

EOT = "<|endoftext|>"


def corpus(tmp_path: Path, text: str, name: str = "corpus.txt") -> Path:
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8"))
    return path


def merges_of(tmp_path: Path, text: str, **options: object) -> list[tuple[bytes, bytes, int]]:
    options.setdefault("min_frequency", 1)
    result = train("bpe", [corpus(tmp_path, text)], options)
    vocab = result.tokenizer.model
    return [(vocab.token_bytes(a), vocab.token_bytes(b), n) for a, b, n in result.stats["merges"]]


@pytest.fixture(params=[1, bpe_merge.MAX_BATCH], ids=["one-pair-steps", "batched-steps"])
def merge_step(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> int:
    """Every merge alone in its step, or as many as may merge together (``bpe_merge.MAX_BATCH``)."""
    monkeypatch.setattr(bpe_merge, "MAX_BATCH", request.param)
    return request.param


def test_cs336_reference_merges_and_vocab(cs336: Path, merge_step: int) -> None:
    result = train("bpe", [cs336 / "corpus.en"], {"vocab_size": 500, "special_tokens": [EOT]})
    model = result.tokenizer.model
    expected = [
        tuple(line.rstrip("\n").split(" "))
        for line in (cs336 / "train-bpe-reference-merges.txt").read_text(encoding="utf-8").splitlines(True)
    ]
    assert [(bytes_to_symbols(a), bytes_to_symbols(b)) for a, b in model.merges] == expected
    reference = json.loads((cs336 / "train-bpe-reference-vocab.json").read_text(encoding="utf-8"))
    expected_vocab = {i: s.encode() if s == EOT else symbols_to_bytes(s) for s, i in reference.items()}
    ours = {i: model.token_bytes(i) for i in range(1, 500)} | {0: EOT.encode()}
    assert ours == expected_vocab
    assert result.tokenizer.special_tokens == {EOT: 0}
    assert result.stats["merges"][:2] == [[221, 84, 2940], [221, 65, 2214]]  # "Ġ t", "Ġ a"


def test_hand_computed_merges(tmp_path: Path) -> None:
    # "ab" x3 and "cd" x2: (a, b) first with 3, then (c, d) with 2; nothing else occurs.
    merges = merges_of(tmp_path, "ab ab ab cd cd", pretokenizer="whitespace", vocab_size=1000)
    assert merges == [(b"a", b"b", 3), (b"c", b"d", 2)]


def test_gpt2_pretokens_keep_the_leading_space(tmp_path: Path) -> None:
    merges = merges_of(tmp_path, "a a a", vocab_size=258)
    assert merges == [(b" ", b"a", 2)]


def test_overlapping_occurrences_merge_left_to_right(tmp_path: Path) -> None:
    # "aaaaa": (a, a) occurs 4 times; merging left to right gives "aa aa a", then (aa, aa) once.
    merges = merges_of(tmp_path, "aaaaa", pretokenizer="whitespace", vocab_size=1000)
    assert merges == [(b"a", b"a", 4), (b"aa", b"aa", 1), (b"aaaa", b"a", 1)]


def test_tie_goes_to_the_greatest_pair(tmp_path: Path) -> None:
    assert merges_of(tmp_path, "ab cd", pretokenizer="whitespace", vocab_size=258) == [(b"c", b"d", 1)]
    assert merges_of(tmp_path, "ab ac", pretokenizer="whitespace", vocab_size=258) == [(b"a", b"c", 1)]


def test_tie_compares_left_bytes_first_and_prefix_is_smaller(tmp_path: Path) -> None:
    # After (a, b): (ab, x) and (a, y) both occur twice; b"ab" > b"a" although b"y" > b"x".
    merges = merges_of(tmp_path, "abx abx ay ay ab", pretokenizer="whitespace", vocab_size=1000)
    assert merges == [(b"a", b"b", 3), (b"ab", b"x", 2), (b"a", b"y", 2)]


def test_tie_is_by_bytes_not_by_characters(tmp_path: Path) -> None:
    # "é" is C3 A9 and "z" is 7A: the pair (C3, A9) beats (y, z) as bytes.
    assert merges_of(tmp_path, "é yz", pretokenizer="whitespace", vocab_size=258) == [(b"\xc3", b"\xa9", 1)]


def test_min_frequency_stops_training(tmp_path: Path) -> None:
    result = train("bpe", [corpus(tmp_path, "ab ab cd")], {"pretokenizer": "whitespace", "min_frequency": 2})
    assert result.stats["merges"] == [[1 + GPT2_BYTE_ORDER.index(ord("a")), 1 + GPT2_BYTE_ORDER.index(ord("b")), 2]]
    assert result.stats["stopped_early"] is True
    assert result.tokenizer.vocab_size == 258


def test_special_tokens_are_never_merged(tmp_path: Path) -> None:
    text = f"x{EOT}x{EOT}<|pad|>x{EOT}"
    result = train("bpe", [corpus(tmp_path, text)], {"special_tokens": [EOT, "<|pad|>"], "min_frequency": 1})
    assert result.stats["merges"] == []
    tok = result.tokenizer
    assert tok.special_tokens == {EOT: 0, "<|pad|>": 1}
    assert tok.encode(text, allowed_special="all") == [0 + 2 + GPT2_BYTE_ORDER.index(ord("x")), 0] * 2 + [
        1, 2 + GPT2_BYTE_ORDER.index(ord("x")), 0
    ]


def test_no_merge_crosses_a_document_boundary(tmp_path: Path) -> None:
    # A pre-tokenizer that keeps whole documents: only the document boundaries split "ab" / "cd".
    text = f"ab{EOT}cd{EOT}ab{EOT}cd"
    merges = merges_of(tmp_path, text, pretokenizer=r"(?s).+", vocab_size=1000)
    assert merges == [(b"c", b"d", 2), (b"a", b"b", 2)]


def test_vocabulary_ids(tmp_path: Path) -> None:
    result = train("bpe", [corpus(tmp_path, "hello hello")], {"special_tokens": ["<s>", "</s>"], "min_frequency": 1})
    model = result.tokenizer.model
    assert [model.token_bytes(2 + i) for i in range(3)] == [b"!", b'"', b"#"]  # GPT-2's byte order
    assert model.token_bytes(2 + 255) == b"\xad"
    # he, el, ll, lo all occur twice: the greatest, (l, o), is merged first, then (l, lo).
    assert [model.token_bytes(258), model.token_bytes(259)] == [b"lo", b"llo"]
    assert result.tokenizer.decode(result.tokenizer.encode("hello hello")) == "hello hello"


def test_max_token_length(tmp_path: Path) -> None:
    merges = merges_of(tmp_path, "abcd abcd abcd", pretokenizer="whitespace", vocab_size=1000, max_token_length=2)
    # ab, bc, cd tie at 3: (c, d) first; (b, cd) would be 3 bytes, so (a, b) next, then nothing.
    assert merges == [(b"c", b"d", 3), (b"a", b"b", 3)]


@pytest.mark.parametrize("text", ["the cat sat on the mat, the cat ate the rat. " * 20, "aaaaaaa aaaa " * 9], ids=["prose", "overlapping"])
def test_curve_is_exact(tmp_path: Path, text: str) -> None:
    result = train("bpe", [corpus(tmp_path, text)], {"vocab_size": 300, "min_frequency": 1})
    curve = result.stats["curve"]
    assert curve[0] == [257, 1.0]
    tokens = len(result.tokenizer.encode(text))
    assert curve[-1] == [257 + len(result.stats["merges"]), round(len(text.encode()) / tokens, 4)]


@settings(max_examples=200, deadline=None)
@given(word_counts=st.dictionaries(st.text(max_size=6), st.integers(0, 10**9), max_size=12),
       prefix=st.sampled_from(["", "\u2581", "é"]))
def test_corpus_size_counts_bytes_and_characters(word_counts: dict[str, int], prefix: str) -> None:
    assert corpus_size(CountedWords.of(word_counts, prefix=prefix)) == (
        sum(len((prefix + w).encode("utf-8", "surrogatepass")) * n for w, n in word_counts.items()),
        sum(len(prefix + w) * n for w, n in word_counts.items()))


def test_progress_and_determinism(tmp_path: Path) -> None:
    path = corpus(tmp_path, "".join(f"line {i} of some text{EOT}" for i in range(500)))
    seen: list[tuple[str, int, int]] = []
    first = train("bpe", [path], {"vocab_size": 400}, progress=lambda *a: seen.append(a))
    second = train("bpe", [path], {"vocab_size": 400, "num_workers": min(2, max_workers())})
    assert first.stats["merges"] == second.stats["merges"]
    assert first.tokenizer.to_json() == second.tokenizer.to_json()
    stages = [s for s, _, _ in seen]
    assert stages[0] == "count" and "merge" in stages
    assert seen[-1] == ("merge", len(first.stats["merges"]), 400 - 257)


def test_cancel_during_merges(tmp_path: Path) -> None:
    path = corpus(tmp_path, " ".join(f"w{i * 7919 % 100003}" for i in range(20000)))
    stages: list[str] = []

    def cancel() -> bool:
        return "merge" in stages

    with pytest.raises(TrainingCancelled):
        train("bpe", [path], {"vocab_size": 5000, "min_frequency": 1},
              progress=lambda stage, *_: stages.append(stage), should_cancel=cancel)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"vocab_size": 256}, "vocab_size=256 must be between 257"),
        ({"vocab_size": 300, "special_tokens": ["a", "a"]}, "must be distinct"),
        ({"min_frequency": -1}, "min_frequency=-1"),
        ({"max_token_length": 0}, "max_token_length=0"),
        ({"num_workers": 0}, "num_workers=0"),
        ({"pretokenizer": "(unclosed"}, "not a valid regex"),
    ],
    ids=["vocab-too-small", "duplicate-specials", "negative-min-frequency", "zero-max-length", "zero-workers", "bad-regex"],
)
def test_options_are_validated(options: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        BpeOptions(**options)  # type: ignore[arg-type]


def test_option_specs_for_forms() -> None:
    specs = {spec.name: spec for spec in option_specs("bpe")}
    assert specs["vocab_size"].default == 32000 and specs["vocab_size"].help
    assert specs["special_tokens"].type == "list" and specs["special_tokens"].default == [EOT]
    assert specs["num_workers"].optional is True


def test_learn_returns_final_ids() -> None:
    vocab, merges, stats = learn({"aa": 2}, BpeOptions(vocab_size=258, special_tokens=(), min_frequency=1))
    a = GPT2_BYTE_ORDER.index(ord("a"))
    assert merges == [(b"a", b"a")] and stats == [(a, a, 2, 2)] and vocab[256] == b"aa" and len(vocab) == 257


def _bytes_of(words: dict[str, int]) -> tuple[PackedStrings, np.ndarray]:
    """The merge loop's input as byte-level BPE hands it over: the words' UTF-8 bytes, packed."""
    table = ByteTable.of(words)
    return table.words, table.counts


_WORDS = st.dictionaries(
    st.text(alphabet="abcé ", min_size=1, max_size=8), st.integers(min_value=1, max_value=5), max_size=12
)
_COMMON_WORDS = st.dictionaries(  # counts in the thousands: rare pairs wait outside the heap (bpe_pairs.PairQueue)
    st.text(alphabet="abcé ", min_size=1, max_size=8), st.integers(min_value=1, max_value=3000), max_size=12
)
_TOUCHING_WORDS = st.dictionaries(  # few letters, long words: pairs that touch and overlap in every step
    st.text(alphabet="abcd", min_size=2, max_size=12), st.integers(min_value=1, max_value=30), max_size=15
)


@settings(max_examples=150)
@given(words=_WORDS | _COMMON_WORDS | _TOUCHING_WORDS, min_frequency=st.integers(0, 3),
       max_len=st.sampled_from([None, 2, 3]), max_batch=st.sampled_from([1, 3, 256]))
def test_fast_merges_equal_the_reference(words: dict[str, int], min_frequency: int, max_len: int | None,
                                         max_batch: int) -> None:
    fast_words, freqs = _bytes_of(words)
    merges, token_bytes = merge_words(fast_words, freqs, 40, min_frequency=min_frequency, max_token_length=max_len,
                                      max_batch=max_batch)
    fast = [(token_bytes[a], token_bytes[b], n) for a, b, n, _ in merges]
    assert fast == train_reference(words, 40, min_frequency=min_frequency, max_token_length=max_len)


@pytest.mark.parametrize(
    "words",
    [{"aaaaaaaaa": 3, "aa": 1, "baaab": 2}, {"abababab": 2, "bababa": 1, "aab": 4}],
    ids=["runs", "alternating"],
)
def test_touching_occurrences_merge_left_to_right(words: dict[str, int], merge_step: int) -> None:
    fast_words, freqs = _bytes_of(words)
    merges, token_bytes = merge_words(fast_words, freqs, 12)
    assert [(token_bytes[a], token_bytes[b], n) for a, b, n, _ in merges] == train_reference(words, 12)


@pytest.mark.parametrize(
    "words",
    [
        # "ab" merges alone first; the next step tries two pairs:
        {"ab": 10, "cdef": 8, "cd": 1, "ef": 1},  # "ef" and "cd" (9 each) touch in "cdef": one step
        {"ab": 10, "cde": 7, "cd": 1},  # "cd" and "de" overlap: merging "cd" lowers "de"
        {"ab": 10, "cde": 6, "cd": 1, "yz": 6},  # merging "cd" makes ("cd", "e") 6, before "yz" (6)
        # "cd" (12) then "ab" (11), touching in "abcd": between them ("b", "cd") lives with 10
        {"abcd": 10, "cd": 2, "ab": 1, "xy": 10},
        # the same, and the pair that lives between them (10) comes before "yz" (9)
        {"abcd": 10, "cd": 2, "ab": 1, "yz": 9},
        # "a a a" counts (a, a) twice but merges it once; the second one overlaps "a b" (found by Hypothesis)
        {"aba": 1, "aaaba": 1},
        # ties everywhere: a pair that lives only between two touching members' merges wins one
        {"baab ": 1},
    ],
    ids=["touching", "overlapping", "new-pair-first", "touching-other-first", "passing-pair-first",
         "overlap-beside-another", "passing-pair-wins-a-tie"],
)
def test_pairs_that_interact_merge_as_one_at_a_time(words: dict[str, int], merge_step: int) -> None:
    # A batched step (bpe_step) must stop before a pair whose occurrences share a symbol with an
    # earlier one's, or that a new pair would precede, even one that lives only until a member
    # beside it merges; the reference merges one pair at a time.
    fast_words, freqs = _bytes_of(words)
    merges, token_bytes = merge_words(fast_words, freqs, 10)
    assert [(token_bytes[a], token_bytes[b], n) for a, b, n, _ in merges] == train_reference(words, 10)


def test_removed_counts_each_merge_of_a_run_once(merge_step: int) -> None:
    # (a, a) occurs 8 times in "aaaaaaaaa" (x3), once in "aa" and twice in "baaab" (x2): 29.
    # Merged left to right, a run of 9 loses 4 tokens, of 2 one, of 3 one: 4*3 + 1 + 1*2 = 15.
    fast_words, freqs = _bytes_of({"aaaaaaaaa": 3, "aa": 1, "baaab": 2})
    merges, _ = merge_words(fast_words, freqs, 1)
    assert merges == [(ord("a"), ord("a"), 29, 15)]


@pytest.mark.parametrize("bound", [300, 1 << 16, 13_000**2, 1 << 32, 1 << 40], ids=["8-bit", "16-bit", "28-bit",
                                                                                   "32-bit", "40-bit"])
@pytest.mark.parametrize("size", [0, 1, 200, 2047, 2048, 50_000])
def test_the_step_sorts_pair_keys_stably_whatever_their_width_and_number(bound: int, size: int) -> None:
    # bpe_step groups pairs by key with a radix sort, two 16-bit passes, or keys packed with
    # their index, by width and number: each must be numpy's stable order (ties keep their order).
    rng = np.random.default_rng(size)
    keys = rng.choice(rng.integers(0, bound, max(size // 3, 1)), size)  # wide values, many ties
    assert np.array_equal(stable_order(keys.astype(np.int64), bound), np.argsort(keys, kind="stable"))


@pytest.mark.parametrize("bound", [4, 300, 1 << 16])
@pytest.mark.parametrize("size", [1, 200, 50_000])
def test_grouping_keys_that_fill_their_range_equals_grouping_them_by_sorting(bound: int, size: int) -> None:
    # bpe_step.group counts keys that fill much of their range per key (the loop's first pairs);
    # it must give what sorting them gives: the keys, their sums, the positions, the runs, the groups.
    rng = np.random.default_rng(size + bound)
    keys = rng.integers(0, bound, size).astype(np.int64)
    weights = rng.integers(1, 1 << 36, size)  # sums past int32's
    at = rng.permutation(size).astype(np.int32)
    dense = _group_dense(keys, weights, at, bound)
    order = np.argsort(keys, kind="stable")
    distinct, starts, sizes = np.unique(keys[order], return_index=True, return_counts=True)
    assert np.array_equal(dense[0], distinct)
    assert dense[1].tolist() == [int(weights[order][a:a + n].sum()) for a, n in zip(starts, sizes)]
    assert np.array_equal(dense[2], at[order])
    assert dense[3].tolist() == [*starts.tolist(), size]
    assert np.array_equal(dense[4], np.repeat(np.arange(len(distinct)), sizes))


def test_grouping_weights_past_float64s_exact_range_stays_exact() -> None:
    # The sums are integer sums, whichever way the keys are grouped (float64 would lose the 1).
    keys, weights = np.array([0, 0, 0, 1]), np.array([1 << 52, 1 << 52, 1, 3])
    for bound in (4, 1 << 20):  # counted per key, and sorted
        distinct, sums, *_ = group(keys, weights, np.arange(4), bound)
        assert distinct.tolist() == [0, 1] and sums.tolist() == [(1 << 53) + 1, 3]


def test_int32_weights_add_up_in_64_bits() -> None:
    # The loop's first pairs hand over their words' counts as int32 (where every count fits), and
    # int32 keys where the alphabet's pairs fit: sums past 2**31 must not wrap.
    keys = np.array([1, 1, 1, 2], dtype=np.int32)
    weights = np.array([(1 << 31) - 1] * 3 + [7], dtype=np.int32)
    for bound in (4, 1 << 20):
        distinct, sums, *_ = group(keys, weights, np.arange(4, dtype=np.int32), bound)
        assert distinct.tolist() == [1, 2] and sums.tolist() == [3 * ((1 << 31) - 1), 7]


def test_word_counts_past_32_bits_merge_with_their_exact_counts() -> None:
    # The loop keeps each position's word count in 32 bits where every count fits, else in 64.
    merges, _ = merge_words(["ab", "abc"], [(1 << 33) + 1, 5], 2)
    assert merges == [(ord("a"), ord("b"), (1 << 33) + 6, (1 << 33) + 6), (256, ord("c"), 5, 5)]
