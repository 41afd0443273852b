"""Per-node sums and maxima over runs of edges, without a Python step per node.

The trie lattice (``unigram_trie``) needs, one depth at a time, each node's sum (E-step) or
maximum (Viterbi) over its run of edges. One ``sum`` per node slice costs ~300 ns a node,
whatever its degree. But if the nodes of a depth are numbered so that nodes of the same
degree ``d`` sit next to each other (see :func:`renumber_by_degree`), then a group of ``m``
such nodes owns ``d·m`` consecutive edges, node-major, and its sums are ``d`` strided slices
added element-wise: ``vals[k::d] + vals[k+1::d] + ...``, a handful of C-level passes for the
whole group.

Exactness: ``sum`` over a run adds left to right starting from the int ``0`` (and ``0 + x`` is
``x``), so ``((v0 + v1) + v2) + ...`` element-wise gives bit-identical floats; ``max`` gives the
same value whichever equal element it picks. The cheapest form depends on ``d`` (measured on
the en_25M lattice): a plain slice for 1, nested ``map(add, ...)`` up to 4 (one float per
addition), ``map(sum, zip(...))`` up to 8 (one call a node), and a slice per node beyond.

A *plan* is a depth's run-length code of the degrees in node order: ``(d, m)`` for ``m`` nodes
of degree ``d <= WIDE``, or ``(-1, ends)`` for consecutive nodes of larger, mixed degrees
(``ends``: each node's run end relative to the item's first edge). This module knows nothing of
what the values mean.
"""

from __future__ import annotations

import math
from array import array
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from itertools import accumulate, chain, groupby, repeat
from operator import add

WIDE = 8  # degrees above this are summed one node slice at a time (cheaper than 9+ strided passes)

PlanItem = tuple[int, int, tuple[int, ...]]  # (degree or -1, number of nodes, run ends if -1)


def degrees(keys: Sequence[int], n: int) -> array:
    """How often each of ``0..n-1`` occurs in ``keys`` (a node's number of edges)."""
    counts = Counter(keys)
    return array("i", map(counts.get, range(n), repeat(0)))


def plan_of(degs: Iterable[int]) -> list[PlanItem]:
    """The plan of nodes with these degrees, in node order (see the module docstring)."""
    plan: list[PlanItem] = []
    wide: list[int] = []  # degrees of the current stretch of wide nodes
    for d, run in groupby(degs):
        m = sum(1 for _ in run)
        if d > WIDE:
            wide.extend(repeat(d, m))
            continue
        if wide:
            plan.append((-1, len(wide), tuple(accumulate(wide))))
            wide = []
        plan.append((d, m, ()))
    if wide:
        plan.append((-1, len(wide), tuple(accumulate(wide))))
    return plan


def _columns(vals: list[float], k: int, d: int, m: int) -> list[list[float]]:
    """The ``d`` strided slices of ``m`` node-major runs of ``d`` values from ``k``: column ``r``
    holds each node's ``r``-th value."""
    stop = k + d * m
    return [vals[k + r : stop : d] for r in range(d)]


def _node_slices(k: int, ends: tuple[int, ...]) -> map:
    return map(slice, map(add, chain((0,), ends[:-1]), repeat(k)), map(add, ends, repeat(k)))


def node_sums(vals: list[float], plan: list[PlanItem]) -> Iterator[float]:
    """Each node's sum over its run of ``vals`` (runs node-major, in plan order), bit for bit
    ``sum(run)`` (``0.0`` for an empty run)."""
    parts: list[Iterable[float]] = []
    k = 0
    for d, m, ends in plan:
        if d < 0:
            parts.append(map(sum, map(vals.__getitem__, _node_slices(k, ends))))
            k += ends[-1]
            continue
        if d == 0:
            parts.append(repeat(0.0, m))
        elif d == 1:
            parts.append(vals[k : k + m])
        elif d <= 4:
            cols = _columns(vals, k, d, m)
            acc: Iterable[float] = cols[0]
            for col in cols[1:]:
                acc = map(add, acc, col)  # left to right, as sum() adds
            parts.append(acc)
        else:
            parts.append(map(sum, zip(*_columns(vals, k, d, m))))
        k += d * m
    return chain.from_iterable(parts)


def node_maxima(vals: list[float], plan: list[PlanItem]) -> Iterator[float]:
    """Each node's maximum over its run of ``vals`` (``-inf`` for an empty run)."""
    parts: list[Iterable[float]] = []
    k = 0
    for d, m, ends in plan:
        if d < 0:
            parts.append(map(max, map(vals.__getitem__, _node_slices(k, ends))))
            k += ends[-1]
            continue
        if d == 0:
            parts.append(repeat(-math.inf, m))
        elif d == 1:
            parts.append(vals[k : k + m])
        else:
            parts.append(map(max, *_columns(vals, k, d, m)))
        k += d * m
    return chain.from_iterable(parts)


def degree_order(base: Sequence[int], indeg: array, outdeg: array) -> array:
    """Node ids in their new order: inside each depth (``base[j]..base[j+1]-1``), sorted by
    (out-degree class, in-degree), equal keys keeping their order. Out-degrees above ``WIDE``
    form one class, so a depth has at most ``(WIDE + 2) × (max in-degree + 1)`` forward groups
    and ``WIDE + 2`` backward ones."""
    span = max(indeg, default=0) + 1
    key = array("i", map(add, map(span.__mul__, map(min, outdeg, repeat(WIDE + 1))), indeg))
    return array("i", chain.from_iterable(sorted(range(base[j], base[j + 1]), key=key.__getitem__) for j in range(len(base) - 1)))


def runs_in_order(degs: array, order: array) -> array:
    """Positions of node-major edge runs (node ``v`` owning ``degs[v]`` edges, in id order),
    listed run by run in ``order``: the gather that moves the edges to the new numbering."""
    starts = array("i", accumulate(degs, initial=0))
    return array("i", chain.from_iterable(map(range, map(starts.__getitem__, order), map(starts.__getitem__, map(add, order, repeat(1))))))
