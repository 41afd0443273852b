"""Stored tokenizers as engine objects, parsed once per process and kept in a bounded LRU cache.

Parsing a ``tokenizer.json`` of GPT-2's size takes a few hundred milliseconds, far too slow to
repeat for every keystroke of the encode view. Rows are immutable once written, so a parsed
tokenizer is cached under (row id, creation time): a deleted row whose id SQLite reuses has a
different creation time and misses the cache. The row's metadata is read without its two large
columns: ``tokenizer_json``, loaded only on a cache miss, and ``stats`` (half a megabyte of
JSON for a 32k BPE: parsing it cost ~45 ms of CPU on every keystroke's encode), loaded only by
the pages that show it, when they read :attr:`Loaded.stats`. The JSON API names every token
it returns, so each cached tokenizer also memoises its ids' strings (byte-level models build
them anew on every call otherwise); the memo fills with the ids actually used, not the whole
vocabulary.

The cache is bounded by an approximate byte budget (``TOKENFORGE_TOKENIZER_CACHE_BYTES``) as well
as by :data:`CACHE_SIZE` entries: a preset such as Gemma 3 (262,144 pieces) holds about 200 MB
once parsed, a 1k-piece trained tokenizer a megabyte, so a count alone bounds nothing. A
tokenizer's size is estimated from its row's ``vocab_size`` (:func:`estimated_bytes`, known
before parsing), and the least recently used entries are dropped to make room *before* a new
tokenizer is parsed, so the process never holds the full cache plus the newcomer. The newest
entry always stays, however large: a tokenizer over the whole budget can still be used. Nothing
is parsed at start-up; every tokenizer, presets included, is parsed on its first use.

Access: :func:`rows_query` is ``auth.scoped`` over the user's teams plus the presets (rows of no
team) and the tokenizers shared with this visitor through share links, so every view that loads
a tokenizer here is scoped. Changing a tokenizer never goes through here (``auth.owned_or_404``).
"""

from __future__ import annotations

import functools
import os
import threading
from collections import OrderedDict
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from flask import abort, current_app, has_app_context
from sqlalchemy import Select, func, select
from sqlalchemy.orm import defer

from engine import TokenforgeError, Tokenizer
from webapp.access.auth import scoped, scoped_list, scoped_record
from webapp.access.visitors import shared_tokenizer_ids
from webapp.store import records
from webapp.store.db import get_session
from webapp.store.model_base import MAX_NAME
from webapp.store.models import Tokenizer as TokenizerRow
from webapp.store.records import TokenizerRecord
from webapp.tokenizers import snapshots
from webapp.tokenizers.originals import originals
from webapp.web.config import ENV_DEFAULTS
from webapp.web.numbers import parse_id

CACHE_SIZE = 8  # entries at most, whatever their size
CACHE_BYTES_ENV = "TOKENFORGE_TOKENIZER_CACHE_BYTES"
# 384 MiB: every preset used once keeps a process under 330 MiB (docs/benchmarks.md), and still
# holds Llama 2, Gemma 3 and Qwen 3 together for Compare (estimated 327 MiB).
DEFAULT_CACHE_BYTES = int(ENV_DEFAULTS[CACHE_BYTES_ENV][0])
# Measured as RSS after loading and one encode (benchmarks/presets_bench.py): 0.45 to 0.7 KiB
# per piece for the ten presets (Gemma 3 173 MiB for 262k pieces, gpt-oss 125 MiB for 200k), 1 KiB
# for Llama 2's 32k; a document's length is a worse guide (6 to 18 bytes held per character,
# depending on how the pieces are spelled).
BYTES_PER_PIECE = 768
MIN_ESTIMATE = 64 * 1024  # the pipeline's own objects, however small the vocabulary


@dataclass(slots=True)
class _Entry:
    tokenizer: Tokenizer
    token_strings: dict[int, str | None]
    size: int  # estimated_bytes of the row
    config: dict[str, Any]  # the row's config column, immutable like the rest of the row


_cache: OrderedDict[tuple[int, str], _Entry] = OrderedDict()
_cached_bytes = 0  # the sum of the entries' sizes; changed under _lock only
_lock = threading.Lock()


def estimated_bytes(vocab_size: int) -> int:
    """About how much memory a parsed tokenizer of ``vocab_size`` pieces holds."""
    return max(MIN_ESTIMATE, vocab_size * BYTES_PER_PIECE)


def cache_budget() -> int:
    """The cache's byte budget: the app's ``TOKENIZER_CACHE_BYTES``, else the environment, else 384 MiB."""
    configured = current_app.config.get("TOKENIZER_CACHE_BYTES") if has_app_context() else None
    if configured is not None:
        return int(configured)
    raw = os.environ.get(CACHE_BYTES_ENV, "").strip()
    if not raw:
        return DEFAULT_CACHE_BYTES
    if not raw.isascii() or not raw.isdigit() or len(raw) > 18:
        raise ValueError(f"{CACHE_BYTES_ENV} must be a whole number of bytes, e.g. {CACHE_BYTES_ENV}=536870912 "
                         f"(512 MiB), not {raw[:40]!r}.")
    return int(raw)


def _make_room(incoming: int, budget: int) -> None:
    """Drop the least recently used entries until ``incoming`` more bytes fit (call under _lock)."""
    global _cached_bytes
    while _cache and (len(_cache) >= CACHE_SIZE or _cached_bytes + incoming > budget):
        _cached_bytes -= _cache.popitem(last=False)[1].size


def clear_cache() -> None:
    """Forget every parsed tokenizer (tests; a process that wants its memory back)."""
    global _cached_bytes
    with _lock:
        _cache.clear()
        _cached_bytes = 0


@dataclass(frozen=True)
class Loaded:
    """A stored tokenizer's row (a record, without its large columns) and the engine tokenizer built from it."""

    row: TokenizerRecord
    tokenizer: Tokenizer
    token_strings: dict[int, str | None]  # shared by every request for this tokenizer
    config: dict[str, Any]  # ``row.config`` as parsed on the cache miss: reading it costs no query

    @functools.cached_property
    def stats(self) -> dict[str, Any]:
        """The training statistics, read on first use (one query; half a megabyte for a 32k BPE)."""
        return _column(TokenizerRow.stats, self.row.id) or {}

    def tokens(self, ids: list[int]) -> list[str | None]:
        """The vocabulary string of each id, memoised per cached tokenizer.

        Threads may race to fill the same id; they compute the same string, and a single
        dict assignment is atomic, so no lock is needed.
        """
        memo, id_to_token = self.token_strings, self.tokenizer.id_to_token
        out: list[str | None] = []
        for token_id in ids:
            try:
                out.append(memo[token_id])
            except KeyError:
                memo[token_id] = token = id_to_token(token_id)
                out.append(token)
        return out


# The large columns (the document, the training stats, and the config, which may hold an
# imported ``.model``), left out of every row read here; each loads when read. Built once: the
# options cost more to construct than the rest of the query, and every encode runs one.
_WITHOUT_LARGE_COLUMNS = (defer(TokenizerRow.tokenizer_json), defer(TokenizerRow.stats), defer(TokenizerRow.config))
# The lists' order (see rows_query), built once for the same reason.
_LIST_ORDER = (TokenizerRow.team_id.is_not(None), TokenizerRow.id.desc())


def readable_rows() -> Select[tuple[TokenizerRow]]:
    """Every tokenizer the current user may read, without the large columns, in no order."""
    return (scoped(TokenizerRow, shared_ids=shared_tokenizer_ids(), presets=True)
            .options(*_WITHOUT_LARGE_COLUMNS))


def readable_row(row_id: int) -> TokenizerRecord | None:
    """The row with ``row_id`` if :func:`readable_rows` holds it, as a record (one statement, built once)."""
    return scoped_record(TokenizerRecord, TokenizerRow, row_id, shared_ids=shared_tokenizer_ids(), presets=True)


def _column(column: Any, row_id: int) -> Any:
    """One large column of the row ``row_id`` (the caller may read it)."""
    return get_session().scalar(select(column).where(TokenizerRow.id == row_id))


def rows_query() -> Select[tuple[TokenizerRow]]:
    """:func:`readable_rows` as lists show them: the presets (``presets.py``) first, so a cut list
    still offers them, then their teams' and those shared with this visitor by link, newest first."""
    return readable_rows().order_by(*_LIST_ORDER)


def all_rows(*, limit: int | None = None, offset: int = 0) -> list[TokenizerRecord]:
    """The tokenizers the current user may read, presets first (see :func:`rows_query`).

    The one list every picker offers (encode, compare, the API list) and the tokenizer list
    page shows; ``row.preset`` tells the presets apart. The rows of :func:`rows_query` as records,
    through a statement built once (``auth.scoped_list``): building it cost more than running it,
    and loading ORM rows more still.
    """
    return scoped_list(TokenizerRecord, TokenizerRow, shared_ids=shared_tokenizer_ids(), presets=True,
                       order_by=_LIST_ORDER, limit=limit, offset=offset)


def _record_query() -> Select[Any]:
    """:func:`rows_query`'s rows and order, as the columns of :class:`TokenizerRecord`."""
    return (scoped(TokenizerRow, shared_ids=shared_tokenizer_ids(), presets=True)
            .with_only_columns(*records.columns(TokenizerRecord, TokenizerRow)).order_by(*_LIST_ORDER))


def rows_with_ids(ids: Collection[int]) -> list[TokenizerRecord]:
    """The rows among ``ids`` that the current user may read (a short list: a picker's choices)."""
    found = records.read(_record_query().where(TokenizerRow.id.in_(ids)), {}) if ids else []
    return [TokenizerRecord(*row) for row in found]


def count_rows() -> int:
    """How many tokenizers :func:`all_rows` lists in all."""
    return get_session().scalar(select(func.count()).select_from(rows_query().order_by(None).subquery())) or 0


def _parse(row: TokenizerRecord, config: dict[str, Any]) -> Tokenizer:
    """The row's tokenizer: from the ``.model`` an import kept (``originals.py``), else its JSON."""
    model_file = originals(config).get("spm_model")
    try:
        if model_file is not None:
            from engine.formats.spm_model import load_spm_model

            return load_spm_model(model_file)
        text = _column(TokenizerRow.tokenizer_json, row.id)
        if text is None:
            abort(404)
        return snapshots.parse(text)
    except TokenforgeError:
        abort(422)


def load(row_id: int) -> Loaded:
    """The tokenizer with id ``row_id``, or a 404 page."""
    if parse_id(row_id) is None:
        abort(404)
    row = readable_row(row_id)
    if row is None:
        abort(404)
    return _loaded(row)


def _loaded(row: TokenizerRecord) -> Loaded:
    """Pair a row the caller may read with its parsed tokenizer, from the cache if possible."""
    global _cached_bytes
    key = (row.id, row.created_at.isoformat() if row.created_at else "")
    with _lock:
        entry = _cache.get(key)
        if entry is not None:
            _cache.move_to_end(key)
    if entry is None:
        size, budget = estimated_bytes(row.vocab_size), cache_budget()
        with _lock:
            _make_room(size, budget)  # before parsing: never the whole cache plus the newcomer
        config = _column(TokenizerRow.config, row.id) or {}  # one query, on the miss only
        tokenizer = _parse(row, config)
        tokenizer.name = row.name
        with _lock:
            entry = _cache.get(key)  # a racing thread's parse wins; same content
            if entry is None:
                _make_room(size, budget)
                entry = _cache[key] = _Entry(tokenizer, {}, size, config)
                _cached_bytes += size
    return Loaded(row, entry.tokenizer, entry.token_strings, entry.config)


def find(ref: object) -> Loaded | None:
    """A tokenizer by id (int or digit string) or exact name, for the JSON API; None if absent.

    One scoped query finds the row; the API calls this on every request, so it is not
    looked up twice.
    """
    if isinstance(ref, str):
        ref = ref.strip()
    row_id = parse_id(ref)  # bounded: databases cannot even compare ids past 64 bits
    if row_id is not None:
        row = readable_row(row_id)
    elif isinstance(ref, str) and ref and not (ref.isascii() and ref.isdigit()):
        # Names repeat: the one a list shows first (a preset, else the newest) is found.
        query = _record_query().where(TokenizerRow.name == ref[:MAX_NAME]).limit(1)  # no longer name exists
        found = records.read(query, {})
        row = TokenizerRecord(*found[0]) if found else None
    else:
        return None
    return _loaded(row) if row is not None else None
