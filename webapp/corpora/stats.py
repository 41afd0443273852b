"""Corpus statistics computed in one streaming pass over a corpus's text.

Two levels, because they cost very different amounts:

- :class:`TextFacts`: characters, lines and a preview. A few C-level string operations per
  chunk, so the upload request computes them while it stores the file (``storage.py``).
- :class:`StatsAccumulator`: those plus documents (split on :data:`DOCUMENT_SEPARATOR`), the
  distinct pre-token count under the GPT-2 pattern and the longest whitespace-free run (to warn
  about pathological input). This pre-tokenizes every word, so it runs in the background
  "analyse" job (``analyse_child.py``), never in a request.

Both are fed decoded text in arbitrary chunks and never hold more than a few MiB of it. They do
not read files or touch the database.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import regex

from engine import pretoken_split
from engine.trainers import DOCUMENT_SEPARATOR  # the one definition: what trainers split documents on

PREVIEW_CHARS = 2000
MAX_DISTINCT_PRETOKENS = 1_000_000  # beyond this we report "more than" instead of growing a set
LONG_WORD_WARNING_CHARS = 100_000
_SEGMENT_CHARS = 1 << 20  # text is analysed in pieces of about this many characters
_NON_SPACE = regex.compile(r"\S+")
# str.isspace() is regex's \s plus these four separators; text containing one takes the slow path.
_ISSPACE_ONLY = ("\x1c", "\x1d", "\x1e", "\x1f")
#: The keys only the analysis adds; a corpus's stats without them have not been analysed yet.
ANALYSIS_KEYS = ("documents", "distinct_pretokens", "longest_word", "warnings")


def _gpt2_splitter() -> Callable[[str], list[str]]:
    """The engine's GPT-2 split (its ASCII fast path if any), so counts match what training sees."""
    return pretoken_split("gpt2")


def is_analysed(stats: dict[str, Any]) -> bool:
    """Whether ``stats`` holds the analysis figures (older corpora have them from the upload)."""
    return all(key in stats for key in ANALYSIS_KEYS)


class TextFacts:
    """Characters, lines and the preview: what is cheap enough to count inside a request."""

    def __init__(self) -> None:
        self.chars = 0
        self.newlines = 0
        self.last_char = ""
        self.preview = ""

    def feed(self, text: str) -> None:
        """Count one chunk."""
        if not text:
            return
        self.chars += len(text)
        self.newlines += text.count("\n")
        self.last_char = text[-1]
        if len(self.preview) < PREVIEW_CHARS:
            self.preview += text[: PREVIEW_CHARS - len(self.preview)]

    def finish(self) -> dict[str, Any]:
        """The JSON-able facts (a final line without a newline still counts as a line)."""
        lines = self.newlines + (1 if self.chars and self.last_char != "\n" else 0)
        return {"chars": self.chars, "lines": lines, "preview": self.preview}


class StatsAccumulator:
    """Accumulates the full corpus statistics over a stream of text chunks."""

    def __init__(self) -> None:
        self._split = _gpt2_splitter()
        self.facts = TextFacts()
        self._pending = ""
        self.documents = 0
        self._doc_has_text = False
        self.pretokens: set[str] = set()
        self.pretokens_capped = False
        self.longest_word = 0
        self._run = 0  # length of the whitespace-free run that ends the text seen so far

    def feed(self, text: str) -> None:
        """Add a chunk; complete lines are analysed, the unfinished tail is kept for later."""
        if not text:
            return
        self.facts.feed(text)
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
            if any(c in part for c in _ISSPACE_ONLY):
                self._count_words_reference(part)
            else:
                self._count_words(part)
            if not self.pretokens_capped:
                self.pretokens.update(self._split(part))
                if len(self.pretokens) > MAX_DISTINCT_PRETOKENS:
                    self.pretokens_capped = True
                    self.pretokens.clear()

    def _count_words(self, part: str) -> None:
        """Longest whitespace-free run, via ``str.split()`` (C speed, no match objects).

        Only valid when ``part`` has none of :data:`_ISSPACE_ONLY`: then ``str.split()``'s
        whitespace is exactly ``regex``'s ``\\s``. A run at the start of ``part`` continues the
        run that ended the previous part (a segment may be cut inside a very long word).
        """
        words = part.split()
        if not words:
            self._run = 0
            return
        joined = self._run if not part[0].isspace() else 0
        self.longest_word = max(self.longest_word, max(map(len, words)), len(words[0]) + joined)
        if part[-1].isspace():
            self._run = 0
        else:
            self._run = len(words[-1]) + (joined if len(words) == 1 else 0)

    def _count_words_reference(self, part: str) -> None:
        """The same as :meth:`_count_words` with ``regex``'s ``\\S+``: slow and obviously right."""
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
        warnings = []
        if self.longest_word >= LONG_WORD_WARNING_CHARS:
            warnings.append(
                f"The longest run of text without whitespace is {self.longest_word:,} characters. "
                "Trainers treat it as a single word, which is slow and rarely what you want; "
                "check that this is really natural-language text."
            )
        facts = self.facts.finish()
        return {
            "chars": facts["chars"],
            "lines": facts["lines"],
            "documents": self.documents,
            "separator": DOCUMENT_SEPARATOR,
            "distinct_pretokens": None if self.pretokens_capped else len(self.pretokens),
            "distinct_pretokens_over": MAX_DISTINCT_PRETOKENS if self.pretokens_capped else None,
            "pretokenizer": "gpt2",
            "longest_word": self.longest_word,
            "preview": facts["preview"],
            "warnings": warnings,
        }
