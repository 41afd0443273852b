"""Stored tokenizers as engine objects, parsed once per process and kept in a small LRU cache.

Parsing a ``tokenizer.json`` of GPT-2's size takes a few hundred milliseconds, far too slow to
repeat for every keystroke of the encode view. Rows are immutable once written, so a parsed
tokenizer is cached under (row id, creation time): a deleted row whose id SQLite reuses has a
different creation time and misses the cache. The row's metadata is read without the large
``tokenizer_json`` column, which is loaded only on a cache miss.

Access: :func:`rows_query` is ``auth.scoped`` over the user's teams plus the tokenizers shared
with this visitor through share links, so every view that loads a tokenizer here is scoped.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from flask import abort
from sqlalchemy import Select, select
from sqlalchemy.orm import defer

from engine import Tokenizer, TokenforgeError
from webapp.db import get_session
from webapp.models import Tokenizer as TokenizerRow

CACHE_SIZE = 8
_cache: OrderedDict[tuple[int, str], Tokenizer] = OrderedDict()
_lock = threading.Lock()


@dataclass(frozen=True, slots=True)
class Loaded:
    """A stored tokenizer's row (without its JSON) and the engine tokenizer built from it."""

    row: TokenizerRow
    tokenizer: Tokenizer

    @property
    def stats(self) -> dict[str, Any]:
        return self.row.stats or {}


def rows_query() -> Select[tuple[TokenizerRow]]:
    """Every tokenizer the current user may see, newest first, without the JSON column."""
    from webapp.auth import scoped
    from webapp.sharing import shared_tokenizer_ids

    return (scoped(TokenizerRow, shared_ids=shared_tokenizer_ids())
            .options(defer(TokenizerRow.tokenizer_json)).order_by(TokenizerRow.id.desc()))


def all_rows() -> list[TokenizerRow]:
    """The tokenizers to offer in pickers (compare, the API list)."""
    return list(get_session().scalars(rows_query()))


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
    if not 0 < row_id < 2**63:
        abort(404)
    row = get_session().scalar(rows_query().where(TokenizerRow.id == row_id))
    if row is None:
        abort(404)
    key = (row.id, row.created_at.isoformat() if row.created_at else "")
    with _lock:
        tokenizer = _cache.get(key)
        if tokenizer is not None:
            _cache.move_to_end(key)
    if tokenizer is None:
        tokenizer = _parse(row.id)
        tokenizer.name = row.name
        with _lock:
            _cache[key] = tokenizer
            while len(_cache) > CACHE_SIZE:
                _cache.popitem(last=False)
    return Loaded(row, tokenizer)


def find(ref: object) -> Loaded | None:
    """A tokenizer by id (int or digit string) or exact name, for the JSON API; None if absent."""
    session = get_session()
    row_id: int | None = None
    if isinstance(ref, int) and not isinstance(ref, bool):
        row_id = ref
    elif isinstance(ref, str) and ref.strip().isdigit():
        row_id = int(ref.strip())
    elif isinstance(ref, str) and ref.strip():
        row = session.scalar(rows_query().where(TokenizerRow.name == ref.strip()).limit(1))
        row_id = row.id if row is not None else None
    if row_id is None or not 0 < row_id < 2**63:  # databases cannot even compare bigger ids
        return None
    if session.scalar(rows_query().where(TokenizerRow.id == row_id)) is None:
        return None
    return load(row_id)
