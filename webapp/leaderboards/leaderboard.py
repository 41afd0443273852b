"""Leaderboards: which of a team's tokenizers is best on its held-out text, as one stored table.

A leaderboard is a choice of tokenizers (the team's own and the presets) and held-out corpora;
one "leaderboard" job (``child.py``) evaluates every pair with
``engine.metrics.evaluate``, the function ``tokenforge eval`` prints, so the figures match the
CLI on the same text. That text is :func:`read_slice`: the first ``max_bytes`` of the stored
corpus, read in chunks (never the whole file), ending on a document or line boundary when the
cap cuts it, documents joined by a newline. This module holds what the job and the pages share:
the bounds, the slice, the job's plan, the results as sortable rows, the bar chart's data and
the CSV export.

A pair that loses text (unknown tokens, or a round trip that differs) is "lossy": its bytes per
token are cheap, bought by dropping what it cannot encode, so by default the rows rank the
lossless pairs first and the lossy ones after them, each part sorted by the chosen column
(``lossy="mixed"`` sorts purely by the column). The chart lists its bars in the table's order.

Left out: HTTP (``views.py``) and running the job (``child.py``, ``jobs/worker.py``).
"""

from __future__ import annotations

import codecs
import csv
import io
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from engine.trainers import DOCUMENT_SEPARATOR
from webapp.corpora.storage import CorpusStore
from webapp.store.models import Corpus, Leaderboard, Tokenizer
from webapp.tokenizers.originals import originals
from webapp.web.forms import BIDI_CONTROLS

MAX_TOKENIZERS = 12  # pairs per board: tokenizers × corpora, each up to the byte cap
MAX_CORPORA = 6
CHUNK_BYTES = 1 << 20
#: What ``evaluate`` returns that a board keeps (the longest tokens are the tokenizer page's).
KEPT = ("chars", "bytes", "words", "tokens", "bytes_per_token", "chars_per_token", "fertility",
        "unk_tokens", "unk_rate", "lossless", "first_difference", "vocab_size", "vocab_used",
        "vocab_utilisation")


class SliceError(Exception):
    """The stored corpus cannot be read as text; the message is a sentence for the page."""


def read_slice(path: str, max_bytes: int) -> str:
    """The first ``max_bytes`` of the corpus file at ``path`` as text (see the module docstring).

    Read in chunks of at most ``CHUNK_BYTES``, so memory holds the slice, never the file. A
    character the cap splits is left out; so is the partial document or line after the last
    boundary the slice holds.
    """
    decoder = codecs.getincrementaldecoder("utf-8")("strict")
    parts: list[str] = []
    left = max_bytes
    try:
        with open(path, "rb") as file:
            while left > 0 and (chunk := file.read(min(CHUNK_BYTES, left))):
                parts.append(decoder.decode(chunk))
                left -= len(chunk)
            capped = left == 0 and bool(file.read(1))
        if not capped:
            parts.append(decoder.decode(b"", final=True))
    except UnicodeDecodeError:
        raise SliceError("The stored corpus file is not valid UTF-8 (it was damaged after the upload).") from None
    except OSError as exc:
        raise SliceError(f"The stored corpus file could not be read ({exc.strerror or exc}).") from None
    text = "".join(parts)
    if capped:
        cut = text.rfind(DOCUMENT_SEPARATOR)
        if cut <= 0:
            cut = text.rfind("\n") + 1
        text = text[:cut] if cut > 0 else text
    return text.replace(DOCUMENT_SEPARATOR, "\n")


def pair_key(corpus_id: int, tokenizer_id: int) -> str:
    """The key of one pair in ``Leaderboard.results``."""
    return f"{corpus_id}:{tokenizer_id}"


def kept(metrics: Mapping[str, Any]) -> dict[str, Any]:
    """The figures of ``engine.metrics.evaluate`` a board stores."""
    return {name: metrics.get(name) for name in KEPT}


# --------------------------------------------------------------------------- the job's plan
@dataclass(frozen=True, slots=True)
class Plan:
    """What the job child needs: the corpora's files, and which tokenizers to read of which team.

    The tokenizers' documents are not in it: a team's imported tokenizer may be tens of
    megabytes, so the child reads one at a time (:func:`tokenizer_document`) rather than the
    worker holding them all for the whole job and sending them down a pipe.
    """

    corpora: list[tuple[int, str | None]]  # (corpus id, path of its stored file or None if gone)
    tokenizer_ids: list[int]
    team_id: int


def job_plan(session: Session, store: CorpusStore, board: Leaderboard) -> Plan:
    """The plan of ``board``'s job; a corpus deleted since (or not the board's team's) has no path."""
    corpora = []
    for entry in board.corpora:
        corpus = session.scalar(select(Corpus).where(Corpus.id == entry["id"], Corpus.team_id == board.team_id))
        path = store.path(corpus.sha256) if corpus is not None else None
        corpora.append((int(entry["id"]), str(path) if path is not None and path.is_file() else None))
    return Plan(corpora, [int(entry["id"]) for entry in board.tokenizers], board.team_id)


def tokenizer_document(session: Session, team_id: int, tokenizer_id: int) -> str | bytes | None:
    """The JSON document of a tokenizer of ``team_id`` or a preset, or the ``.model`` file an import
    kept (bytes; the tokenizer the pages use is rebuilt from it, ``tokenizers/originals.py``);
    None if there is no such row.

    Looked up within the team, so a board never reads another team's tokenizer whatever ids
    its JSON holds.
    """
    found = session.execute(select(Tokenizer.tokenizer_json, Tokenizer.config).where(
        Tokenizer.id == tokenizer_id, (Tokenizer.team_id == team_id) | Tokenizer.team_id.is_(None))).first()
    if found is None:
        return None
    return originals(found.config or {}).get("spm_model", found.tokenizer_json)


# --------------------------------------------------------------------------- the results as rows
@dataclass(frozen=True, slots=True)
class Column:
    """A sortable column: its key in the results, its heading, the ``readable`` style, which way is better."""

    key: str
    heading: str
    style: str = ""
    higher_is_better: bool = True


COLUMNS = (
    Column("bytes_per_token", "Bytes / token"),
    Column("chars_per_token", "Chars / token"),
    Column("fertility", "Tokens / word", higher_is_better=False),
    Column("unk_rate", "Unknown", "percent", higher_is_better=False),
    Column("lossless", "Round trip"),
    Column("tokens", "Tokens", higher_is_better=False),
    Column("vocab_utilisation", "Vocabulary used", "percent"),
)
SORT_KEYS = frozenset({"tokenizer"} | {column.key for column in COLUMNS})
DEFAULT_SORT = "bytes_per_token"


def loss_reasons(figures: Mapping[str, Any] | None) -> tuple[str, ...]:
    """Why a pair's figures lose text, as badges read: "12.3% unknown tokens", "round trip differs".

    Empty for a lossless pair and for one without figures. A round trip not known (None) is not
    called lossy: only a recorded difference is.
    """
    if not figures:
        return ()
    reasons = []
    rate = _number(figures.get("unk_rate"))
    if rate is not None and rate > 0:
        share = f"{rate * 100:.1f}%" if rate >= 0.001 else "under 0.1%"  # never "0.0%" for a real loss
        reasons.append(f"{share} unknown tokens")
    if figures.get("lossless") is False:
        reasons.append("round trip differs")
    return tuple(reasons)


@dataclass(frozen=True, slots=True)
class Row:
    """One tokenizer on one corpus: its figures, or the sentence saying why there are none."""

    tokenizer_id: int
    tokenizer: str
    figures: dict[str, Any] | None  # None while the pair waits, or when it failed
    error: str | None

    @property
    def loss(self) -> tuple[str, ...]:
        """Why this pair is lossy (:func:`loss_reasons`); empty when it is not."""
        return loss_reasons(self.figures)


def _number(value: object) -> float | None:
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)) and math.isfinite(value):
        return float(value)
    return None


def parse_sort(sort: str | None, order: str | None) -> tuple[str, bool]:
    """The column to sort by and whether descending; unknown values give the default, not an error."""
    key = sort if sort in SORT_KEYS else DEFAULT_SORT
    if order in ("asc", "desc"):
        return key, order == "desc"
    column = next((c for c in COLUMNS if c.key == key), None)
    return key, bool(column and column.higher_is_better)


def parse_lossy(lossy: str | None) -> bool:
    """Whether lossy pairs rank after the lossless ones (``?lossy=last``, the default) or not (``mixed``)."""
    return lossy != "mixed"


def rows(board: Leaderboard, corpus_id: int, *, sort: str = DEFAULT_SORT, descending: bool = True,
         lossy_last: bool = True) -> list[Row]:
    """The board's rows for one corpus, sorted; pairs without figures come last, in board order.

    With ``lossy_last`` the lossy pairs follow the lossless ones, whatever the column: each part
    keeps the column's order (a stable partition of the sorted rows).
    """
    out = []
    for entry in board.tokenizers:
        result = board.results.get(pair_key(corpus_id, entry["id"]))
        error = result.get("error") if isinstance(result, dict) else None
        figures = result if isinstance(result, dict) and error is None else None
        out.append(Row(int(entry["id"]), str(entry["name"]), figures, str(error) if error is not None else None))
    if sort == "tokenizer":
        ordered = sorted(out, key=lambda row: row.tokenizer.casefold(), reverse=descending)
    else:
        with_value = [row for row in out if row.figures and _number(row.figures.get(sort)) is not None]
        ordered = sorted(with_value, key=lambda row: _number(row.figures.get(sort)) or 0.0,  # type: ignore[union-attr]
                         reverse=descending)
    if lossy_last:
        ordered = sorted(ordered, key=lambda row: bool(row.loss))  # stable: the column's order stays
    return ordered + [row for row in out if row not in ordered]


def chart_bars(table: Sequence[Row]) -> list[tuple[str, float, bool]]:
    """(tokenizer name, bytes per token, lossy) for the rows that have one, in the table's order."""
    bars = []
    for row in table:
        value = _number(row.figures.get("bytes_per_token")) if row.figures else None
        if value is not None:
            bars.append((row.tokenizer, value, bool(row.loss)))
    return bars


def pairs_done(board: Leaderboard) -> int:
    """How many pairs have a result (figures or an error)."""
    return len(board.results)


def pairs_total(board: Leaderboard) -> int:
    """How many pairs the board has."""
    return len(board.tokenizers) * len(board.corpora)


# --------------------------------------------------------------------------- CSV
CSV_FIELDS = ("corpus", "tokenizer", "bytes_per_token", "chars_per_token", "fertility", "unk_rate",
              "lossless", "tokens", "words", "bytes", "chars", "unk_tokens", "vocab_used", "vocab_size", "error")
#: What a spreadsheet reads as the start of a formula, even after a tab or a carriage return
#: (OWASP's CSV injection list).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
#: Characters no cell carries: NUL (which ends a string in many readers) and the bidi controls
#: that make a cell display as other text (``forms.BIDI_CONTROLS``).
_DROPPED = {ord(c): None for c in BIDI_CONTROLS | {"\x00"}}


def _cell(value: object) -> object:
    """A CSV cell a spreadsheet will not run or show as other text: NUL and bidi controls are
    dropped, and text starting like a formula gets a leading quote."""
    if isinstance(value, str):
        value = value.translate(_DROPPED)
        return "'" + value if value.startswith(FORMULA_STARTS) else value
    return "" if value is None else value


def to_csv(board: Leaderboard, corpus_names: Sequence[tuple[int, str]]) -> str:
    """Every pair of ``board`` as CSV (RFC 4180 quoting), one row per corpus and tokenizer."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(CSV_FIELDS)
    for corpus_id, corpus_name in corpus_names:
        for row in rows(board, corpus_id, sort="tokenizer", descending=False):
            figures = row.figures or {}
            values: dict[str, object] = {"corpus": corpus_name, "tokenizer": row.tokenizer, "error": row.error}
            for field in CSV_FIELDS[2:-1]:
                values[field] = figures.get(field)
            if isinstance(values["lossless"], bool):
                values["lossless"] = "yes" if values["lossless"] else "no"
            writer.writerow([_cell(values[field]) for field in CSV_FIELDS])
    return out.getvalue()
