"""Viterbi piece counts for Unigram pruning: by hand, and the trie version against the per-word
reference (ties, unknown characters, dead pieces, long words that would underflow)."""

from __future__ import annotations

import math
import random

import pytest

from engine.trainers.unigram_shards import ShardedLattice
from engine.trainers.unigram_trie import TrieLattice
from engine.trainers.unigram_viterbi import viterbi_counts, viterbi_counts_reference


def logs(prob: list[float]) -> list[float]:
    return [math.log(p) if p > 0 else -math.inf for p in prob]


def test_viterbi_counts_by_hand() -> None:
    # "abab" x2: ab|ab (0.3 * 0.3 = 0.09) beats a|b|a|b (0.2^4) and a|bab...; "ba" x3: b|a.
    pieces = ["a", "b", "ab"]
    sid_of = {p: i for i, p in enumerate(pieces)}
    prob = [0.2, 0.2, 0.3, 1e-9]
    lat = TrieLattice(["abab", "ba"], [2, 3], sid_of, 16, 3, compile=False)
    assert viterbi_counts(lat, logs(prob)) == [3.0, 3.0, 4.0, 0.0]


def test_ties_go_to_the_longest_last_piece() -> None:
    pieces = ["a", "b", "ab"]
    sid_of = {p: i for i, p in enumerate(pieces)}
    logp = [-1.0, -1.0, -2.0, -20.0]  # a|b and ab score the same
    lat = TrieLattice(["ab"], [1], sid_of, 16, 3, compile=False)
    assert viterbi_counts(lat, logp) == [0.0, 0.0, 1.0, 0.0]


@pytest.mark.parametrize("dead", [(), (6, 9), (6, 7, 8, 9, 10, 11, 12)], ids=["all-alive", "two-dead", "chars-only"])
def test_trie_viterbi_matches_the_per_word_reference(dead: tuple[int, ...]) -> None:
    rng = random.Random(5)
    words = ["▁abracadabra", "▁abra", "▁cadabra", "▁bar", "▁x", "▁abr", "ab", "▁abracad", "b", "▁" + "abracadabra" * 60]
    counts = [3, 2, 1, 5, 1, 4, 2, 7, 1, 2]
    pieces = ["▁", "a", "b", "r", "c", "d", "abra", "▁abra", "cad", "ab", "ra", "▁cad", "ar"]
    sid_of = {p: i for i, p in enumerate(pieces)}
    unk = len(pieces)
    # A coarse grid of probabilities makes exact ties common, so the tie rule is exercised.
    prob = [0.0 if i in dead else rng.choice([0.01, 0.02, 0.04, 0.1]) for i in range(len(pieces))] + [1e-6]
    lat = TrieLattice(words, counts, sid_of, 16, unk, compile=False)
    fast = viterbi_counts(lat, logs(prob))
    slow = viterbi_counts_reference(words, counts, sid_of, logs(prob), 16, unk)
    assert fast == slow
    assert sum(fast) > 0


def test_viterbi_on_a_filtered_lattice_matches_the_reference() -> None:
    # A dead one-character piece leaves nodes without any in-edge once filtered (maxima of
    # empty runs), and filtering renumbers nothing but the edges.
    words = ["▁abracadabra", "▁abra", "▁cadabra", "▁bar", "▁x", "▁abr", "ab", "▁abracad", "b", "dab"]
    counts = [3, 2, 1, 5, 1, 4, 2, 7, 1, 2]
    pieces = ["▁", "a", "b", "r", "c", "d", "abra", "▁abra", "cad", "ab", "ra", "▁cad", "ar", "da"]
    sid_of = {p: i for i, p in enumerate(pieces)}
    unk = len(pieces)
    alive = [p not in ("d", "ab", "cad") for p in pieces] + [True]
    prob = [0.05 + 0.01 * i if alive[i] else 0.0 for i in range(len(pieces))] + [1e-6]
    lat = TrieLattice(words, counts, sid_of, 16, unk)
    lat.filter(alive, min_share=0.0)
    assert 0 in lat.in_deg[1:]
    assert viterbi_counts(lat, logs(prob)) == viterbi_counts_reference(words, counts, sid_of, logs(prob), 16, unk)


def test_sharded_viterbi_counts_in_workers_match_the_reference() -> None:
    words = {"▁abracadabra": 3, "▁abra": 2, "▁cadabra": 1, "▁bar": 5, "▁x": 1, "▁abr": 4, "ab": 2, "▁zz": 1}
    pieces = ["▁", "a", "b", "r", "c", "d", "abra", "▁abra", "cad", "ab", "ra", "▁cad", "ar"]
    sid_of = {p: i for i, p in enumerate(pieces)}
    unk = len(pieces)
    logp = logs([0.05 + 0.01 * i for i in range(len(pieces))] + [1e-6])
    slow = viterbi_counts_reference(list(words), list(words.values()), sid_of, logp, 16, unk)
    for workers in (1, 2):
        lattices = ShardedLattice(words, sid_of, 16, unk, workers=workers)
        try:
            assert lattices.viterbi_counts(logp) == slow
        finally:
            lattices.close()
