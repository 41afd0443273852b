"""The Unigram trie and corpus lattice against brute force (nodes, the edge set, filtering), and
the numpy forward-backward against the per-word reference in ``unigram_reference``."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from engine.trainers.unigram.em import digamma, e_step, m_step
from engine.trainers.unigram.lattice import Lattice, PieceIndex
from engine.trainers.unigram.trie import build_trie
from tests.engine.unigram_reference import e_step_reference


def random_case(seed: int) -> tuple[list[str], list[float], dict[str, int], int]:
    rng = random.Random(seed)
    words = sorted({"▁" * rng.randint(0, 1) + "".join(rng.choice("abrcé") for _ in range(rng.randint(1, 12))) for _ in range(60)})
    counts = [float(rng.randint(1, 9)) for _ in words]
    pieces = ["▁", "a", "b", "r"] + sorted({w[i : i + n] for w in words for i in range(len(w)) for n in (2, 3, 5) if rng.random() < 0.3})
    pieces = list(dict.fromkeys(p for p in pieces if "▁" not in p[1:]))
    rng.shuffle(pieces)  # ids in no particular order
    return words, counts, {p: i for i, p in enumerate(pieces)}, len(pieces)


def test_trie_by_hand() -> None:
    trie = build_trie(["ab", "b", "abc", "ab", "a𝔸"])
    # nodes: root | a b | ab a𝔸 | abc, by depth then code point order
    assert trie.base.tolist() == [0, 1, 3, 5, 6]
    assert trie.parent.tolist() == [0, 0, 0, 1, 1, 3]
    assert [chr(c) if c >= 0 else "" for c in trie.char.tolist()] == ["", "a", "b", "b", "𝔸", "c"]
    assert trie.terminal.tolist() == [3, 2, 5, 3, 4]


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("max_len", [1, 4, 16])
def test_edges_equal_brute_force(seed: int, max_len: int) -> None:
    words, counts, sid_of, unk = random_case(seed)
    lat = Lattice(words, counts, sid_of, max_len, unk)
    prefixes = sorted({w[:j] for w in words for j in range(len(w) + 1)}, key=lambda s: (len(s), s))
    node_of = {p: i for i, p in enumerate(prefixes)}
    assert lat.n_nodes == len(prefixes)
    assert [prefixes[v] for v in lat.terminal] == words
    expected = []
    for p in prefixes[1:]:
        for L in range(1, min(len(p), max_len) + 1):
            sid = sid_of.get(p[-L:], unk if L == 1 else None)
            if sid is not None:
                expected.append((node_of[p[:-L]], node_of[p], sid))  # by end node, then length
    assert list(zip(lat.in_src.tolist(), lat.in_dst.tolist(), lat.in_sid.tolist())) == expected
    assert sorted(zip(lat.out_src.tolist(), lat.out_dst.tolist(), lat.out_sid.tolist())) == sorted(expected)
    assert lat.out_src.tolist() == sorted(lat.out_src.tolist())


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_an_index_of_a_list_numbers_the_pieces_in_order(seed: int) -> None:
    words, counts, sid_of, unk = random_case(seed)  # sid_of numbers its pieces in order
    from_list, from_dict = PieceIndex.of(list(sid_of)), PieceIndex.of(sid_of)
    for a, b in zip(from_list, from_dict):
        assert a.tolist() == b.tolist()
    assert sorted(from_list.sid_at[from_list.sid_at >= 0].tolist()) == list(range(len(sid_of)))
    assert Lattice(words, counts, from_list, 16, unk).in_sid.tolist() == Lattice(words, counts, sid_of, 16, unk).in_sid.tolist()


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_filtering_equals_building_without_the_dead_pieces(seed: int) -> None:
    words, counts, sid_of, unk = random_case(seed)
    rng = random.Random(seed)
    alive = np.array([len(p) == 1 or rng.random() < 0.6 for p in sid_of] + [True])
    filtered = Lattice(words, counts, sid_of, 16, unk)
    filtered.filter(alive, min_dead=0.0)
    fresh = Lattice(words, counts, {p: s for p, s in sid_of.items() if alive[s]}, 16, unk)
    for name in ("in_src", "in_dst", "in_sid", "in_off", "in_first", "out_src", "out_dst", "out_sid", "out_off"):
        assert getattr(filtered, name).tolist() == getattr(fresh, name).tolist(), name


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("dead", [False, True], ids=["all-alive", "some-dead"])
def test_e_step_matches_the_per_word_reference(seed: int, dead: bool) -> None:
    words, counts, sid_of, unk = random_case(seed)
    words.append("▁" + "abracadabra" * 80)  # its probability underflows a float: log space copes
    counts.append(2.0)
    rng = random.Random(seed)
    logp = np.array([math.log(rng.uniform(0.01, 0.3)) for _ in range(unk)] + [math.log(1e-6)])
    if dead:
        logp[[s for p, s in sid_of.items() if len(p) > 1 and rng.random() < 0.5]] = -np.inf
    lat = Lattice(words, counts, sid_of, 16, unk)
    expected, loglik = e_step(lat, logp)
    ref_expected, ref_loglik = e_step_reference(words, counts, sid_of, logp.tolist(), 16, unk)
    assert expected.tolist() == pytest.approx(ref_expected, rel=1e-9, abs=1e-12)
    assert loglik == pytest.approx(ref_loglik, rel=1e-12)


def test_digamma_matches_known_values() -> None:
    assert digamma(np.array([1.0, 10.0])).tolist() == pytest.approx([-0.5772156649, 2.2517525891], abs=1e-9)


def test_m_step_drops_rare_pieces_but_not_required_ones() -> None:
    expected = np.array([10.0, 0.2, 4.0, 0.1, 0.0])
    alive = np.array([True, True, True, False, True])
    logp = m_step(expected, alive, np.array([1, 4]))
    assert alive.tolist() == [True, True, True, False, True]
    total = digamma(14.0)
    assert logp.tolist() == pytest.approx([digamma(10.0) - total, digamma(0.5) - total, digamma(4.0) - total, -math.inf, digamma(0.5) - total])
