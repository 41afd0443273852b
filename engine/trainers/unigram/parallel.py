"""The Unigram trainer's corpus passes on every core: the lattice cut into slices of the words.

The E-step, the Viterbi counts and the pruning alternatives are sums or element-wise results
over words, so each worker process owns some slices of the (sorted) words, builds their
lattice itself (the ``lattice`` stage runs in parallel too; a worker's slices are joined side
by side in one lattice, ``trie.join_tries``) and answers each pass for its slices; the leader
adds the answers. A pass's arrays (the piece log-probabilities in, one array per worker out) are
shared memory that the leader and every worker map (``pass_arrays.py``): the pipes carry only
the request.

Identical output for any worker count: float sums in another grouping differ in the last
bits, so the slices are fixed by the data alone (:class:`SlicePlan`: about
:data:`CHARS_PER_SLICE` characters of distinct words each, each slice in string order), never
by the worker count or the order of the word table, and one worker or fifty see the same
slices. Each slice's expected counts are rounded to a grid of ``2**-k`` (:func:`grid_scale`,
fine enough to hold the largest possible count exactly), so adding them is integer arithmetic
in floats: exact, in any order. The log-likelihoods (one float per slice) are added in slice
order. Viterbi counts are integer sums already. A table small enough for one slice is one
lattice in this process, as before this module existed.

The lattice workers are spawned as soon as the words are known (a fork would carry every page
this process holds: :func:`_shard_context`) and receive their slices through their pipes; every
string table travels packed as arrays (``trainers.packed.PackedStrings``). They build the words' tries,
cut their words into the seed's segments (:meth:`Shards.segments`), rank the seed's substrings,
one range of first characters each (:meth:`Shards.top_substrings`), then receive the pieces and
build their lattices (:meth:`Shards.build`). Every worker dies with this process
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
from dataclasses import dataclass
from multiprocessing import reduction
from multiprocessing.connection import Connection
from typing import Any

import numpy as np

from engine.processes import die_with_parent
from engine.trainers.base import Reporter
from engine.trainers.packed import CountedWords, PackedStrings
from engine.trainers.unigram.em import edge_expectations, log_likelihood
from engine.trainers.unigram.lattice import Lattice, PieceIndex
from engine.trainers.unigram.pass_arrays import PassArrays
from engine.trainers.unigram.prune import alternative_paths, viterbi_counts
from engine.trainers.unigram.segments import packed_segment_counts
from engine.trainers.unigram.suffixes import first_char_cuts, top_substrings
from engine.trainers.unigram.trie import Trie, build_trie, join_tries

CHARS_PER_SLICE = 250_000  # distinct-word characters per slice: en_25M makes 20 slices
MAX_SLICES = 64  # enough for as many workers as limits.MAX_WORKERS allows, twice over
Slice = tuple[list[str], list[int]]


def slice_count(word_counts: Mapping[str, int] | CountedWords, chars_per_slice: int | None = None) -> int:
    """How many slices the words make: one per ``chars_per_slice`` characters, at least one."""
    return _slice_count(int(CountedWords.of(word_counts).packed.lengths.sum()), chars_per_slice)


def _slice_count(chars: int, chars_per_slice: int | None) -> int:
    return min(MAX_SLICES, max(1, chars // (chars_per_slice or CHARS_PER_SLICE)))


@dataclass(frozen=True)
class Packed:
    """Some slices' words, packed (:class:`PackedStrings`), with their counts: the form in which
    slices travel to a worker."""

    words: PackedStrings
    counts: np.ndarray  # int64
    sizes: tuple[int, ...]  # words per slice

    def slices(self) -> list[Slice]:
        """Each slice's words and counts, the words in string order (whatever order they came in)."""
        return _sorted_slices(self.words.strings(), self.counts.tolist(), self.sizes)


def _sorted_slices(words: list[str], counts: list[int], sizes: Sequence[int]) -> list[Slice]:
    """``words`` and ``counts`` cut into slices of ``sizes`` words, each sorted by its words."""
    slices: list[Slice] = []
    start = 0
    for size in sizes:
        part = words[start : start + size]
        order = sorted(range(size), key=part.__getitem__)
        slices.append(([part[i] for i in order], [counts[start + i] for i in order]))
        start += size
    return slices


@dataclass(frozen=True)
class SlicePlan:
    """The words cut into slices of about ``chars_per_slice`` characters, fixed by the data alone.

    A slice is a range of the words in string order, cut only where the first three characters
    change: which words share a slice then follows from the words, not from the order of the
    table (which depends on how many processes counted them), and each slice is sorted where it
    is used (:func:`_sorted_slices`). So the leader sorts a numpy key, not 400,000 strings (en_25M:
    0.11 s against 0.44 s), and the workers sort their own words in parallel.
    """

    words: list[str]
    packed: PackedStrings | None  # the words again, packed (only when there are several slices)
    counts: np.ndarray  # int64
    order: np.ndarray  # word indices, by their first three characters
    cuts: list[int]  # slice i is order[cuts[i]:cuts[i + 1]]

    @classmethod
    def of(cls, word_counts: Mapping[str, int] | CountedWords, chars_per_slice: int | None = None) -> SlicePlan:
        table = CountedWords.of(word_counts)
        words, counts, packed = table.words, table.counts, table.packed
        lengths = packed.lengths
        n = _slice_count(int(lengths.sum()), chars_per_slice)
        if n == 1:
            return cls(words, None, counts, np.arange(len(words)), [0, len(words)])
        keys = _prefix_keys(packed)
        order = np.argsort(keys, kind="stable")
        keys = keys[order]
        # Where a new prefix starts (the only places a cut may go), and the characters before each.
        allowed = np.concatenate([[0], np.flatnonzero(keys[1:] != keys[:-1]) + 1, [len(words)]])
        before = np.concatenate([[0], np.cumsum(lengths[order])])[allowed]
        targets = before[-1] * np.arange(1, n) / n
        right = np.minimum(np.searchsorted(before, targets), len(before) - 1)
        left = np.maximum(right - 1, 0)
        nearest = np.where(targets - before[left] <= before[right] - targets, left, right)
        cuts = sorted({0, len(words), *allowed[nearest].tolist()})
        return cls(words, packed, counts, order, cuts)

    def __len__(self) -> int:
        return len(self.cuts) - 1

    def pack(self, first: int, last: int) -> Packed:
        """Slices ``first`` to ``last`` (excluded) as one :class:`Packed`, for a worker."""
        assert self.packed is not None, "one slice is never sent"
        index = self.order[self.cuts[first] : self.cuts[last]]
        return Packed(self.packed.take(index), self.counts[index], self._sizes(first, last))

    def slices(self) -> list[Slice]:
        """Every slice, each in string order, for this process."""
        words, counts = self.words, self.counts.tolist()
        index = self.order.tolist()
        return _sorted_slices([words[i] for i in index], [counts[i] for i in index], self._sizes(0, len(self)))

    def _sizes(self, first: int, last: int) -> tuple[int, ...]:
        return tuple(np.diff(self.cuts[first : last + 1]).tolist())


def _prefix_keys(words: PackedStrings) -> np.ndarray:
    """Each word's first three code points in one int64 (a missing one as 0, the others one
    higher: 21 bits each), so that the keys sort as the prefixes do as strings."""
    codes, lengths, starts = words.codes, words.lengths, words.starts()
    keys = np.zeros(len(lengths), np.int64)
    for j in range(3):
        has = lengths > j
        column = np.zeros(len(lengths), np.int64)
        column[has] = codes[starts[has] + j].astype(np.int64) + 1
        keys = (keys << 21) | column
    return keys


def grid_scale(word_counts: Mapping[str, int] | CountedWords) -> float:
    """A power of two ``2**k`` such that every expected count times it stays an exact integer
    in a float64: no piece is expected more often than the corpus has characters."""
    table = CountedWords.of(word_counts)
    total = int(table.counts @ table.packed.lengths)  # the corpus's characters: far inside int64
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
        self.shared: PassArrays  # in a worker: the leader's pass arrays (attach), and the row it answers in
        self.row = 0

    def build(self, pieces: list[str] | PackedStrings, max_len: int, unk: int) -> None:
        """The lattice of the slices' words over ``pieces`` (the trie and counts go into it)."""
        assert self.trie is not None, "a shard's lattice is built once"
        if isinstance(pieces, PackedStrings):  # as a worker receives them
            pieces = pieces.strings()
        self.index = PieceIndex.of(pieces)  # the alternatives use it too
        self.lat = Lattice(self.trie, self.counts, self.index, max_len, unk)
        self.trie, self.counts = None, []
        self.pieces, self.max_len, self.unk = pieces, max_len, unk

    def segments(self, classes: Mapping[str, str], space: str) -> tuple[PackedStrings, np.ndarray]:
        """The seed's segments of this shard's words (``segments.segment_counts``), once."""
        found = packed_segment_counts(CountedWords.pack(self.words, self.counts), classes, space)
        self.words = []
        return found

    @staticmethod
    def top_substrings(segments: bytes, max_len: int, want: int, no_last: str | None,
                       first: tuple[int, int]) -> tuple[PackedStrings, np.ndarray]:
        """The seed's substrings starting in ``first``'s code points (``suffixes.top_substrings``),
        of the segments and counts pickled in ``segments`` (pickled once for every worker)."""
        packed, counts = pickle.loads(segments)
        pieces, negated = top_substrings(packed, counts, max_len, want, no_last=no_last, first=first)
        return PackedStrings.of(pieces), np.asarray(negated, np.int64)

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

    # The passes in a worker: the inputs are read from the shared arrays, where the answer goes too.
    def attach(self, n: int, workers: int, row: int, fd: int) -> None:
        """Map the leader's pass arrays (``pass_arrays``); this worker answers in ``row``."""
        self.shared, self.row = PassArrays.attach(fd, n, workers), row

    def shared_e_step(self) -> list[float]:
        self.shared.answers[self.row], logliks = self.e_step(self.shared.logp)
        return logliks

    def shared_viterbi_counts(self) -> None:
        self.shared.answers[self.row] = self.viterbi_counts(self.shared.logp)

    def shared_alternative_paths(self, live: int, first: int, last: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        shared = self.shared
        return self.alternative_paths(shared.live[:live], shared.owners[first:last], shared.freq, shared.logp)


def _serve(conn: Connection, parent_pid: int) -> None:
    """A worker: receive its slices and build their trie, then answer ``(method, args)``
    requests (the first builds the lattice) until the pipe closes."""
    if not die_with_parent(parent_pid=parent_pid):
        os._exit(1)
    try:
        packed, scale = conn.recv()
        shard = Shard(packed.slices(), scale)
        while True:
            try:
                method, call_args = conn.recv()
            except EOFError:
                return
            if method == "attach":  # the pass arrays' descriptor follows the request on the pipe
                call_args = (*call_args, reduction.recv_handle(conn))
            conn.send(("ok", getattr(shard, method)(*call_args)))
    except BaseException as exc:  # noqa: BLE001 - handed to the leader, which re-raises it
        try:
            conn.send(("error", exc))
        except Exception:  # noqa: BLE001 - an unpicklable error: its text will do
            conn.send(("error", RuntimeError(f"A Unigram training worker failed: {exc!r}")))


def _feed(conns: Sequence[Connection], parts: Sequence[tuple[Packed, float | None]]) -> None:
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

    def __init__(self, word_counts: Mapping[str, int] | CountedWords, *, workers: int, reporter: Reporter,
                 chars_per_slice: int | None = None) -> None:
        words = CountedWords.of(word_counts)
        plan = SlicePlan.of(words, chars_per_slice)
        scale = grid_scale(words) if len(plan) > 1 else None
        self.scale = scale
        self.reporter = reporter
        self.local: Shard | None = None
        self.shared: PassArrays | None = None  # made on the first pass (``_pass_arrays``)
        self.procs: list[multiprocessing.process.BaseProcess] = []
        self.conns: list[Connection] = []
        self._feeder: threading.Thread | None = None
        workers = max(1, min(workers, len(plan)))
        if workers == 1:
            self.local = Shard(plan.slices(), scale)
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
        parts = [(plan.pack(w * len(plan) // workers, (w + 1) * len(plan) // workers), scale)
                 for w in range(workers)]
        self._feeder = threading.Thread(target=_feed, args=(self.conns, parts), daemon=True)
        self._feeder.start()

    def segments(self, classes: Mapping[str, str], space: str) -> tuple[PackedStrings, np.ndarray]:
        """The seed's segments, each worker cutting its own words: the tables side by side (a
        segment of words in two workers comes twice; the ranking adds its counts up)."""
        if self.local is not None:
            return self.local.segments(classes, space)
        self._fed()
        parts = self._call("segments", classes, space)
        return PackedStrings.joined([found for found, _ in parts]), np.concatenate([counts for _, counts in parts])

    def top_substrings(self, segments: PackedStrings, counts: np.ndarray, max_len: int, want: int, *,
                       no_last: str | None = None) -> tuple[list[str], list[int]]:
        """``suffixes.top_substrings``, in the workers, one range of first characters each
        (``suffixes.first_char_cuts``): a worker's ranking is in string order, and the ranges
        follow each other, so a stable sort by score of the rankings side by side is the whole
        ranking."""
        if self.local is not None:
            return top_substrings(segments, counts, max_len, want, no_last=no_last)
        self._fed()
        cuts = first_char_cuts(segments, len(self.conns))
        blob = pickle.dumps((segments, counts), pickle.HIGHEST_PROTOCOL)
        for conn, first in zip(self.conns, cuts):
            conn.send(("top_substrings", (blob, max_len, want, no_last, first)))
        del blob
        answers = _gather(self.procs[:len(cuts)], self.conns[:len(cuts)], self.reporter)
        negated = np.concatenate([scores for _, scores in answers])
        best = np.argsort(negated, kind="stable")[:want]
        return PackedStrings.joined([part for part, _ in answers]).take(best).strings(), negated[best].tolist()

    def build(self, pieces: list[str], max_len: int, unk: int) -> None:
        """Every slice's lattice over ``pieces``, built where the slice lives."""
        if self.local is not None:
            self.local.build(pieces, max_len, unk)
            return
        self._fed()
        self._call("build", PackedStrings.of(pieces), max_len, unk)

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
        if self.shared is not None:
            self.shared.close()
            self.shared = None

    def _gather(self) -> list[Any]:
        return _gather(self.procs, self.conns, self.reporter)

    def _call(self, method: str, *args: Any) -> list[Any]:
        """Every worker's answer to ``method(*args)``. The request is pickled once, whatever the
        workers: a pass sends the pieces' log-probabilities (8 MB for a seed of a million)."""
        blob = pickle.dumps((method, args), pickle.HIGHEST_PROTOCOL)
        try:
            for conn in self.conns:
                conn.send_bytes(blob)
        except OSError:
            pass  # a worker that died: its closed pipe says so in the gather
        return self._gather()

    def _pass_arrays(self, n: int) -> PassArrays:
        """The arrays the workers' passes read and answer in, made and handed to every worker
        on the first pass (their descriptor travels on each worker's pipe)."""
        if self.shared is None or self.shared.n != n:
            if self.shared is not None:
                self.shared.close()
            self.shared = PassArrays.create(n, len(self.conns))
            try:
                for row, (proc, conn) in enumerate(zip(self.procs, self.conns)):
                    conn.send(("attach", (n, len(self.conns), row)))
                    reduction.send_handle(conn, self.shared.fd, proc.pid)
            except OSError:
                pass  # a worker that died: its closed pipe says so in the gather
            self._gather()
        return self.shared

    def e_step(self, logp: np.ndarray) -> tuple[np.ndarray, float]:
        """Expected count of every piece id and the corpus log-likelihood, the same for any
        number of workers."""
        if self.local is not None:
            expected, logliks = self.local.e_step(logp)
            parts = [logliks]
        else:
            shared = self._pass_arrays(len(logp))
            shared.logp[:] = logp
            parts = self._call("shared_e_step")
            expected = shared.answers.sum(axis=0)  # whole numbers of grid steps: exact in any order
        if self.scale is not None:
            expected /= self.scale  # a power of two: exact
        loglik = 0.0
        for logliks in parts:  # in slice order
            for value in logliks:
                loglik += value
        return expected, loglik

    def viterbi_counts(self, logp: np.ndarray) -> np.ndarray:
        """Each piece id's count in the best paths (integers: exact in any order)."""
        if self.local is not None:
            return self.local.viterbi_counts(logp)
        shared = self._pass_arrays(len(logp))
        shared.logp[:] = logp
        self._call("shared_viterbi_counts")
        return shared.answers.sum(axis=0)

    def alternative_paths(self, live: np.ndarray, owners: np.ndarray, freq: np.ndarray,
                          logp: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``prune.alternative_paths`` with the owners shared out between the workers (each
        owner's answer is its own string's: any cut gives the same values)."""
        if self.local is not None:
            return self.local.alternative_paths(live, owners, freq, logp)
        shared = self._pass_arrays(len(logp))
        shared.logp[:], shared.freq[:] = logp, freq
        shared.live[:len(live)], shared.owners[:len(owners)] = live, owners
        cuts = np.linspace(0, len(owners), len(self.conns) + 1).astype(np.int64)
        for conn, a, b in zip(self.conns, cuts, cuts[1:]):
            conn.send(("shared_alternative_paths", (len(live), int(a), int(b))))
        parts = self._gather()
        return tuple(np.concatenate([part[i] for part in parts]) for i in range(3))  # type: ignore[return-value]
