"""Count the pre-tokens (words) of corpus files, streaming and on several cores.

Files are cut into byte ranges at line ends; each worker decodes its range, removes special
tokens, normalizes, splits on whitespace and counts. Splitting on whitespace first and running
the pre-tokenizer once per *distinct* whitespace token at the end gives the same counts as
pre-tokenizing the whole text, for pre-tokenizers that never join across whitespace (BERT's,
whitespace splitting), and is several times faster. Other pre-tokenizers run on the chunk text.

This is a stop-gap for the WordPiece and baseline trainers until ``trainers/corpus.py`` offers
the same; it knows nothing of models.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
from collections import Counter, defaultdict
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor, wait
from functools import partial
from pathlib import Path

import regex

from engine.errors import FormatError
from engine.normalizers import get_normalizer
from engine.pretokenizers import get_pretokenizer
from engine.trainers.base import Reporter

CHUNK_BYTES = 8 << 20
DOCUMENT_SEPARATOR = "<|endoftext|>"
_LOCAL = ("bert", "whitespace")  # pre-tokenizers that never join pieces across whitespace
# str.split() also splits on U+001C..U+001F, which the pre-tokenizers' \s does not.
_ODD_SPACE = regex.compile(r"[\x1c-\x1f]")
_NON_SPACE = regex.compile(r"\S+")


def _normalize(spec: str | None, text: str) -> str:
    normalizer = get_normalizer(spec)
    return normalizer.normalize(text) if normalizer is not None else text


def byte_ranges(path: Path, size: int = CHUNK_BYTES) -> list[tuple[Path, int, int]]:
    """Cut a file into ranges of about ``size`` bytes that end just after a newline."""
    total = path.stat().st_size
    ranges = []
    with path.open("rb") as handle:
        start = 0
        while start < total:
            handle.seek(min(start + size, total))
            handle.readline()
            end = min(handle.tell(), total)
            ranges.append((path, start, end))
            start = end
    return ranges


def _count_spans(
    spans: list[tuple[Path, int, int]], *, normalizer: str | list[str], pre_tokenizer: str, drop: tuple[str, ...]
) -> Counter[str]:
    counts: Counter[str] = Counter()
    for span in spans:
        counts.update(_count_range(span, normalizer=normalizer, pre_tokenizer=pre_tokenizer, drop=drop))
    if pre_tokenizer != "bert":
        return counts
    # BERT's split of each distinct whitespace token, done in C: the tokens seen n times are
    # joined by newlines (which no piece crosses) and split and counted in one go.
    by_count: dict[int, list[str]] = defaultdict(list)
    for token, n in counts.items():
        by_count[n].append(token)
    findall = get_pretokenizer("bert").pieces
    words: Counter[str] = Counter()
    for n, tokens in sorted(by_count.items()):
        pieces = Counter(findall("\n".join(tokens)))
        if not words:
            words = pieces if n == 1 else Counter({p: c * n for p, c in pieces.items()})
            continue
        for piece, c in pieces.items():
            words[piece] += c * n
    return words


def _decode_range(span: tuple[Path, int, int]) -> str:
    path, start, end = span
    with path.open("rb") as handle:
        handle.seek(start)
        data = handle.read(end - start)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FormatError(
            f"The corpus is not UTF-8 text (byte {start + exc.start} cannot be decoded); convert it to UTF-8.",
            source=str(path),
        ) from None
    return text


def _count_range(
    span: tuple[Path, int, int], *, normalizer: str | list[str], pre_tokenizer: str, drop: tuple[str, ...]
) -> list[str]:
    text = _decode_range(span)
    for token in drop:
        if token in text:
            text = text.replace(token, " ")
    text = _normalize(normalizer, text)
    if pre_tokenizer not in _LOCAL:
        return get_pretokenizer(pre_tokenizer).pieces(text)
    return _NON_SPACE.findall(text) if _ODD_SPACE.search(text) else text.split()


def count_words(
    files: Sequence[Path],
    *,
    normalizer: str | list[str] | None,
    pre_tokenizer: str,
    drop: Sequence[str] = (),
    reporter: Reporter | None = None,
    workers: int | None = None,
) -> Counter[str]:
    """Count the normalized pre-tokens of ``files`` (``drop`` strings, and the document separator, are removed)."""
    reporter = reporter or Reporter()
    spans = [span for path in files for span in byte_ranges(Path(path))]
    work = partial(
        _count_spans,
        normalizer=list(normalizer) if isinstance(normalizer, list | tuple) else (normalizer or "none"),
        pre_tokenizer=pre_tokenizer,
        drop=tuple(sorted({*drop, DOCUMENT_SEPARATOR}, key=len, reverse=True)),
    )
    workers = workers or min(2, os.cpu_count() or 1)
    reporter.update("counting", 0, len(spans), force=True)
    if workers == 1 or len(spans) == 1:
        counts = work(spans)
    else:
        # Each worker counts every `workers`-th range and returns one Counter: merging
        # Counters is a Python loop, so it is done once per worker, not once per range.
        # Fork is fast but only safe in a single-threaded parent (the web worker may not be).
        fork = threading.active_count() == 1 and "fork" in multiprocessing.get_all_start_methods()
        pool = ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("fork" if fork else "spawn"))
        try:
            futures = [pool.submit(work, spans[i::workers]) for i in range(workers)]
            while not all(f.done() for f in futures):
                wait(futures, timeout=0.2)
                reporter.update("counting", 0, len(spans))  # polls the cancel check
            parts = [f.result() for f in futures]
        finally:
            # On cancel, do not wait for the workers: they finish their share and exit.
            pool.shutdown(wait=False, cancel_futures=True)
        counts = parts[0]
        for part in parts[1:]:
            counts.update(part)
    reporter.update("counting", len(spans), len(spans), force=True)
    return counts


def _count_chars_in(spans: list[tuple[Path, int, int]], *, normalizer: str | list[str], drop: tuple[str, ...]) -> Counter[str]:
    counts: Counter[str] = Counter()
    for span in spans:
        text = _decode_range(span)
        for token in drop:
            text = text.replace(token, "")
        counts.update(_normalize(normalizer, text))
    return counts


def count_chars(
    files: Sequence[Path], *, normalizer: str | list[str] | None, drop: Sequence[str] = (), reporter: Reporter | None = None
) -> Counter[str]:
    """Count the characters of ``files`` after normalization (``drop`` strings removed)."""
    reporter = reporter or Reporter()
    spans = [span for path in files for span in byte_ranges(Path(path))]
    reporter.update("counting", 0, len(spans), force=True)
    counts = _count_chars_in(
        spans,
        normalizer=list(normalizer) if isinstance(normalizer, list | tuple) else (normalizer or "none"),
        drop=tuple(sorted({*drop, DOCUMENT_SEPARATOR}, key=len, reverse=True)),
    )
    reporter.update("counting", len(spans), len(spans), force=True)
    return counts
