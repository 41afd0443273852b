"""Corpus statistics computed in one streaming pass while an upload is stored.

:class:`StatsAccumulator` is fed decoded text in arbitrary chunks and reports characters,
lines, documents (split on :data:`DOCUMENT_SEPARATOR`), the distinct pre-token count under the
GPT-2 pattern, a preview, and the longest whitespace-free run (to warn about pathological
input). It never holds more than a few MiB of text. It does not read files or touch the
database; ``storage.py`` drives it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import regex

from engine.pretokenizers import get_pretokenizer

DOCUMENT_SEPARATOR = "<|endoftext|>"
PREVIEW_CHARS = 2000
MAX_DISTINCT_PRETOKENS = 1_000_000  # beyond this we report "more than" instead of growing a set
LONG_WORD_WARNING_CHARS = 100_000
_SEGMENT_CHARS = 1 << 20  # text is analysed in pieces of about this many characters
_NON_SPACE = regex.compile(r"\S+")


def _gpt2_splitter() -> Callable[[str], list[str]]:
    """The engine's GPT-2 pre-tokenizer, so the count matches what training will see."""
    return get_pretokenizer("gpt2").pieces


class StatsAccumulator:
    """Accumulates corpus statistics over a stream of text chunks."""

    def __init__(self) -> None:
        self._split = _gpt2_splitter()
        self._pending = ""
        self.chars = 0
        self.newlines = 0
        self.last_char = ""
        self.documents = 0
        self._doc_has_text = False
        self.pretokens: set[str] = set()
        self.pretokens_capped = False
        self.preview = ""
        self.longest_word = 0
        self._run = 0  # length of the whitespace-free run that ends the text seen so far

    def feed(self, text: str) -> None:
        """Add a chunk; complete lines are analysed, the unfinished tail is kept for later."""
        if not text:
            return
        self.chars += len(text)
        self.newlines += text.count("\n")
        self.last_char = text[-1]
        if len(self.preview) < PREVIEW_CHARS:
            self.preview += text[: PREVIEW_CHARS - len(self.preview)]
        self._pending += text
        if len(self._pending) < _SEGMENT_CHARS:
            return
        # Cut after a newline so no separator or pre-token is split; failing that, at whitespace;
        # failing that (a megabyte "word"), anywhere but inside a possible separator.
        cut = self._pending.rfind("\n") + 1
        if cut == 0:
            cut = max(self._pending.rfind(" "), self._pending.rfind("\t")) + 1
        if cut == 0 and len(self._pending) >= 4 * _SEGMENT_CHARS:
            cut = len(self._pending) - len(DOCUMENT_SEPARATOR)
        if cut > 0:
            segment, self._pending = self._pending[:cut], self._pending[cut:]
            self._analyse(segment)

    def _analyse(self, segment: str) -> None:
        for i, part in enumerate(segment.split(DOCUMENT_SEPARATOR)):
            if i > 0:
                self._end_document()
            if part.strip():
                self._doc_has_text = True
            self._count_words(part)
            if not self.pretokens_capped:
                self.pretokens.update(self._split(part))
                if len(self.pretokens) > MAX_DISTINCT_PRETOKENS:
                    self.pretokens_capped = True
                    self.pretokens.clear()

    def _count_words(self, part: str) -> None:
        runs = [m.span() for m in _NON_SPACE.finditer(part)]
        if not runs:
            self._run = 0
            return
        for start, end in runs:
            length = end - start + (self._run if start == 0 else 0)
            self.longest_word = max(self.longest_word, length)
        last_start, last_end = runs[-1]
        joined = self._run if last_start == 0 else 0
        self._run = (last_end - last_start + joined) if last_end == len(part) else 0

    def _end_document(self) -> None:
        if self._doc_has_text:
            self.documents += 1
        self._doc_has_text = False
        self._run = 0

    def finish(self) -> dict[str, Any]:
        """Analyse the tail and return the JSON-able statistics stored on the corpus."""
        if self._pending:
            self._analyse(self._pending)
            self._pending = ""
        self._end_document()
        lines = self.newlines + (1 if self.chars and self.last_char != "\n" else 0)
        warnings = []
        if self.longest_word >= LONG_WORD_WARNING_CHARS:
            warnings.append(
                f"The longest run of text without whitespace is {self.longest_word:,} characters. "
                "Trainers treat it as a single word, which is slow and rarely what you want; "
                "check that this is really natural-language text."
            )
        return {
            "chars": self.chars,
            "lines": lines,
            "documents": self.documents,
            "separator": DOCUMENT_SEPARATOR,
            "distinct_pretokens": None if self.pretokens_capped else len(self.pretokens),
            "distinct_pretokens_over": MAX_DISTINCT_PRETOKENS if self.pretokens_capped else None,
            "pretokenizer": "gpt2",
            "longest_word": self.longest_word,
            "preview": self.preview,
            "warnings": warnings,
        }
