"""Read corpus files as a stream of chunks and count their pre-tokens on every core.

Every trainer starts here. :func:`iter_documents` reads files in blocks (a whole file is never
one string) and yields chunks that end where pre-tokenization restarts anyway: right after a
special token (a document boundary), or, inside a document longer than a chunk, at a *safe
cut*. :func:`count_pretokens` sends the chunks to worker processes, which split each chunk on
the special tokens (longest match first, so a special token is never part of a pre-token),
normalize, pre-tokenize and count; the result is one ``{pre_token: count}`` dict.

Why the safe cut is safe: it is placed before a ``" "`` or ``"\\n"`` that has a letter on
both sides. Under the GPT-2, GPT-4 and o200k patterns, whitespace splitting and BERT's split,
a piece that ends in a letter never takes the whitespace after it (letter runs stop at
whitespace, and only whitespace-run pieces look ahead), and a piece starting at that single
whitespace character is the same whether the text before it is there or not. So cutting there
changes no piece. A custom regex, a callable splitter or a normalizer gives no such guarantee,
so then documents are only cut at special tokens (an over-long document is held whole).

Left out: what the counts are for (that is each trainer's business) and any model logic.
Files must be UTF-8; bytes are read as they are (no newline translation).
"""

from __future__ import annotations

import codecs
import functools
import multiprocessing
import os
import queue
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path

import regex

from engine.errors import FormatError
from engine.normalizers import Normalizer
from engine.pretokenizers import HF_BYTELEVEL_PATTERN, get_pretokenizer
from engine.trainers.base import Reporter

Splitter = Callable[[str], list[str]]
"""Cuts ordinary text into pre-tokens; must be picklable when workers are used."""

MAX_CHUNK_CHARS = 1 << 20
SAFE_CUT_SPECS = frozenset({"gpt2", "gpt4", "o200k", "whitespace", "bert"})
_SAFE_CUT = regex.compile(r"(?r)(?<=\p{L})[ \n](?=\p{L})")
_IN_PROCESS_BYTES = 4 << 20  # smaller corpora are counted without starting workers


def special_pattern(special_tokens: Iterable[str]) -> regex.Pattern[str] | None:
    """An alternation of the special tokens, longest first, so the longest match wins."""
    tokens = sorted(set(special_tokens), key=lambda t: (-len(t), t))
    return regex.compile("|".join(map(regex.escape, tokens))) if tokens else None


def _cut(buf: str, start: int, specials: regex.Pattern[str] | None, longest: int, safe_cuts: bool,
         want: int) -> int:
    """Where to end the next chunk of ``buf`` (0: read more first); ``buf[:start]`` holds no cut."""
    # A special token match only counts if the longest special could have matched at its start,
    # else "<|a|>" might be the start of a longer special cut off by the end of the buffer.
    usable = len(buf) - longest
    if specials is not None:
        end = 0
        for match in specials.finditer(buf, start, len(buf)):
            if match.start() > usable:
                break
            end = match.end()
        if end:
            return end
    if safe_cuts and len(buf) >= want:
        match = _SAFE_CUT.search(buf, max(want // 2, start), max(usable, 0))
        if match is not None:
            return match.start()
    return 0


def iter_documents(
    files: Sequence[str | Path],
    special_tokens: Iterable[str] = (),
    *,
    max_chunk_chars: int = MAX_CHUNK_CHARS,
    safe_cuts: bool = True,
) -> Iterator[tuple[str, int]]:
    """Yield ``(chunk, bytes_read)``: the files' text in chunks of whole documents.

    A chunk ends right after a special token, at a safe cut inside an over-long document (only
    with ``safe_cuts``; see the module docstring), or at the end of a file, and is about
    ``max_chunk_chars`` long. ``bytes_read`` counts the bytes of all files read so far (for
    progress). Raises :class:`FormatError` on a file that is not UTF-8.
    """
    special_tokens = tuple(special_tokens)
    specials = special_pattern(special_tokens)
    longest = max((len(t) for t in special_tokens), default=1)
    done = 0
    for path in files:
        decoder = codecs.getincrementaldecoder("utf-8")()
        buf = ""
        start = 0  # buf[:start] was searched for a cut in vain (keeps a long document linear)
        with open(path, "rb") as stream:
            while True:
                block = stream.read(max_chunk_chars)
                try:
                    buf += decoder.decode(block, final=not block)
                except UnicodeDecodeError as exc:
                    raise FormatError(
                        f"The corpus is not UTF-8 near byte {stream.tell() - len(block) + exc.start}; "
                        "convert it to UTF-8 first.",
                        source=str(path),
                    ) from None
                done += len(block)
                while len(buf) >= max_chunk_chars:
                    end = _cut(buf, start, specials, longest, safe_cuts, max_chunk_chars)
                    if not end:
                        start = max(len(buf) - longest, 0)
                        break
                    yield buf[:end], done
                    buf = buf[end:]
                    start = 0
                if not block:
                    break
        if buf:
            yield buf, done


def split_specials(text: str, specials: regex.Pattern[str] | None) -> list[str]:
    """The non-empty stretches of ``text`` between special tokens (the tokens dropped)."""
    if specials is None:
        return [text] if text else []
    return [part for part in specials.split(text) if part]


@functools.cache
def _splitter(spec: str) -> Splitter:
    if spec == "gpt2":
        # The same pieces as PATTERNS["gpt2"] (tests check it), about 12% faster in `regex`.
        return regex.compile(HF_BYTELEVEL_PATTERN).findall
    return get_pretokenizer(spec).pieces


def count_chunk(
    text: str,
    split: str | Splitter,
    specials: regex.Pattern[str] | None,
    normalizer: Normalizer | None = None,
    into: Counter[str] | None = None,
) -> Counter[str]:
    """Count the pre-tokens of one chunk (``split`` is a pre-tokenizer spec or a splitter)."""
    pieces = _splitter(split) if isinstance(split, str) else split
    counter: Counter[str] = Counter() if into is None else into
    for segment in split_specials(text, specials):
        counter.update(pieces(normalizer.normalize(segment) if normalizer else segment))
    return counter


def _worker(tasks: multiprocessing.Queue, results: multiprocessing.Queue, split: str | Splitter,
            special_tokens: tuple[str, ...], normalizer: Normalizer | None) -> None:
    """Count every chunk from ``tasks`` into one Counter; send it back on the ``None`` sentinel."""
    try:
        specials = special_pattern(special_tokens)
        counter: Counter[str] = Counter()
        while (task := tasks.get()) is not None:
            count_chunk(task, split, specials, normalizer, counter)
            results.put(("progress", len(task)))
        results.put(("counts", dict(counter)))
    except BaseException as exc:  # noqa: BLE001 - handed to the parent, which re-raises it
        results.put(("error", exc))


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
) -> dict[str, int]:
    """Count the pre-tokens of ``files``: ``{pre_token: occurrences}``.

    ``split`` is a pre-tokenizer spec for :func:`engine.pretokenizers.get_pretokenizer` (a name
    or a regex) or a picklable callable ``str -> list[str]``. ``normalizer`` (picklable) runs
    on each stretch between special tokens before splitting. Special tokens are never counted.
    ``num_workers`` defaults to the CPUs available (corpora under a few MB are then counted in
    this process); 1 means no worker processes. ``safe_cuts`` (default: on for the built-in pre-tokenizers without a normalizer)
    allows cutting over-long documents as the module docstring explains. Progress is reported as
    stage ``"count"`` in bytes; a cancel request raises ``TrainingCancelled`` within ~0.2 s.
    """
    specials_list = tuple(special_tokens)
    if isinstance(split, str):
        _splitter(split)  # a bad spec raises ConfigError here, not in a worker
    if safe_cuts is None:
        safe_cuts = isinstance(split, str) and split in SAFE_CUT_SPECS and normalizer is None
    reporter = reporter or Reporter()
    total = sum(os.path.getsize(f) for f in files)
    chunks = iter_documents(files, specials_list, max_chunk_chars=max_chunk_chars, safe_cuts=safe_cuts)
    if num_workers is None:  # auto: all CPUs, but small corpora are not worth starting workers
        workers = len(os.sched_getaffinity(0)) if total >= _IN_PROCESS_BYTES else 1
    else:
        workers = num_workers
    reporter.update("count", 0, total, force=True)
    if workers <= 1:
        specials = special_pattern(specials_list)
        counter: Counter[str] = Counter()
        for text, done in chunks:
            count_chunk(text, split, specials, normalizer, counter)
            reporter.update("count", done, total)
        reporter.update("count", total, total, force=True)
        return dict(counter)
    return _count_in_workers(chunks, total, workers, split, specials_list, normalizer, reporter)


def _count_in_workers(chunks: Iterator[tuple[str, int]], total: int, workers: int,
                      split: str | Splitter, special_tokens: tuple[str, ...],
                      normalizer: Normalizer | None, reporter: Reporter) -> dict[str, int]:
    # 1. Start the workers. Forking is fast and needs no importable __main__, but is only
    #    safe in a single-threaded parent; otherwise spawn fresh interpreters.
    single = threading.active_count() == 1 and "fork" in multiprocessing.get_all_start_methods()
    ctx = multiprocessing.get_context("fork" if single else "spawn")
    tasks: multiprocessing.Queue = ctx.Queue(maxsize=2 * workers)  # bounds memory in flight
    results: multiprocessing.Queue = ctx.Queue()
    procs = [ctx.Process(target=_worker, args=(tasks, results, split, special_tokens, normalizer),
                         daemon=True) for _ in range(workers)]
    for proc in procs:
        proc.start()
    parts: list[dict[str, int]] = []
    chars_done = 0

    def drain(block: bool) -> None:
        nonlocal chars_done
        try:
            kind, value = results.get(timeout=0.1) if block else results.get_nowait()
        except queue.Empty:
            dead = [p.exitcode for p in procs if p.exitcode not in (None, 0)]
            if dead:
                raise RuntimeError(f"A pre-token counting worker died (exit code {dead[0]}).")
            return
        if kind == "error":
            raise value
        if kind == "progress":
            chars_done += value
        else:
            parts.append(value)

    try:
        # 2. Feed chunks; the bounded queue makes the reader wait for the workers.
        for text, done in chunks:
            while True:
                try:
                    tasks.put(text, timeout=0.1)
                    break
                except queue.Full:
                    drain(block=False)
                    reporter.update("count", done, total)
            reporter.update("count", done, total)
        for _ in procs:
            tasks.put(None)
        # 3. Collect one Counter per worker and add them up.
        while len(parts) < len(procs):
            drain(block=True)
            reporter.update("count", total, total)
        for proc in procs:
            proc.join()
    finally:
        for proc in procs:
            if proc.is_alive():
                proc.terminate()
                proc.join()
    counts = max(parts, key=len)
    for part in parts:
        if part is not counts:
            for piece, n in part.items():
                counts[piece] = counts.get(piece, 0) + n
    reporter.update("count", total, total, force=True)
    return counts
