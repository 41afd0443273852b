"""Count the pre-tokens of corpus files on every core: one ``{pre_token: count}`` for any trainer.

:func:`count_pretokens` takes the chunks that :func:`engine.trainers.corpus.iter_documents`
reads (whole documents, or over-long ones cut where no piece changes), counts them in worker
processes and adds up one table per worker. In each chunk the special tokens are cut out
(longest match first, so they are never counted); each stretch between them is normalized,
split and counted. How a stretch is counted depends on the split, always with the result of
``Counter(split(normalize(stretch)))``:

- ``"bert"`` and ``"whitespace"`` never join across whitespace (``corpus.WORD_SPLITS``), so the
  stretch is cut into whitespace-separated words, counted in C (``str.split`` + ``Counter``),
  and at the end BERT's split runs once per *distinct* word, each piece taking the word's count.
  Most words repeat, so this is several times faster than splitting the text.
- :data:`CHAR_PATTERN` (one piece per character) counts characters in C.
- Anything else is split and counted stretch by stretch. The trick is not exact for the
  gpt2/gpt4/o200k patterns, whose pieces take the space before a word (and cost as much to
  count as to split, ``docs/benchmarks.md``), nor for a custom regex or a callable. The named
  patterns split ASCII text with their ``re`` twins (``engine.ascii_split``), as encoding does.

Workers are forked when this process has one thread (fast, no importable ``__main__``
needed), else spawned; a worker that dies raises instead of hanging. Progress is stage
``"count"`` in bytes read; each update polls the cancel check. A worker dies with this process,
even a SIGKILLed one (``engine.processes.die_with_parent``), and ``num_workers`` is bounded by
``limits.check_workers``. Inside ``cluster.counting_on(address)`` a Dask cluster counts instead
(``trainers/distributed.py``), with the same result.

Pattern matching on each chunk has a CPU-time budget that grows with the chunk's length
(``limits.chunk_seconds``, at the rate of ``limits.pattern_budget``, resolved here and carried to
every worker with the split): a custom pattern that backtracks without end raises
``limits.PatternTooSlow`` naming the pattern, instead of counting until the job's time limit.
The named patterns, the word splits and the character split are never charged.

Left out: reading and cutting files (``corpus.py``) and what the counts are for.

Internal: not part of the engine's API (``engine.PUBLIC_MODULES``).
"""

from __future__ import annotations

import functools
import multiprocessing
import os
import queue
import threading
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path

import regex

from engine.ascii_split import pretoken_split
from engine.errors import EncodeTimeout
from engine.limits import shown, time_budget
from engine.normalizers import Normalizer
from engine.processes import die_with_parent
from engine.trainers.base import Reporter
from engine.trainers.corpus import (
    MAX_CHUNK_CHARS,
    WORD_SPLITS,
    cuts_are_safe,
    iter_documents,
    special_pattern,
    split_specials,
)
from engine.trainers.limits import PatternTooSlow, check_workers, chunk_seconds, max_workers, pattern_rate
from engine.trainers.remote_counting import active_cluster

Splitter = Callable[[str], list[str]]
"""Cuts ordinary text into pre-tokens; must be picklable when workers are used."""
TallyArgs = tuple[str | Splitter, tuple[str, ...], Normalizer | None, float]
"""What :class:`Tally` is built from: the split spec, the special tokens, the normalizer, and the
pattern budget in seconds per million characters (``limits.pattern_budget``)."""

CHAR_PATTERN = r"[\s\S]"
"""One piece per character (the char baseline's pre-tokenizer; Oniguruma and regex agree on it)."""
_IN_PROCESS_BYTES = 4 << 20  # smaller corpora are counted without starting workers (the default)
# str.split() also splits at U+001C..U+001F, which the pre-tokenizers' \s does not (and only there).
_ODD_SPACE = regex.compile(r"[\x1c-\x1f]")
_NON_SPACE = regex.compile(r"\S+")


@functools.cache
def words(text: str) -> list[str]:
    """The whitespace-separated words of ``text``, whitespace meaning the pre-tokenizers' ``\\s``."""
    return _NON_SPACE.findall(text) if _ODD_SPACE.search(text) else text.split()


def split_words(word_counts: dict[str, int], split: Splitter) -> dict[str, int]:
    """Pre-token counts from word counts: each distinct word is split once, pieces take its count.

    Only exact for splits that never join across whitespace. The words seen ``n`` times are
    joined by newlines and split in one call, so the loop runs once per distinct count.
    """
    by_count: dict[int, list[str]] = defaultdict(list)
    for word, n in word_counts.items():
        by_count[n].append(word)
    counts: Counter[str] = Counter()
    for n, group in by_count.items():
        add_weighted(counts, split("\n".join(group)), n)
    return dict(counts)


def add_weighted(total: Counter[str], found: list[str], weight: int) -> None:
    """Add ``weight`` to ``total`` for each of ``found``: the pieces of words seen ``weight`` times
    each. Weight 1, the commonest, is one C-level count of the list."""
    if weight == 1:
        total.update(found)
    else:
        add_scaled(total, Counter(found), weight)


def add_scaled(total: Counter[str], part: Mapping[str, int], scale: int) -> None:
    """``total[s] += scale * part[s]`` for every ``s`` in ``part``."""
    get = total.get
    for piece, n in part.items():
        total[piece] = get(piece, 0) + n * scale


class Tally:
    """One process's running count of chunks under one split; :meth:`result` gives the counts.

    ``running`` resumes from the :attr:`running` counts of an earlier tally under the same
    arguments (copied, never changed): a Dask worker carries one running count from range to
    range (``trainers/distributed.py``) as a local worker carries it from chunk to chunk.
    ``rate`` is the pattern budget of each chunk in seconds per million characters
    (``limits.pattern_rate()`` when None).
    """

    def __init__(self, split: str | Splitter, special_tokens: Iterable[str], normalizer: Normalizer | None,
                 rate: float | None = None, running: Mapping[str, int] | None = None) -> None:
        self.split = split
        self.rate = rate or pattern_rate()
        self.special_tokens = tuple(special_tokens)  # cut out, never counted
        self._specials = special_pattern(self.special_tokens)
        self._normalize = normalizer.normalize if normalizer is not None else None
        self._counter: Counter[str] = Counter(running) if running else Counter()
        self._final: Splitter | None = None  # splits the distinct words at the end, if any
        if split == CHAR_PATTERN:
            self._add: Callable[[str], None] = self._counter.update
        elif isinstance(split, str) and split in WORD_SPLITS:
            self._add = lambda text: self._counter.update(words(text))
            self._final = pretoken_split(split) if split != "whitespace" else None  # words are its pieces
        else:
            pieces = pretoken_split(split) if isinstance(split, str) else split
            self._add = lambda text: self._counter.update(pieces(text))

    def add(self, chunk: str) -> None:
        """Count one chunk (special tokens are cut out, never counted), within its pattern budget."""
        seconds = chunk_seconds(len(chunk), self.rate)
        try:
            with time_budget(seconds):
                for stretch in split_specials(chunk, self._specials):
                    self._add(self._normalize(stretch) if self._normalize else stretch)
        except EncodeTimeout:
            what = (f"The pre-tokenizer pattern {shown(self.split)}" if isinstance(self.split, str)
                    else "The pre-tokenizer (or the normalizer)")
            raise PatternTooSlow(
                f"{what} took longer than {seconds:g} s of CPU on a chunk of {len(chunk):,} characters of the "
                f"corpus (the budget is {self.rate:g} s per million characters, and a million's for a shorter chunk); "
                "it backtracks too much on this text (nested repeats such as (?:.*,){6} do). Simplify the pattern."
            ) from None

    @property
    def running(self) -> Counter[str]:
        """What has been counted so far, before the final split (words, for the word splits)."""
        return self._counter

    def result(self) -> dict[str, int]:
        """The pre-token counts of every chunk added so far."""
        return split_words(self._counter, self._final) if self._final else dict(self._counter)


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
) -> dict[str, int]:
    """Count the pre-tokens of ``files``: ``{pre_token: occurrences}``.

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
    chunks = iter_documents(files, specials, max_chunk_chars=max_chunk_chars, safe_cuts=safe_cuts)
    if num_workers is None:  # auto: all CPUs, but small corpora are not worth starting workers
        workers = max_workers() if total >= in_process_bytes else 1
    else:
        check_workers(num_workers, per_cpu=False)  # the options checked the CPUs; a test may want 2 on 1
        workers = num_workers
    reporter.update("count", 0, total, force=True)
    if (cluster := active_cluster()) is not None:
        counts = cluster.count(files, (split, specials, normalizer, rate), safe_cuts=safe_cuts,
                               max_chunk_chars=max_chunk_chars, reporter=reporter)
    elif workers <= 1:
        tally = Tally(split, specials, normalizer, rate)
        for text, done in chunks:
            tally.add(text)
            reporter.update("count", done, total)
        counts = tally.result()
    else:
        counts = _count_in_workers(chunks, total, workers, (split, specials, normalizer, rate), reporter)
    reporter.update("count", total, total, force=True)
    return counts


def _worker(tasks: multiprocessing.Queue, results: multiprocessing.Queue,
            tally_args: TallyArgs, parent_pid: int) -> None:
    """Count every chunk from ``tasks``; send the counts back on the ``None`` sentinel."""
    # A worker waits on ``tasks`` forever (it holds the queue's write end too, so it never sees
    # end-of-file): it must die with its parent, even a SIGKILLed one.
    if not die_with_parent(parent_pid=parent_pid):
        os._exit(1)
    try:
        tally = Tally(*tally_args)
        while (task := tasks.get()) is not None:
            tally.add(task)
        results.put(("counts", tally.result()))
    except BaseException as exc:  # noqa: BLE001 - handed to the parent, which re-raises it
        results.put(("error", exc))


def _count_in_workers(chunks: Iterator[tuple[str, int]], total: int, workers: int,
                      tally_args: TallyArgs,
                      reporter: Reporter) -> dict[str, int]:
    # 1. Start the workers. Forking is fast and needs no importable __main__, but is only
    #    safe in a single-threaded parent; otherwise spawn fresh interpreters.
    single = threading.active_count() == 1 and "fork" in multiprocessing.get_all_start_methods()
    ctx = multiprocessing.get_context("fork" if single else "spawn")
    tasks: multiprocessing.Queue = ctx.Queue(maxsize=2 * workers)  # bounds memory in flight
    results: multiprocessing.Queue = ctx.Queue()
    procs = [ctx.Process(target=_worker, args=(tasks, results, tally_args, os.getpid()), daemon=True)
             for _ in range(workers)]
    for proc in procs:
        proc.start()
    parts: list[dict[str, int]] = []

    def collect(timeout: float) -> None:
        """Take one message from the workers, if any; raise if a worker failed or died."""
        try:
            kind, value = results.get(timeout=timeout)
        except queue.Empty:
            dead = [p.exitcode for p in procs if p.exitcode not in (None, 0)]
            if dead:
                raise RuntimeError(f"A pre-token counting worker died (exit code {dead[0]}).") from None
            return
        if kind == "error":
            raise value
        parts.append(value)

    def send(task: str | None, done: int) -> None:
        """Queue one task; while the queue is full, watch the workers and poll the cancel check."""
        while True:
            try:
                tasks.put(task, timeout=0.1)
                break
            except queue.Full:
                collect(timeout=0)
                reporter.update("count", done, total)
        reporter.update("count", done, total)

    try:
        # 2. Feed chunks, then one sentinel per worker; the bounded queue makes the reader wait.
        done = 0
        for text, done in chunks:
            send(text, done)
        for _ in procs:
            send(None, done)
        # 3. Collect one table per worker (before joining: a worker exits once its table is sent).
        while len(parts) < len(procs):
            collect(timeout=0.1)
            reporter.update("count", total, total)
        for proc in procs:
            proc.join()
        # The workers read every task, so the queue's feeder thread ends at once. Joining it
        # matters: while it runs this process has two threads, and the next count would spawn.
        tasks.close()
        tasks.join_thread()
    finally:
        for proc in procs:
            if proc.is_alive():
                proc.terminate()
                proc.join()
        tasks.cancel_join_thread()  # after a failure it may be stuck on a full pipe; do not wait at exit
    # 4. Add up.
    return add_counts(*parts)


def add_counts(*parts: dict[str, int]) -> dict[str, int]:
    """The sum of several count tables, added into the largest (which is changed)."""
    counts = max(parts, key=len)
    for part in parts:
        if part is not counts:
            for piece, n in part.items():
                counts[piece] = counts.get(piece, 0) + n
    return counts
