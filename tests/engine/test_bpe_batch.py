"""The numpy batch merge (``bpe_batch``) and the cache path that feeds it, against the slow reference.

``BatchMerger.merge`` must give, for every word, exactly the slow reference's ids (``bpe_encode_reference``): on random words
over a merge list where a merge uses a token a later merge creates (the case where "merge every
occurrence of the lowest rank" differs from Hugging Face), on GPT-2's real files with the
distinct pre-tokens of a real text, and through ``Tokenizer.encode`` under threads. ``PairRanks``
must answer every pair it holds and no other, also when most pairs collide.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine import pretoken_cache
from engine.ascii_split import fastest_split
from engine.formats.gpt2 import load_gpt2
from engine.models import bpe as bpe_module
from engine.models import bpe_batch
from engine.models.bpe import BPE, LONG_PIECE_BYTES
from engine.models.bpe_batch import NO_MERGE, PairRanks
from engine.presets import byte_level_bpe
from engine.pretoken_cache import PreTokenCache, concatenated
from engine.tokenizer import Tokenizer
from tests.engine.bpe_encode_reference import reference_encode
from tests.shared_data import cs336_file, gpt2_files

# "ab" is made by rank 2 and rank 0 uses it; "aa" and "aaa" make runs of one byte interesting.
MERGES = [(b"ab", b"a"), (b"a", b"a"), (b"a", b"b"), (b"aa", b"a"), (b"b", b"c"), (b"ab", b"bc"), (b"c", b"c")]


def model_of(tokenizer: Tokenizer) -> BPE:
    model = tokenizer.model
    if not isinstance(model, BPE):
        raise TypeError(f"expected a BPE model, not {type(model).__name__}")
    return model


def small_model() -> BPE:
    vocab = {b: bytes([b]) for b in range(256)}
    for index, (left, right) in enumerate(MERGES):
        vocab[256 + index] = left + right
    return model_of(byte_level_bpe(vocab, MERGES, pretokenizer="gpt2"))


# ----------------------------------------------------------------------------- PairRanks
@given(st.dictionaries(st.tuples(st.integers(0, 2_000), st.integers(0, 2_000)), st.integers(0, 10**6), max_size=300))
def test_pair_ranks_answer_exactly_the_pairs_they_hold(table: dict[tuple[int, int], int]) -> None:
    pairs = PairRanks([p[0] for p in table], [p[1] for p in table], list(table.values()))
    held = list(table)
    absent = [(a + 1, b) for a, b in held if (a + 1, b) not in table] + [(1_999_999, 0)]
    queries = held + absent
    got = pairs.get(np.array([q[0] for q in queries], np.int32), np.array([q[1] for q in queries], np.int32))
    assert got.tolist() == [table[q] for q in held] + [NO_MERGE] * len(absent)


def test_pair_ranks_walk_past_collisions() -> None:
    # 20,000 pairs in 2**17 slots: many hash to a taken slot and sit further along; every one
    # must still be found, with its own rank, and pairs next to them must not be.
    rng = np.random.default_rng(7)
    keys = np.unique(rng.integers(0, 50_000, (20_000, 2)), axis=0)
    ranks = rng.permutation(len(keys))
    pairs = PairRanks(keys[:, 0].tolist(), keys[:, 1].tolist(), ranks.tolist())
    assert pairs._probes > 3  # walks of several slots happened
    assert pairs.get(keys[:, 0], keys[:, 1]).tolist() == ranks.tolist()
    held = set(map(tuple, keys.tolist()))
    near = np.array([(a, b + 1) for a, b in keys.tolist() if (a, b + 1) not in held])
    assert (pairs.get(near[:, 0], near[:, 1]) == NO_MERGE).all()


# ----------------------------------------------------------------------------- BatchMerger.merge
WORDS = st.lists(st.binary(min_size=1, max_size=LONG_PIECE_BYTES).map(lambda b: bytes(97 + x % 4 for x in b)), max_size=80)


@settings(max_examples=150)
@given(WORDS)
def test_batch_merge_equals_reference_when_merges_use_later_tokens(words: list[bytes]) -> None:
    model = small_model()
    words = words + [b"abab", b"aaaa", b"abbcab", b"a", b"ccc" * 20]
    expected = [tuple(reference_encode(model, word)) for word in words]
    for tail in (0, 3, bpe_batch.TAIL_WORDS):  # numpy rounds to the end, or a Python tail
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(bpe_batch, "TAIL_WORDS", tail)
            assert model._merge_batches(words) == expected


def test_batches_are_cut_by_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    model = small_model()
    words = [b"abab", b"aaaa" * 16, b"abbcab", b"a", b"cc"] * 30
    expected = [tuple(reference_encode(model, word)) for word in words]
    monkeypatch.setattr(bpe_module, "BATCH_MAX_BYTES", LONG_PIECE_BYTES)  # many one-word batches
    assert model._merge_batches(words) == expected


def test_tokenize_many_mixes_batch_long_and_empty_pieces() -> None:
    model = small_model()
    pieces = ["", "ab" * 40, "é", "abab"] + [f"a{'b' * (i % 7)}c{i}" for i in range(bpe_module.BATCH_MIN_PIECES)]
    assert model.tokenize_many(pieces) == [tuple(reference_encode(model, p.encode("utf-8"))) for p in pieces]


@pytest.fixture(scope="module")
def gpt2() -> Tokenizer:
    return load_gpt2(*gpt2_files(), pretokenizer="gpt2")


def test_batch_merge_equals_reference_on_gpt2_and_a_real_text(gpt2: Tokenizer) -> None:
    assert gpt2.pre_tokenizer is not None
    text = cs336_file("corpus.en").read_text(encoding="utf-8")
    pieces = list(dict.fromkeys(fastest_split(gpt2.pre_tokenizer)(text)))
    model = model_of(gpt2)
    assert len(pieces) == 4_763  # corpus.en's distinct pre-tokens under the gpt2 pattern
    assert model.tokenize_many(pieces) == [tuple(reference_encode(model, p.encode("utf-8"))) for p in pieces]


# ----------------------------------------------------------------------------- the cache's batch path
def test_cache_sends_each_new_piece_once_in_order_of_first_appearance() -> None:
    batches: list[list[str]] = []

    def tokenize_many(pieces: list[str]) -> list[list[int]]:
        batches.append(list(pieces))
        return [[len(p)] for p in pieces]

    cache = PreTokenCache(lambda piece: [len(piece)], maxsize=4, tokenize_many=tokenize_many)
    assert cache.encode(["bb", "a", "bb", "ccc", "a"]) == [2, 1, 2, 3, 1]
    assert cache.encode(["a", "dddd", "a", "bb"]) == [1, 4, 1, 2]
    assert cache.encode(["ccc", "e", "ccc"]) == [3, 1, 3]  # 5 > 4: "bb" is trimmed, the rest become old
    assert (list(cache._old), list(cache._young)) == (["a", "ccc", "dddd", "e"], [])
    assert cache.encode(["bb", "dddd", "f"]) == [2, 4, 1]  # "dddd" is promoted from old, not recomputed
    assert batches == [["bb", "a", "ccc"], ["dddd"], ["e"], ["bb", "f"]]
    assert (list(cache._old), list(cache._young)) == (["dddd", "bb", "f"], [])
    assert cache.info() == (8, 7, 4, 3)


TABLES = st.lists(st.lists(st.integers(0, 2_000_000), max_size=4).map(tuple), max_size=6)


@given(TABLES.flatmap(lambda t: st.tuples(st.just(t), st.lists(st.integers(0, max(len(t) - 1, 0)), max_size=30 if t else 0))))
def test_concatenated_equals_chaining_the_table(case: tuple[list[tuple[int, ...]], list[int]]) -> None:
    table, order = case
    for chunk in (3, pretoken_cache._LAYOUT_CHUNK):  # several chunks, and one
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(pretoken_cache, "_LAYOUT_CHUNK", chunk)
            assert concatenated(table, np.array(order, np.intp)) == [i for j in order for i in table[j]]


def test_batch_path_is_exact_under_threads(gpt2: Tokenizer, monkeypatch: pytest.MonkeyPatch) -> None:
    texts = [" ".join(f"w{(i * 7 + j) % 90}é{j % 3}" for j in range(60)) for i in range(40)]
    expected = [gpt2.encode(text) for text in texts]
    monkeypatch.setattr(bpe_module, "BATCH_MIN_PIECES", 1)
    tokenizer = load_gpt2(*gpt2_files(), pretokenizer="gpt2")
    tokenizer._cache = PreTokenCache(
        tokenizer.model.tokenize, 64, tokenize_many=model_of(tokenizer).tokenize_many
    )  # constant eviction
    with ThreadPoolExecutor(max_workers=4) as pool:
        assert list(pool.map(tokenizer.encode, texts * 3)) == expected * 3


def test_a_merge_listed_twice_loads_and_merges() -> None:
    # The second "a b" leaves rank 1 unused; the tables must still load and merge (an
    # IndexError once came from sizing rank -> id tables by the number of distinct pairs).
    vocab = {b: bytes([b]) for b in range(256)} | {256: b"ab", 257: b"abc"}
    model = BPE(vocab, [(b"a", b"b"), (b"a", b"b"), (b"ab", b"c")])
    words = [b"abc", b"abab", b"cab"] * bpe_module.BATCH_MIN_PIECES
    assert model.tokenize("abc") == [257]
    assert model._merge_batches(words) == [tuple(reference_encode(model, word)) for word in words]
    assert model._merge_batches(words)[:3] == [(257,), (256, 256), (99, 256)]


def test_a_lone_surrogate_in_a_batch_is_replaced_as_in_one_piece(gpt2: Tokenizer) -> None:
    words = " ".join(f"w{i}" for i in range(bpe_module.BATCH_MIN_PIECES))
    fresh = load_gpt2(*gpt2_files(), pretokenizer="gpt2")
    assert fresh.encode(words + " a\ud800b") == gpt2.encode(words + " a\ufffdb")
