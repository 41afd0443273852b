"""EM and pruning for the Unigram trainer, over the prefix-trie lattices of ``unigram_trie``.

* :func:`e_step`: expected piece counts (forward-backward on every distinct word, weighted by
  its count, sharded over two workers by ``unigram_shards``); words whose probability
  underflows go through :func:`word_marginals`, a slow, obviously-correct log-space version
  that the tests also compare the fast path against.
* :func:`m_step`: sentencepiece's Bayesian M-step: pieces expected fewer than 0.5 times are
  dropped (required characters excepted), scores are ``digamma(count) - digamma(total)``.
* :func:`prune`: sentencepiece's loss of removing each piece, computed from the piece's
  alternative segmentation (the best path through the piece's own string without itself,
  from ``unigram_prune``), for all pieces at once: the per-path sums come from
  ``unigram_prune.alternative_sums``, the rest is a few passes and one float-key sort.
  A piece's frequency is its count in the Viterbi paths of the corpus (``unigram_viterbi``),
  as in sentencepiece; expected counts cost ~2% more held-out tokens on zh.txt.

Ties in pruning go to the earlier seed id (higher seed score). Reading corpora and building
the final tokenizer are ``unigram.py``'s job.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from itertools import chain, compress
from operator import gt, not_

from engine.trainers.unigram_prune import alternative_sums
from engine.trainers.unigram_shards import ShardedLattice
from engine.trainers.unigram_trie import TrieLattice

EXPECTED_FREQUENCY_THRESHOLD = 0.5  # sentencepiece's kExpectedFrequencyThreshold


def digamma(x: float) -> float:
    """The digamma function (asymptotic series after shifting ``x`` above 7), as sentencepiece."""
    result = 0.0
    while x < 7:
        result -= 1 / x
        x += 1
    x -= 0.5
    xx = 1.0 / x
    xx2 = xx * xx
    xx4 = xx2 * xx2
    return result + math.log(x) + xx2 / 24 - 7 * xx4 / 960 + 31 * xx4 * xx2 / 8064 - 127 * xx4 * xx4 / 30720


def _logaddexp(a: float, b: float) -> float:
    if a < b:
        a, b = b, a
    return a if b == -math.inf else a + math.log1p(math.exp(b - a))


def word_marginals(
    word: str, count: float, sid_of: Mapping[str, int], logp: Sequence[float], max_len: int, unk_sid: int,
    expected: list[float],
) -> float:
    """Log-space forward-backward on one word; adds expected counts, returns log Z."""
    n = len(word)
    edges: list[tuple[int, int, int]] = []  # (start, end, sid)
    for i in range(n):
        for end in range(i + 1, min(n, i + max_len) + 1):
            sid = sid_of.get(word[i:end]) if end > i + 1 else sid_of.get(word[i], unk_sid)
            if sid is not None and logp[sid] > -math.inf:
                edges.append((i, end, sid))
    alpha = [-math.inf] * (n + 1)
    beta = [-math.inf] * (n + 1)
    alpha[0] = beta[n] = 0.0
    for i, end, sid in edges:  # edges are in start order
        alpha[end] = _logaddexp(alpha[end], alpha[i] + logp[sid])
    for i, end, sid in reversed(edges):
        beta[i] = _logaddexp(beta[i], beta[end] + logp[sid])
    z = alpha[n]
    for i, end, sid in edges:
        expected[sid] += count * math.exp(alpha[i] + logp[sid] + beta[end] - z)
    return z


def e_step(lattices: TrieLattice | ShardedLattice, prob: Sequence[float], sid_of: Mapping[str, int], max_len: int, unk_sid: int) -> tuple[list[float], float]:
    """Expected counts per piece id and the corpus log-likelihood."""
    expected, loglik, bad = lattices.e_step(prob)
    if bad:
        logp = [math.log(p) if p > 0 else -math.inf for p in prob]
        for word, count in bad:
            loglik += count * word_marginals(word, count, sid_of, logp, max_len, unk_sid, expected)
    return expected, loglik


def m_step(expected: Sequence[float], alive: list[bool], required: Sequence[int]) -> list[float]:
    """New log-probabilities (``-inf`` for dropped pieces); updates ``alive`` in place."""
    for sid in required:
        alive[sid] = True
    kept = [sid for sid, on in enumerate(alive) if on and (expected[sid] >= EXPECTED_FREQUENCY_THRESHOLD)]
    keep_set = set(kept) | set(required)
    for sid in range(len(alive)):
        alive[sid] = sid in keep_set
    logsum = digamma(sum(expected[sid] for sid in kept))
    logp = [-math.inf] * len(expected)
    for sid in keep_set:
        logp[sid] = digamma(max(expected[sid], EXPECTED_FREQUENCY_THRESHOLD)) - logsum
    return logp


def prune(
    pieces: Sequence[str], freq: Sequence[float], logp: Sequence[float], alive: list[bool], required: set[int],
    *, target: int, shrinking_factor: float, max_len: int, unk_sid: int,
) -> None:
    """Remove pieces from ``alive`` by the likelihood loss of replacing each by its alternative."""
    live = [s for s in compress(range(len(alive)), alive) if s != unk_sid]
    total = sum(map(freq.__getitem__, live))
    logsum = math.log(total)
    owners = [s for s in live if s not in required and freq[s] > 0]
    for s in live:
        if s not in required and freq[s] <= 0:
            alive[s] = False  # never used: removable at no cost
    sid_of = dict(zip(map(pieces.__getitem__, live), live))
    prob = [0.0] * len(logp)  # only the live pieces and unknown are ever looked up
    for s in chain(live, (unk_sid,)):
        prob[s] = math.exp(logp[s]) if logp[s] > -math.inf else 0.0
    # Each owner's alternative, with sum(log(freq[a] + freq[owner]) for a in its path) and the
    # path's length (unigram_prune sums them as this formula would, in the same order).
    value, sums, lens = alternative_sums(owners, list(map(pieces.__getitem__, owners)), sid_of, prob, max_len, unk_sid, freq)
    # A piece whose own best segmentation is not itself goes at once; the others by their loss.
    worse = list(map(gt, value, map(prob.__getitem__, owners)))
    for sid in compress(owners, worse):
        alive[sid] = False
    kept = list(map(not_, worse))
    sids = list(compress(owners, kept))
    neg_loss = [
        -((fs / total) * ((math.log(fs) - logsum) - (s_alt - n * math.log(total + fs * (n - 1)))))
        for fs, s_alt, n in zip(map(freq.__getitem__, sids), compress(sums, kept), compress(lens, kept))
    ]
    keep = max(target, int(len(live) * shrinking_factor))
    n_fixed = sum(1 for s in live if alive[s] and (s in required))
    # Highest loss first; a stable sort of the ids in increasing order breaks ties by id.
    ranked = sorted(range(len(sids)), key=neg_loss.__getitem__)
    for k in ranked[max(0, keep - n_fixed) :]:
        alive[sids[k]] = False
