"""Count the pre-tokens of corpus files on every core: one ``{pre_token: count}`` for any trainer.

:func:`count_pretokens` counts the corpus in worker processes, each reading byte ranges of the
files itself (``byte_ranges.plan_ranges`` cuts them at document boundaries, shrinking towards
the end so the workers finish together), and adds up one table per worker (dicts, or for
byte-level BPE ``byte_table.ByteTable`` arrays, which travel as buffers and add up in numpy); a
small corpus is read here, in the chunks of :func:`engine.trainers.corpus.iter_documents`
(whole documents, or over-long ones cut where no piece changes). Both cut where pre-tokenization restarts anyway, so
the counts are the same. Each process counts with a :class:`tally.Tally`: in each chunk the
special tokens are cut out (longest match first, so they are never counted); each stretch
between them is normalized, split and counted. How a stretch is counted depends on the split, always with the result of
``Counter(split(normalize(stretch)))``:

- ``"bert"`` and ``"whitespace"`` never join across whitespace (``corpus.WORD_SPLITS``), so the
  stretch is cut into whitespace-separated words, counted in C (``str.split`` + ``Counter``),
  and at the end BERT's split runs once per *distinct* word, each piece taking the word's count.
  Most words repeat, so this is several times faster than splitting the text.
- :data:`tally.CHAR_PATTERN` (one piece per character) counts characters in C.
- Anything else is split and counted stretch by stretch. The trick is not exact for the
  gpt2/gpt4/o200k patterns, whose pieces take the space before a word (and cost as much to
  count as to split, ``docs/perf-notes.md``), nor for a custom regex or a callable. The named
  patterns split ASCII text with their ``re`` twins (``engine.ascii_split``), as encoding does.

With ``num_workers`` N, N - 1 workers start and this process counts as the Nth: each takes the
next range from a shared index as it finishes one, so nobody waits idle and one table fewer
travels (spm BPE on en_5M counted in 0.12-0.13 s with one worker beside this process, 0.14-0.16 s
with two workers and this process waiting, 0.17 s alone). Workers are forked when this process
has one thread (fast, no importable ``__main__`` needed), else spawned; a worker that dies raises
instead of hanging. No process reads text for another: each opens the files and reads its own
ranges (this process used to read, decode and pickle every chunk for the workers, ~1.1 s of its
CPU on en_100M). Progress is stage ``"count"`` in bytes of finished ranges (this process's
chunks too); each update polls the cancel check. A worker dies with
this process, even a SIGKILLed one (``engine.processes.die_with_parent``), and ``num_workers``
is bounded by ``limits.check_workers``. Inside ``cluster.counting_on(address)`` a Dask cluster counts instead
(``trainers/distributed.py``), with the same result.

Pattern matching on each chunk has a CPU-time budget that grows with the chunk's length
(``limits.chunk_seconds``, at the rate of ``limits.pattern_budget``, resolved here and carried to
every worker with the split): a custom pattern that backtracks without end raises
``limits.PatternTooSlow`` naming the pattern, instead of counting until the job's time limit.
The named patterns, the word splits and the character split are never charged.

Left out: reading and cutting files (``corpus.py``, ``byte_ranges.py``) and what the counts are
for.

Internal: not part of the engine's API (``engine.PUBLIC_MODULES``).
"""

from __future__ import annotations

import functools
import multiprocessing
import os
import queue
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Literal, overload

from engine.ascii_split import pretoken_split
from engine.normalizers import Normalizer
from engine.processes import die_with_parent
from engine.trainers.base import Reporter
from engine.trainers.byte_ranges import ByteRange, guided_range_bytes, plan_ranges, tally_range
from engine.trainers.byte_table import ByteTable, hashed_table
from engine.trainers.corpus import MAX_CHUNK_CHARS, cuts_are_safe, iter_documents
from engine.trainers.limits import check_workers, max_workers, pattern_rate
from engine.trainers.remote_counting import active_cluster
from engine.trainers.tally import Splitter, Summary, Tally, TallyArgs

__all__ = ["add_counts", "count_pretokens"]

# Smaller corpora are counted without starting workers (the default). From 2 MB, one worker beside
# this process wins: whole `train` processes, --num-workers 2 against 1, medians of 5-9 alternated
# pairs: byte-level BPE 0.91x at 2 MB and 0.94x at 3 MB of English, spm BPE 0.98x at 2-3 MB and
# 0.95x at 5 MB; at 1 MB (one range) it is equal.
_IN_PROCESS_BYTES = 2 << 20


@overload
def count_pretokens(files: Sequence[str | Path], *, packed: Literal[True], **options: Any) -> ByteTable: ...
@overload
def count_pretokens(files: Sequence[str | Path], *, packed: Literal[False] = ..., **options: Any) -> dict[str, int]: ...


def count_pretokens(
    files: Sequence[str | Path],
    *,
    special_tokens: Iterable[str] = (),
    split: str | Splitter = "gpt2",
    normalizer: Normalizer | None = None,
    num_workers: int | None = None,
    reporter: Reporter | None = None,
    max_chunk_chars: int = MAX_CHUNK_CHARS,
    safe_cuts: bool | None = None,
    in_process_bytes: int = _IN_PROCESS_BYTES,
    packed: bool = False,
    summary: Summary | None = None,
) -> Any:
    """Count the pre-tokens of ``files``: ``{pre_token: occurrences}``, or with ``packed`` the
    same counts as a :class:`ByteTable` (byte-level BPE's: each worker sends its table as arrays
    and the sum is numpy's, instead of this process adding dicts key by key), or with
    ``summary`` what its parts add up to (each counting process makes its part of its own table:
    ``tally.Summary``; a Dask cluster's or a single process's table is one part).

    ``split`` is a pre-tokenizer spec for :func:`engine.pretokenizers.get_pretokenizer` (a name
    or a regex; :data:`CHAR_PATTERN` counts characters) or a picklable callable
    ``str -> list[str]``. ``normalizer`` (picklable) runs on each stretch between special
    tokens before splitting. Special tokens are never counted. ``num_workers`` defaults to the
    CPUs available, except that corpora under ``in_process_bytes`` are then counted in this
    process (workers cost a fork and a count table sent back each, which a cheap split does not
    win back on a small corpus); 1 means no worker processes. ``safe_cuts`` (default: whenever
    ``corpus.cuts_are_safe``) allows cutting over-long documents, as ``corpus.py`` explains.
    Raises ``FormatError`` on a file that is not UTF-8 and ``TrainingCancelled`` within ~0.2 s of
    a cancel request.
    """
    specials = tuple(special_tokens)
    if isinstance(split, str):
        pretoken_split(split)  # a bad spec raises ConfigError here, not in a worker
    rate = pattern_rate()  # this context's, carried to the workers (a context does not travel)
    if safe_cuts is None:
        safe_cuts = cuts_are_safe(split, normalizer)
    reporter = reporter or Reporter()
    total = sum(os.path.getsize(f) for f in files)
    if num_workers is None:  # auto: all CPUs, but small corpora are not worth starting workers
        workers = max_workers() if total >= in_process_bytes else 1
    else:
        check_workers(num_workers, per_cpu=False)  # the options checked the CPUs; a test may want 2 on 1
        workers = num_workers
    reporter.update("count", 0, total, force=True)
    tally_args = (split, specials, normalizer, rate)
    if (cluster := active_cluster()) is None and workers > 1:  # the workers pack or summarise their tables
        result = _count_in_workers(files, total, workers, tally_args, safe_cuts=safe_cuts,
                                   max_chunk_chars=max_chunk_chars, reporter=reporter, packed=packed, summary=summary)
    else:
        if cluster is not None:
            counts = cluster.count(files, tally_args, safe_cuts=safe_cuts, max_chunk_chars=max_chunk_chars,
                                   reporter=reporter)
        else:
            tally = Tally(*tally_args)
            for text, done in iter_documents(files, specials, max_chunk_chars=max_chunk_chars, safe_cuts=safe_cuts):
                tally.add(text)
                reporter.update("count", done, total)
            counts = tally.result()
        if summary is not None:  # one table: one part
            result = summary.summed([summary.of(counts)])
        else:
            result = ByteTable.of(counts) if packed and isinstance(counts, dict) else counts
    reporter.update("count", total, total, force=True)
    return result


class _RangePool:
    """The planned ranges, each handed once to whichever counting process asks first (the workers
    and this process): one shared index under a lock, so the fastest counter takes the next."""

    def __init__(self, ctx: Any, ranges: list[ByteRange]) -> None:
        self.ranges = ranges
        self._next = ctx.Value("q", 0)  # with its own lock

    def claim(self) -> ByteRange | None:
        with self._next.get_lock():
            taken = self._next.value
            if taken >= len(self.ranges):
                return None
            self._next.value = taken + 1
        return self.ranges[taken]


def _worker(pool: _RangePool, results: multiprocessing.Queue, tally_args: TallyArgs,
            safe_cuts: bool, max_chunk_chars: int, parent_pid: int, packed: bool, summary: Summary | None) -> None:
    """Count ranges from ``pool`` until none is left, saying when each is done; then send the
    counts back (``packed``: as a hashed :class:`ByteTable`; ``summary``: as its part)."""
    # The parent may be SIGKILLed while this counts or sends: never outlive it.
    if not die_with_parent(parent_pid=parent_pid):
        os._exit(1)
    try:
        tally = Tally(*tally_args)
        while (task := pool.claim()) is not None:
            tally_range(tally, task, safe_cuts=safe_cuts, max_chunk_chars=max_chunk_chars)
            results.put(("done", task.size))
        table = tally.result()
        results.put(("counts", summary.of(table) if summary else hashed_table(table) if packed else table))
    except BaseException as exc:  # noqa: BLE001 - handed to the parent, which re-raises it
        results.put(("error", exc))


class _Gathering:
    """What the workers have said so far: the bytes they finished and their tables; a worker's
    error is raised here, and so is a worker's death."""

    def __init__(self, procs: list[Any], results: multiprocessing.Queue) -> None:
        self.procs, self.results = procs, results
        self.done = 0
        self.parts: list[Any] = []

    def read(self, timeout: float | None) -> None:
        """Take every message there is, waiting up to ``timeout`` seconds for the first (None: none)."""
        while True:
            try:
                kind, value = self.results.get(timeout=timeout) if timeout else self.results.get_nowait()
            except queue.Empty:
                dead = [p.exitcode for p in self.procs if p.exitcode not in (None, 0)]
                if dead:
                    raise RuntimeError(f"A pre-token counting worker died (exit code {dead[0]}).") from None
                return
            if kind == "error":
                raise value
            if kind == "done":
                self.done += value
            else:
                self.parts.append(value)
            timeout = None


def _count_in_workers(files: Sequence[str | Path], total: int, workers: int, tally_args: TallyArgs, *,
                      safe_cuts: bool, max_chunk_chars: int, reporter: Reporter, packed: bool,
                      summary: Summary | None) -> Any:
    # 1. Plan the ranges: each counter reads its own, and takes the next when done.
    ranges = list(plan_ranges(files, tally_args[1], safe_cuts=safe_cuts,
                              step=functools.partial(guided_range_bytes, workers)))
    workers = max(1, min(workers, len(ranges)))
    # 2. Start workers - 1 processes; this process is the last counter. Forking is fast and needs
    #    no importable __main__, but is only safe in a single-threaded parent; otherwise spawn.
    single = threading.active_count() == 1 and "fork" in multiprocessing.get_all_start_methods()
    ctx = multiprocessing.get_context("fork" if single else "spawn")
    pool = _RangePool(ctx, ranges)
    results: multiprocessing.Queue = ctx.Queue()
    procs = [ctx.Process(target=_worker, daemon=True,
                         args=(pool, results, tally_args, safe_cuts, max_chunk_chars, os.getpid(), packed, summary))
             for _ in range(workers - 1)]
    for proc in procs:
        proc.start()
    heard = _Gathering(procs, results)
    try:
        # 3. Count ranges here too, hearing from the workers after each chunk (progress, errors,
        #    cancel: ``reporter.update`` raises on a cancel request).
        tally = Tally(*tally_args)
        counted = 0

        def between_chunks() -> bool:
            heard.read(timeout=None)
            reporter.update("count", heard.done + counted, total)
            return False

        while (task := pool.claim()) is not None:
            tally_range(tally, task, safe_cuts=safe_cuts, max_chunk_chars=max_chunk_chars, stopped=between_chunks)
            counted += task.size
        # Summarised, or packed and hashed in its own order, while the workers do theirs: the
        # workers' tables come later (each hashes and sorts its own, then it travels), and this
        # process's hashing fills that wait instead of starting the sum.
        table = tally.result()
        mine = summary.of(table) if summary else ByteTable.of(table).with_hashes() if packed else table
        del tally
        # 4. Then one table from each worker (before joining: a worker exits once its table is sent).
        while len(heard.parts) < len(procs):
            heard.read(timeout=0.1)
            reporter.update("count", heard.done + counted, total)
        for proc in procs:
            proc.join()
    finally:
        for proc in procs:
            if proc.is_alive():
                proc.terminate()
                proc.join()
    # 5. Add up.
    parts = [mine, *heard.parts]
    if summary is not None:
        return summary.summed(parts)
    return ByteTable.summed(parts) if packed else add_counts(*parts)


def add_counts(*parts: dict[str, int]) -> dict[str, int]:
    """The sum of several count tables, added into the largest (which is changed)."""
    counts = max(parts, key=len)
    for part in parts:
        if part is not counts:
            for piece, n in part.items():
                counts[piece] = counts.get(piece, 0) + n
    return counts
