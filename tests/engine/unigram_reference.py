"""Slow, obviously-correct twins of the Unigram trainer's fast paths: one dict-based lattice per
word (or per piece string), in log space, and the script rule character by character.
Production never calls them; tests compare."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

from engine.trainers.unigram.scripts import ANY, INHERITED


def _logaddexp(a: float, b: float) -> float:
    if a < b:
        a, b = b, a
    return a if b == -math.inf else a + math.log1p(math.exp(b - a))


def edges_of(word: str, sid_of: Mapping[str, int], max_len: int, unk: int) -> list[tuple[int, int, int]]:
    """Every (start, end, piece id) of ``word``'s lattice; a character no piece covers is ``unk``."""
    out = []
    for i in range(len(word)):
        for end in range(i + 1, min(len(word), i + max_len) + 1):
            sid = sid_of.get(word[i:end], unk if end == i + 1 else None)
            if sid is not None:
                out.append((i, end, sid))
    return out


def e_step_reference(words: Sequence[str], counts: Sequence[float], sid_of: Mapping[str, int], logp: Sequence[float],
                     max_len: int, unk: int) -> tuple[list[float], float]:
    """Expected piece counts and log-likelihood: forward-backward on each word on its own."""
    expected = [0.0] * len(logp)
    loglik = 0.0
    for word, count in zip(words, counts):
        edges = [e for e in edges_of(word, sid_of, max_len, unk) if logp[e[2]] > -math.inf]
        n = len(word)
        alpha, beta = [-math.inf] * (n + 1), [-math.inf] * (n + 1)
        alpha[0] = beta[n] = 0.0
        for i, end, sid in edges:  # in start order
            alpha[end] = _logaddexp(alpha[end], alpha[i] + logp[sid])
        for i, end, sid in reversed(edges):
            beta[i] = _logaddexp(beta[i], beta[end] + logp[sid])
        for i, end, sid in edges:
            expected[sid] += count * math.exp(alpha[i] + logp[sid] + beta[end] - alpha[n])
        loglik += count * alpha[n]
    return expected, loglik


def best_path(text: str, sid_of: Mapping[str, int], logp: Sequence[float], max_len: int, unk: int,
              *, without: int | None = None) -> tuple[float, list[int]]:
    """Viterbi on one string (ties: the longest last piece); ``without``: leave out the edge that
    spells the whole string with that id. Returns the log-probability and the ids, last first."""
    n = len(text)
    best: list[tuple[float, int, int, int]] = [(0.0, 0, 0, -1)] + [(-math.inf, 0, 0, -1)] * n
    for i, end, sid in sorted(edges_of(text, sid_of, max_len, unk), key=lambda e: (e[1], e[1] - e[0])):
        if logp[sid] == -math.inf or best[i][0] == -math.inf or (i == 0 and end == n and sid == without):
            continue
        cand = (best[i][0] + logp[sid], end - i, i, sid)
        if cand[:2] > best[end][:2]:
            best[end] = cand
    path, at = [], n
    while at > 0 and best[at][3] >= 0:
        path.append(best[at][3])
        at = best[at][2]
    return best[n][0], path


def viterbi_counts_reference(words: Sequence[str], counts: Sequence[float], sid_of: Mapping[str, int],
                             logp: Sequence[float], max_len: int, unk: int) -> list[float]:
    """Each piece's count in the words' best paths."""
    out = [0.0] * len(logp)
    for word, count in zip(words, counts):
        for sid in best_path(word, sid_of, logp, max_len, unk)[1]:
            out[sid] += count
    return out


def prune_reference(pieces: Sequence[str], freq: Sequence[float], logp: Sequence[float], alive: list[bool],
                    required: set[int], *, target: int, shrinking_factor: float, max_len: int, unk: int) -> None:
    """sentencepiece's per-piece pruning loop: the loss of replacing each piece by its alternative."""
    live = [s for s, on in enumerate(alive) if on and s != unk]
    total = sum(freq[s] for s in live)
    owners = [s for s in live if s not in required and freq[s] > 0]
    for s in live:
        if s not in required and freq[s] <= 0:
            alive[s] = False
    sid_of = {pieces[s]: s for s in live}
    candidates: list[tuple[float, int]] = []
    for sid in owners:
        alt, path = best_path(pieces[sid], sid_of, logp, max_len, unk, without=sid)
        if alt > logp[sid]:
            alive[sid] = False
            continue
        f = freq[sid]
        sum_alt = sum(math.log(freq[a] + f) for a in path)
        loss = (f / total) * ((math.log(f) - math.log(total)) - (sum_alt - len(path) * math.log(total + f * (len(path) - 1))))
        candidates.append((-loss, sid))
    keep = max(target, int(len(live) * shrinking_factor))
    n_fixed = sum(1 for s in live if alive[s] and s in required)
    for rank, (_, sid) in enumerate(sorted(candidates)):
        if n_fixed + rank >= keep:
            alive[sid] = False


def compatible(before: str, after: str) -> bool:
    """Whether two neighbouring (resolved) classes may sit in one piece."""
    return before == after or before == ANY or after == ANY


def segments(word: str, classes: Mapping[str, str], space: str, split_by_whitespace: bool = True) -> Iterable[str]:
    """The maximal runs of ``word`` that a valid piece may lie in (``▁`` starts a run).

    Without ``split_by_whitespace`` a ``▁`` sits inside a run and keeps the class before it; where
    the script changes right after a run of them, the next run starts with that run of ``▁`` too
    (two runs then share it: ".▁a" gives ".▁" and "▁a"). ``classes`` maps each required
    character to its :func:`char_class`; other characters are in no run.
    """
    start = -1  # start of the current run, or -1 outside one
    spaces = -1  # start of the ▁s that end the current run, or -1
    prev = ANY  # resolved class of the previous character in the run
    for i, char in enumerate(word):
        cls = classes.get(char)
        if cls is None:  # not a required character: ends the run, starts none
            if start >= 0:
                yield word[start:i]
            start, spaces, prev = -1, -1, ANY
            continue
        if char == space and split_by_whitespace:  # ▁ only as a piece's first character
            if start >= 0:
                yield word[start:i]
            start, prev = i, ANY
            continue
        if char == space:
            spaces = i if spaces < 0 else spaces
            start = i if start < 0 else start
            continue
        if cls == INHERITED:
            cls = prev
        if start >= 0 and not compatible(prev, cls):
            yield word[start:i]
            start, prev = (spaces if spaces >= 0 else -1), ANY
        if start < 0:
            start = i
        spaces, prev = -1, cls
    if start >= 0:
        yield word[start:]


def is_valid_piece(piece: str, classes: Mapping[str, str], space: str, max_piece_length: int,
                   split_by_whitespace: bool = True) -> bool:
    """sentencepiece's rule, character by character as it states it (``IsValidSentencePiece``):
    ``▁`` only first, or without ``split_by_whitespace`` anywhere but last in a longer piece; it
    never takes part in the script comparison.

    Tests check that a substring is valid exactly when it lies inside one of :func:`segments`
    (for pieces that do not start with a combining mark, see ``scripts``' docstring)."""
    if not piece or len(piece) > max_piece_length:
        return False
    prev = ANY
    for pos, char in enumerate(piece):
        if char not in classes:
            return False
        if char == space:
            if pos > 0 and (split_by_whitespace or pos == len(piece) - 1):
                return False
            continue
        cls = classes[char]
        cls = prev if cls == INHERITED else cls
        if not compatible(prev, cls):
            return False
        prev = cls
    return True
