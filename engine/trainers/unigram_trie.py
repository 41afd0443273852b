"""Prefix-trie lattices: forward-backward over every distinct word, sharing common prefixes.

A word's forward value at position ``j`` depends only on its first ``j`` characters, so all
words that begin alike share it. The lattice is therefore built over the distinct *prefixes*
of the words (the nodes of a prefix trie, numbered depth by depth from the root ``0``), with
an edge ``u → v`` for every vocabulary piece that spells the last ``L`` characters of ``v``,
``u`` being ``v``'s ancestor ``L`` levels up. On en_5M that is 2.5× fewer edges than one
lattice per word, and the sums below are exact, not an approximation:

* forward: ``alpha(v) = Σ_{u→v} alpha(u)·p``; a word's Z is ``alpha`` of its own node;
* backward, with the counts folded in: ``gamma(u) = count/Z`` (if a word ends at ``u``)
  ``+ Σ_{u→v} p·gamma(v)``, i.e. the sum over the words through ``u`` of ``count/Z × beta``;
* an edge's expected count is ``alpha(u)·p·gamma(v)``.

The loops run inside C, one depth at a time: ``map(values.__getitem__, ids)`` gathers the
values at the edges' other ends, ``map(mul, ...)`` applies the probabilities, and each node's
sum is ``sum`` over its run of edges (edges are stored sorted by node, so a node's run is
the next ``degree`` values of one shared iterator). Nodes stay in prefix order: numbering
each depth's nodes by degree would make the sums strided slices (2× cheaper), but it was
measured to cost as much in the gathers, whose ends are then spread over memory, and
renumbering at each build and filter costs more than all the E-steps save.
Edges are kept as ``array('i')`` columns (4 bytes a field), never as Python ints or
precompiled getters: a getter's tuple of int objects costs ~40 bytes an edge (~8 with one
shared int per node or piece id), for a forward gather measured only ~13% faster. Values
are probabilities, not logs; words whose Z underflows are left to the log-space reference in
``unigram_em``. Pieces are plain ids here; this module knows nothing of the vocabulary beyond
``sid_of``.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections import deque
from collections.abc import Mapping, Sequence
from itertools import accumulate, chain, compress, repeat
from math import log
from operator import add, eq, ge, is_not, itemgetter, le, mul, ne, sub

from engine.trainers.unigram_columns import node_sums, run_lengths, stable_order

TINY = 1e-280  # below this a word's probability is recomputed in log space


def suffix_table(sid_of: Mapping[str, int], max_len: int) -> dict[str, int]:
    """Each piece of 2..``max_len`` characters (to its id), and each 2+ character suffix of one (to -1).

    A node has an edge of length ``L`` only if its last ``L - 1`` characters are in this table,
    so the build tries length ``L`` only on the nodes found at ``L - 1``: about a third of the
    lookups of trying every length, and exact for any vocabulary (it does not assume that the
    suffixes of pieces are pieces).
    """
    pieces = {p: s for p, s in sid_of.items() if 2 <= len(p) <= max_len}
    table: dict[str, int] = {}
    tails: set[str] = set(pieces)
    while tails:
        tails = {t[1:] for t in tails if len(t) > 2}
        table.update(dict.fromkeys(tails, -1))
    table.update(pieces)
    return table


class TrieLattice:
    """The lattices of ``words`` (each with a count) over the pieces of ``sid_of``, as one trie.

    Edges are stored twice, as columns: ``in_*`` sorted by end node (for the forward pass and
    for pruning's Viterbi), ``out_*`` sorted by start node (backward pass); inside a node, by
    piece length.
    """

    def __init__(
        self, words: Sequence[str], counts: Sequence[float], sid_of: Mapping[str, int], max_piece_length: int, unk_sid: int,
        *, compile: bool = True,
    ) -> None:
        self.words = list(words)
        self.counts = [float(c) for c in counts]
        # The words at least j characters long, sorted, with their indices, lengths, and nodes
        # at depth j - 1: sorted words make each depth's prefixes sorted, so the distinct ones
        # are those unlike their predecessor (no set, no sort, no dict of prefixes per depth).
        who = sorted(range(len(self.words)), key=self.words.__getitem__)
        cur = [self.words[i] for i in who]
        lens = list(map(len, cur))
        at_node = [0] * len(cur)
        depth = max(lens, default=0)
        table = suffix_table(sid_of, max_piece_length)
        char_sid = sid_of.get
        parent = array("i", [0])  # parent[v]: the node one character shorter
        src, dst, sid = array("i"), array("i"), array("i")
        blocks: list[list[range]] = [[]]  # blocks[j][L-1]: creation positions of the length-L edges ending at depth j
        terminal = [0] * len(self.words)
        self.base = [0, 1]  # first node id of each depth (and one past the last)
        for j in range(1, depth + 1):
            # 1. The distinct prefixes of length j, sorted (deterministic ids), and their parents.
            if j - 1 in lens:  # drop the words that ended at depth j - 1
                longer = list(map(le, repeat(j), lens))
                cur, who, lens, at_node = (list(compress(c, longer)) for c in (cur, who, lens, at_node))
            prefixes = list(map(itemgetter(slice(0, j)), cur))
            opens = list(map(ne, prefixes, chain((None,), prefixes)))  # first word with its prefix
            nodes = list(compress(prefixes, opens))
            del prefixes
            first, stop = self.base[j], self.base[j] + len(nodes)
            self.base.append(stop)
            parent.extend(compress(at_node, opens))
            at_node = list(accumulate(opens, initial=first - 1))
            del at_node[0]
            ending = list(map(eq, lens, repeat(j)))
            deque(map(terminal.__setitem__, compress(who, ending), compress(at_node, ending)), maxlen=0)
            # 2. Edges ending at depth j, by piece length, then node. Length 1: every node (its
            #    character or unknown). Longer: only nodes whose shorter suffix was in the table.
            at = len(src)
            ancestors = parent[first:stop]
            src.extend(ancestors)
            dst.extend(range(first, stop))
            sid.extend(map(char_sid, map(itemgetter(slice(j - 1, j)), nodes), repeat(unk_sid)))
            here = [range(at, len(src))]
            cand, cand_ids = nodes, list(range(first, stop))
            for L in range(2, min(j, max_piece_length) + 1):
                found = list(map(table.get, map(itemgetter(slice(j - L, j)), cand)))
                hit = list(map(is_not, found, repeat(None)))
                cand = list(compress(cand, hit))
                if not cand:
                    break
                found, cand_ids = list(compress(found, hit)), list(compress(cand_ids, hit))
                ancestors = list(map(parent.__getitem__, compress(ancestors, hit)))
                piece = list(map(ge, found, repeat(0)))  # -1: only a suffix of a piece
                at = len(src)
                src.extend(compress(ancestors, piece))
                dst.extend(compress(cand_ids, piece))
                sid.extend(compress(found, piece))
                here.append(range(at, len(src)))
            blocks.append(here)
        del cur, who, lens, at_node, table, parent
        self.terminal = terminal
        self.n_nodes = self.base[-1]
        # 3. The two orders, one depth at a time: stable sorts of creation order (depth, length,
        #    node) keep length order inside a node. Edges ending at depth j were created
        #    together; edges starting at depth i are the length-L blocks of depth i + L.
        self.in_src, self.in_dst, self.in_sid = array("i"), array("i"), array("i")
        self.out_src, self.out_dst, self.out_sid = array("i"), array("i"), array("i")
        for j in range(1, depth + 1):
            by_dst = sorted(range(blocks[j][0].start, blocks[j][-1].stop), key=dst.__getitem__)
            for column, into in ((src, self.in_src), (dst, self.in_dst), (sid, self.in_sid)):
                into.extend(map(column.__getitem__, by_dst))
        for i in range(depth):
            starting = [blocks[i + L][L - 1] for L in range(1, max_piece_length + 1) if i + L <= depth and len(blocks[i + L]) >= L]
            by_src = sorted(chain.from_iterable(starting), key=src.__getitem__)
            for column, into in ((src, self.out_src), (dst, self.out_dst), (sid, self.out_sid)):
                into.extend(map(column.__getitem__, by_src))
        del blocks, src, dst, sid
        if compile:  # Viterbi users (pruning) read the in_* columns directly
            self._index()

    def edges(self) -> int:
        return len(self.in_sid)

    def filter(self, alive: Sequence[bool], *, min_share: float = 0.2) -> None:
        """Drop the edges of pieces that are no longer in the vocabulary.

        A dead piece's edges contribute exactly zero (its probability is 0), so the result does
        not change. Filtering costs about one E-step (a dozen passes over the columns), so it
        is skipped unless at least ``min_share`` of the edges are dead; the caller knows how
        many E-steps are left to save. The per-piece order of the posteriors is filtered, not
        re-sorted.
        """
        keep_in = bytes(map(alive.__getitem__, self.in_sid))
        if len(keep_in) - sum(keep_in) <= min_share * len(keep_in):
            return
        made = range(len(self.base) - 3, -1, -1)  # the backward pass's depth order
        self.in_src, self.in_dst, self.in_sid = (array("i", compress(a, keep_in)) for a in (self.in_src, self.in_dst, self.in_sid))
        del keep_in
        keep_out = bytes(map(alive.__getitem__, self.out_sid))
        # Posteriors are made depth by depth, deepest start first: their keep flags are
        # keep_out's depth blocks in that order, and their new places a running count of those.
        now_at = array("i", accumulate(b"".join(keep_out[self.out_off[i] : self.out_off[i + 1]] for i in made), initial=-1))
        del now_at[0]
        self.out_src, self.out_dst, self.out_sid = (array("i", compress(a, keep_out)) for a in (self.out_src, self.out_dst, self.out_sid))
        del keep_out
        # post_order is sorted by piece, so its keep flags are one flag per piece's run (no gather).
        live = bytes(map(alive.__getitem__, self.post_piece))
        runs = array("i", map(sub, self.post_last, chain((-1,), self.post_last)))
        self.post_order = array("i", map(now_at.__getitem__, compress(self.post_order, chain.from_iterable(map(repeat, live, runs)))))
        del now_at
        self.post_piece = array("i", compress(self.post_piece, live))
        self.post_last = array("i", map(sub, accumulate(compress(runs, live)), repeat(1)))
        self._degrees()

    def _degrees(self) -> None:
        """Per-depth edge offsets and each node's number of in / out edges."""
        base = self.base
        self.in_off = [bisect_left(self.in_dst, b) for b in base]
        self.out_off = [bisect_left(self.out_src, b) for b in base]
        self.in_deg, self.out_deg = array("i", [0]), array("i")
        for j in range(len(base) - 1):
            if j:
                self.in_deg.extend(run_lengths(self.in_dst[self.in_off[j] : self.in_off[j + 1]], base[j], base[j + 1]))
            self.out_deg.extend(run_lengths(self.out_src[self.out_off[j] : self.out_off[j + 1]], base[j], base[j + 1]))

    def _post_sids(self) -> array:
        """Piece ids of the posteriors in the order the backward pass makes them (deepest start depth first)."""
        base, out_src, out_sid = self.base, self.out_src, self.out_sid
        return array("i", chain.from_iterable(
            out_sid[bisect_left(out_src, base[i]) : bisect_left(out_src, base[i + 1])] for i in range(len(base) - 3, -1, -1)
        ))

    def _index(self) -> None:
        """Per-depth edge offsets, per-node degrees, and the per-piece order of the posteriors."""
        self._degrees()
        post_sids = self._post_sids()
        self.post_order = post_order = stable_order(post_sids)
        sorted_sids = array("i", map(post_sids.__getitem__, post_order))
        del post_sids
        self.post_last = array("i", compress(range(len(sorted_sids)), map(ne, sorted_sids, chain(sorted_sids[1:], (-1,)))))
        self.post_piece = array("i", map(sorted_sids.__getitem__, self.post_last))

    def forward_backward(self, prob: Sequence[float], expected: list[float]) -> tuple[list[float], list[int]]:
        """Add each piece's expected count to ``expected``; return per-word Z and underflowed words.

        Z is in the order of ``words``; underflowed words (Z below ``TINY``) contribute nothing.
        """
        base, get_p = self.base, prob.__getitem__
        alpha = [1.0]
        for j in range(1, len(base) - 1):
            e0, e1 = self.in_off[j], self.in_off[j + 1]
            vals = list(map(mul, map(alpha.__getitem__, self.in_src[e0:e1]), map(get_p, self.in_sid[e0:e1])))
            alpha.extend(node_sums(vals, self.in_deg[base[j] : base[j + 1]]))
        z = list(map(alpha.__getitem__, self.terminal))
        gamma = [0.0] * self.n_nodes
        deque(map(gamma.__setitem__, self.terminal, [c / v if v > TINY else 0.0 for c, v in zip(self.counts, z)]), maxlen=0)
        posts = array("d")  # 8 bytes an edge, not a list's 32; gathered ~40% faster below
        for i in range(len(base) - 3, -1, -1):
            e0, e1, b0, b1 = self.out_off[i], self.out_off[i + 1], base[i], base[i + 1]
            vals = list(map(mul, map(gamma.__getitem__, self.out_dst[e0:e1]), map(get_p, self.out_sid[e0:e1])))
            gamma[b0:b1] = map(add, gamma[b0:b1], node_sums(vals, self.out_deg[b0:b1]))
            posts.extend(map(mul, map(alpha.__getitem__, self.out_src[e0:e1]), vals))
        del alpha, gamma
        # Per-piece sums as differences of one running sum (values are >= 0, and the total is
        # about the corpus size, so the rounding error is far below the M-step's 0.5 cut-off).
        running = array("d", accumulate(map(posts.__getitem__, self.post_order)))  # a random gather
        del posts
        ends = list(map(running.__getitem__, self.post_last))
        del running
        sids = self.post_piece
        sums = map(sub, ends, chain((0.0,), ends))
        deque(map(expected.__setitem__, sids, map(add, map(expected.__getitem__, sids), sums)), maxlen=0)
        bad = [w for w, v in enumerate(z) if v <= TINY]
        return z, bad

    def e_step(self, prob: Sequence[float]) -> tuple[list[float], float, list[tuple[str, float]]]:
        """Expected counts, the log-likelihood of the words that did not underflow, and the
        words that did (with their counts), for the caller's log-space reference to finish."""
        expected = [0.0] * len(prob)
        z, bad = self.forward_backward(prob, expected)
        good = [v > TINY for v in z]
        loglik = sum(map(mul, compress(self.counts, good), map(log, compress(z, good))))
        return expected, loglik, [(self.words[w], self.counts[w]) for w in bad]
