"""Pruning's Viterbi: each piece's best segmentation without itself, over a trie of the pieces.

sentencepiece's loss of removing piece ``s`` needs the best segmentation of ``s``'s own string
by the other pieces. The pieces' strings share prefixes, so the best path to every prefix is
computed once, depth by depth, over the edges of a :class:`TrieLattice` built on the piece
strings: ``best(v) = max over edges u→v of best(u)·p``, where an edge's candidates are compared
as ``(probability, length, ...)`` tuples so that ties go to the longest last piece (as the
Unigram model's Viterbi does). A piece's own whole-string edge (the one from the root) is left
out of its alternative, but kept for the longer pieces that extend it. The loss formula itself
is ``unigram_em.prune``'s.
"""

from __future__ import annotations

import multiprocessing
import threading
from bisect import bisect_left
from collections.abc import Mapping, Sequence
from itertools import compress, repeat
from operator import mul, ne, sub

from engine.trainers.unigram_trie import TrieLattice

Best = tuple[float, int, int, int]  # (probability, last piece's length, previous node, last piece id)


def alternatives(
    owners: Sequence[int], strings: Sequence[str], sid_of: Mapping[str, int], prob: Sequence[float], max_len: int, unk_sid: int,
) -> list[tuple[float, list[int]]]:
    """For each piece id in ``owners`` (spelled ``strings``): its best segmentation's probability
    without itself, and the piece ids of that segmentation (empty if there is none)."""
    lat = TrieLattice(strings, [1.0] * len(strings), sid_of, max_len, unk_sid, compile=False)
    base = lat.base
    depth_of = [0] * lat.n_nodes
    for j in range(len(base) - 1):
        depth_of[base[j] : base[j + 1]] = repeat(j, base[j + 1] - base[j])
    incl: list[Best] = [(1.0, 0, 0, -1)]  # best path to each node, any piece allowed
    incl_p = [1.0]  # its probability
    excl: dict[int, Best] = {}  # best path to a piece's node without its own whole-string edge
    for j in range(1, len(base) - 1):
        e0, e1 = bisect_left(lat.in_dst, base[j]), bisect_left(lat.in_dst, base[j + 1])
        src, sid, dst = lat.in_src[e0:e1], lat.in_sid[e0:e1], lat.in_dst[e0:e1]
        vals = map(mul, map(incl_p.__getitem__, src), map(prob.__getitem__, sid))
        cands = list(zip(vals, map(sub, repeat(j), map(depth_of.__getitem__, src)), src, sid))
        own = [j > 1 and s == 0 for s in src]  # from the root at depth > 1: the node's own piece
        other = [not o for o in own]
        keys = list(compress(dst, other))
        cands_other = list(compress(cands, other))
        cuts = [0] + [k + 1 for k in compress(range(len(keys) - 1), map(ne, keys, keys[1:]))] + [len(keys)]
        best = list(map(max, map(cands_other.__getitem__, map(slice, cuts, cuts[1:]))))
        # every node has its one-character edge, so ``best`` has one entry per node
        for d, c in zip(compress(dst, own), compress(cands, own)):
            k = d - base[j]
            excl[d] = best[k]
            if c > best[k]:
                best[k] = c
        incl.extend(best)
        incl_p.extend(b[0] for b in best)
    out: list[tuple[float, list[int]]] = []
    for node in lat.terminal:
        value, _, prev, last = excl.get(node, (0.0, 0, 0, -1))
        path = [last] if last >= 0 else []
        while prev:
            _, _, prev, last = incl[prev]
            path.append(last)
        out.append((value, path))
    return out


def alternatives_parallel(
    owners: Sequence[int], strings: Sequence[str], sid_of: Mapping[str, int], prob: Sequence[float], max_len: int, unk_sid: int,
    *, workers: int = 2,
) -> list[tuple[float, list[int]]]:
    """:func:`alternatives` with the strings cut in two sorted halves (sub-tries) on forked
    workers when possible; the result is the same (each piece's answer is independent)."""
    if workers < 2 or len(strings) < 20_000 or threading.active_count() != 1 or "fork" not in multiprocessing.get_all_start_methods():
        return alternatives(owners, strings, sid_of, prob, max_len, unk_sid)
    order = sorted(range(len(strings)), key=strings.__getitem__)
    half = len(order) // 2
    parts = [order[:half], order[half:]]
    args = [([owners[i] for i in part], [strings[i] for i in part], sid_of, prob, max_len, unk_sid) for part in parts]
    with multiprocessing.get_context("fork").Pool(2) as pool:
        results = pool.starmap(alternatives, args)
    out: list[tuple[float, list[int]]] = [(0.0, [])] * len(strings)
    for part, result in zip(parts, results):
        for i, value in zip(part, result):
            out[i] = value
    return out


def alternatives_reference(
    owners: Sequence[int], strings: Sequence[str], sid_of: Mapping[str, int], prob: Sequence[float], max_len: int, unk_sid: int,
) -> list[tuple[float, list[int]]]:
    """The slow, obviously-correct twin of :func:`alternatives`: one Viterbi per string."""
    out: list[tuple[float, list[int]]] = []
    for owner, text in zip(owners, strings):
        n = len(text)
        best: list[tuple[float, int, int, int]] = [(1.0, 0, 0, -1)] + [(0.0, 0, 0, -1)] * n
        for end in range(1, n + 1):
            for length in range(1, min(end, max_len) + 1):
                piece = text[end - length : end]
                sid = sid_of.get(piece, unk_sid if length == 1 else -1)
                if sid < 0 or (end == n and length == n and sid == owner):
                    continue
                cand = (best[end - length][0] * prob[sid], length, end - length, sid)
                if cand[:2] > best[end][:2]:
                    best[end] = cand
        path, at = [], n
        while at > 0 and best[at][3] >= 0:
            path.append(best[at][3])
            at = best[at][2]
        out.append((best[n][0], path))
    return out
