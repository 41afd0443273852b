"""Pruning for the Unigram trainer: Viterbi counts, each piece's alternative, and the loss.

sentencepiece (``PruneSentencePieces``) weighs each piece by its count in the Viterbi paths of
the corpus (:func:`viterbi_counts`), not by its expected count: a piece often *possible* but
rarely *best* gets a small frequency, and one never on a best path goes at once. The loss of
removing piece ``s`` compares ``s`` with its *alternative*, the best segmentation of ``s``'s own
string by the other pieces (:func:`alternatives`):
``loss = f_s/F · ((log f_s − log F) − (Σ_alt log(f_a + f_s) − log(F + f_s·(n − 1))))``,
``F`` the total frequency, ``n`` the alternative's length.

Both Viterbi passes run on a ``Lattice``, one vectorised pass per trie depth. Ties go to the
longest last piece (edges inside a node are in length order, and the last best one wins), as in
the Unigram model. The alternatives are a Viterbi over the trie of the pieces themselves: the
best path to a piece's node that does not leave from the root (the root edge is the piece).
In ranking, equal losses keep the smaller id (the better seed rank); required characters are
never pruned. The slow, obviously-correct twins are in ``tests/engine/unigram_reference.py``.

Internal: not part of the engine's API (``engine.PUBLIC_MODULES``).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from engine.trainers.unigram.lattice import Lattice, PieceIndex


def viterbi(lat: Lattice, logp: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each node's best log-probability and the in-edge its best path ends with (root: -1)."""
    best = np.full(lat.n_nodes, -np.inf)
    best[0] = 0.0
    back = np.full(lat.n_nodes, -1, np.int64)
    for j in range(1, lat.depth + 1):
        e0, e1, runs = lat.depth_in(j)
        vals = best[lat.in_src[e0:e1]] + logp[lat.in_sid[e0:e1]]
        top = np.maximum.reduceat(vals, runs)
        nodes = slice(lat.base[j], lat.base[j + 1])
        best[nodes] = top
        winners = np.where(vals == top[lat.in_dst[e0:e1] - lat.base[j]], np.arange(e0, e1), -1)
        back[nodes] = np.maximum.reduceat(winners, runs)  # the last (longest) of equal bests
    return best, back


def viterbi_counts(lat: Lattice, logp: np.ndarray) -> np.ndarray:
    """Each piece id's count in the best paths of the lattice's words, weighted by their counts."""
    _, back = viterbi(lat, logp)
    flow = np.zeros(lat.n_nodes)  # the count of the words whose best path passes a node
    flow[lat.terminal] = lat.counts
    for j in range(lat.depth, 0, -1):  # deepest first: a node's flow is complete
        nodes = slice(lat.base[j], lat.base[j + 1])
        lo = lat.base[max(0, j - lat.max_len)]  # back edges reach at most max_len depths up
        flow[lo : lat.base[j]] += np.bincount(lat.in_src[back[nodes]] - lo, flow[nodes], lat.base[j] - lo)
    return np.bincount(lat.in_sid[back[1:]], weights=flow[1:], minlength=len(logp))


def alternatives(lat: Lattice, logp: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For each of the lattice's words (piece strings): the log-probability of its best path
    without a root edge (``-inf``: none), that path's last edge (-1: none), and :func:`viterbi`'s
    back edges, which lead from there to the root."""
    best, back = viterbi(lat, logp)
    is_end = np.zeros(lat.n_nodes, bool)
    is_end[lat.terminal] = True
    edges = np.flatnonzero(is_end[lat.in_dst] & (lat.in_src != 0))
    value = np.full(lat.n_nodes, -np.inf)
    last = np.full(lat.n_nodes, -1, np.int64)
    if len(edges):
        vals = best[lat.in_src[edges]] + logp[lat.in_sid[edges]]
        runs = np.flatnonzero(np.diff(lat.in_dst[edges], prepend=-1))
        nodes = lat.in_dst[edges[runs]]
        value[nodes] = np.maximum.reduceat(vals, runs)
        winners = np.where(vals == value[lat.in_dst[edges]], edges, -1)
        last[nodes] = np.maximum.reduceat(winners, runs)
    return value[lat.terminal], last[lat.terminal], back


def alternative_paths(pieces: list[str], live: np.ndarray, owners: np.ndarray, freq: np.ndarray, logp: np.ndarray,
                      max_len: int, unk: int, index: PieceIndex | None = None
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For each of ``owners`` (piece ids), its alternative over the ``live`` pieces: the path's
    log-probability (``-inf``: none), ``Σ_alt log(f_a + f_s)`` and its length ``n``. Each
    owner's answer depends on its own string only, so owners may be shared out in any cut.
    ``index``, the index of all of ``pieces`` if at hand, saves sorting the live ones again."""
    if not len(owners):
        return np.full(0, -np.inf), np.zeros(0), np.zeros(0)
    of_live = index.only(live) if index is not None else {pieces[s]: int(s) for s in live}
    lat = Lattice([pieces[s] for s in owners], np.zeros(len(owners)), of_live, max_len, unk)
    value, edge, back = alternatives(lat, logp)
    # Each owner's alternative path, walked back to the root for all owners at once.
    f_own = freq[owners]
    sums, lens = np.zeros(len(owners)), np.zeros(len(owners))
    while (going := edge >= 0).any():
        e = edge[going]
        sums[going] += np.log(freq[lat.in_sid[e]] + f_own[going])
        lens[going] += 1
        edge[going] = back[lat.in_src[e]]
    return value, sums, lens


AlternativePaths = Callable[[np.ndarray, np.ndarray, np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray, np.ndarray]]
"""``alternative_paths`` with the pieces bound: (live, owners, freq, logp) -> (value, sums, lens)."""


def prune_pieces(pieces: list[str], freq: np.ndarray, logp: np.ndarray, alive: np.ndarray, required: np.ndarray,
                 *, target: int, shrinking_factor: float, max_len: int, unk: int,
                 paths: AlternativePaths | None = None) -> None:
    """Remove pieces from ``alive`` by the likelihood loss of replacing each by its alternative;
    ``paths`` finds the alternatives (default: :func:`alternative_paths` in this process)."""
    live = np.flatnonzero(alive[:unk])
    total = freq[live].sum()
    owners = live[~required[live] & (freq[live] > 0)]
    alive[live[~required[live] & (freq[live] <= 0)]] = False  # never on a best path: free to remove
    if paths is None:
        value, sums, lens = alternative_paths(pieces, live, owners, freq, logp, max_len, unk)
    else:
        value, sums, lens = paths(live, owners, freq, logp)
    f_own = freq[owners]
    worse = value > logp[owners]  # not its own best segmentation: goes at once
    alive[owners[worse]] = False
    sids, f, s_alt, n = owners[~worse], f_own[~worse], sums[~worse], lens[~worse]
    neg_loss = -(f / total) * ((np.log(f) - np.log(total)) - (s_alt - n * np.log(total + f * (n - 1))))
    keep = max(target, int(len(live) * shrinking_factor))
    n_fixed = int(required[live].sum())
    ranked = np.argsort(neg_loss, kind="stable")  # highest loss first; ties: smaller id
    alive[sids[ranked[max(0, keep - n_fixed) :]]] = False
