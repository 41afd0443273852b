"""Cut a held-out split out of a stored corpus and evaluate a tokenizer on it.

The user picks a corpus, a fraction (1–50 %) and which end to take (the first or the last
part). The split starts and ends on document boundaries where the fraction allows, and is
capped at ``MAX_EVAL_BYTES`` so a page view never encodes gigabytes. The numbers come from
``engine.metrics.evaluate``; :func:`report` turns them into what the page shows: a small table
of labelled figures, the first round-trip difference as a sentence, and the longest tokens as
rows. A corpus the tokenizer was trained on is not really held out; the view says so.

Left out: HTTP and the corpus store itself (``storage.py``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine import Tokenizer
from engine import evaluate as engine_evaluate
from engine.trainers import DOCUMENT_SEPARATOR
from webapp.web.filters import Figure
from webapp.web.shown import shown_text

MAX_EVAL_BYTES = 1 << 20


@dataclass(frozen=True, slots=True)
class Split:
    """A held-out slice of a corpus file."""

    text: str
    start: int
    end: int
    size: int
    capped: bool


def read_split(path: Path, fraction: float, part: str, *, cap: int = MAX_EVAL_BYTES) -> Split:
    """Read the first or last ``fraction`` of ``path`` (at most ``cap`` bytes), cut at documents."""
    if not 0 < fraction <= 0.5:
        raise ValueError(f"The held-out fraction must be between 1% and 50%, not {fraction:.0%}.")
    if part not in ("first", "last"):
        raise ValueError(f"Choose the first or the last part of the corpus, not {part!r}.")
    size = os.path.getsize(path)
    want = max(1, int(size * fraction))
    take = min(want, cap)
    with open(path, "rb") as handle:
        if part == "last":
            handle.seek(size - take)
            start = size - take
        else:
            start = 0
        data = handle.read(take)
    text = data.decode("utf-8", errors="ignore")  # a cut may split one character at either end
    separator = DOCUMENT_SEPARATOR
    if part == "last" and start > 0 and separator in text:
        text = text[text.index(separator) + len(separator):]
    elif part == "first" and take < size and separator in text:
        text = text[: text.rindex(separator)]
    return Split(text.replace(separator, "\n"), start, start + take, size, take < want)


def evaluate(tokenizer: Tokenizer, split: Split) -> dict[str, Any]:
    """The engine's metrics on the split's text."""
    return dict(engine_evaluate(tokenizer, split.text))


@dataclass(frozen=True, slots=True)
class LongToken:
    """One of the longest tokens the text used, with the text it covered there."""

    id: int | None
    token: str
    text: str
    chars: int | None
    count: int | None


@dataclass(frozen=True, slots=True)
class Report:
    """The evaluation as the page shows it."""

    figures: list[Figure]
    lossless: bool
    difference: str  # a sentence; empty when decoding gives the text back
    longest: list[LongToken]


def _shown(text: object) -> str:
    return shown_text(str(text).encode("utf-8"), 80) if text is not None else ""


def _number(value: object) -> int | float | None:
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def difference_sentence(difference: object) -> str:
    """Where decoding first differs from the text, as a sentence (empty when it does not)."""
    if not isinstance(difference, dict):
        return ""
    offset = _number(difference.get("char_offset"))
    where = f" at character {offset:,}" if isinstance(offset, int) else ""
    before = difference.get("context_before")
    after = f" (after “{_shown(before)}”)" if before else ""
    return (f"Decoding does not give the text back: it first differs{where}{after}, "
            f"where the text has “{_shown(difference.get('expected'))}” and the decoded ids give "
            f"“{_shown(difference.get('got'))}”.")


def report(result: dict[str, Any]) -> Report:
    """The engine's figures as labelled rows, a sentence and the longest tokens."""
    n = result.get
    figures = [
        Figure("Characters", n("chars")), Figure("Bytes", n("bytes")), Figure("Words", n("words")),
        Figure("Tokens", n("tokens")), Figure("Bytes per token", n("bytes_per_token")),
        Figure("Characters per token", n("chars_per_token")), Figure("Tokens per word", n("fertility")),
        Figure("Unknown tokens", n("unk_tokens")), Figure("Unknown share", n("unk_rate"), style="percent"),
        Figure("Vocabulary used", f"{_number(n('vocab_used')) or 0:,} of {_number(n('vocab_size')) or 0:,}"),
        Figure("Vocabulary used (share)", n("vocab_utilisation"), style="percent"),
        Figure("Round trip", "lossless" if n("lossless") else "differs"),
    ]
    longest = []
    for entry in n("longest_tokens") or []:
        if isinstance(entry, dict):
            token_id, chars, count = (_number(entry.get(key)) for key in ("id", "chars", "count"))
            longest.append(LongToken(token_id if isinstance(token_id, int) else None, _shown(entry.get("token")),
                                     _shown(entry.get("text")), chars if isinstance(chars, int) else None,
                                     count if isinstance(count, int) else None))
    return Report(figures, bool(n("lossless")), difference_sentence(n("first_difference")), longest)
