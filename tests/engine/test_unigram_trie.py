"""The prefix-trie lattice's structure against brute force: the suffix table, the edge set, and
filtering (which must give exactly the lattice built without the dead pieces)."""

from __future__ import annotations

import random
from array import array
from itertools import accumulate

import pytest

from engine.trainers.unigram_columns import node_sums, stable_order
from engine.trainers.unigram_trie import TrieLattice, suffix_table


def random_case(seed: int) -> tuple[list[str], list[float], dict[str, int], int]:
    rng = random.Random(seed)
    words = sorted({"▁" * rng.randint(0, 1) + "".join(rng.choice("abrc") for _ in range(rng.randint(1, 12))) for _ in range(60)})
    counts = [float(rng.randint(1, 9)) for _ in words]
    pieces = ["▁", "a", "b", "r"] + sorted({w[i : i + n] for w in words for i in range(len(w)) for n in (2, 3, 5) if rng.random() < 0.3})
    pieces = list(dict.fromkeys(p for p in pieces if "▁" not in p[1:]))
    return words, counts, {p: i for i, p in enumerate(pieces)}, len(pieces)


def test_suffix_table_by_hand() -> None:
    table = suffix_table({"a": 0, "abcd": 1, "cd": 2, "xyz": 3, "toolongpiece": 4}, 5)
    assert table == {"abcd": 1, "bcd": -1, "cd": 2, "xyz": 3, "yz": -1}


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_edges_equal_brute_force(seed: int) -> None:
    words, counts, sid_of, unk = random_case(seed)
    lat = TrieLattice(words, counts, sid_of, 4, unk, compile=False)
    prefixes = sorted({w[:j] for w in words for j in range(len(w) + 1)}, key=lambda s: (len(s), s))
    node_of = {p: i for i, p in enumerate(prefixes)}
    assert lat.n_nodes == len(prefixes)
    expected = set()
    for p in prefixes:
        for L in range(1, min(len(p), 4) + 1):
            piece = p[-L:]
            sid = sid_of.get(piece, unk if L == 1 else None)
            if sid is not None:
                expected.add((node_of[p[:-L]], node_of[p], sid))
    assert set(zip(lat.in_src, lat.in_dst, lat.in_sid)) == expected
    assert sorted(zip(lat.out_src, lat.out_dst, lat.out_sid)) == sorted(expected)
    assert list(lat.in_dst) == sorted(lat.in_dst) and list(lat.out_src) == sorted(lat.out_src)


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_filtering_equals_building_without_the_dead_pieces(seed: int) -> None:
    words, counts, sid_of, unk = random_case(seed)
    rng = random.Random(seed)
    prob = [rng.uniform(0.01, 0.2) for _ in range(unk)] + [1e-6]
    alive = [len(p) == 1 or rng.random() < 0.6 for p in sid_of] + [True]
    dead_prob = [p if on else 0.0 for p, on in zip(prob, alive)]
    filtered = TrieLattice(words, counts, sid_of, 16, unk)
    filtered.filter(alive, min_share=0.0)
    fresh = TrieLattice(words, counts, {p: s for p, s in sid_of.items() if alive[s]}, 16, unk)
    assert filtered.edges() == fresh.edges()
    # The index is filtered in place, not recomputed: it must be the fresh lattice's.
    for name in ("in_src", "in_dst", "in_sid", "out_src", "out_dst", "out_sid", "in_deg", "out_deg", "in_off", "out_off",
                 "post_order", "post_piece", "post_last"):
        assert getattr(filtered, name) == getattr(fresh, name), name
    assert filtered.e_step(dead_prob) == fresh.e_step(dead_prob)  # bit for bit


@pytest.mark.parametrize("n", [0, 1, 7, 500])
def test_stable_order_is_a_stable_sort(n: int) -> None:
    rng = random.Random(n)
    keys = array("i", [rng.randrange(9) for _ in range(n)])
    assert list(stable_order(keys)) == sorted(range(n), key=keys.__getitem__)


@pytest.mark.parametrize("seed", range(4))
def test_node_sums_are_per_node_sums_bit_for_bit(seed: int) -> None:
    rng = random.Random(seed)
    degs = array("i", [rng.choice([0, 1, 1, 2, 3, 5, 16, 40]) for _ in range(300)])
    vals = [rng.random() * 10.0 ** rng.randint(-20, 20) for _ in range(sum(degs))]
    ends = [0, *accumulate(degs)]
    assert list(node_sums(vals, degs)) == [sum(vals[a:b]) for a, b in zip(ends, ends[1:])]
