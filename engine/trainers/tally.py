"""One process's count of corpus text: :class:`Tally`, and the word-count arithmetic it shares.

A tally cuts the special tokens out of each chunk (longest match first, so they are never
counted), normalizes each stretch between them, splits it and counts the pieces, with the
result of ``Counter(split(normalize(stretch)))``; ``counting.py`` explains the shortcuts by
split. The local workers (``counting.py``) and a Dask cluster's (``distributed.py``) each keep
one, reading their byte ranges of the corpus (``byte_ranges.py``).

Internal: not part of the engine's API (``engine.PUBLIC_MODULES``).
"""

from __future__ import annotations

import functools
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol

import regex

from engine.ascii_split import pretoken_split
from engine.errors import EncodeTimeout
from engine.limits import shown, time_budget
from engine.normalizers import Normalizer
from engine.trainers.corpus import WORD_SPLITS, special_pattern, split_specials
from engine.trainers.limits import PatternTooSlow, chunk_seconds, pattern_rate

Splitter = Callable[[str], list[str]]
"""Cuts ordinary text into pre-tokens; must be picklable when workers are used."""
TallyArgs = tuple[str | Splitter, tuple[str, ...], Normalizer | None, float]
"""What :class:`Tally` is built from: the split spec, the special tokens, the normalizer, and the
pattern budget in seconds per million characters (``limits.pattern_budget``)."""


class Summary(Protocol):
    """What each counting process makes of its own count table before handing it over, and how
    those parts add up (picklable: it travels to the workers).

    Why: work that is linear in the table (cutting words into segments, counting their
    characters) then runs in every counting process at once, on its own table, instead of in
    the leader after the tables are added (``trainers/bpe_spm_parts.py``)."""

    def of(self, table: dict[str, int]) -> Any:
        """This process's part, from its count table (which it may change)."""

    def summed(self, parts: list[Any]) -> Any:
        """What the parts of every process add up to: the counting's result."""


CHAR_PATTERN = r"[\s\S]"
"""One piece per character (the char baseline's pre-tokenizer; Oniguruma and regex agree on it)."""
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
