"""Pruning's Viterbi: each piece's best segmentation without itself, over a trie of the pieces.

sentencepiece's loss of removing piece ``s`` needs the best segmentation of ``s``'s own string
by the other pieces. The pieces' strings share prefixes, so the best path to every prefix is
computed once, depth by depth, over a prefix trie of the strings: ``best(v) = max over pieces
p spelling v's last L characters of best(v's ancestor L up)·prob(p)``. Ties go to the longest
last piece (as the Unigram model's Viterbi does): lengths are tried in increasing order, and a
candidate replaces the best so far when it is *at least* as likely (floats compared, no
tuples). A string's own piece is its root edge (length = depth): it is left out of the string's
alternative (the best before the root edges are tried), but kept for the strings that extend it.

The trie is built here, not with ``unigram_trie.TrieLattice``: pruning needs no edge columns,
sorted orders or backward pass, only each node's parent, so nodes are found bottom-up (a node's
parent is its string minus the last character) and each length ``L`` is tried on the fly, a
lookup of every node's last ``L`` characters among the pieces of length ``L`` (a table per
length: smaller tables miss the CPU cache less, ~10% faster than one). That is cheaper than
first building a table of the pieces' suffixes to stop early: the suffix table is twice the
size and costs more than it saves.

Results are :class:`Chains`: per string, its value and first back step; per node, the back step
of its best path; paths are read from those, last piece first. For pruning itself,
:func:`alternative_sums` also takes the loss's sum over each path (``unigram_em.prune`` has the
formula) inside each half of the strings (``unigram_fork``), so a forked half sends back only
three flat arrays, never lists of paths.
"""

from __future__ import annotations

from array import array
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import chain, compress, repeat
from math import log
from operator import add, eq, ge, is_not, itemgetter, mul, not_

from engine.trainers.unigram_fork import can_fork, in_two


@dataclass
class Chains:
    """Each string's best path without its own piece, as back steps.

    String ``i``'s path is ``first[i]`` (-1: no path), then, from node ``prev[i]``, the pieces
    ``back_sid[v]`` of the nodes ``v = back_prev[v]`` met on the way to a root (``back_sid`` -1).
    """

    value: array  # 'd': the path's probability (0.0 if there is none)
    first: array  # 'i': the path's last piece
    prev: array  # 'i': the node before it
    back_sid: array  # 'i', per node: last piece of the node's best path (-1 at a root)
    back_prev: array  # 'i', per node: the node before it

    def paths(self) -> list[list[int]]:
        """Each string's path, last piece first."""
        back_sid, back_prev = self.back_sid, self.back_prev
        out: list[list[int]] = []
        for last, node in zip(self.first, self.prev):
            path = [last] if last >= 0 else []
            while (sid := back_sid[node]) >= 0:
                path.append(sid)
                node = back_prev[node]
            out.append(path)
        return out

    def steps(self) -> Iterator[tuple[list[int], list[int]]]:
        """The paths one piece at a time, for sums in path order without a loop per string:
        the ``k``-th yield holds the positions of the strings whose path has a ``k``-th piece, and those pieces."""
        at = list(compress(range(len(self.first)), map(ge, self.first, repeat(0))))
        step, node = list(map(self.first.__getitem__, at)), list(map(self.prev.__getitem__, at))
        while at:
            yield at, step
            step = list(map(self.back_sid.__getitem__, node))
            more = list(map(ge, step, repeat(0)))
            at, step = list(compress(at, more)), list(compress(step, more))
            node = list(map(self.back_prev.__getitem__, compress(node, more)))


def chains(
    owners: Sequence[int], strings: Sequence[str], sid_of: Mapping[str, int], prob: Sequence[float], max_len: int, unk_sid: int,
) -> Chains:
    """Each string's best segmentation without its owner's piece (see :class:`Chains`)."""
    # 1. Nodes, bottom-up: depth j holds the strings of length j and the parents of depth j + 1.
    ends: dict[int, list[int]] = {}  # length -> positions of the strings that long
    for i, n in enumerate(map(len, strings)):
        ends.setdefault(n, []).append(i)
    depth = max(ends, default=0)
    nodes: list[list[str]] = [[""]] + [[] for _ in range(depth)]
    up: list[list[int]] = [[] for _ in range(depth + 2)]  # up[j][k]: depth j-1 index of node k's parent
    term: list[list[int]] = [[] for _ in range(depth + 1)]  # term[j]: depth j index of each string in ends[j]
    below: list[str] = []
    for j in range(depth, 0, -1):
        mine = list(map(strings.__getitem__, ends.get(j, ())))
        here = list(dict.fromkeys(chain(mine, below)))
        index = dict(zip(here, range(len(here))))
        term[j] = list(map(index.__getitem__, mine))
        up[j + 1] = list(map(index.__getitem__, below))  # below[k]: nodes[j + 1][k] minus its last character
        nodes[j], below = here, list(map(itemgetter(slice(0, j - 1)), here))
    up[1] = [0] * len(nodes[1]) if depth else []
    # 2. Viterbi, top-down, over global node ids (depth by depth from the root 0).
    get_p = prob.__getitem__
    of_len: dict[int, dict[str, int]] = {}  # the pieces by length: smaller tables, fewer cache misses
    for piece, sid in sid_of.items():
        of_len.setdefault(len(piece), {})[piece] = sid
    best_all, sid_all, prev_all, parent_all = [1.0], [-1], [0], [0]
    n_str = len(strings)
    value, first, prev = array("d", bytes(8 * n_str)), array("i", [-1]) * n_str, array("i", bytes(4 * n_str))
    start = 0  # global id of depth j-1's first node
    for j in range(1, depth + 1):
        here, g0 = nodes[j], len(best_all)
        parents = list(map(add, up[j], repeat(start)))
        sids = list(map(of_len.get(1, {}).get, map(itemgetter(j - 1), here), repeat(unk_sid)))
        best = list(map(mul, map(best_all.__getitem__, parents), map(get_p, sids)))
        back_sid, back_prev = sids, parents[:]
        pre = (repeat(0.0), repeat(-1), repeat(0))  # the best before the root edges: none at depth 1
        whole: list[int | None] | None = sids[:] if j == 1 else None  # each node's string's id, if a piece
        anc = parents
        for length in range(2, min(j, max_len) + 1):
            anc = list(map(parent_all.__getitem__, anc))  # each node's ancestor `length` levels up
            found = list(map(of_len.get(length, {}).get, map(itemgetter(slice(j - length, j)), here)))
            hit = list(map(is_not, found, repeat(None)))
            ks = list(compress(range(len(here)), hit))
            if not ks:
                continue
            ss, ac = list(compress(found, hit)), list(compress(anc, hit))
            vals = list(map(mul, map(best_all.__getitem__, ac), map(get_p, ss)))
            if length == j:  # the root edges: each node's own string as a piece
                t, whole = term[j], found
                pre = (list(map(best.__getitem__, t)), list(map(back_sid.__getitem__, t)), list(map(back_prev.__getitem__, t)))
            # at least as likely as the shorter last pieces: the longer one wins the tie
            win = list(map(ge, vals, map(best.__getitem__, ks)))
            kw = list(compress(ks, win))
            deque(map(best.__setitem__, kw, compress(vals, win)), maxlen=0)
            deque(map(back_sid.__setitem__, kw, compress(ss, win)), maxlen=0)
            deque(map(back_prev.__setitem__, kw, compress(ac, win)), maxlen=0)
        # 3. Each string ending here: its best without its own piece (the root edge of that id),
        #    or its whole best if its root edge is some other id (or absent).
        pos, t = ends.get(j, []), term[j]
        own = [False] * len(pos) if whole is None else list(map(eq, map(whole.__getitem__, t), map(owners.__getitem__, pos)))
        other = list(map(not_, own))
        for out, before, final in zip((value, first, prev), pre, (best, back_sid, back_prev)):
            deque(map(out.__setitem__, compress(pos, own), compress(before, own)), maxlen=0)
            deque(map(out.__setitem__, compress(pos, other), map(final.__getitem__, compress(t, other))), maxlen=0)
        best_all.extend(best)
        sid_all.extend(back_sid)
        prev_all.extend(back_prev)
        parent_all.extend(parents)
        start = g0
    for i in ends.get(0, ()):
        value[i] = 1.0  # the empty string: the empty path
    return Chains(value, first, prev, array("i", sid_all), array("i", prev_all))


def alternatives(
    owners: Sequence[int], strings: Sequence[str], sid_of: Mapping[str, int], prob: Sequence[float], max_len: int, unk_sid: int,
) -> list[tuple[float, list[int]]]:
    """For each piece id in ``owners`` (spelled ``strings``): its best segmentation's probability
    without itself, and the piece ids of that segmentation, last first (empty if there is none)."""
    found = chains(owners, strings, sid_of, prob, max_len, unk_sid)
    return list(zip(found.value, found.paths()))


def path_sums(found: Chains, weight: Sequence[float], freq: Sequence[float]) -> tuple[array, array]:
    """For each string ``i``: ``sum(log(freq[a] + weight[i]) for a in its path)``, and its path's length.

    The sums are taken one path step at a time for all strings, but each string's terms are
    added in path order from 0.0, as ``sum`` over its path does, so the floats are the same.
    """
    sums, lens = [0.0] * len(found.first), [0] * len(found.first)
    for k, (at, step) in enumerate(found.steps(), 1):
        terms = map(log, map(add, map(freq.__getitem__, step), map(weight.__getitem__, at)))
        deque(map(sums.__setitem__, at, map(add, map(sums.__getitem__, at), terms)), maxlen=0)
        deque(map(lens.__setitem__, at, repeat(k)), maxlen=0)
    return array("d", sums), array("i", lens)


def alternative_sums(
    owners: Sequence[int], strings: Sequence[str], sid_of: Mapping[str, int], prob: Sequence[float], max_len: int, unk_sid: int,
    freq: Sequence[float], *, workers: int = 2,
) -> tuple[array, array, array]:
    """What pruning needs of each string's alternative: its probability, and its :func:`path_sums`
    weighted by the owner's ``freq``; in two halves at once (``unigram_fork``) when that pays."""

    def task(part: Sequence[int]) -> tuple[array, array, array]:
        sub = list(map(owners.__getitem__, part))
        found = chains(sub, list(map(strings.__getitem__, part)), sid_of, prob, max_len, unk_sid)
        return (found.value, *path_sums(found, list(map(freq.__getitem__, sub)), freq))

    if not can_fork(len(strings), workers):
        return task(range(len(strings)))
    parts, results = in_two(strings, task)
    out = (array("d", bytes(8 * len(strings))), array("d", bytes(8 * len(strings))), array("i", bytes(4 * len(strings))))
    for part, result in zip(parts, results):
        for column, values in zip(out, result):
            deque(map(column.__setitem__, part, values), maxlen=0)
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
