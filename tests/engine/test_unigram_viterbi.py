"""Viterbi piece counts for Unigram pruning: by hand, and the numpy pass against the per-word
reference (ties, unknown characters, dead pieces, a long word, a filtered lattice)."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from engine.trainers.unigram.lattice import Lattice
from engine.trainers.unigram.prune import viterbi_counts
from tests.engine.unigram_reference import viterbi_counts_reference

WORDS = ["▁abracadabra", "▁abra", "▁cadabra", "▁bar", "▁x", "▁abr", "ab", "▁abracad", "b", "dab", "▁" + "abracadabra" * 60]
COUNTS = [3, 2, 1, 5, 1, 4, 2, 7, 1, 2, 2]
PIECES = ["▁", "a", "b", "r", "c", "d", "abra", "▁abra", "cad", "ab", "ra", "▁cad", "ar", "da"]
SID_OF = {p: i for i, p in enumerate(PIECES)}
UNK = len(PIECES)


def logs(prob: list[float]) -> np.ndarray:
    return np.array([math.log(p) if p > 0 else -math.inf for p in prob])


def test_viterbi_counts_by_hand() -> None:
    # "abab" x2: ab|ab (0.3 * 0.3 = 0.09) beats a|b|a|b (0.2^4) and a|bab...; "ba" x3: b|a.
    lat = Lattice(["abab", "ba"], [2, 3], {"a": 0, "b": 1, "ab": 2}, 16, 3)
    assert viterbi_counts(lat, logs([0.2, 0.2, 0.3, 1e-9])).tolist() == [3.0, 3.0, 4.0, 0.0]


def test_ties_go_to_the_longest_last_piece() -> None:
    lat = Lattice(["ab"], [1], {"a": 0, "b": 1, "ab": 2}, 16, 3)
    assert viterbi_counts(lat, np.array([-1.0, -1.0, -2.0, -20.0])).tolist() == [0.0, 0.0, 1.0, 0.0]  # a|b ties ab


@pytest.mark.parametrize("dead", [(), (6, 9), (6, 7, 8, 9, 10, 11, 12, 13)], ids=["all-alive", "two-dead", "chars-only"])
@pytest.mark.parametrize("seed", [5, 6, 7])
def test_viterbi_counts_match_the_per_word_reference(dead: tuple[int, ...], seed: int) -> None:
    rng = random.Random(seed)
    # A coarse grid of probabilities makes exact ties common, so the tie rule is exercised.
    logp = logs([0.0 if i in dead else rng.choice([0.01, 0.02, 0.04, 0.1]) for i in range(len(PIECES))] + [1e-6])
    lat = Lattice(WORDS, COUNTS, SID_OF, 16, UNK)
    fast = viterbi_counts(lat, logp).tolist()
    assert fast == viterbi_counts_reference(WORDS, COUNTS, SID_OF, logp.tolist(), 16, UNK)
    assert sum(fast) > 0


def test_viterbi_on_a_filtered_lattice_matches_the_reference() -> None:
    alive = np.array([p not in ("ab", "cad", "abra") for p in PIECES] + [True])
    logp = logs([0.05 + 0.01 * i if alive[i] else 0.0 for i in range(len(PIECES))] + [1e-6])
    lat = Lattice(WORDS, COUNTS, SID_OF, 16, UNK)
    before = lat.edges()
    lat.filter(alive, min_dead=0.0)
    assert lat.edges() < before
    assert viterbi_counts(lat, logp).tolist() == viterbi_counts_reference(WORDS, COUNTS, SID_OF, logp.tolist(), 16, UNK)
