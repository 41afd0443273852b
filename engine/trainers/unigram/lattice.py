"""The corpus lattice: every segmentation of every distinct word, as numpy edge arrays.

The lattice is built over the prefix trie of the words (``trie``): a word's forward value at
position ``j`` depends only on its first ``j`` characters, so words that begin alike share it.
There is an edge ``u → v`` for every piece that spells the last ``L`` characters of node ``v``,
``u`` being ``v``'s ancestor ``L`` levels up, plus one edge of length 1 for every node whose
character is no piece (the unknown piece, ``unk``).

Which suffixes are pieces is found without a string operation: with ``T_L(v)`` the node of the
*pieces'* trie that spells ``v``'s last ``L`` characters, ``T_L(v)`` is the child of
``T_{L-1}(parent(v))`` by ``v``'s character, one sorted-key lookup (``searchsorted``) for all
nodes at once, ``L = 1 .. max_piece_length``. It is exact: keys are (node, code point) pairs.

Edges are kept twice: ``in_*`` sorted by end node (forward pass, Viterbi), ``out_*`` sorted by
start node (backward pass). Inside a node, in-edges are in piece-length order, so the last of
equal Viterbi scores is the longest piece. Every node keeps its length-1 edge (a required
character or ``unk``, which are never pruned), so each node has an in-edge.

Internal: not part of the engine's API (``engine.PUBLIC_MODULES``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple

import numpy as np

from engine.trainers.unigram.trie import CODE_POINTS, ByDepth, Trie, build_trie


class PieceIndex(NamedTuple):
    """The pieces' trie as lookups: sorted (node, char) keys, each key's child, each node's piece."""

    keys: np.ndarray
    child: np.ndarray
    sid_at: np.ndarray

    @classmethod
    def of(cls, sid_of: Mapping[str, int] | Sequence[str]) -> PieceIndex:
        """The index of the pieces of ``sid_of`` (built once, shared by the lattices of many slices),
        or of a list of pieces, piece ``i`` having id ``i`` (a worker's million seed pieces: the
        dict of them cost 0.16 s)."""
        pieces = list(sid_of)
        pieces_trie = build_trie(pieces)
        sid_at = np.full(pieces_trie.n_nodes, -1, np.int32)  # the piece each pieces-trie node spells, or -1
        sid_at[pieces_trie.terminal] = (np.fromiter(sid_of.values(), dtype=np.int32, count=len(sid_of))
                                        if isinstance(sid_of, Mapping) else np.arange(len(pieces), dtype=np.int32))
        keys, child = pieces_trie.children()
        return cls(keys, child.astype(np.int32), sid_at)

    def only(self, sids: np.ndarray) -> PieceIndex:
        """The index of the pieces ``sids`` among its own: the same trie, the other pieces' nodes
        spelling no piece. A lattice over it has exactly the edges of one over a trie of those
        pieces alone (the walk only goes deeper through prefixes that lead nowhere), and this is
        one array operation instead of sorting the pieces' strings again."""
        wanted = np.zeros(len(self.sid_at) + 1, bool)  # a piece id is below the trie's node count
        wanted[sids] = True
        sid_at = np.where(wanted[self.sid_at], self.sid_at, -1).astype(np.int32)  # -1 reads the last: False
        return PieceIndex(self.keys, self.child, sid_at)


class Lattice(ByDepth):
    """The lattices of ``words`` (each weighted by its count) over the pieces of ``sid_of`` (or of
    ``index``, their :class:`PieceIndex`)."""

    def __init__(self, words: Sequence[str] | Trie, counts: Sequence[float], sid_of: Mapping[str, int] | PieceIndex,
                 max_len: int, unk: int) -> None:
        words_trie = words if isinstance(words, Trie) else build_trie(words)  # a Trie: the words' own
        self.base, self.terminal = words_trie.base, words_trie.terminal
        self.counts = np.asarray(counts, dtype=np.float64)
        self.max_len = max_len
        parent, char, n = words_trie.parent, words_trie.char, words_trie.n_nodes
        keys, child, sid_at = sid_of if isinstance(sid_of, PieceIndex) else PieceIndex.of(sid_of)
        src, dst, sid = [], [], []
        state = np.zeros(n, np.int32)  # T_{L-1} of every node (-1: no piece starts so); T_0 is the root
        ancestor = np.arange(n, dtype=np.int32)  # each node's ancestor L - 1 levels up, where state >= 0
        for length in range(1, max_len + 1):
            nodes = np.flatnonzero(state[parent] >= 0)[int(length == 1):]  # the root is no edge's end
            prev, up = state[parent[nodes]], ancestor[parent[nodes]]
            want = prev.astype(np.int64) * CODE_POINTS + char[nodes]
            at = np.minimum(np.searchsorted(keys, want), len(keys) - 1)
            hit = keys[at] == want if len(keys) else np.zeros(len(want), bool)
            piece = np.where(hit, sid_at[child[at]] if len(keys) else -1, -1)
            edge = piece >= 0
            if length == 1:  # every node's length-1 edge: its character, or unk
                edge[:] = True
                piece[piece < 0] = unk
            src.append(up[edge])
            dst.append(nodes[edge].astype(np.int32))
            sid.append(piece[edge])
            state = np.full(n, -1, np.int32)
            state[nodes[hit]] = child[at[hit]]
            ancestor[nodes[hit]] = up[hit]
            if not hit.any():
                break
        del state, ancestor
        # In-edges sorted by end node, then length: a node has at most one edge of each length,
        # so each length's block scatters to its nodes' next free slots (no sort, no copy).
        degree = np.zeros(n, np.int64)
        for ends in dst:
            degree[ends] += 1
        free = np.cumsum(degree) - degree
        self.in_src, self.in_dst, self.in_sid = (np.empty(int(degree.sum()), np.int32) for _ in range(3))
        while dst:  # freeing each block as it is placed
            ends = dst.pop(0)
            at = free[ends]
            free[ends] += 1
            self.in_src[at], self.in_dst[at], self.in_sid[at] = src.pop(0), ends, sid.pop(0)
        order = np.argsort(self.in_src, kind="stable")
        self.out_src, self.out_dst, self.out_sid = self.in_src[order], self.in_dst[order], self.in_sid[order]
        del order
        self._offsets()

    def _offsets(self) -> None:
        """Per depth, the first in-edge and out-edge; per node, its first in-edge."""
        self.in_off = np.searchsorted(self.in_dst, self.base)
        self.out_off = np.searchsorted(self.out_src, self.base)
        self.in_first = np.flatnonzero(np.diff(self.in_dst, prepend=-1))  # node v's first edge: in_first[v - 1]

    def edges(self) -> int:
        return len(self.in_sid)

    def filter(self, alive: np.ndarray, *, min_dead: float = 0.1) -> None:
        """Drop the edges of dead pieces (their probability is 0, so no result changes), when at
        least ``min_dead`` of the edges are dead: a filter costs about what a pass over them does."""
        keep_in = alive[self.in_sid]
        if keep_in.mean() > 1 - min_dead:
            return
        keep_out = alive[self.out_sid]
        self.in_src, self.in_dst, self.in_sid = self.in_src[keep_in], self.in_dst[keep_in], self.in_sid[keep_in]
        self.out_src, self.out_dst, self.out_sid = (self.out_src[keep_out], self.out_dst[keep_out],
                                                    self.out_sid[keep_out])
        self._offsets()

    def depth_in(self, j: int) -> tuple[int, int, np.ndarray]:
        """The in-edges of depth ``j``'s nodes (``e0:e1``) and where each node's run starts in it."""
        e0, e1 = int(self.in_off[j]), int(self.in_off[j + 1])
        return e0, e1, self.in_first[self.base[j] - 1 : self.base[j + 1] - 1] - e0
