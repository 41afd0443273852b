"""Viterbi piece counts over the corpus, for pruning: how often each piece is in the best path.

sentencepiece's pruning (``PruneSentencePieces``) weighs each piece by its count in the Viterbi
segmentation of every sentence, not by its expected (EM) count: a piece that is often *possible*
but rarely *best* gets a small frequency, and a piece never on a best path is removed outright.

The words are the prefix-trie lattice of ``unigram_trie`` (the same one the E-step uses): the
best path to a node depends only on the node's prefix, so it is computed once per node, depth by
depth, with ties going to the longest last piece (the Unigram model's rule, and
sentencepiece's). Each node keeps one back edge, so the best paths of all words form a tree;
counts flow from the word ends back to the root, deepest node first, and each back edge's piece
collects the counts that pass through it.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections.abc import Mapping, Sequence
from collections import deque
from itertools import compress, islice, repeat
from operator import add, eq

from engine.trainers.unigram_columns import run_lengths
from engine.trainers.unigram_trie import TrieLattice


def viterbi_counts(lat: TrieLattice, logp: Sequence[float]) -> list[float]:
    """Each piece id's count in the best paths of the lattice's words (weighted by their counts).

    ``logp`` holds log-probabilities (``-inf`` for dead pieces); scores are sums of logs, so
    long lines cannot underflow. Words without any path contribute nothing.
    """
    base, in_src, in_dst, in_sid = lat.base, lat.in_src, lat.in_dst, lat.in_sid
    in_deg = getattr(lat, "in_deg", None)  # kept by compiled lattices; counted here otherwise
    best = [0.0] + [-math.inf] * (lat.n_nodes - 1)
    back_edge = [-1] * lat.n_nodes
    for j in range(1, len(base) - 1):
        e0, e1 = bisect_left(in_dst, base[j]), bisect_left(in_dst, base[j + 1])
        dst = in_dst[e0:e1]
        vals = list(map(add, map(best.__getitem__, in_src[e0:e1]), map(logp.__getitem__, in_sid[e0:e1])))
        degs = in_deg[base[j] : base[j + 1]] if in_deg is not None else run_lengths(dst, base[j], base[j + 1])
        # Each node's maximum over its run: the next ``degree`` values of one iterator (as
        # ``unigram_trie.node_sums``); nodes without edges keep -inf.
        maxima = map(max, map(islice, repeat(iter(vals)), compress(degs, degs)))
        deque(map(best.__setitem__, compress(range(base[j], base[j + 1]), degs), maxima), maxlen=0)
        # The edges that reach their node's best score; inside a node the edges are in
        # piece-length order, so the last one written (the longest piece) wins a tie.
        win = list(compress(range(e0, e1), map(eq, vals, map(best.__getitem__, dst))))
        deque(map(back_edge.__setitem__, map(in_dst.__getitem__, win), win), maxlen=0)
    flow = [0.0] * lat.n_nodes
    for node, count in zip(lat.terminal, lat.counts):
        if best[node] > -math.inf:
            flow[node] += count
    counts = [0.0] * len(logp)
    for j in range(len(base) - 2, 0, -1):  # deepest first: a node's flow is complete
        for node in compress(range(base[j], base[j + 1]), flow[base[j] : base[j + 1]]):
            f, edge = flow[node], back_edge[node]
            counts[in_sid[edge]] += f
            flow[in_src[edge]] += f
    return counts


def viterbi_counts_reference(
    words: Sequence[str], counts: Sequence[float], sid_of: Mapping[str, int], logp: Sequence[float],
    max_len: int, unk_sid: int,
) -> list[float]:
    """The slow, obviously-correct twin of :func:`viterbi_counts`: one Viterbi per word."""
    out = [0.0] * len(logp)
    for word, count in zip(words, counts):
        n = len(word)
        best: list[tuple[float, int, int, int]] = [(0.0, 0, 0, -1)] + [(-math.inf, 0, 0, -1)] * n
        for end in range(1, n + 1):
            for length in range(1, min(end, max_len) + 1):
                sid = sid_of.get(word[end - length : end], unk_sid if length == 1 else -1)
                if sid < 0 or logp[sid] == -math.inf or best[end - length][0] == -math.inf:
                    continue
                cand = (best[end - length][0] + logp[sid], length, end - length, sid)
                if cand[:2] > best[end][:2]:
                    best[end] = cand
        if best[n][0] == -math.inf:
            continue
        at = n
        while at > 0:
            out[best[at][3]] += count
            at = best[at][2]
    return out
