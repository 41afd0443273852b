"""The Unigram trainer's corpus passes on every core: the lattice cut into slices of the words.

The E-step, the Viterbi counts and the pruning alternatives are sums or element-wise results
over words, so each worker process owns some slices of the (sorted) words, builds their
lattice itself (the ``lattice`` stage runs in parallel too; a worker's slices are joined side
by side in one lattice, ``trie.join_tries``) and answers each pass for its slices; the leader
adds the answers in worker order. Per pass only the piece log-probabilities travel to the
workers (one float64 array), and one array per worker comes back.

Identical output for any worker count: float sums in another grouping differ in the last
bits, so the slices are fixed by the data alone (:func:`cut_slices`: about
:data:`CHARS_PER_SLICE` characters of distinct words each), never by the worker count, and one
worker or fifty see the same slices. Each slice's expected counts are rounded to a grid of
``2**-k`` (:func:`grid_scale`, fine enough to hold the largest possible count exactly), so
adding them is integer arithmetic in floats: exact, in any order. The log-likelihoods (one
float per slice) are added in slice order. Viterbi counts are integer sums already. A table
small enough for one slice is one lattice in this process, as before this module existed.

The lattice workers are spawned as soon as the words are known and receive their slices
through their pipes (a fork would carry every page this process holds:
:func:`_shard_context`); they build the words' tries, cut their words into the seed's segments
(:meth:`Shards.segments`), rank the seed's substrings, one range of first characters each
(:meth:`Shards.top_substrings`), then receive the pieces and build their lattices
(:meth:`Shards.build`). Every worker dies with this process
(``processes.die_with_parent``), and :meth:`Shards.close` (run by ``with``, on success, error or
cancel alike) ends them all. The leader polls the cancel check while it waits; a worker's
exception is raised in the leader, and a worker that dies raises ``RuntimeError``. Left out:
the M-step and the ranking, which stay in the leader.

Internal: not part of the engine's API (``engine.PUBLIC_MODULES``).
"""

from __future__ import annotations

import math
import multiprocessing
import os
import pickle
import threading
from collections.abc import Mapping, Sequence
from multiprocessing.connection import Connection
from typing import Any

import numpy as np

from engine.processes import die_with_parent
from engine.trainers.base import Reporter
from engine.trainers.unigram.em import edge_expectations, log_likelihood
from engine.trainers.unigram.lattice import Lattice, PieceIndex
from engine.trainers.unigram.prune import alternative_paths, viterbi_counts
from engine.trainers.unigram.segments import segment_counts
from engine.trainers.unigram.suffixes import first_char_cuts, top_substrings
from engine.trainers.unigram.trie import Trie, build_trie, join_tries

CHARS_PER_SLICE = 250_000  # distinct-word characters per slice: en_25M makes 20 slices
MAX_SLICES = 64  # enough for as many workers as limits.MAX_WORKERS allows, twice over
Slice = tuple[list[str], list[int]]


def slice_count(word_counts: Mapping[str, int], chars_per_slice: int | None = None) -> int:
    """How many slices the words make: one per ``chars_per_slice`` characters, at least one."""
    return min(MAX_SLICES, max(1, sum(map(len, word_counts)) // (chars_per_slice or CHARS_PER_SLICE)))


def cut_slices(word_counts: Mapping[str, int], chars_per_slice: int | None = None) -> list[Slice]:
    """The words and counts cut into slices of about ``chars_per_slice`` characters, in string
    order (so a slice's words share their prefixes); one slice, in table order, when all fit."""
    words = list(word_counts)
    n = slice_count(word_counts, chars_per_slice)
    if n == 1:
        return [(words, list(word_counts.values()))]
    words.sort()
    ends = np.cumsum(np.fromiter(map(len, words), dtype=np.int64, count=len(words)))
    cuts = [0, *np.searchsorted(ends, ends[-1] * np.arange(1, n) / n).tolist(), len(words)]
    return [(words[a:b], [word_counts[w] for w in words[a:b]]) for a, b in zip(cuts, cuts[1:]) if b > a]


def grid_scale(word_counts: Mapping[str, int]) -> float:
    """A power of two ``2**k`` such that every expected count times it stays an exact integer
    in a float64: no piece is expected more often than the corpus has characters."""
    total = sum(len(w) * n for w, n in word_counts.items())
    return 2.0 ** (50 - math.ceil(math.log2(total + 2)))


class Shard:
    """Some slices' lattices and the passes over them; lives in a worker, or in the leader.

    The slices' tries are joined side by side (``trie.join_tries``): one lattice, one pass per
    depth for all of them, and still, node for node, the floats of one lattice per slice. The
    words' trie needs no pieces, so it is built first (while the leader seeds), the lattice on
    it once the seed is known (:meth:`build`).
    """

    def __init__(self, slices: Sequence[Slice], scale: float | None) -> None:
        self.trie: Trie | None
        self.trie, self.node_slice = join_tries([build_trie(words) for words, _ in slices])
        self.words = [w for words, _ in slices for w in words]  # for the seed's segments
        self.counts = [n for _, counts in slices for n in counts]
        self.word_cuts = np.cumsum([0] + [len(words) for words, _ in slices])  # each slice's words
        self.scale = scale
        self._by_slice: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None

    def build(self, pieces: list[str], max_len: int, unk: int) -> None:
        """The lattice of the slices' words over ``pieces`` (the trie and counts go into it)."""
        assert self.trie is not None, "a shard's lattice is built once"
        self.index = PieceIndex.of({p: s for s, p in enumerate(pieces)})  # the alternatives use it too
        self.lat = Lattice(self.trie, self.counts, self.index, max_len, unk)
        self.trie, self.counts = None, []
        self.pieces, self.max_len, self.unk = pieces, max_len, unk

    def segments(self, classes: Mapping[str, str], space: str) -> tuple[list[str], list[int]]:
        """The seed's segments of this shard's words (``segments.segment_counts``), once."""
        found = segment_counts(dict(zip(self.words, self.counts)), classes, space)
        self.words = []
        return list(found), list(found.values())

    @staticmethod
    def top_substrings(segments: bytes, max_len: int, want: int, no_last: str | None,
                       first: tuple[int, int]) -> tuple[list[str], list[int]]:
        """The seed's substrings starting in ``first``'s code points (``suffixes.top_substrings``),
        of the segments and counts pickled in ``segments`` (pickled once for every worker)."""
        strings, counts = pickle.loads(segments)
        return top_substrings(strings, counts, max_len, want, no_last=no_last, first=first)

    def _filter(self, logp: np.ndarray) -> None:
        self.lat.filter(np.isfinite(logp))  # dead pieces have -inf: dropping their edges changes no result

    def _edges_by_slice(self) -> tuple[np.ndarray, np.ndarray]:
        """The out-edges grouped by slice (in their order inside each) and where each slice starts."""
        if self._by_slice is None or self._by_slice[0] is not self.lat.out_dst:
            owner = self.node_slice[self.lat.out_dst]
            order = np.argsort(owner, kind="stable").astype(np.int32)
            cuts = np.searchsorted(owner[order], np.arange(len(self.word_cuts)))
            self._by_slice = (self.lat.out_dst, order, cuts)
        return self._by_slice[1], self._by_slice[2]

    def e_step(self, logp: np.ndarray) -> tuple[np.ndarray, list[float]]:
        """Expected counts (on the grid, summed) and each slice's log-likelihood."""
        self._filter(logp)
        weights, z = edge_expectations(self.lat, logp)
        sid, n = self.lat.out_sid, len(logp)
        if self.scale is None:  # one slice: the plain E-step
            return np.bincount(sid, weights=weights, minlength=n), [log_likelihood(self.lat.counts, z)]
        order, cuts = self._edges_by_slice()
        total = np.zeros(n)
        for a, b in zip(cuts, cuts[1:]):
            total += np.rint(np.bincount(sid[order[a:b]], weights=weights[order[a:b]], minlength=n) * self.scale)
        words = zip(self.word_cuts, self.word_cuts[1:])
        return total, [log_likelihood(self.lat.counts[a:b], z[a:b]) for a, b in words]

    def viterbi_counts(self, logp: np.ndarray) -> np.ndarray:
        self._filter(logp)
        return viterbi_counts(self.lat, logp)

    def alternative_paths(self, live: np.ndarray, owners: np.ndarray, freq: np.ndarray,
                          logp: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return alternative_paths(self.pieces, live, owners, freq, logp, self.max_len, self.unk, self.index)


def _serve(conn: Connection, parent_pid: int) -> None:
    """A worker: receive its slices and build their trie, then answer ``(method, args)``
    requests (the first builds the lattice) until the pipe closes."""
    if not die_with_parent(parent_pid=parent_pid):
        os._exit(1)
    try:
        shard = Shard(*conn.recv())
        while True:
            try:
                method, call_args = conn.recv()
            except EOFError:
                return
            conn.send(("ok", getattr(shard, method)(*call_args)))
    except BaseException as exc:  # noqa: BLE001 - handed to the leader, which re-raises it
        try:
            conn.send(("error", exc))
        except Exception:  # noqa: BLE001 - an unpicklable error: its text will do
            conn.send(("error", RuntimeError(f"A Unigram training worker failed: {exc!r}")))


def _feed(conns: Sequence[Connection], parts: Sequence[tuple[list[Slice], float | None]]) -> None:
    """Send each worker its slices; a worker that died is found by the next gather."""
    for conn, part in zip(conns, parts):
        try:
            conn.send(part)
        except OSError:
            return


def _shard_context() -> Any:
    """Spawn the lattice workers: a fork would carry every page this process holds (the word
    table among them), and the tree of an en_100M training once held 2.4 GiB so."""
    return multiprocessing.get_context("spawn")


def _gather(procs: Sequence[Any], conns: Sequence[Connection], reporter: Reporter) -> list[Any]:
    """Each worker's answer, in worker order; polls the cancel check while waiting."""
    answers = []
    for proc, conn in zip(procs, conns):
        while not conn.poll(0.1):
            reporter.check_cancel()
        try:
            kind, value = conn.recv()
        except EOFError:
            proc.join(timeout=1.0)
            raise RuntimeError(f"A Unigram training worker died (exit code {proc.exitcode}).") from None
        if kind == "error":
            raise value
        answers.append(value)
    return answers


def _stop(procs: Sequence[Any], conns: Sequence[Connection]) -> None:
    """Close the pipes, and end the workers that do not end by themselves at once."""
    for conn in conns:
        conn.close()
    for proc in procs:
        proc.join(timeout=1.0)  # a worker sees the closed pipe and returns
        if proc.is_alive():
            proc.kill()
            proc.join()


class Shards:
    """The corpus lattice in ``workers`` processes (in this one for one worker or one slice).

    Made with the words alone: the workers start, and build the words' tries, while the leader
    seeds; :meth:`build` then sends them the pieces. The slices travel from a thread of their own,
    since a pipe takes them only as fast as a worker, still importing, reads them.
    """

    def __init__(self, word_counts: Mapping[str, int], *, workers: int, reporter: Reporter,
                 chars_per_slice: int | None = None) -> None:
        slices = cut_slices(word_counts, chars_per_slice)
        scale = grid_scale(word_counts) if len(slices) > 1 else None
        self.scale = scale
        self.reporter = reporter
        self.local: Shard | None = None
        self.procs: list[multiprocessing.process.BaseProcess] = []
        self.conns: list[Connection] = []
        self._feeder: threading.Thread | None = None
        workers = max(1, min(workers, len(slices)))
        if workers == 1:
            self.local = Shard(slices, scale)
            return
        ctx = _shard_context()
        try:
            for _ in range(workers):
                here, there = ctx.Pipe()
                proc = ctx.Process(target=_serve, args=(there, os.getpid()), daemon=True)
                proc.start()
                there.close()  # the worker's end lives in the worker only: its death is our EOF
                self.procs.append(proc)
                self.conns.append(here)
        except BaseException:
            self.close()
            raise
        parts = [(slices[w * len(slices) // workers : (w + 1) * len(slices) // workers], scale)
                 for w in range(workers)]
        self._feeder = threading.Thread(target=_feed, args=(self.conns, parts), daemon=True)
        self._feeder.start()

    def segments(self, classes: Mapping[str, str], space: str) -> tuple[list[str], list[int]]:
        """The seed's segments, each worker cutting its own words: the lists side by side (a
        segment of words in two workers comes twice; the ranking adds its counts up)."""
        if self.local is not None:
            return self.local.segments(classes, space)
        self._fed()
        parts = self._call("segments", classes, space)
        return [s for found, _ in parts for s in found], [n for _, counts in parts for n in counts]

    def top_substrings(self, segments: Sequence[str], counts: Sequence[int], max_len: int, want: int, *,
                       no_last: str | None = None) -> tuple[list[str], list[int]]:
        """``suffixes.top_substrings``, in the workers, one range of first characters each
        (``suffixes.first_char_cuts``): a worker's ranking is in string order, and the ranges
        follow each other, so a stable sort by score of the rankings side by side is the whole
        ranking."""
        if self.local is not None:
            return top_substrings(segments, counts, max_len, want, no_last=no_last)
        self._fed()
        cuts = first_char_cuts(segments, len(self.conns))
        blob = pickle.dumps((list(segments), list(counts)), pickle.HIGHEST_PROTOCOL)
        for conn, first in zip(self.conns, cuts):
            conn.send(("top_substrings", (blob, max_len, want, no_last, first)))
        del blob
        answers = _gather(self.procs[:len(cuts)], self.conns[:len(cuts)], self.reporter)
        pieces = [piece for part, _ in answers for piece in part]
        negated = np.concatenate([np.asarray(scores, dtype=np.int64) for _, scores in answers])
        best = np.argsort(negated, kind="stable")[:want].tolist()
        return [pieces[i] for i in best], negated[best].tolist()

    def build(self, pieces: list[str], max_len: int, unk: int) -> None:
        """Every slice's lattice over ``pieces``, built where the slice lives."""
        if self.local is not None:
            self.local.build(pieces, max_len, unk)
            return
        self._fed()
        blob = pickle.dumps(("build", (pieces, max_len, unk)), pickle.HIGHEST_PROTOCOL)  # once, whatever the workers
        try:
            for conn in self.conns:
                conn.send_bytes(blob)
        except OSError:
            pass  # a worker that died: its closed pipe says so below
        self._gather()

    def __enter__(self) -> Shards:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _fed(self) -> None:
        """Wait until every worker has its slices (a request before them would jump the queue)."""
        if self._feeder is not None:
            self._feeder.join()
            self._feeder = None

    def close(self) -> None:
        """End every worker (a no-op when there are none, or after an earlier close)."""
        if self._feeder is not None:  # still sending slices: end the readers, and the sends fail
            for proc in self.procs:
                proc.kill()
            self._feeder.join()
            self._feeder = None
        _stop(self.procs, self.conns)
        self.conns, self.procs = [], []

    def _gather(self) -> list[Any]:
        return _gather(self.procs, self.conns, self.reporter)

    def _call(self, method: str, *args: Any) -> list[Any]:
        for conn in self.conns:
            conn.send((method, args))
        return self._gather()

    def e_step(self, logp: np.ndarray) -> tuple[np.ndarray, float]:
        """Expected count of every piece id and the corpus log-likelihood, the same for any
        number of workers."""
        parts = [self.local.e_step(logp)] if self.local is not None else self._call("e_step", logp)
        expected = parts[0][0]
        for part, _ in parts[1:]:
            expected += part
        if self.scale is not None:
            expected /= self.scale  # a power of two: exact
        loglik = 0.0
        for _, logliks in parts:  # in slice order
            for value in logliks:
                loglik += value
        return expected, loglik

    def viterbi_counts(self, logp: np.ndarray) -> np.ndarray:
        """Each piece id's count in the best paths (integers: exact in any order)."""
        if self.local is not None:
            return self.local.viterbi_counts(logp)
        parts = self._call("viterbi_counts", logp)
        for part in parts[1:]:
            parts[0] += part
        return parts[0]

    def alternative_paths(self, live: np.ndarray, owners: np.ndarray, freq: np.ndarray,
                          logp: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``prune.alternative_paths`` with the owners shared out between the workers (each
        owner's answer is its own string's: any cut gives the same values)."""
        if self.local is not None:
            return self.local.alternative_paths(live, owners, freq, logp)
        cuts = np.linspace(0, len(owners), len(self.conns) + 1).astype(np.int64)
        for conn, a, b in zip(self.conns, cuts, cuts[1:]):
            conn.send(("alternative_paths", (live, owners[a:b], freq, logp)))
        parts = self._gather()
        return tuple(np.concatenate([part[i] for part in parts]) for i in range(3))  # type: ignore[return-value]
