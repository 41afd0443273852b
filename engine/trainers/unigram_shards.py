"""E-steps on two cores: the words cut into two shards, each a prefix-trie lattice of its own.

The words are sorted and cut where the two halves have about the same number of characters, so
each shard is a sub-trie (only the prefixes along the cut are built twice). The number of
shards is fixed (``SHARDS``), not taken from the machine, so that results do not depend on the
number of cores: per E-step, each shard's expected counts are added in shard order.

When forking is possible (``unigram_fork.fork_possible``), each shard lives in a
forked worker that builds its lattice once and keeps it between E-steps; per E-step the parent
sends the piece probabilities (an array of doubles) and gets back the expected counts, the
log-likelihood and the underflowed words (or, for pruning, the logs of the probabilities and
gets back the Viterbi piece counts, ``unigram_viterbi``). Otherwise the shards are run one
after the other in this process, with identical results. The lattice arithmetic is
``unigram_trie``'s; between rounds the workers drop dead pieces' edges when the caller asks.
"""

from __future__ import annotations

import multiprocessing
import os
from array import array
from collections.abc import Mapping, Sequence
from multiprocessing.connection import Connection
from operator import add
from typing import Any

from engine.processes import die_with_parent
from engine.trainers.unigram_fork import MIN_STRINGS, fork_possible
from engine.trainers.unigram_trie import TrieLattice
from engine.trainers.unigram_viterbi import viterbi_counts

SHARDS = 2

Part = tuple[list[float], float, list[tuple[str, float]]]


def split_words(words: Sequence[str], shards: int) -> list[list[str]]:
    """Sorted ``words`` cut into ``shards`` runs of about equal total length."""
    ordered = sorted(words)
    total = sum(map(len, ordered))
    out: list[list[str]] = [[] for _ in range(shards)]
    done = 0
    for word in ordered:
        out[min(shards - 1, done * shards // max(total, 1))].append(word)
        done += len(word)
    return out


def _serve(conn: Connection, words: list[str], counts: list[float], sid_of: Mapping[str, int], max_len: int, unk: int,
           parent_pid: int) -> None:
    """A worker: build one shard's lattice, then answer E-step and filter requests."""
    # A shard holds a large lattice; it must not outlive a trainer that was killed mid-step.
    if not die_with_parent(parent_pid=parent_pid):
        os._exit(1)
    try:
        lattice = TrieLattice(words, counts, sid_of, max_len, unk)
        del words, counts
        conn.send(("ready", lattice.edges()))
        while True:
            command, payload = conn.recv()
            if command == "e_step":
                expected, loglik, bad = lattice.e_step(array("d", payload).tolist())
                conn.send(("done", (array("d", expected).tobytes(), loglik, bad)))
            elif command == "viterbi":
                conn.send(("done", array("d", viterbi_counts(lattice, array("d", payload))).tobytes()))
            elif command == "filter":
                mask, min_share = payload
                lattice.filter(mask, min_share=min_share)
                conn.send(("done", None))
            else:
                break
    except BaseException as exc:  # noqa: BLE001 - handed to the parent, which re-raises it
        conn.send(("error", exc))
    finally:
        conn.close()


class ShardedLattice:
    """The corpus lattice as ``SHARDS`` tries, in worker processes when possible."""

    def __init__(
        self, word_counts: Mapping[str, float], sid_of: Mapping[str, int], max_piece_length: int, unk_sid: int,
        *, workers: int | None = None,
    ) -> None:
        shards = split_words(list(word_counts), SHARDS)
        if workers is None:
            workers = min(SHARDS, len(os.sched_getaffinity(0))) if len(word_counts) >= MIN_STRINGS else 1
        self.local: list[TrieLattice] = []
        self.conns: list[Connection] = []
        self.procs: list[Any] = []
        if workers > 1 and fork_possible():
            ctx = multiprocessing.get_context("fork")
            for words in shards:
                parent, child = ctx.Pipe()
                counts = [float(word_counts[w]) for w in words]
                proc = ctx.Process(target=_serve, args=(child, words, counts, sid_of, max_piece_length, unk_sid, os.getpid()),
                                   daemon=True)
                proc.start()
                child.close()
                self.conns.append(parent)
                self.procs.append(proc)
            self.n_edges = sum(self._receive(conn) for conn in self.conns)
        else:
            for words in shards:
                self.local.append(TrieLattice(words, [word_counts[w] for w in words], sid_of, max_piece_length, unk_sid))
            self.n_edges = sum(lat.edges() for lat in self.local)

    def _receive(self, conn: Connection) -> Any:
        try:
            kind, value = conn.recv()
        except EOFError:
            self.close()
            raise RuntimeError("A Unigram E-step worker died (out of memory?); retry with a smaller corpus.") from None
        if kind == "error":
            self.close()
            raise value
        return value

    def edges(self) -> int:
        return self.n_edges

    def e_step(self, prob: Sequence[float]) -> Part:
        """Expected counts, log-likelihood and underflowed words, summed over the shards in order."""
        if self.local:
            parts = [lat.e_step(prob) for lat in self.local]
        else:
            payload = array("d", prob).tobytes()
            for conn in self.conns:
                conn.send(("e_step", payload))
            parts = []
            for conn in self.conns:
                data, loglik, bad = self._receive(conn)
                parts.append((array("d", data).tolist(), loglik, bad))
        expected, loglik, bad = parts[0]
        for more, ll, b in parts[1:]:
            expected = list(map(add, expected, more))
            loglik += ll
            bad = bad + b
        return expected, loglik, bad

    def viterbi_counts(self, logp: Sequence[float]) -> list[float]:
        """Each piece's count in the words' best paths (``unigram_viterbi``), summed over the shards in order."""
        if self.local:
            parts = [viterbi_counts(lat, logp) for lat in self.local]
        else:
            payload = array("d", logp).tobytes()
            for conn in self.conns:
                conn.send(("viterbi", payload))
            parts = [array("d", self._receive(conn)).tolist() for conn in self.conns]
        counts = parts[0]
        for more in parts[1:]:
            counts = list(map(add, counts, more))
        return counts

    def filter(self, alive: Sequence[bool], *, min_share: float = 0.2) -> None:
        """Drop the edges of dead pieces (each shard decides by its own share of dead edges)."""
        if self.local:
            for lat in self.local:
                lat.filter(alive, min_share=min_share)
            return
        mask = bytes(bytearray(map(bool, alive)))
        for conn in self.conns:
            conn.send(("filter", (mask, min_share)))
        for conn in self.conns:
            self._receive(conn)

    def close(self) -> None:
        """Stop the workers (idempotent)."""
        for conn in self.conns:
            try:
                conn.send(("close", None))
            except (OSError, ValueError):
                pass
            conn.close()
        for proc in self.procs:
            proc.join(timeout=5)
            if proc.is_alive():
                proc.terminate()
        self.conns, self.procs = [], []
