"""The vocabulary browser's data: a searchable, sortable, filterable, paged token list, lengths.

Pure functions over an engine :class:`~engine.Tokenizer`. A row is (id, text with escapes,
vocabulary string, byte length, score or merge rank, kind, script). Length is the UTF-8 length
of what the token spells, so a WordPiece ``##ing`` counts 3 and a Unigram ``▁the`` counts 4
(sentencepiece's ``▁`` is a space, and is shown as one).
A listing is sorted by id, length (longest first), merge rank (BPE) or score (Unigram), and
filtered by kind (single bytes, special tokens, reserved pieces, word-initial tokens, tokens
inside a word) and by script (``scripts.py``). Word-initial means starting with a space for
byte-level BPE and Unigram (``Ġ``, ``▁``), and not being a continuing piece (``##``) for WordPiece.

Reserved pieces are those the model never matches against text: the unknown piece, control
pieces (``<s>``, ``</s>``, special tokens in general), sentencepiece's byte-fallback pieces
(``<0x41>``) and UNUSED pieces. sentencepiece scores them all 0, the top score, so a score sort
puts them after the real pieces; otherwise a Unigram vocabulary sorted "most likely first" opens
on ``<unk>`` and 256 byte pieces.

A search (:func:`matches`) keeps the query's spaces, leading and trailing ones included: " the"
is a different question from "the". The query is written as the Text column writes a token
(:func:`~webapp.web.shown.escape_text`: a space is ``␣``, a newline ``\\n``) and looked
for, ignoring case, in that column, so " the" finds the tokens whose text has a space followed
by "the" (GPT-2's ``Ġthe``, sentencepiece's ``▁the``) and not ``theme``. WordPiece stores no
spaces: there a word-initial token counts as starting with one (as it does in decoded text) and a
``##`` piece as not. The query also matches the vocabulary string as typed (``Ġthe``, ``▁the``,
``##ing``), and a query that is a number matches that id.

Every result is bounded whatever the tokenizer holds: sort orders are computed once per loaded
tokenizer (as the rows are), unknown sort or filter names fall back to the defaults, a row keeps at
most ``SHOW_BYTES`` of a token's text and ``SHOW_CHARS`` of its vocabulary string (a search looks at
those too, so a 10 MB token is neither escaped nor scanned whole), pages hold ``PAGE_SIZE`` rows,
queries are cut to ``MAX_QUERY`` characters, and the length histogram has at most
``charts.MAX_BARS`` bars (ranges of lengths when the longest token is longer than that).

Left out: HTML (``templates/playground/vocab.html``) and the SVG histogram (``charts.py``).
"""

from __future__ import annotations

import weakref
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from engine import Tokenizer
from engine.formats.spm_model import NORMAL, USER_DEFINED, is_sentencepiece, piece_types
from webapp.playground import scripts
from webapp.playground.charts import MAX_BARS, RANGE_DASH
from webapp.web.numbers import parse_int
from webapp.web.shown import SHOW_BYTES, escape_text, shown_string, shown_text

PAGE_SIZE = 100
LONGEST = 25
MAX_QUERY = 200


@dataclass(frozen=True, slots=True)
class VocabRow:
    """One vocabulary entry as the browser lists it."""

    id: int
    text: str  # escaped, cut to SHOW_BYTES bytes of the token
    token: str  # cut to SHOW_CHARS characters
    byte_length: int  # of the whole token
    special: bool
    score: float | None
    rank: int | None
    initial: bool | None  # starts a word (None: the model does not say)
    script: str
    reserved: bool = False  # never matched against text: unknown, control, byte-fallback, unused


@dataclass(frozen=True, slots=True)
class Page:
    """One page of a (possibly filtered) listing."""

    rows: list[VocabRow]
    page: int
    pages: int
    total: int


def _metaspace(tokenizer: Tokenizer) -> bytes | None:
    """The UTF-8 of the character a sentencepiece model writes for a space (``▁``), else None."""
    if not is_sentencepiece(tokenizer):
        return None
    for part in (tokenizer.decoder, tokenizer.pre_tokenizer):
        replacement = getattr(part, "replacement", None)
        if isinstance(replacement, str) and len(replacement) == 1:
            return replacement.encode("utf-8")
    return "▁".encode()


def _surface(tokenizer: Tokenizer, token_id: int, metaspace: bytes | None) -> bytes:
    """What the token spells (a WordPiece ``##`` and a Unigram ``▁`` as their text)."""
    model = tokenizer.model
    if tokenizer.is_special(token_id):
        return tokenizer.token_bytes(token_id)
    surface = getattr(model, "surface_bytes", None)
    data = surface(token_id) if surface is not None else tokenizer.token_bytes(token_id)
    return data.replace(metaspace, b" ") if metaspace else data


def _reserved(tokenizer: Tokenizer) -> set[int]:
    """The ids the model never matches against text (see the module docstring)."""
    reserved = set(tokenizer.special_tokens.values())
    unk_id = getattr(tokenizer.model, "unk_id", None)
    if isinstance(unk_id, int):
        reserved.add(unk_id)
    if is_sentencepiece(tokenizer):  # sentencepiece's own piece types: BYTE and UNUSED too
        reserved.update(i for i, kind in enumerate(piece_types(tokenizer)) if kind not in (NORMAL, USER_DEFINED))
    return reserved


# Rows live as long as their tokenizer object, which ``tokenizers/loaded.py``'s cache keeps or drops; an
# lru_cache here would keep evicted tokenizers (and their rows) alive on its own count.
_cache: weakref.WeakKeyDictionary[Tokenizer, tuple[VocabRow, ...]] = weakref.WeakKeyDictionary()


def _rows(tokenizer: Tokenizer) -> tuple[VocabRow, ...]:
    """Every row, in id order, built once per loaded tokenizer (tokenizers are immutable)."""
    rows = _cache.get(tokenizer)
    if rows is None:
        rows = _cache[tokenizer] = _build_rows(tokenizer)
    return rows


def _build_rows(tokenizer: Tokenizer) -> tuple[VocabRow, ...]:
    model = tokenizer.model
    origins: dict[int, tuple[int, int, int]] = getattr(model, "origins", {})
    scores = model.pieces() if model.kind == "unigram" and hasattr(model, "pieces") else None
    vocab = dict(model.vocab())
    vocab.update(tokenizer.special_tokens)
    prefix = getattr(model, "prefix", "") if model.kind == "wordpiece" else None
    metaspace, reserved = _metaspace(tokenizer), _reserved(tokenizer)
    rows = []
    for token, token_id in sorted(vocab.items(), key=lambda kv: kv[1]):
        try:
            data = _surface(tokenizer, token_id, metaspace)
        except (KeyError, IndexError, ValueError):
            continue
        special = tokenizer.is_special(token_id)
        score = scores[token_id][1] if scores is not None and 0 <= token_id < len(scores) else None
        rank = origins[token_id][0] if token_id in origins else None
        if special or token_id in reserved:  # never in text: neither starts a word nor continues one
            initial = None
        elif prefix is not None:
            initial = not (prefix and token.startswith(prefix) and len(token) > len(prefix))
        else:
            initial = data.startswith(b" ")
        rows.append(VocabRow(token_id, shown_text(data, SHOW_BYTES), shown_string(token), len(data), special,
                             score, rank, initial, scripts.token_script(data), token_id in reserved))
    return tuple(rows)


SORTS = {"id": "id", "length": "length, longest first", "rank": "merge rank", "score": "score, most likely first"}
KINDS = {"": "all tokens", "byte": "single bytes", "special": "special tokens",
         "reserved": "unknown, control and byte pieces", "word-initial": "word-initial", "inside": "inside a word"}
_KIND_TEST = {
    "byte": lambda r: not r.special and r.byte_length == 1,
    "special": lambda r: r.special,
    "reserved": lambda r: r.reserved,
    "word-initial": lambda r: r.initial is True,
    "inside": lambda r: r.initial is False,
}
_SORT_KEY = {
    "length": lambda r: (-r.byte_length, r.id),
    "rank": lambda r: (r.rank is None, r.rank or 0, r.id),  # tokens no merge made (bytes, specials) last
    # reserved pieces score 0 in sentencepiece, the top score: after the real pieces, which they are not
    "score": lambda r: (r.score is None, r.reserved, -(r.score or 0.0), r.id),
}
_orders: weakref.WeakKeyDictionary[Tokenizer, dict[str, tuple[VocabRow, ...]]] = weakref.WeakKeyDictionary()


_Offer = tuple[list[str], list[tuple[str, int]], list[str]]
_offers: weakref.WeakKeyDictionary[Tokenizer, _Offer] = weakref.WeakKeyDictionary()


def _offered(tokenizer: Tokenizer) -> _Offer:
    """The sorts, scripts and kinds this vocabulary offers, computed once per loaded tokenizer."""
    offer = _offers.get(tokenizer)
    if offer is None:
        rows = _rows(tokenizer)
        sorts = ["id", "length"] + [name for name in ("rank", "score")
                                    if any(getattr(r, name) is not None for r in rows)]
        counts = Counter(r.script for r in rows if not r.special)
        # "reserved" only where it says more than "special tokens" (an unknown or byte piece that is not special)
        kinds = [k for k in KINDS if k != "reserved" or any(r.reserved and not r.special for r in rows)]
        offer = _offers[tokenizer] = (sorts, [(name, counts[name]) for name in scripts.order(set(counts))], kinds)
    return offer


def sorts_for(tokenizer: Tokenizer) -> list[str]:
    """The sorts that mean something for this model (merge rank needs merges, score needs scores)."""
    return list(_offered(tokenizer)[0])


def scripts_in(tokenizer: Tokenizer) -> list[tuple[str, int]]:
    """(script, number of tokens) for the scripts this vocabulary uses, in the filter's order."""
    return list(_offered(tokenizer)[1])


def kinds_for(tokenizer: Tokenizer) -> list[str]:
    """The kind filters that mean something here (reserved pieces beyond the special tokens)."""
    return list(_offered(tokenizer)[2])


def shown_query(query: str) -> str:
    """The query as it is matched, spaces as ``␣``: a leading or trailing space stays visible."""
    return escape_text(query[:MAX_QUERY].encode("utf-8"))


def matches(tokenizer: Tokenizer, query: str) -> Callable[[VocabRow], bool]:
    """Whether a row matches ``query``, spaces kept (the rule is in the module docstring)."""
    needle, typed = shown_query(query).casefold(), query[:MAX_QUERY].casefold()
    as_id = parse_int(query.strip())
    spaced = tokenizer.model.kind == "wordpiece"  # no spaces stored: a word-initial token starts with one

    def test(r: VocabRow) -> bool:
        text = ("␣" + r.text if spaced and r.initial else r.text).casefold()
        return r.id == as_id or needle in text or typed in r.token.casefold()
    return test


def _sorted(tokenizer: Tokenizer, sort: str) -> tuple[VocabRow, ...]:
    rows = _rows(tokenizer)
    if sort not in _SORT_KEY:
        return rows
    orders = _orders.setdefault(tokenizer, {})
    if sort not in orders:
        orders[sort] = tuple(sorted(rows, key=_SORT_KEY[sort]))
    return orders[sort]


def search(tokenizer: Tokenizer, query: str = "", page: int = 1, *, sort: str = "id", kind: str = "",
           script: str = "", page_size: int = PAGE_SIZE) -> Page:
    """The ``page``-th page (1-based) of the rows matching ``query`` (everything when empty),
    of ``kind`` and ``script`` (any when empty or unknown), in ``sort`` order (id when unknown)."""
    rows = _sorted(tokenizer, sort)
    query = query[:MAX_QUERY]  # spaces kept: " the" is not "the"
    test = _KIND_TEST.get(kind)
    if test is not None:
        rows = tuple(filter(test, rows))
    if script:
        rows = tuple(r for r in rows if r.script == script and not r.special)
    if query:
        rows = tuple(filter(matches(tokenizer, query), rows))
    pages = max(1, -(-len(rows) // page_size))
    page = min(max(1, page), pages)
    start = (page - 1) * page_size
    return Page(list(rows[start:start + page_size]), page, pages, len(rows))


def longest(tokenizer: Tokenizer, n: int = LONGEST) -> list[VocabRow]:
    """The ``n`` longest non-special tokens by byte length (ties by id)."""
    rows = [r for r in _rows(tokenizer) if not r.special]
    return sorted(rows, key=lambda r: (-r.byte_length, r.id))[:n]


def length_histogram(tokenizer: Tokenizer, max_bars: int = MAX_BARS) -> list[tuple[int | str, int]]:
    """(byte length, number of tokens) from length 1 to the longest, specials left out.

    Up to ``max_bars`` lengths there is one bar per length; beyond, each bar counts an equal
    range of lengths labelled "first–last", so the work and the chart do not grow with the
    longest token's length.
    """
    counter = Counter(r.byte_length for r in _rows(tokenizer) if not r.special)
    top = max(counter, default=0)
    if top <= max_bars:
        return [(length, counter.get(length, 0)) for length in range(1, top + 1)]
    width = -(-top // max_bars)
    bins = [0] * -(-top // width)
    for length, count in counter.items():
        if length > 0:
            bins[(length - 1) // width] += count
    return [(f"{1 + i * width:,}{RANGE_DASH}{min(top, (i + 1) * width):,}", count) for i, count in enumerate(bins)]
