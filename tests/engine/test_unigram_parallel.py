"""Unigram EM on several processes (``engine.trainers.unigram.parallel``): the same tokenizer.json
for 1, 2 and 3 workers, the slices fixed by the data, and no worker left behind after a cancel,
an error or a worker's death."""

from __future__ import annotations

import multiprocessing
import os
import random
from pathlib import Path

import numpy as np
import pytest

from engine.errors import TrainingCancelled
from engine.trainers import limits
from engine.trainers.base import Reporter
from engine.trainers.packed import CountedWords, PackedStrings
from engine.trainers.unigram import UnigramOptions, build_tokenizer, parallel, train_on_counts
from engine.trainers.unigram.lattice import PieceIndex
from engine.trainers.unigram.parallel import Shards, SlicePlan, grid_scale
from engine.trainers.unigram.prune import alternative_paths
from engine.trainers.unigram.seed import required_chars, seed_pieces
from engine.trainers.unigram.suffixes import first_char_cuts

SYLLABLES = ["ka", "to", "ri", "ne", "su", "mo", "la", "pe", "di", "go", "an", "ust", "er", "qu", "io"]


def corpus_counts(n_words: int = 3000, seed: int = 7) -> dict[str, int]:
    """Made-up ``▁``-words with Zipf-like counts: enough distinct characters for several slices."""
    rng = random.Random(seed)
    counts: dict[str, int] = {}
    for rank in range(1, n_words + 1):
        word = "▁" + "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(1, 5)))
        counts[word] = counts.get(word, 0) + max(1, 5000 // rank)
    return counts


@pytest.fixture
def small_slices(monkeypatch: pytest.MonkeyPatch) -> None:
    """Slices of 2,000 characters, so a small corpus is cut in several; and room for 3 workers
    on a machine with fewer CPUs."""
    monkeypatch.setattr(parallel, "CHARS_PER_SLICE", 2000)
    monkeypatch.setattr(limits, "cpu_count", lambda: 4)
    if "fork" in multiprocessing.get_all_start_methods():  # faster than spawning, and patches reach the workers
        monkeypatch.setattr(parallel, "_shard_context", lambda: multiprocessing.get_context("fork"))


def train_json(counts: dict[str, int], workers: int, reporter: Reporter | None = None) -> str:
    options = UnigramOptions(vocab_size=400, num_workers=workers, byte_fallback=False, seed_size=5000)
    model, _ = train_on_counts(counts, options, reporter)
    return build_tokenizer(model, options).to_json()


def test_slices_follow_the_data_not_the_workers_or_the_table_order(small_slices: None) -> None:
    counts = corpus_counts()
    plan = SlicePlan.of(counts)
    slices = plan.slices()
    chars = sum(map(len, counts))
    assert len(slices) == chars // 2000 >= 4  # the nearest prefix boundaries: no slice lost here
    words = [w for ws, _ in slices for w in ws]
    assert words == sorted(counts)  # in string order, every word once
    assert [n for _, ns in slices for n in ns] == [counts[w] for w in words]
    # A cut falls only where the first three characters change.
    assert all(a[-1][:3] != b[0][:3] for (a, _), (b, _) in zip(slices, slices[1:]))
    # What travels to a worker unpacks to the same slices, and a shuffled table cuts the same.
    assert plan.pack(1, 3).slices() == slices[1:3]
    shuffled = list(counts.items())
    random.Random(3).shuffle(shuffled)
    again = SlicePlan.of(dict(shuffled))
    assert again.slices() == slices
    assert again.pack(0, len(again)).slices() == slices
    assert SlicePlan.of({"▁b": 1, "▁a": 3}).slices() == [(["▁a", "▁b"], [3, 1])]  # one slice, sorted too
    assert grid_scale({"▁ab": 2}) == 2.0**47  # 6 characters: ceil(log2(8)) = 3 bits for counts


def test_a_slice_cut_snaps_to_the_nearest_prefix_boundary(small_slices: None) -> None:
    # Code points past U+FFFF and words shorter than three characters key like strings too.
    counts = {"a": 1, "ab": 1, "abc" + "x" * 2000: 1, "abd" + "y" * 1990: 1, "\U0001F600" * 2100: 1, "b": 1}
    slices = SlicePlan.of(counts).slices()
    assert [words for words, _ in slices] == [["a", "ab", "abc" + "x" * 2000], ["abd" + "y" * 1990, "b"],
                                              ["\U0001F600" * 2100]]
    same_prefix = {"abc" + str(i) * 500: i for i in range(10)}  # one prefix: nowhere to cut
    assert len(SlicePlan.of(same_prefix).slices()) == 1


def test_one_two_and_three_workers_write_the_same_tokenizer_json(small_slices: None) -> None:
    counts = corpus_counts()
    one = train_json(counts, 1)
    assert train_json(counts, 2) == one
    assert train_json(counts, 3) == one
    assert not multiprocessing.active_children()


@pytest.mark.parametrize("seed_size", [300, 100_000], ids=["cut", "every-candidate"])
def test_the_seed_is_the_same_ranked_here_or_by_first_characters_in_workers(small_slices: None, seed_size: int) -> None:
    counts = corpus_counts()
    required = required_chars(CountedWords.of(counts), 1.0)
    one = seed_pieces(counts, required, seed_size=seed_size, max_piece_length=8)
    with Shards(counts, workers=3, reporter=Reporter()) as shards:
        assert len(shards.procs) == 3
        assert seed_pieces(counts, required, seed_size=seed_size, max_piece_length=8,
                           work=shards) == one
    assert len(one) == 300 if seed_size == 300 else 300 < len(one) < seed_size  # cut, or every candidate
    assert len({score for _, score in one}) < len(one)  # ties in score, across first characters too


def test_first_character_ranges_share_the_suffixes_and_cover_every_character() -> None:
    segments = ["▁ab", "▁ba", "ccc", "dd"] * 3 + ["ze"]
    cuts = first_char_cuts(PackedStrings.of(segments), 3)
    assert cuts[0][0] == 0 and cuts[-1][1] == 0x110000
    assert all(a[1] == b[0] for a, b in zip(cuts, cuts[1:]))
    assert first_char_cuts(PackedStrings.of(segments), 50) == [(0, ord("b")), (ord("b"), ord("c")), (ord("c"), ord("d")),
                                             (ord("d"), ord("z")), (ord("z"), ord("▁")), (ord("▁"), 0x110000)]


def test_slicing_keeps_the_pieces_of_one_lattice(monkeypatch: pytest.MonkeyPatch) -> None:
    counts = corpus_counts()
    whole = train_on_counts(counts, UnigramOptions(vocab_size=400, byte_fallback=False, seed_size=5000))[0]
    monkeypatch.setattr(parallel, "CHARS_PER_SLICE", 2000)
    cut = train_on_counts(counts, UnigramOptions(vocab_size=400, byte_fallback=False, seed_size=5000))[0]
    # The grid moves the scores by far less than the 6 decimals kept: the same pieces, same scores.
    assert cut.pieces() == whole.pieces()


def test_sharded_passes_match_one_lattice(small_slices: None) -> None:
    counts = corpus_counts(800)
    pieces = sorted({w[i : i + n] for w in counts for i in range(len(w)) for n in (1, 2, 3) if i + n <= len(w)})
    unk = len(pieces)
    logp = np.log(np.random.default_rng(0).uniform(0.01, 1.0, unk + 1))
    with Shards(counts, workers=1, reporter=Reporter(), chars_per_slice=10**9) as whole:
        whole.build(pieces, 16, unk)
        expected, loglik = whole.e_step(logp)
        freq = whole.viterbi_counts(logp)
    with Shards(counts, workers=3, reporter=Reporter(), chars_per_slice=1000) as cut:
        cut.build(pieces, 16, unk)
        expected3, loglik3 = cut.e_step(logp)
        assert len(cut.procs) == 3
        np.testing.assert_allclose(expected3, expected, rtol=1e-9, atol=1e-9)
        assert loglik3 == pytest.approx(loglik, rel=1e-12)
        assert np.array_equal(cut.viterbi_counts(logp), freq)  # integer counts: exact
        live = np.arange(unk)
        owners = live[freq[:unk] > 0]
        mine = whole.local.alternative_paths(live, owners, freq, logp) if whole.local else None
        theirs = cut.alternative_paths(live, owners, freq, logp)
    assert mine is not None
    for a, b in zip(mine, theirs):
        assert np.array_equal(a, b)
    assert not multiprocessing.active_children()


def _pass_maps() -> int:
    """The mappings of the pass arrays in this process (``pass_arrays``: an anonymous file)."""
    with open("/proc/self/maps", encoding="utf-8") as maps:
        return sum("tokenforge-unigram-passes" in line for line in maps)


@pytest.mark.skipif(not hasattr(os, "memfd_create") or not Path("/proc/self/fd").is_dir(), reason="Linux: reads /proc")
def test_the_pass_arrays_are_shared_and_released(small_slices: None) -> None:
    """The passes go through shared memory, which is gone, with its descriptor, once the shards close."""
    counts = corpus_counts(400)
    pieces = sorted({w[i : i + n] for w in counts for i in range(len(w)) for n in (1, 2) if i + n <= len(w)})
    logp = np.log(np.linspace(0.05, 1.0, len(pieces) + 1))
    fds, maps = len(list(Path("/proc/self/fd").iterdir())), _pass_maps()
    with Shards(counts, workers=2, reporter=Reporter(), chars_per_slice=500) as shards:
        shards.build(pieces, 8, len(pieces))
        expected, _ = shards.e_step(logp)
        assert shards.shared is not None and shards.shared.answers.shape == (2, len(logp))
        assert _pass_maps() == maps + 1
        # The answer rows hold each worker's part: they add up to the E-step (on the grid).
        assert np.array_equal(shards.shared.answers.sum(axis=0) / shards.scale, expected)
    assert _pass_maps() == maps
    assert len(list(Path("/proc/self/fd").iterdir())) == fds
    assert not multiprocessing.active_children()


def test_spawned_workers_give_the_same_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    # Training spawns its lattice workers (the tests fork them): the same answers either way.
    counts = corpus_counts(400)
    pieces = sorted({w[i : i + n] for w in counts for i in range(len(w)) for n in (1, 2) if i + n <= len(w)})
    logp = np.log(np.linspace(0.05, 1.0, len(pieces) + 1))
    if "fork" in multiprocessing.get_all_start_methods():
        monkeypatch.setattr(parallel, "_shard_context", lambda: multiprocessing.get_context("fork"))
    with Shards(counts, workers=2, reporter=Reporter(), chars_per_slice=500) as forked:
        forked.build(pieces, 8, len(pieces))
        expected, _ = forked.e_step(logp)
    monkeypatch.setattr(parallel, "_shard_context", lambda: multiprocessing.get_context("spawn"))
    with Shards(counts, workers=2, reporter=Reporter(), chars_per_slice=500) as spawned:
        spawned.build(pieces, 8, len(pieces))
        assert [p.exitcode for p in spawned.procs] == [None, None]
        assert np.array_equal(spawned.e_step(logp)[0], expected)
    assert not multiprocessing.active_children()


def test_a_cancel_during_em_ends_every_worker(small_slices: None) -> None:
    stages: list[str] = []
    reporter = Reporter(lambda stage, *_: stages.append(stage), lambda: "EM" in stages, interval=0)
    with pytest.raises(TrainingCancelled):
        train_json(corpus_counts(), 2, reporter)
    assert "lattice" in stages
    assert not multiprocessing.active_children()


def _boom(*_: object) -> None:
    raise ValueError("boom in a worker")


def _die(*_: object) -> None:
    os._exit(3)


@pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(), reason="workers inherit the patch by fork")
def test_a_worker_error_reaches_the_leader_and_ends_every_worker(small_slices: None,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parallel, "edge_expectations", _boom)
    with pytest.raises(ValueError, match="boom in a worker"):
        train_json(corpus_counts(), 2)
    assert not multiprocessing.active_children()


@pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(), reason="workers inherit the patch by fork")
def test_a_dead_worker_raises_instead_of_hanging(small_slices: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parallel, "viterbi_counts", _die)
    with pytest.raises(RuntimeError, match=r"worker died \(exit code 3\)"):
        train_json(corpus_counts(), 3)
    assert not multiprocessing.active_children()


def test_num_workers_is_bounded() -> None:
    with pytest.raises(Exception, match="num_workers=0 must be between 1 and"):
        UnigramOptions(num_workers=0)


def test_train_counts_with_the_workers(tmp_path: Path, small_slices: None) -> None:
    from engine.trainers import train

    text = " ".join(w[1:] for w, n in corpus_counts(500).items() for _ in range(min(n, 3)))
    path = tmp_path / "c.txt"
    path.write_text(text + "\n", encoding="utf-8")
    one = train("unigram", [path], {"vocab_size": 300, "num_workers": 1}).tokenizer.to_json()
    assert train("unigram", [path], {"vocab_size": 300, "num_workers": 2}).tokenizer.to_json() == one


def test_alternatives_over_a_masked_index_match_a_fresh_one() -> None:
    """``PieceIndex.only``: the seed's trie with the dead pieces masked gives the alternatives of
    a trie built from the live pieces alone."""
    counts = corpus_counts(600)
    pieces = sorted({w[i : i + n] for w in counts for i in range(len(w)) for n in (1, 2, 3, 4) if i + n <= len(w)})
    unk = len(pieces)
    rng = np.random.default_rng(3)
    logp = np.log(rng.uniform(0.01, 1.0, unk + 1))
    freq = rng.integers(0, 50, unk + 1).astype(float)
    index = PieceIndex.of({p: s for s, p in enumerate(pieces)})
    for share in (1.0, 0.5, 0.1):
        live = np.flatnonzero(rng.random(unk) < share)
        live = np.union1d(live, [s for s, p in enumerate(pieces) if len(p) == 1])  # the characters stay
        owners = live[freq[live] > 0]
        fresh = alternative_paths(pieces, live, owners, freq, logp, 16, unk)
        masked = alternative_paths(pieces, live, owners, freq, logp, 16, unk, index)
        for a, b in zip(fresh, masked):
            assert np.array_equal(a, b)
        assert np.isfinite(fresh[0]).sum() > len(owners) // 3  # most owners have an alternative
