"""What keeps a Unigram training's memory bounded before it starts: sentencepiece's cap on a
sentence's length, and a refusal of a word table too big to seed on this machine.

Seeding (``seed``) counts every substring of up to ``max_piece_length + 1`` characters of every
distinct word, and the lattice (``lattice``) holds an edge for every seed piece inside a word, so
both grow with the number of such substring occurrences, 70-100 bytes each. Words are short with
``split_by_whitespace`` (a 30 MB corpus of made-up words trains in about 120 MB), but without it
every line is one word: the same corpus is then 30 million distinct characters and 480 million
substrings, and grew past 9 GB while still seeding. sentencepiece bounds the same work with
``max_sentence_length`` (longer sentences are skipped) and by sampling sentences. Here:

1. :func:`skip_long_words`: a pre-token longer than ``MAX_SENTENCE_BYTES`` (4,192, sentencepiece's
   default) is skipped, and the statistics say how many were.
2. :func:`check_memory`: the substring occurrences are counted from the words' lengths alone (no
   substring is made), and a table whose estimate exceeds what this process may allocate
   (``limits.memory_ceiling``: the job's ``RLIMIT_AS`` or the machine's memory) is refused at
   once with the figures and the options that help, instead of failing after minutes of seeding.
   A run that passes the estimate and still runs out gets a ``MemoryError`` (in the web app, a
   sentence naming the job's memory limit).

Left out: sampling sentences (sentencepiece's ``input_sentence_size``): a trainer that sampled by
the memory it finds would train a different vocabulary on each machine.

Internal: not part of the engine's API (``engine.PUBLIC_MODULES``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

from engine.trainers.limits import BYTES_PER_SUBSTRING, MAX_SENTENCE_BYTES, NotEnoughMemory, memory_ceiling

GIB = 1 << 30


def skip_long_words(word_counts: Mapping[str, int]) -> tuple[Mapping[str, int], int]:
    """``word_counts`` without the words over ``MAX_SENTENCE_BYTES`` UTF-8 bytes, and how many
    distinct words that skipped (the same mapping, unchanged, when none)."""
    # A character is at most 4 bytes, so only words of over a quarter of the cap need encoding.
    floor = MAX_SENTENCE_BYTES // 4
    too_long = {w for w in word_counts if len(w) > floor and len(w.encode("utf-8")) > MAX_SENTENCE_BYTES}
    if not too_long:
        return word_counts, 0
    return {w: n for w, n in word_counts.items() if w not in too_long}, len(too_long)


def substring_occurrences(word_counts: Mapping[str, int], max_piece_length: int) -> int:
    """How many substrings of 1 to ``max_piece_length + 1`` characters the distinct words have in all."""
    longest = max_piece_length + 1
    total = 0
    for m, words in Counter(map(len, word_counts)).items():
        k = min(m, longest)
        total += words * (k * m - k * (k - 1) // 2)  # sum of (m - L + 1) for L = 1 .. k
    return total


def check_memory(word_counts: Mapping[str, int], *, max_piece_length: int, split_by_whitespace: bool) -> None:
    """Raise :class:`NotEnoughMemory` if seeding ``word_counts`` clearly needs more memory than this
    process may allocate."""
    ceiling = memory_ceiling()
    if ceiling is None:
        return
    need = substring_occurrences(word_counts, max_piece_length) * BYTES_PER_SUBSTRING
    if need <= ceiling:
        return
    chars = sum(map(len, word_counts))
    what = "lines (each line is one word, since split_by_whitespace is off)" if not split_by_whitespace else "words"
    fix = "turn split_by_whitespace on, " if not split_by_whitespace else ""
    raise NotEnoughMemory(
        f"Unigram training on this corpus would need about {need / GIB:.1f} GiB of memory, and this process may use "
        f"{ceiling / GIB:.1f} GiB: its {len(word_counts):,} distinct {what} have {chars:,} characters, and seeding "
        f"counts every substring of up to {max_piece_length + 1} characters of each. To train, {fix}train on less "
        "text or lower max_piece_length.",
        option="split_by_whitespace" if not split_by_whitespace else "max_piece_length",
    )
