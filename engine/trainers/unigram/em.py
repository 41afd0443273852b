"""EM for the Unigram trainer: expected piece counts by forward-backward, and sentencepiece's M-step.

* :func:`e_step`: forward-backward over the corpus lattice (``lattice``), in log space, one
  vectorised pass per trie depth. With the words' counts folded into the backward values,
  ``beta(u) = log(count/Z)`` (if a word ends at ``u``) ``⊕ Σ_{u→v} p·beta(v)``, an edge's
  expected count is ``exp(alpha(u) + log p + beta(v))``, and one ``bincount`` sums them per piece.
* :func:`m_step`: sentencepiece's Bayesian M-step: pieces expected fewer than 0.5 times are
  dropped (required characters excepted), scores are ``digamma(count) - digamma(total)``.

The slow, obviously-correct twin (one lattice per word, dict-based) is in
``tests/engine/unigram_reference.py``; the tests compare the two.

Internal: not part of the engine's API (``engine.PUBLIC_MODULES``).
"""

from __future__ import annotations

import numpy as np

from engine.trainers.unigram.lattice import Lattice

EXPECTED_FREQUENCY_THRESHOLD = 0.5  # sentencepiece's kExpectedFrequencyThreshold


def digamma(x: np.ndarray | float) -> np.ndarray:
    """The digamma function (asymptotic series after shifting ``x`` above 7), as sentencepiece."""
    x = np.array(x, dtype=np.float64)
    result = np.zeros_like(x)
    while (small := x < 7).any():
        result[small] -= 1 / x[small]
        x[small] += 1
    x = x - 0.5
    xx2 = 1.0 / (x * x)
    xx4 = xx2 * xx2
    return result + np.log(x) + xx2 / 24 - 7 * xx4 / 960 + 31 * xx4 * xx2 / 8064 - 127 * xx4 * xx4 / 30720


def e_step(lat: Lattice, logp: np.ndarray) -> tuple[np.ndarray, float]:
    """Expected count of every piece id (``logp``'s length) and the corpus log-likelihood."""
    weights, z = edge_expectations(lat, logp)
    return np.bincount(lat.out_sid, weights=weights, minlength=len(logp)), log_likelihood(lat.counts, z)


def log_likelihood(counts: np.ndarray, log_z: np.ndarray) -> float:
    """Σ count × log Z over words, without BLAS.

    Why: numpy hands a dot product of long vectors to OpenBLAS, whose threads (one per CPU, in
    every worker process) busy-wait after each call. On 16 cores, 16 lattice workers made 256
    such threads: en_25M took 168 s of CPU and 18.4 s instead of 92 s and 15.6 s.
    """
    return float(np.multiply(counts, log_z).sum())


def edge_expectations(lat: Lattice, logp: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The expected count of each out-edge, and each word's log-probability (``log Z``)."""
    base = lat.base
    alpha = np.full(lat.n_nodes, -np.inf)
    alpha[0] = 0.0
    for j in range(1, lat.depth + 1):
        e0, e1, runs = lat.depth_in(j)
        vals = alpha[lat.in_src[e0:e1]] + logp[lat.in_sid[e0:e1]]
        alpha[base[j] : base[j + 1]] = np.logaddexp.reduceat(vals, runs)
    z = alpha[lat.terminal]
    beta = np.full(lat.n_nodes, -np.inf)
    beta[lat.terminal] = np.log(lat.counts) - z
    post = np.empty(lat.edges())  # log expected count of each out-edge
    for i in range(lat.depth - 1, -1, -1):  # deepest start first: the ends' beta is complete
        o0, o1 = int(lat.out_off[i]), int(lat.out_off[i + 1])
        if o0 == o1:
            continue
        src = lat.out_src[o0:o1]
        vals = beta[lat.out_dst[o0:o1]] + logp[lat.out_sid[o0:o1]]
        post[o0:o1] = alpha[src] + vals
        runs = np.flatnonzero(np.diff(src, prepend=-1))
        nodes = src[runs]
        beta[nodes] = np.logaddexp(beta[nodes], np.logaddexp.reduceat(vals, runs))
    return np.exp(post, out=post), z


def m_step(expected: np.ndarray, alive: np.ndarray, required: np.ndarray) -> np.ndarray:
    """New log-probabilities (``-inf`` for dropped pieces); updates ``alive`` in place."""
    kept = alive & (expected >= EXPECTED_FREQUENCY_THRESHOLD)
    logsum = digamma(expected[kept].sum())  # over the frequent pieces only, as in sentencepiece
    kept[required] = True
    alive[:] = kept
    logp = np.full(len(expected), -np.inf)
    logp[kept] = digamma(np.maximum(expected[kept], EXPECTED_FREQUENCY_THRESHOLD)) - logsum
    return logp
