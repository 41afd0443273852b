"""Stored tokenizers as engine objects, parsed once per process and kept in a small LRU cache.

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

Access: :func:`rows_query` is ``auth.scoped`` over the user's teams plus the presets (rows of no
team) and the tokenizers shared with this visitor through share links, so every view that loads
a tokenizer here is scoped. Changing a tokenizer never goes through here (``auth.owned_or_404``).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from flask import abort
from sqlalchemy import Select, func, select
from sqlalchemy.orm import defer

from engine import TokenforgeError, Tokenizer
from webapp.access.auth import scoped
from webapp.access.visitors import shared_tokenizer_ids
from webapp.store.db import get_session
from webapp.store.model_base import MAX_NAME
from webapp.store.models import Tokenizer as TokenizerRow
from webapp.web.numbers import parse_id

CACHE_SIZE = 8
_cache: OrderedDict[tuple[int, str], tuple[Tokenizer, dict[int, str | None]]] = OrderedDict()
_lock = threading.Lock()


@dataclass(frozen=True, slots=True)
class Loaded:
    """A stored tokenizer's row (without its JSON) and the engine tokenizer built from it."""

    row: TokenizerRow
    tokenizer: Tokenizer
    token_strings: dict[int, str | None]  # shared by every request for this tokenizer

    @property
    def stats(self) -> dict[str, Any]:
        """The training statistics; reading them loads the deferred column (one query)."""
        return self.row.stats or {}

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


def rows_query() -> Select[tuple[TokenizerRow]]:
    """Every tokenizer the current user may read, without the two large columns: the presets
    (``presets.py``) first, so a cut list still offers them, then their teams' and those shared
    with this visitor by link, newest first."""
    return (scoped(TokenizerRow, shared_ids=shared_tokenizer_ids(), presets=True)
            .options(defer(TokenizerRow.tokenizer_json), defer(TokenizerRow.stats))
            .order_by(TokenizerRow.team_id.is_not(None), TokenizerRow.id.desc()))


def all_rows(*, limit: int | None = None, offset: int = 0) -> list[TokenizerRow]:
    """The tokenizers the current user may read, presets first (see :func:`rows_query`).

    The one list every picker offers (encode, compare, the API list) and the tokenizer list
    page shows; ``row.preset`` tells the presets apart.
    """
    query = rows_query().offset(offset or None)
    return list(get_session().scalars(query.limit(limit) if limit is not None else query))


def rows_with_ids(ids: Collection[int]) -> list[TokenizerRow]:
    """The rows among ``ids`` that the current user may read (a short list: a picker's choices)."""
    return list(get_session().scalars(rows_query().where(TokenizerRow.id.in_(ids)))) if ids else []


def count_rows() -> int:
    """How many tokenizers :func:`all_rows` lists in all."""
    return get_session().scalar(select(func.count()).select_from(rows_query().order_by(None).subquery())) or 0


def _parse(row_id: int) -> Tokenizer:
    text = get_session().scalar(select(TokenizerRow.tokenizer_json).where(TokenizerRow.id == row_id))
    if text is None:
        abort(404)
    try:
        return Tokenizer.from_json(text)
    except TokenforgeError:
        abort(422)


def load(row_id: int) -> Loaded:
    """The tokenizer with id ``row_id``, or a 404 page."""
    if parse_id(row_id) is None:
        abort(404)
    row = get_session().scalar(rows_query().where(TokenizerRow.id == row_id))
    if row is None:
        abort(404)
    return _loaded(row)


def _loaded(row: TokenizerRow) -> Loaded:
    """Pair a row the caller may read with its parsed tokenizer, from the cache if possible."""
    key = (row.id, row.created_at.isoformat() if row.created_at else "")
    with _lock:
        entry = _cache.get(key)
        if entry is not None:
            _cache.move_to_end(key)
    if entry is None:
        tokenizer = _parse(row.id)
        tokenizer.name = row.name
        entry = (tokenizer, {})
        with _lock:
            entry = _cache.setdefault(key, entry)  # a racing thread's parse wins; same content
            while len(_cache) > CACHE_SIZE:
                _cache.popitem(last=False)
    return Loaded(row, *entry)


def find(ref: object) -> Loaded | None:
    """A tokenizer by id (int or digit string) or exact name, for the JSON API; None if absent.

    One scoped query finds the row; the API calls this on every request, so it is not
    looked up twice.
    """
    query = rows_query()
    if isinstance(ref, str):
        ref = ref.strip()
    row_id = parse_id(ref)  # bounded: databases cannot even compare ids past 64 bits
    if row_id is not None:
        query = query.where(TokenizerRow.id == row_id)
    elif isinstance(ref, str) and ref and not (ref.isascii() and ref.isdigit()):
        query = query.where(TokenizerRow.name == ref[:MAX_NAME])  # no longer name exists
    else:
        return None
    row = get_session().scalar(query.limit(1))
    return _loaded(row) if row is not None else None
