"""Cut a held-out split out of a stored corpus and evaluate a tokenizer on it.

The user picks a corpus, a fraction (1–50 %) and which end to take (the first or the last
part). The split starts and ends on document boundaries where the fraction allows, and is
capped at ``MAX_EVAL_BYTES`` so a page view never encodes gigabytes. The numbers come from
``engine.metrics.evaluate``. A corpus the tokenizer was trained on is not really held out; the
view says so.

Left out: HTTP and the corpus store itself (``storage.py``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine import Tokenizer
from engine.metrics import evaluate as engine_evaluate
from webapp.corpus_stats import DOCUMENT_SEPARATOR

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
