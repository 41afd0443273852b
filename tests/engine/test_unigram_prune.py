"""Pruning's alternatives and losses against the slow per-piece references, ties included."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.trainers.unigram.lattice import Lattice
from engine.trainers.unigram.prune import alternatives, prune_pieces
from tests.engine.unigram_reference import best_path, prune_reference

# Powers of two: products of different pieces are often exactly equal (ties in probability).
PROBS = [0.5, 0.25, 0.125, 0.0625, 0.0]


def _vocab(rng: random.Random, alphabet: str, n: int, max_len: int) -> list[str]:
    pieces = list(alphabet[:-1])  # the last character is never a piece: unknown
    pieces += ["".join(rng.choice(alphabet) for _ in range(rng.randint(2, max_len))) for _ in range(n)]
    return list(dict.fromkeys(pieces))


def _logs(values: list[float]) -> np.ndarray:
    return np.array([math.log(p) if p > 0 else -math.inf for p in values])


@settings(max_examples=200, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), max_len=st.integers(2, 6))
def test_alternatives_match_the_reference_with_ties_and_unknowns(seed: int, max_len: int) -> None:
    rng = random.Random(seed)
    pieces = _vocab(rng, "abc▁z", 30, max_len)
    sid_of = {p: i for i, p in enumerate(pieces)}
    logp = _logs([rng.choice(PROBS) for _ in pieces] + [rng.choice([1e-9, 0.0625])])
    logp[:4] = np.log(0.03125)  # one-character pieces stay alive, as required characters do
    lat = Lattice(pieces, np.zeros(len(pieces)), sid_of, max_len, len(pieces))
    value, last, back = alternatives(lat, logp)
    for s, piece in enumerate(pieces):
        ref_value, ref_path = best_path(piece, sid_of, logp.tolist(), max_len, len(pieces), without=s)
        path, edge = [], int(last[s])
        while edge >= 0:
            path.append(int(lat.in_sid[edge]))
            edge = int(back[lat.in_src[edge]])
        assert (value[s], path) == (ref_value, ref_path), piece


@pytest.mark.parametrize("seed", range(8))
def test_prune_keeps_the_pieces_the_per_piece_loop_keeps(seed: int) -> None:
    rng = random.Random(seed)
    pieces = _vocab(rng, "abcd▁z", 120, 6)
    unk = len(pieces)
    freq = [float(rng.choice([0, 1, 2, 2, 3, 8, 40])) for _ in pieces] + [0.0]  # repeated counts: equal losses
    logp = [math.log(rng.choice(PROBS[:-1])) for _ in pieces] + [math.log(1e-9)]
    alive = [len(p) == 1 or rng.random() < 0.9 for p in pieces] + [True]
    logp = [v if on else -math.inf for v, on in zip(logp, alive)]
    required = {s for s, p in enumerate(pieces) if len(p) == 1} | {unk}
    options = {"target": 20, "shrinking_factor": rng.choice([0.5, 0.75]), "max_len": 6, "unk": unk}
    fast, slow = np.array(alive), list(alive)
    is_required = np.array([s in required for s in range(unk + 1)])
    prune_pieces(pieces, np.array(freq), np.array(logp), fast, is_required, **options)
    prune_reference(pieces, freq, logp, slow, required, **options)
    assert fast.tolist() == slow and slow != alive
