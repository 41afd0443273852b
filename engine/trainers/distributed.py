"""Count pre-tokens on a Dask cluster: one running count per thread, carried from range to range, added by a tree.

This is the only module that imports Dask (the optional extra ``tokenforge[dask]``); the trainers
reach it through ``trainers/cluster.py``, which connects a :class:`ClusterCounter` around a
training, and the one hook in ``counting.count_pretokens``. The stages of :meth:`ClusterCounter.count`:

1. ``byte_ranges.plan_ranges`` cuts the files into ranges at document boundaries, on this machine,
   reading only a small window near each cut. The workers read the ranges themselves, so the
   files must be at the same path on every worker (a shared corpus folder). The ranges shrink
   towards the end (``byte_ranges.guided_range_bytes``), so the threads finish within a small
   range of each other: with 16 equal ranges of 66 MB one thread idled for seconds while the
   other ended.
2. One *lane* per thread of the cluster. A task counts one range with the trainer's own split,
   special tokens and normalizer (the specs travel, pickled; no closure over this process),
   starting from a copy of its lane's running count, the previous task's result, which Dask
   keeps in that worker's memory and hands over without sending it anywhere. So the cluster
   adds up one table per thread, as the local path adds one per worker process: with one table
   per range, adding and pickling 16 tables of 350,000 pre-tokens cost ~4 core-seconds on 1 GB.
   This process hands out the ranges as lanes finish them (one queued behind the running one),
   so a slow worker counts fewer ranges instead of holding the others up.
3. Tasks of ``FAN_IN`` lanes each finish them (the word splits split their distinct words) and add
   them up, then tasks over those, up to one root: a tree, so no single process adds every table.
   Only the root's table comes back to this process. A table travels as one pickled object
   (:class:`Counts`): Dask sends a bare ``dict`` key by key, which took 8 s for six tables of
   200,000 pre-tokens that go in 0.05 s pickled.

Progress is stage ``"count"`` in bytes of finished ranges, summed over the cluster; each update
polls the cancel check. On a cancel or any error every task is cancelled, and a Dask ``Event``
that the running tasks ask after a chunk (at most every ``STOP_CHECK_SECONDS``) stops those
already running, so none is left running on the cluster. A worker lost mid-task is Dask's to
retry: it recomputes the lost lane from its first range (the scheduler keeps each lane's lineage).

Left out: which counts the trainers want (``counting.py``) and where the scheduler address comes
from (``cluster.py``).

Internal: not part of the engine's API (``engine.PUBLIC_MODULES``).
"""

from __future__ import annotations

import functools
import sys
import time
import uuid
from collections import deque
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import distributed

from engine.errors import ConfigError
from engine.trainers.base import Reporter
from engine.trainers.byte_ranges import ByteRange, guided_range_bytes, plan_ranges, tally_range
from engine.trainers.counting import add_counts
from engine.trainers.tally import Tally, TallyArgs

FAN_IN = 8
"""Lanes (then sums) added up by one task of the tree (dask.bag's ``split_every`` default, too)."""
QUEUED_PER_LANE = 1
"""Ranges waiting behind a lane's running one, so its worker never waits for this process."""
CONNECT_SECONDS = 5.0
"""How long to try reaching the scheduler before the training fails (it has not started yet)."""
STOP_CHECK_SECONDS = 0.5
"""How often a running task asks the scheduler whether the training was cancelled (one round trip)."""
STOP_WAIT_SECONDS = 3.0
"""How long a cancel waits for running tasks to see the stop (one chunk each); the web app kills
a job that has not stopped within TOKENFORGE_CANCEL_GRACE_SECONDS (5 s)."""
POLL_SECONDS = 0.05


class Counts:
    """A count table as one object, so that Dask pickles it whole (and knows its size in memory)."""

    __slots__ = ("table",)

    def __init__(self, table: dict[str, int]) -> None:
        self.table = table

    def __reduce__(self) -> tuple[type[Counts], tuple[dict[str, int]]]:
        return Counts, (self.table,)

    def __sizeof__(self) -> int:
        # About a short str key and a small int per entry; Dask weighs moving it by this.
        return sys.getsizeof(self.table) + 90 * len(self.table)


class ClusterCounter:
    """A connection to a Dask scheduler that counts pre-tokens for ``counting.count_pretokens``."""

    def __init__(self, client: distributed.Client, *, range_bytes: int | None = None) -> None:
        self.client = client
        self.range_bytes = range_bytes  # None: shrinking ranges, see the module docstring

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
        threads = max(1, sum(self.client.nthreads().values()))
        # 1. Plan the ranges.
        step = self.range_bytes or functools.partial(guided_range_bytes, threads)
        ranges = plan_ranges(files, tally_args[1], safe_cuts=safe_cuts, step=step)
        if not ranges:
            return {}
        stop = distributed.Event(f"tokenforge-stop-{uuid.uuid4().hex}", client=self.client)
        live: list[distributed.Future] = []  # every future not yet released, for a cancel
        try:
            # 2. The lanes, 3. the tree above them.
            lanes = Lanes(self.client, live, (tally_args, safe_cuts, max_chunk_chars, stop.name))
            tails = lanes.count(deque(ranges), min(threads, len(ranges)), total, reporter)
            root = self._tree(tails, live, tally_args)
            while not root.done():  # (result(timeout=...) can fail with UnboundLocalError on a timeout)
                reporter.update("count", total, total)
                time.sleep(POLL_SECONDS)
            counts: Counts = root.result()
            return counts.table
        except BaseException:
            self._stop(live, stop)
            raise
        finally:
            for future in live:  # releases the tables the workers still hold
                future.release()

    def _tree(self, level: list[distributed.Future], live: list[distributed.Future],
              tally_args: TallyArgs) -> distributed.Future:
        """Submit the tasks that finish the lanes and add them up, ``FAN_IN`` at a time, to one root."""
        level = [self.client.submit(_finish_task, tally_args, *level[i:i + FAN_IN], pure=False)
                 for i in range(0, len(level), FAN_IN)]
        live += level
        while len(level) > 1:
            level = [self.client.submit(_add_task, *level[i:i + FAN_IN], pure=False)
                     for i in range(0, len(level), FAN_IN)]
            live += level
        return level[0]

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


class Lanes:
    """Hands the ranges to the lanes as they count them; ``count`` returns each lane's last task."""

    def __init__(self, client: distributed.Client, live: list[distributed.Future], task_args: tuple[Any, ...]) -> None:
        self.client, self.live, self.task_args = client, live, task_args
        self.size: dict[distributed.Future, int] = {}  # a submitted, unfinished task -> its range's bytes
        self.lane: dict[distributed.Future, int] = {}  # a task -> its lane
        self.before: dict[distributed.Future, distributed.Future] = {}  # a task -> the one it continues
        self.tails: list[distributed.Future | None] = []

    def count(self, todo: deque[ByteRange], lanes: int, total: int, reporter: Reporter) -> list[distributed.Future]:
        """Count every range of ``todo``; report the bytes of finished ranges; raise a task's error."""
        self.tails = [None] * lanes
        for _ in range(1 + QUEUED_PER_LANE):
            for lane in range(lanes):
                if todo:
                    self._extend(lane, todo.popleft())
        done = 0
        while self.size:
            finished = [future for future in self.size if future.done()]
            for future in finished:
                if future.status != "finished":
                    future.result()  # raises the task's own error (FormatError, ...)
                    raise RuntimeError(f"A Dask counting task ended as {future.status}.")
                done += self.size.pop(future)
                if (previous := self.before.pop(future, None)) is not None:
                    self.live.remove(previous)  # nothing needs its table any more
                    previous.release()
                if todo:
                    self._extend(self.lane[future], todo.popleft())
            reporter.update("count", done, total)  # also polls the cancel check
            if self.size and not finished:
                time.sleep(POLL_SECONDS)
        return [tail for tail in self.tails if tail is not None]

    def _extend(self, lane: int, part: ByteRange) -> None:
        """Queue ``part`` on ``lane``, after the lane's last task (Dask runs it where that one's table is)."""
        previous = self.tails[lane]
        future = self.client.submit(_count_task, previous, part, *self.task_args, pure=False)
        self.live.append(future)
        self.size[future], self.lane[future] = part.size, lane
        if previous is not None:
            self.before[future] = previous
        self.tails[lane] = future


def running_keys(client: distributed.Client) -> set[Any]:
    """The keys of the tasks running right now on any worker of ``client``'s cluster."""
    per_worker = client.run(_active_keys)
    return {key for keys in per_worker.values() for key in keys}


def _active_keys(dask_worker: distributed.Worker) -> list[Any]:
    return list(dask_worker.active_keys)


def _count_task(lane: Counts | None, part: ByteRange, tally_args: TallyArgs, safe_cuts: bool,
                max_chunk_chars: int, stop_name: str) -> Counts:
    """What a worker runs for one range: the lane's running count plus the range's (``lane`` itself,
    which Dask may hand to a retry, is not changed), stopping early if the training was cancelled."""
    stop = distributed.Event(stop_name)  # the worker's own client asks the scheduler
    asked = time.monotonic()

    def stopped() -> bool:
        nonlocal asked
        if time.monotonic() - asked < STOP_CHECK_SECONDS:
            return False
        asked = time.monotonic()
        return bool(stop.is_set())

    tally = Tally(*tally_args, running=lane.table if lane is not None else None)
    tally_range(tally, part, safe_cuts=safe_cuts, max_chunk_chars=max_chunk_chars, stopped=stopped)
    return Counts(tally.running)


def _finish_task(tally_args: TallyArgs, *lanes: Counts) -> Counts:
    """What a worker runs for one node of the tree's first level: the sum of its lanes' final counts."""
    return Counts(add_counts(*(Tally(*tally_args, running=lane.table).result() for lane in lanes)))


def _add_task(*sums: Counts) -> Counts:
    """What a worker runs for one node above: the sum of its children's tables (none is changed)."""
    largest = max(sums, key=lambda child: len(child.table))
    return Counts(add_counts(dict(largest.table), *(child.table for child in sums if child is not largest)))

