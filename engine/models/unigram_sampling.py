"""Subword regularization for the Unigram model: sampled segmentations instead of the best one.

Two of sentencepiece's samplers, on a lattice as ``Unigram.lattice`` builds it (for each start
position, the ``(end, id, score)`` of every piece there); they know nothing else of the model:

* ``nbest_size < 0``: forward-filtering backward-sampling over *all* segmentations, each drawn
  with probability proportional to ``exp(alpha * score)``;
* ``nbest_size > 1``: the ``nbest_size`` best segmentations (exact k-best dynamic programming),
  one drawn with probability proportional to ``exp(alpha * score)``.

``nbest_size`` 0 or 1 is plain Viterbi, and choosing among the three, like turning a path into
ids, is the model's job (``Unigram.sample``). Only ``rng`` supplies randomness, so a seeded
``random.Random`` reproduces a sample.

Internal: not part of the engine's API (``engine.PUBLIC_MODULES``).
"""

from __future__ import annotations

import heapq
import math
import random
from collections.abc import Sequence

Path = list[tuple[int, int, int]]  # (start, end, id) per piece; id -1 is an unknown character
Lattice = Sequence[Sequence[tuple[int, int, float]]]  # per start position: (end, id, score)


def _logaddexp(a: float, b: float) -> float:
    if a == -math.inf:
        return b
    if b == -math.inf:
        return a
    hi, lo = (a, b) if a > b else (b, a)
    return hi + math.log1p(math.exp(lo - hi))


def ffbs(lattice: Lattice, *, rng: random.Random, alpha: float) -> Path:
    """Draw one segmentation with probability proportional to ``exp(alpha * total score)``."""
    n = len(lattice)
    # 1. Forward: log of the summed weight of every prefix path ending at each position.
    forward = [-math.inf] * (n + 1)
    forward[0] = 0.0
    ending: list[list[tuple[int, int, float]]] = [[] for _ in range(n + 1)]
    for start, here in enumerate(lattice):
        for end, token_id, score in here:
            weight = alpha * score
            forward[end] = _logaddexp(forward[end], forward[start] + weight)
            ending[end].append((start, token_id, weight))
    # 2. Backward sampling: from the end, pick the last piece by its share of the forward mass.
    path: Path = []
    end = n
    while end > 0:
        draw = rng.random()
        total = 0.0
        chosen = ending[end][-1]
        for candidate in ending[end]:
            total += math.exp(forward[candidate[0]] + candidate[2] - forward[end])
            if draw < total:
                chosen = candidate
                break
        path.append((chosen[0], end, chosen[1]))
        end = chosen[0]
    path.reverse()
    return path


def nbest(lattice: Lattice, size: int) -> list[tuple[float, Path]]:
    """The ``size`` best segmentations with their scores, best first (ties: earlier found first)."""
    n = len(lattice)
    # best[j]: up to ``size`` (score, start, id, rank-at-start) entries for paths ending at j.
    best: list[list[tuple[float, int, int, int]]] = [[] for _ in range(n + 1)]
    best[0] = [(0.0, -1, 0, 0)]
    incoming: list[list[tuple[int, int, float]]] = [[] for _ in range(n + 1)]
    for start, here in enumerate(lattice):
        for end, token_id, score in here:
            incoming[end].append((start, token_id, score))
    for end in range(1, n + 1):
        candidates = [
            (base + score, start, token_id, rank)
            for start, token_id, score in incoming[end]
            for rank, (base, *_rest) in enumerate(best[start])
        ]
        best[end] = heapq.nlargest(size, candidates, key=lambda c: c[0])
    results: list[tuple[float, Path]] = []
    for rank in range(len(best[n])):
        score = best[n][rank][0]
        path: Path = []
        end, r = n, rank
        while end > 0:
            _, start, token_id, prev_rank = best[end][r]
            path.append((start, end, token_id))
            end, r = start, prev_rank
        path.reverse()
        results.append((score, path))
    return results


def sample_nbest(lattice: Lattice, size: int, *, rng: random.Random, alpha: float) -> Path:
    """One of the ``size`` best segmentations, drawn with probability proportional to ``exp(alpha * score)``."""
    results = nbest(lattice, size)
    top = max(alpha * s for s, _ in results)
    weights = [math.exp(alpha * s - top) for s, _ in results]
    return rng.choices([p for _, p in results], weights=weights)[0]
