"""Two halves at once: a task on the strings below a sampled median string, and on the rest, one half in a forked child.

Pruning's answers are independent per string, so the strings may be cut anywhere; cutting at a
median string keeps the two halves' prefix tries apart (they share few nodes), so the work
splits evenly and is not done twice. The child is *forked*: it reads the task and its inputs
from the memory it shares with the parent at the fork (nothing is pickled on the way in), and
sends back only its result, pickled (flat arrays pickle as bytes). The parent does the other
half meanwhile and merges. Where forking is not possible or not safe (no ``fork`` start
method, other threads running, or a daemon process, which may not have children),
:func:`can_fork` says so and the caller runs serially.
"""

from __future__ import annotations

import multiprocessing
import pickle
import threading
from collections.abc import Callable, Sequence
from itertools import compress, repeat
from multiprocessing.connection import Connection
from operator import lt, not_
from typing import TypeVar

T = TypeVar("T")
MIN_STRINGS = 20_000  # below this, a fork (~10-50 ms) costs more than half the work saves


def can_fork(n_strings: int, workers: int) -> bool:
    """Whether :func:`in_two` should be used for ``n_strings`` strings with ``workers`` processes."""
    return (
        workers >= 2 and n_strings >= MIN_STRINGS and threading.active_count() == 1
        and "fork" in multiprocessing.get_all_start_methods() and not multiprocessing.current_process().daemon
    )


def halves(strings: Sequence[str]) -> tuple[list[int], list[int]]:
    """Positions of the strings below a median string (of a sample of about 4096), and of the others."""
    sample = sorted(strings[:: max(1, len(strings) // 4096)])
    pivot = sample[len(sample) // 2]
    low = list(map(lt, strings, repeat(pivot)))
    return list(compress(range(len(strings)), low)), list(compress(range(len(strings)), map(not_, low)))


def in_two(strings: Sequence[str], task: Callable[[list[int]], T]) -> tuple[tuple[list[int], list[int]], tuple[T, T]]:
    """``task`` on each of the :func:`halves` of ``strings`` (given its positions), the second
    half in a forked child; returns the halves and the two results."""
    parts = halves(strings)
    ctx = multiprocessing.get_context("fork")
    reader, writer = ctx.Pipe(duplex=False)
    child = ctx.Process(target=_child, args=(writer, task, parts[1]))  # forked: nothing here is pickled
    try:
        child.start()
        writer.close()
        mine = task(parts[0])
        try:
            theirs: T = pickle.loads(reader.recv_bytes())
        except EOFError:
            raise RuntimeError("the forked pruning process died before sending its half; see its error above") from None
    finally:
        reader.close()
        child.join()
    return parts, (mine, theirs)


def _child(writer: Connection, task: Callable[[list[int]], T], part: list[int]) -> None:
    writer.send_bytes(pickle.dumps(task(part), protocol=pickle.HIGHEST_PROTOCOL))
    writer.close()
