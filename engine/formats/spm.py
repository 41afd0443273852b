"""sentencepiece's ``.vocab`` file: one ``piece<TAB>score`` line per id, in id order.

This is what ``spm_train`` writes beside its ``.model``; it holds the whole Unigram vocabulary
(the control pieces ``<unk>``, ``<s>``, ``</s>`` score 0, as do byte pieces ``<0x00>``…).
Reading it back gives a :class:`~engine.models.unigram.Unigram` model; which id is unknown and
whether byte fallback is on are not in the file, so they are inferred: ``<unk>`` if present,
byte fallback if all 256 byte pieces are present. The binary ``.model`` protobuf is left out.

Pieces with tabs: nothing is escaped. A score never holds a tab, so a line splits at its *last*
tab, and a piece such as ``▁\t`` (which any corpus with tabs yields) is written as it is. This
reads every file sentencepiece writes exactly as written. A piece with a newline cannot be held
by a line-per-piece file and is refused with the reason; the trainer never makes one (lines
are its sentences), so only imported models can have them, and tokenizer.json holds them.
"""

from __future__ import annotations

import math
from pathlib import Path

from engine.errors import FormatError
from engine.formats import read_utf8
from engine.limits import MAX_VOCAB_SIZE, check_count, check_token, shown
from engine.models.unigram import BYTE_PIECES, Unigram

__all__ = ["dumps_vocab", "load_vocab", "loads_vocab", "save_vocab"]

CONTROL_PIECES = ("<unk>", "<s>", "</s>", "<pad>")


def dumps_vocab(model: Unigram) -> str:
    """The ``.vocab`` text of ``model``; scores are written exactly (``repr``), pieces as they are."""
    lines = []
    for piece, score in model.pieces():
        if "\n" in piece:
            raise FormatError(f"The piece {piece!r} contains a newline, which a .vocab file cannot hold; "
                              f"export tokenizer.json instead.")
        lines.append(f"{piece}\t{score!r}")
    return "\n".join(lines) + "\n"


def save_vocab(model: Unigram, path: str | Path) -> None:
    Path(path).write_text(dumps_vocab(model), encoding="utf-8")


def loads_vocab(text: str, *, source: str | None = None) -> Unigram:
    """Parse ``.vocab`` text; every line is ``piece<TAB>score``, split at its last tab."""
    pieces: list[tuple[str, float]] = []
    seen: dict[str, int] = {}
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the final newline
    check_count(len(lines), MAX_VOCAB_SIZE, "lines, one piece each", name="MAX_VOCAB_SIZE", source=source)
    for number, line in enumerate(lines, start=1):
        piece, tab, raw = line.rpartition("\t")
        if not tab or not piece:
            raise FormatError("Expected 'piece<TAB>score'.", line=number, source=source)
        check_token(piece, line=number, source=source)
        try:
            score = float(raw)
        except ValueError:
            raise FormatError(f"The score {shown(raw)} is not a number.", line=number, source=source) from None
        if not math.isfinite(score):
            raise FormatError(f"The score {shown(raw)} is not a finite number.", line=number, source=source)
        if piece in seen:
            raise FormatError(f"The piece {piece!r} already appeared on line {seen[piece]}.",
                              line=number, source=source)
        seen[piece] = number
        pieces.append((piece, score))
    if not pieces:
        raise FormatError("The .vocab file is empty.", source=source)
    byte_fallback = all(b in seen for b in BYTE_PIECES)
    unk_id = seen["<unk>"] - 1 if "<unk>" in seen else None
    if unk_id is None and not byte_fallback:
        raise FormatError("The vocabulary has no <unk> piece and no byte pieces, so some text could not be encoded.",
                          source=source)
    specials = {p: seen[p] - 1 for p in CONTROL_PIECES if p in seen}
    return Unigram(pieces, unk_id=unk_id, byte_fallback=byte_fallback, special_tokens=specials)


def load_vocab(path: str | Path) -> Unigram:
    """Read a ``.vocab`` file (see :func:`loads_vocab`); one over ``MAX_FILE_BYTES`` is refused."""
    return loads_vocab(read_utf8(path, source=str(path)), source=str(path))
