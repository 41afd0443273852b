"""Column helpers for the prefix-trie lattice (``unigram_trie``): degrees, a counting sort, and
per-node sums, as C-level passes over ``array('i')`` columns and lists of floats (but for the
counting sort's one Python loop).

They know nothing of lattices: a *run* is a node's consecutive stretch of edges in a column
sorted by node, and a node's *degree* is its run's length.
"""

from __future__ import annotations

from array import array
from collections import Counter
from collections.abc import Sequence
from itertools import accumulate, islice, repeat


def run_lengths(keys: Sequence[int], first: int, stop: int) -> array:
    """Length of each key's run in sorted ``keys``, for keys ``first..stop-1`` (absent: 0): a node's degree."""
    counts = Counter(keys)
    return array("i", map(counts.get, range(first, stop), repeat(0)))


def stable_order(keys: array) -> array:
    """The positions of ``keys`` (small non-negative ints) sorted by key, ties in position order.

    A counting sort: one Python-level pass, but only 4 bytes a position, where ``sorted(range(n),
    key=...)`` holds ~80 (a list of int objects and one of keys); this is the build's peak. The
    next free slot of each key is a list item, not a dict value (~30% faster).
    """
    counts = Counter(keys)
    present = sorted(counts)
    nxt = [0] * (present[-1] + 1 if present else 0)
    for key, start in zip(present, accumulate(map(counts.__getitem__, present), initial=0)):
        nxt[key] = start
    order = array("i", bytes(4 * len(keys)))
    for position, key in enumerate(keys):
        order[nxt[key]] = position
        nxt[key] += 1
    return order


def node_sums(vals: list[float], degs: Sequence[int]) -> map:
    """Each node's sum over its run of ``vals`` (node-major runs of ``degs[k]`` values each).

    ``sum`` over an ``islice`` of one shared iterator: no slice object and no list per node
    (~35% cheaper than ``sum(vals[a:b])``), and the same additions in the same order.
    """
    return map(sum, map(islice, repeat(iter(vals)), degs))
