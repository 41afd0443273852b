"""Pruning's alternatives and losses against slow per-piece references, ties included."""

from __future__ import annotations

import math
import random
from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.trainers import unigram_prune
from engine.trainers.unigram_em import prune
from engine.trainers.unigram_fork import in_two
from engine.trainers.unigram_prune import alternative_sums, alternatives, alternatives_reference, chains

# Powers of two: products of different pieces are often exactly equal (ties in probability).
PROBS = [0.5, 0.25, 0.125, 0.0625, 0.0]


def _vocab(rng: random.Random, alphabet: str, n: int, max_len: int) -> list[str]:
    pieces = list(alphabet[:-1])  # the last character is never a piece: unknown
    pieces += ["".join(rng.choice(alphabet) for _ in range(rng.randint(2, max_len + 1))) for _ in range(n)]
    return list(dict.fromkeys(pieces))


@settings(max_examples=300, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), max_len=st.integers(1, 6))
def test_alternatives_match_the_reference_with_ties_unknowns_and_odd_owners(seed: int, max_len: int) -> None:
    rng = random.Random(seed)
    pieces = _vocab(rng, "abc▁z", 30, max_len)
    live = [p for p in pieces if len(p) <= max_len]
    sid_of = {p: i for i, p in enumerate(live)}
    prob = [rng.choice(PROBS) for _ in live] + [rng.choice([1e-9, 0.0625])]
    # Owners are mostly the strings' own ids, but also other ids, strings that are not pieces
    # (too long, or with the unknown "z"), one-character strings, and duplicates.
    strings = [rng.choice(pieces) for _ in range(40)] + ["".join(rng.choice("abcz") for _ in range(rng.randint(0, 8))) for _ in range(10)]
    owners = [sid_of.get(s, -1) if rng.random() < 0.8 else rng.randrange(len(live)) for s in strings]
    fast = alternatives(owners, strings, sid_of, prob, max_len, len(live))
    assert fast == alternatives_reference(owners, strings, sid_of, prob, max_len, len(live))


def test_steps_are_the_paths_one_piece_at_a_time() -> None:
    pieces = ["a", "b", "c", "ab", "bc", "abc", "cab", "abca"]
    sid_of = {p: i for i, p in enumerate(pieces)}
    prob = [0.1, 0.2, 0.3, 0.05, 0.04, 0.01, 0.002, 0.0001, 1e-9]
    owners = [3, 4, 5, 6, 7, 0]
    found = chains(owners, [pieces[s] for s in owners], sid_of, prob, 16, len(pieces))
    paths = found.paths()
    assert paths[0] == [1, 0] and paths[-1] == []  # "ab" -> "b" after "a" (last first); "a" has none
    columns: list[list[int]] = [[] for _ in paths]
    for at, step in found.steps():
        for i, sid in zip(at, step):
            columns[i].append(sid)
    assert columns == paths


def test_two_processes_match_one(monkeypatch: pytest.MonkeyPatch) -> None:
    forks: list[int] = []
    monkeypatch.setattr(unigram_prune, "in_two", lambda strings, task: forks.append(len(strings)) or in_two(strings, task))
    rng = random.Random(7)
    pieces = _vocab(rng, "abcde▁z", 30_000, 8)
    sid_of = {p: i for i, p in enumerate(pieces)}
    prob = [rng.choice(PROBS[:-1]) / 64 for _ in pieces] + [1e-9]
    freq = [float(rng.randint(1, 50)) for _ in pieces] + [0.0]
    owners = [s for s, p in enumerate(pieces) if len(p) > 1]
    strings = [pieces[s] for s in owners]
    args = (owners, strings, sid_of, prob, 16, len(pieces))
    serial = chains(*args)
    # The loss's path sums: in two processes, in one, and as the per-piece formula sums them.
    paths = serial.paths()
    by_formula = [sum(math.log(freq[a] + freq[o]) for a in path) for o, path in zip(owners, paths)]
    for value, sums, lens in (alternative_sums(*args, freq), alternative_sums(*args, freq, workers=1)):
        assert list(value) == list(serial.value) and list(lens) == list(map(len, paths))
        assert list(sums) == by_formula  # exactly: the same additions in the same order
    assert forks == [len(strings)]  # alternative_sums did fork


def _prune_reference(
    pieces: Sequence[str], freq: Sequence[float], logp: Sequence[float], alive: list[bool], required: set[int],
    *, target: int, shrinking_factor: float, max_len: int, unk_sid: int,
) -> None:
    """The per-piece loss loop that ``prune`` computes in bulk."""
    live = [s for s, on in enumerate(alive) if on and s != unk_sid]
    total = sum(freq[s] for s in live)
    logsum = math.log(total)
    owners = [s for s in live if s not in required and freq[s] > 0]
    for s in live:
        if s not in required and freq[s] <= 0:
            alive[s] = False
    sid_of = {pieces[s]: s for s in live}
    prob = [math.exp(v) if v > -math.inf else 0.0 for v in logp]
    candidates: list[tuple[float, int]] = []
    for sid, (alt_best, path) in zip(owners, alternatives_reference(owners, [pieces[s] for s in owners], sid_of, prob, max_len, unk_sid)):
        if alt_best > prob[sid]:
            alive[sid] = False
            continue
        f = freq[sid]
        sum_alt = sum(math.log(freq[a] + f) for a in path)
        logsum_alt = math.log(total + f * (len(path) - 1))
        candidates.append((-((f / total) * ((math.log(f) - logsum) - (sum_alt - len(path) * logsum_alt))), sid))
    keep = max(target, int(len(live) * shrinking_factor))
    n_fixed = sum(1 for s in live if alive[s] and (s in required))
    candidates.sort()
    for rank, (_, sid) in enumerate(candidates):
        if n_fixed + rank >= keep:
            alive[sid] = False


@pytest.mark.parametrize("seed", range(8))
def test_prune_keeps_the_pieces_the_per_piece_loop_keeps(seed: int) -> None:
    rng = random.Random(seed)
    pieces = _vocab(rng, "abcd▁z", 120, 6)
    unk = len(pieces)
    freq = [float(rng.choice([0, 1, 2, 2, 3, 8, 40])) for _ in pieces] + [0.0]  # repeated counts: equal losses
    logp = [math.log(rng.choice(PROBS[:-1])) if rng.random() < 0.95 else -math.inf for _ in pieces] + [math.log(1e-9)]
    alive = [rng.random() < 0.9 for _ in pieces] + [True]
    required = {s for s, p in enumerate(pieces) if len(p) == 1} | {unk}
    options = {"target": 20, "shrinking_factor": rng.choice([0.5, 0.75]), "max_len": 6, "unk_sid": unk}
    fast, slow = list(alive), list(alive)
    prune(pieces, freq, logp, fast, required, **options)
    _prune_reference(pieces, freq, logp, slow, required, **options)
    assert fast == slow and fast != alive
