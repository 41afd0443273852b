"""Count pre-tokens on a Dask cluster: one task per byte range, the counts added up by a tree.

This is the only module that imports Dask (the optional extra ``tokenforge[dask]``); the trainers
reach it through ``trainers/cluster.py``, which connects a :class:`ClusterCounter` around a
training, and the one hook in ``counting.count_pretokens``. The stages of :meth:`ClusterCounter.count`:

1. ``byte_ranges.plan_ranges`` cuts the files into ranges at document boundaries, on this machine,
   reading only a small window near each cut. The workers read the ranges themselves, so the
   files must be at the same path on every worker (a shared corpus folder).
2. One task per range counts it with the trainer's own split, special tokens and normalizer (the
   specs travel, pickled; no closure over this process).
3. Tasks of ``FAN_IN`` counts each add them up, then tasks over those, up to one root: a tree,
   so no single process adds every table, and the adding starts while ranges are still counted.
   Only the root's table comes back to this process. Tables travel pickled, as one ``bytes``
   each: Dask sends a ``dict`` key by key, which took 8 s for six tables of 200,000 pre-tokens
   that go in 0.05 s as bytes.

Progress is stage ``"count"`` in bytes of finished ranges, summed over the cluster; each update
polls the cancel check. On a cancel or any error every task is cancelled, and a Dask ``Event``
that the running tasks ask after a chunk (at most every ``STOP_CHECK_SECONDS``) stops those
already running, so none is left running on the cluster. A worker lost mid-task is Dask's to retry.

Left out: which counts the trainers want (``counting.py``) and where the scheduler address comes
from (``cluster.py``).
"""

from __future__ import annotations

import pickle
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import distributed

from engine.errors import ConfigError
from engine.trainers.base import Reporter
from engine.trainers.byte_ranges import ByteRange, TallyArgs, count_range, plan_ranges
from engine.trainers.counting import add_counts

FAN_IN = 8
"""Counts added up by one task of the tree (dask.bag's ``split_every`` default, too)."""
MIN_RANGE_BYTES = 1 << 20
MAX_RANGE_BYTES = 64 << 20
"""~5 s of counting on one core: bigger ranges leave fewer tables to add up, smaller ones a shorter tail."""
RANGES_PER_THREAD = 4
CONNECT_SECONDS = 5.0
"""How long to try reaching the scheduler before the training fails (it has not started yet)."""
STOP_CHECK_SECONDS = 0.5
"""How often a running task asks the scheduler whether the training was cancelled (one round trip)."""
STOP_WAIT_SECONDS = 3.0
"""How long a cancel waits for running tasks to see the stop (one chunk each); the web app kills
a job that has not stopped within TOKENFORGE_CANCEL_GRACE_SECONDS (5 s)."""
POLL_SECONDS = 0.1


class ClusterCounter:
    """A connection to a Dask scheduler that counts pre-tokens for ``counting.count_pretokens``."""

    def __init__(self, client: distributed.Client, *, range_bytes: int | None = None) -> None:
        self.client = client
        self.range_bytes = range_bytes  # None: from the corpus size and the cluster's threads

    @classmethod
    def connect(cls, address: str, *, range_bytes: int | None = None) -> ClusterCounter:
        """Connect to the scheduler at ``address``, or raise ConfigError saying it cannot be reached."""
        try:
            client = distributed.Client(address, timeout=CONNECT_SECONDS, set_as_default=False)
        except (OSError, TimeoutError) as exc:
            raise ConfigError(
                f"Cannot reach the Dask scheduler at {address} ({exc}); "
                "start it (dask scheduler) or fix the address."
            ) from None
        return cls(client, range_bytes=range_bytes)

    def close(self) -> None:
        """Disconnect from the scheduler (it and its workers keep running)."""
        self.client.close()

    def count(self, files: Sequence[str | Path], tally_args: TallyArgs, *, safe_cuts: bool,
              max_chunk_chars: int, reporter: Reporter) -> dict[str, int]:
        """The pre-token counts of ``files``, equal to the local path's (see the module docstring)."""
        total = sum(Path(f).stat().st_size for f in files)
        # 1. Plan the ranges.
        step = self.range_bytes or self._range_bytes(total)
        ranges = plan_ranges(files, tally_args[1], safe_cuts=safe_cuts, step=step)
        if not ranges:
            return {}
        stop = distributed.Event(f"tokenforge-stop-{uuid.uuid4().hex}", client=self.client)
        futures: list[distributed.Future] = []
        try:
            # 2. One task per range, 3. the tree above them.
            leaves = [self.client.submit(_count_task, part, tally_args, safe_cuts, max_chunk_chars, stop.name,
                                         pure=False) for part in ranges]
            futures += leaves
            root = self._tree(leaves, futures)
            self._watch(leaves, ranges, total, reporter)
            while not root.done():
                reporter.update("count", total, total)
                time.sleep(POLL_SECONDS)
            counts: dict[str, int] = pickle.loads(root.result())
            return counts
        except BaseException:
            self._stop(futures, stop)
            raise
        finally:
            for future in futures:  # releases the tables the workers still hold
                future.release()

    def _range_bytes(self, total: int) -> int:
        """A range size that gives every thread of the cluster the same number of ranges (at least
        ``RANGES_PER_THREAD``), none above ``MAX_RANGE_BYTES``: with 17 ranges on 2 threads, one
        thread counted the last range alone while the other idled."""
        threads = max(1, sum(self.client.nthreads().values()))
        per_thread = max(RANGES_PER_THREAD, -(-total // (MAX_RANGE_BYTES * threads)))
        return max(MIN_RANGE_BYTES, -(-total // (per_thread * threads)))

    def _tree(self, level: list[distributed.Future], futures: list[distributed.Future]) -> distributed.Future:
        """Submit the tasks that add ``level`` up, ``FAN_IN`` at a time, to one root."""
        while len(level) > 1:
            level = [self.client.submit(_add_task, *level[i:i + FAN_IN], pure=False)
                     for i in range(0, len(level), FAN_IN)]
            futures += level
        return level[0]

    def _watch(self, leaves: list[distributed.Future], ranges: list[ByteRange], total: int,
               reporter: Reporter) -> None:
        """Report the bytes of finished ranges until all are counted; raise a task's error."""
        pending = dict(zip(leaves, ranges, strict=True))
        done = 0
        while pending:
            for future in [f for f in pending if f.done()]:
                if future.status != "finished":
                    future.result()  # raises the task's own error (FormatError, ...)
                    raise RuntimeError(f"A Dask counting task ended as {future.status}.")
                done += pending.pop(future).size
            reporter.update("count", done, total)  # also polls the cancel check
            if pending:
                time.sleep(POLL_SECONDS)

    def _stop(self, futures: list[distributed.Future], stop: distributed.Event) -> None:
        """Cancel every task and wait until none of them still runs on a worker."""
        keys = {future.key for future in futures}
        try:
            stop.set()  # running tasks see it after their current chunk
            self.client.cancel(futures, force=True)
            deadline = time.monotonic() + STOP_WAIT_SECONDS
            while time.monotonic() < deadline and keys & running_keys(self.client):
                time.sleep(POLL_SECONDS)
            stop.clear()  # forgets the event on the scheduler
        except Exception:  # noqa: BLE001 - the scheduler is gone (nothing runs there); the first error stands
            pass


def running_keys(client: distributed.Client) -> set[Any]:
    """The keys of the tasks running right now on any worker of ``client``'s cluster."""
    per_worker = client.run(_active_keys)
    return {key for keys in per_worker.values() for key in keys}


def _active_keys(dask_worker: distributed.Worker) -> list[Any]:
    return list(dask_worker.active_keys)


def _count_task(part: ByteRange, tally_args: TallyArgs, safe_cuts: bool, max_chunk_chars: int,
                stop_name: str) -> bytes:
    """What a worker runs for one range: count it (stopping early if the training was cancelled)."""
    stop = distributed.Event(stop_name)  # the worker's own client asks the scheduler
    asked = time.monotonic()

    def stopped() -> bool:
        nonlocal asked
        if time.monotonic() - asked < STOP_CHECK_SECONDS:
            return False
        asked = time.monotonic()
        return bool(stop.is_set())

    return _pack(count_range(part, tally_args, safe_cuts=safe_cuts, max_chunk_chars=max_chunk_chars,
                             stopped=stopped))


def _add_task(*tables: bytes) -> bytes:
    """What a worker runs for one node of the tree: the sum of its children's tables."""
    return _pack(add_counts(*map(pickle.loads, tables)))


def _pack(counts: dict[str, int]) -> bytes:
    return pickle.dumps(counts, protocol=pickle.HIGHEST_PROTOCOL)

