"""Prefix tries of strings as numpy arrays: the shape every Unigram lattice is built on.

A trie node is a distinct prefix; nodes are numbered depth by depth from the root ``0``, and in
string order inside a depth. Each node stores its parent and its last character (a code
point), so a string's suffixes, ancestors and children are all array lookups. Words that begin
alike share their nodes, which is why the trainer's lattices are built over a trie of the words
(see ``lattice``) and why a trie of the pieces finds which suffixes are pieces.

The build sorts the strings once, then walks one depth at a time: among the strings at least
``j`` characters long (still in sorted order), a new node opens where the parent or the ``j``-th
character differs from the previous string's. Everything after the sort is numpy.

Internal: not part of the engine's API (``engine.PUBLIC_MODULES``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

CODE_POINTS = 0x110000  # a (node, character) pair packs exactly into node * CODE_POINTS + char


class ByDepth:
    """Nodes numbered depth by depth: ``base`` holds the first node of each depth, then one past
    the last node. The words' trie and the lattice built on it share this numbering."""

    base: np.ndarray

    @property
    def n_nodes(self) -> int:
        return int(self.base[-1])

    @property
    def depth(self) -> int:
        return len(self.base) - 2


@dataclass(frozen=True)
class Trie(ByDepth):
    parent: np.ndarray  # int32 per node (the root is its own parent)
    char: np.ndarray  # int32 per node: its last character's code point (-1 at the root)
    base: np.ndarray  # int64: first node of each depth, then one past the last node
    terminal: np.ndarray  # int64 per input string: its node

    def children(self) -> tuple[np.ndarray, np.ndarray]:
        """The sorted (parent, char) keys of the non-root nodes, and the node of each key."""
        keys = self.parent[1:].astype(np.int64) * CODE_POINTS + self.char[1:]
        order = np.argsort(keys, kind="stable")
        return keys[order], order + 1


def build_trie(strings: Sequence[str]) -> Trie:
    """The prefix trie of ``strings`` (duplicates share a node)."""
    order = sorted(range(len(strings)), key=strings.__getitem__)
    ordered = [strings[i] for i in order]
    lens = np.fromiter(map(len, ordered), dtype=np.int64, count=len(ordered))
    starts = np.concatenate(([0], np.cumsum(lens)[:-1])) if len(lens) else lens
    flat = np.frombuffer("".join(ordered).encode("utf-32-le", "surrogatepass"), dtype=np.uint32).astype(np.int64)
    parents, chars, base = [np.zeros(1, np.int64)], [np.full(1, -1, np.int64)], [0, 1]
    terminal = np.zeros(len(ordered), np.int64)
    rows = np.arange(len(ordered))  # the strings at least j characters long, in sorted order
    node = np.zeros(len(ordered), np.int64)  # each one's node at depth j - 1
    for j in range(1, int(lens.max(initial=0)) + 1):
        longer = lens[rows] >= j
        rows, node = rows[longer], node[longer]
        char = flat[starts[rows] + j - 1]
        opens = np.ones(len(rows), bool)
        opens[1:] = (node[1:] != node[:-1]) | (char[1:] != char[:-1])
        parents.append(node[opens])
        chars.append(char[opens])
        node = base[-1] + np.cumsum(opens) - 1
        base.append(base[-1] + int(opens.sum()))
        ending = lens[rows] == j
        terminal[rows[ending]] = node[ending]
    in_input_order = np.empty_like(terminal)
    in_input_order[order] = terminal
    return Trie(np.concatenate(parents).astype(np.int32), np.concatenate(chars).astype(np.int32),
                np.array(base, np.int64), in_input_order)


def join_tries(tries: Sequence[Trie]) -> tuple[Trie, np.ndarray]:
    """One trie holding ``tries`` side by side, sharing only the root, and each node's part.

    Depth by depth, each part's nodes follow the previous part's, in their own order, so every
    node keeps its own parent, children and edges: a lattice over the joined trie computes,
    node for node, the same floats as one lattice per part (what ``parallel`` relies on). The
    terminals are the parts' terminals, one part after the other.
    """
    depth = max(t.depth for t in tries)
    count = np.zeros((len(tries), depth), np.int64)  # nodes of each part at each depth from 1
    for k, t in enumerate(tries):
        count[k, : t.depth] = np.diff(t.base[1:])
    base = np.concatenate(([0, 1], 1 + np.cumsum(count.sum(axis=0))))
    offset = base[1:-1] + np.cumsum(count, axis=0) - count  # part k's first node at depth j + 1
    new_ids = []
    for k, t in enumerate(tries):
        new_id = np.zeros(t.n_nodes, np.int64)
        for j in range(1, t.depth + 1):
            new_id[t.base[j] : t.base[j + 1]] = np.arange(offset[k, j - 1], offset[k, j - 1] + count[k, j - 1])
        new_ids.append(new_id)
    # Every part's arrays, root dropped, then put in the joined numbering (the root stays 0).
    at = np.zeros(int(base[-1]), np.int64)
    at[np.concatenate([new_id[1:] for new_id in new_ids])] = np.arange(1, int(base[-1]))
    parents = np.concatenate([np.zeros(1, np.int64)] + [new_id[t.parent[1:]] for t, new_id in zip(tries, new_ids)])
    chars = np.concatenate([np.full(1, -1, np.int64)] + [t.char[1:].astype(np.int64) for t in tries])
    part_of = np.concatenate([np.zeros(1, np.int64)] + [np.full(t.n_nodes - 1, k) for k, t in enumerate(tries)])
    terminal = np.concatenate([new_id[t.terminal] for t, new_id in zip(tries, new_ids)])
    return Trie(parents[at].astype(np.int32), chars[at].astype(np.int32), base, terminal), part_of[at].astype(np.int32)
