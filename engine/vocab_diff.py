"""The vocabulary diff of two tokenizers: the pieces they share, the pieces only one has, and
the lines of a text that they encode differently.

**When two pieces are the same.** Pieces are compared by what they spell in decoded text, not
by how a vocabulary file writes them. A piece's spelling is :meth:`Tokenizer.token_bytes`
(byte-level BPE gives raw bytes, so GPT-2's ``Ġthe`` spells ``b" the"``; a sentencepiece-style
model gives the piece's UTF-8, ``▁the``), with the word-start marker of a tokenizer whose
decoder turns a marker into a space (sentencepiece's ``▁``, or the ``Replace`` step of a Hugging
Face decoder such as Llama 2's) written as that space. So GPT-2's ``Ġthe`` and Llama 2's ``▁the``
are one piece (both spell " the"), GPT-2's ``the`` is another, and a byte-level token that spells
a literal ``▁`` stays a ``▁``. Three exceptions keep the rule honest:

- sentencepiece's byte-fallback pieces (``<0x41>``) stand only for one another: a fallback for
  byte 0x41 is not the piece ``A`` that spells the same byte;
- WordPiece's continuing pieces keep their prefix (``##ing`` is not the word-initial ``ing``);
- special and added tokens spell their string (``<s>``, ``<|endoftext|>``).

Two ids of one tokenizer that spell the same are one piece, the lower id standing for it (the
other counts in ``duplicates``). Between two tokenizers with the same marker (a base and its
extension, Llama 2 and Gemma 3) the diff is set arithmetic on their vocabulary strings.

Each piece only one side has is listed with its id, its type (sentencepiece's piece types, as
``engine.formats.spm_model.piece_types`` gives them or infers them; CONTROL is "special" where
the tokenizer is not a sentencepiece ``.model``), its merge rank (BPE) or score (Unigram and
sentencepiece BPE), grouped by script (``engine/token_scripts.py``; byte-fallback pieces and
special pieces have a group of their own).

The line diff encodes each line of a text with both (``encode_ordinary``: special tokens as
text) and compares the spellings of their tokens, so unrelated tokenizers compare as well as a
base and its extension. Bounded: at most ``max_lines`` lines are compared, at most ``shown``
differing lines kept, each cut to ``MAX_LINE_CHARS`` characters and ``MAX_LINE_TOKENS`` tokens a
side. Left out: rendering (``vocab_diff_report.py``, the web page) and loading files.

Internal: not part of the engine's API (``engine.PUBLIC_MODULES``).
"""

from __future__ import annotations

import weakref
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

from engine.decoders import MetaspaceDecoder, Replace
from engine.formats.spm_model import piece_types
from engine.formats.spm_proto import BYTE, CONTROL, NORMAL, UNKNOWN, UNUSED, USER_DEFINED
from engine.token_scripts import script_order, token_script
from engine.tokenizer import Tokenizer

MAX_LINES = 10_000  # lines of a text compared at most
SHOWN_LINES = 50  # differing lines kept
MAX_LINE_CHARS = 300  # of a kept line's text
MAX_LINE_TOKENS = 100  # of each side's tokens on a kept line
SHOW_CHARS = 100  # of a piece's vocabulary string
BYTE_GROUP = "Byte-fallback pieces"
SPECIAL_GROUP = "Special pieces"

Key = tuple[bool, bytes]  # (a byte-fallback piece, the bytes it spells)
_TYPE_NAMES = {NORMAL: "normal", UNKNOWN: "unknown", CONTROL: "control", USER_DEFINED: "user-defined",
               UNUSED: "unused", BYTE: "byte"}


@dataclass(frozen=True, slots=True)
class Piece:
    """One piece that only one side has."""

    id: int
    piece: str  # the vocabulary string as its tokenizer writes it, cut to SHOW_CHARS
    spelling: bytes  # what it spells, the marker as a space
    type: str  # normal, byte, special, control, user-defined, unused, unknown
    rank: int | None  # merge rank (BPE), None for pieces no merge makes
    score: float | None  # Unigram / sentencepiece score


@dataclass(slots=True)
class Spellings:
    """One tokenizer's pieces by spelling, and each id's spelling."""

    by_key: dict[Key, int]  # spelling -> the lowest id that spells it
    of_id: dict[int, Key]
    types: list[int]  # sentencepiece piece type by id
    duplicates: int = 0


@dataclass(frozen=True, slots=True)
class VocabDiff:
    """What two vocabularies share and what only one of them has (see the module docstring)."""

    pieces_a: int
    pieces_b: int
    duplicates_a: int
    duplicates_b: int
    shared: int
    shared_same_id: int  # shared pieces with the same id on both sides (a base and its extension: all)
    shared_by_script: dict[str, int]
    only_a: dict[str, list[Piece]]  # by script, in the order of ``token_scripts.script_order``, each in id order
    only_b: dict[str, list[Piece]]

    @property
    def only_a_count(self) -> int:
        return sum(map(len, self.only_a.values()))

    @property
    def only_b_count(self) -> int:
        return sum(map(len, self.only_b.values()))


@dataclass(frozen=True, slots=True)
class LineChange:
    """A line the two tokenizers encode differently."""

    number: int  # 1-based
    text: str  # cut to MAX_LINE_CHARS
    tokens_a: list[str]  # vocabulary strings, cut to MAX_LINE_TOKENS
    tokens_b: list[str]
    count_a: int  # the line's whole token counts
    count_b: int


@dataclass(frozen=True, slots=True)
class LineDiff:
    """How many lines were compared, how many differ, and the first ones that do."""

    compared: int = 0
    differing: int = 0
    not_compared: int = 0  # lines past max_lines
    changes: list[LineChange] = field(default_factory=list)


def space_marker(tokenizer: Tokenizer) -> bytes | None:
    """The UTF-8 of the character this tokenizer's decoder turns into a space (``▁``), else None."""
    decoder = tokenizer.decoder
    for step in getattr(decoder, "steps", None) or [decoder]:
        if isinstance(step, MetaspaceDecoder):
            return step.replacement.encode("utf-8")
        if isinstance(step, Replace) and not step.is_regex and step.content == " " and len(step.pattern) == 1:
            return step.pattern.encode("utf-8")
    return None


# Kept as long as the tokenizer object lives (the web app's cache keeps or drops it); tokenizers
# are not changed once built, so a diff and a line diff of the same pair share the work.
_cache: weakref.WeakKeyDictionary[Tokenizer, Spellings] = weakref.WeakKeyDictionary()


def spellings(tokenizer: Tokenizer) -> Spellings:
    """Every id's spelling (the module docstring's rule) and the pieces by spelling."""
    found = _cache.get(tokenizer)
    if found is None:
        found = _cache[tokenizer] = _spellings(tokenizer)
    return found


def _spellings(tokenizer: Tokenizer) -> Spellings:
    marker, types = space_marker(tokenizer), piece_types(tokenizer)
    found = Spellings({}, {}, types)
    for token_id in range(tokenizer.vocab_size):
        if tokenizer.id_to_token(token_id) is None:
            continue  # a gap in the ids
        kind = types[token_id] if token_id < len(types) else NORMAL
        data = bytes(tokenizer.token_bytes(token_id))
        if marker is not None and kind != BYTE:
            data = data.replace(marker, b" ")
        key = (kind == BYTE, data)
        found.of_id[token_id] = key
        if found.by_key.setdefault(key, token_id) != token_id:
            found.duplicates += 1
    return found


def _type_name(tokenizer: Tokenizer, kind: int) -> str:
    if kind == CONTROL and getattr(tokenizer, "spm_proto", None) is None:
        return "special"
    return _TYPE_NAMES.get(kind, "normal")


def group_of(piece: Piece) -> str:
    """The script group a piece is listed under."""
    if piece.type == "byte":
        return BYTE_GROUP
    if piece.type in ("special", "control", "unknown"):
        return SPECIAL_GROUP
    return token_script(piece.spelling)


def _pieces(tokenizer: Tokenizer, found: Spellings, keys: list[Key]) -> dict[str, list[Piece]]:
    """The pieces of ``keys`` (all of ``tokenizer``), with rank, score and type, grouped by script."""
    model = tokenizer.model
    origins: Mapping[int, tuple[int, int, int]] = getattr(model, "origins", None) or {}
    scored = model.pieces() if callable(getattr(model, "pieces", None)) else None
    groups: dict[str, list[Piece]] = {}
    for token_id in sorted(found.by_key[key] for key in keys):
        kind = found.types[token_id] if token_id < len(found.types) else NORMAL
        special = token_id in tokenizer.specials.by_id
        rank = origins[token_id][0] if not special and token_id in origins else None
        score = scored[token_id][1] if scored is not None and not special and token_id < len(scored) else None
        piece = Piece(token_id, (tokenizer.id_to_token(token_id) or "")[:SHOW_CHARS], found.of_id[token_id][1],
                      _type_name(tokenizer, kind), rank, score)
        groups.setdefault(group_of(piece), []).append(piece)
    return {name: groups[name] for name in script_order(set(groups))}


def diff(a: Tokenizer, b: Tokenizer) -> VocabDiff:
    """The vocabulary diff of ``a`` and ``b``."""
    found_a, found_b = spellings(a), spellings(b)
    keys_a, keys_b = found_a.by_key, found_b.by_key
    shared = keys_a.keys() & keys_b.keys()
    by_script: Counter[str] = Counter()
    for key in shared:
        token_id = keys_a[key]
        kind = _type_name(a, found_a.types[token_id] if token_id < len(found_a.types) else NORMAL)
        by_script[group_of(Piece(token_id, "", key[1], kind, None, None))] += 1
    return VocabDiff(
        pieces_a=len(keys_a), pieces_b=len(keys_b), duplicates_a=found_a.duplicates, duplicates_b=found_b.duplicates,
        shared=len(shared), shared_same_id=sum(keys_a[key] == keys_b[key] for key in shared),
        shared_by_script={name: by_script[name] for name in script_order(set(by_script))},
        only_a=_pieces(a, found_a, [key for key in keys_a if key not in keys_b]),
        only_b=_pieces(b, found_b, [key for key in keys_b if key not in keys_a]),
    )


def line_diff(a: Tokenizer, b: Tokenizer, text: str, *, shown: int = SHOWN_LINES,
              max_lines: int = MAX_LINES) -> LineDiff:
    """The lines of ``text`` (empty ones skipped) whose tokens spell differently in ``a`` and ``b``."""
    of_a, of_b = spellings(a).of_id, spellings(b).of_id
    lines = text.split("\n")
    compared = differing = 0
    changes: list[LineChange] = []
    for number, line in enumerate(lines[:max_lines], start=1):
        line = line.removesuffix("\r")
        if not line:
            continue
        compared += 1
        ids_a, ids_b = a.encode_ordinary(line), b.encode_ordinary(line)
        if [of_a.get(i) for i in ids_a] == [of_b.get(i) for i in ids_b]:
            continue
        differing += 1
        if len(changes) < shown:
            changes.append(LineChange(number, line[:MAX_LINE_CHARS],
                                      [a.id_to_token(i) or "" for i in ids_a[:MAX_LINE_TOKENS]],
                                      [b.id_to_token(i) or "" for i in ids_b[:MAX_LINE_TOKENS]],
                                      len(ids_a), len(ids_b)))
    return LineDiff(compared, differing, max(0, len(lines) - max_lines), changes)
