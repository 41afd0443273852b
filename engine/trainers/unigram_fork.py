"""Two tasks at once, one of them in a forked child: the Unigram trainer's seed and pruning use it.

:func:`forked_pair` runs one task here and the other in a forked child. The child reads the
task and its inputs from the memory it shares with the parent at the fork (nothing is pickled
on the way in), and sends back only its result, pickled (flat arrays and joined strings pickle
cheaply). Where forking is not possible or not safe (no ``fork`` start method, other threads
running, or a daemon process, which may not have children), :func:`fork_possible` says so
(the E-step shards of ``unigram_shards`` ask it too) and the caller runs serially. The child
dies with its parent (``engine.processes.die_with_parent``), and is killed at once when the
parent's own half fails or is cancelled.

:func:`in_two` is pruning's use: the strings cut at a sampled median string, since answers are
independent per string, and cutting at a median keeps the two halves' prefix tries apart (they
share few nodes), so the work splits evenly and is not done twice.
"""

from __future__ import annotations

import multiprocessing
import os
import pickle
import threading
from collections.abc import Callable, Sequence
from itertools import compress, repeat
from multiprocessing.connection import Connection
from operator import lt, not_
from typing import TypeVar

from engine.processes import die_with_parent

T = TypeVar("T")
U = TypeVar("U")
MIN_STRINGS = 20_000  # below this many strings (or words), a fork (~10-50 ms) costs more than half the work saves


def fork_possible() -> bool:
    """Whether this process may fork a child safely: the ``fork`` start method exists, no other
    thread runs (a fork copies only the calling thread, and any lock another one holds), and it
    is not a daemon (daemons may not have children)."""
    return (
        threading.active_count() == 1 and "fork" in multiprocessing.get_all_start_methods()
        and not multiprocessing.current_process().daemon
    )


def can_fork(n_strings: int, workers: int) -> bool:
    """Whether :func:`in_two` should be used for ``n_strings`` strings with ``workers`` processes."""
    return workers >= 2 and n_strings >= MIN_STRINGS and fork_possible()


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
    return parts, forked_pair(lambda: task(parts[0]), lambda: task(parts[1]))


def forked_pair(here: Callable[[], T], there: Callable[[], U]) -> tuple[T, U]:
    """``here()`` in this process while ``there()`` runs in a forked child; both results."""
    ctx = multiprocessing.get_context("fork")
    reader, writer = ctx.Pipe(duplex=False)
    child = ctx.Process(target=_child, args=(writer, there, os.getpid()))  # forked: nothing here is pickled
    try:
        child.start()
        writer.close()
        mine = here()
        try:
            theirs: U = pickle.loads(reader.recv_bytes())
        except EOFError:
            raise RuntimeError("a forked Unigram training process died before sending its result; see its error above") from None
    except BaseException:
        # Cancelled or failed here: the child's half is wasted work, so do not wait for it.
        if child.pid is not None and child.is_alive():
            child.kill()
        raise
    finally:
        reader.close()
        if child.pid is not None:
            child.join()
    return mine, theirs


def _child(writer: Connection, task: Callable[[], object], parent_pid: int) -> None:
    # Its half may hold a gigabyte: it must not outlive a parent that was killed.
    if not die_with_parent(parent_pid=parent_pid):
        os._exit(1)
    writer.send_bytes(pickle.dumps(task(), protocol=pickle.HIGHEST_PROTOCOL))
    writer.close()
