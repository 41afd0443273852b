"""The arrays of the Unigram trainer's corpus passes, shared by the leader and every lattice worker.

Why: each pass (E-step, Viterbi counts, pruning alternatives) reads the pieces' log-probabilities
and answers with an array as long, one float per piece (8 MB each for a seed of a million). Sent
through the workers' pipes, the leader pickled them out and read every answer back, 16 MB a
worker a pass: with 16 workers on en_25M that was 1.06 s of the leader's CPU (0.56 s in E-steps,
0.27 s in Viterbi, 0.23 s in alternatives), all of it serial. Here the leader writes the inputs
once into memory every worker maps, each worker writes its answer into its own row, and the
pipes carry only the request's name and a few numbers.

The memory is an anonymous file (``memfd_create``; an unlinked temporary file where there is
none), not ``/dev/shm``: a container's ``/dev/shm`` is often 64 MB, and a named segment outlives
a process killed before it unlinks it, where an anonymous file is gone with the last process
that maps it. Its descriptor reaches a worker through the worker's pipe
(``multiprocessing.reduction.send_handle``), so forked and spawned workers share it alike.

Layout: four input rows (``logp`` and ``freq``, float64; ``live`` and ``owners``, piece ids in
int64) and one answer row per worker, all ``n`` long (the seed's pieces and the unknown piece).

Internal: not part of the engine's API (``engine.PUBLIC_MODULES``).
"""

from __future__ import annotations

import mmap
import os
import tempfile

import numpy as np

__all__ = ["PassArrays"]

_INPUTS = 4  # logp, freq, live, owners


def _anonymous_file(size: int) -> int:
    """A descriptor of ``size`` bytes of memory no path names (zero-filled, pages made on use)."""
    if hasattr(os, "memfd_create"):
        fd = os.memfd_create("tokenforge-unigram-passes", os.MFD_CLOEXEC)
    else:  # not Linux: a temporary file, unlinked at once
        with tempfile.TemporaryFile() as file:
            fd = os.dup(file.fileno())
    try:
        os.ftruncate(fd, size)
    except BaseException:
        os.close(fd)
        raise
    return fd


class PassArrays:
    """The shared rows: made by the leader (:meth:`create`), mapped by each worker (:meth:`attach`)."""

    def __init__(self, fd: int, n: int, workers: int) -> None:
        self.fd, self.n, self.workers = fd, n, workers
        self._map = mmap.mmap(fd, 8 * n * (_INPUTS + workers))
        rows = np.frombuffer(self._map, np.float64).reshape(_INPUTS + workers, n)
        self.logp, self.freq = rows[0], rows[1]
        self.live, self.owners = rows[2].view(np.int64), rows[3].view(np.int64)
        self.answers = rows[_INPUTS:]  # one row per worker

    @classmethod
    def create(cls, n: int, workers: int) -> PassArrays:
        return cls(_anonymous_file(8 * n * (_INPUTS + workers)), n, workers)

    @classmethod
    def attach(cls, fd: int, n: int, workers: int) -> PassArrays:
        """The same memory in a worker, from the descriptor it received (closed here: the mapping keeps it)."""
        try:
            arrays = cls(fd, n, workers)
        finally:
            os.close(fd)
        arrays.fd = -1
        return arrays

    def close(self) -> None:
        """Unmap and close (the memory goes once no process maps it)."""
        self.logp = self.freq = self.live = self.owners = self.answers = np.zeros(0)  # drop the views first
        try:
            self._map.close()
        except BufferError:  # a view of it is still held somewhere: unmapped when that goes
            pass
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
