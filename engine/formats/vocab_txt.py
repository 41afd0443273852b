"""BERT's ``vocab.txt``: one WordPiece token per line, the line number (from 0) is its id.

``read_vocab_txt``/``parse_vocab_txt`` and ``write_vocab_txt``/``dumps_vocab_txt`` convert between
the file and a ``{token: id}`` mapping; ``load_bert_tokenizer`` (or ``bert_tokenizer`` for a parsed
vocabulary) wraps a vocab.txt in the BERT pipeline (BERT's text cleanup, optional lowercasing and
accent stripping, BERT's pre-tokenizer, the ``##`` decoder and the ``[CLS] $A [SEP]`` template when
those tokens exist), as Hugging Face's ``BertWordPieceTokenizer`` does. As in Google's reader, only
the line end is removed, so a token may contain inner spaces.

Left out: the ``bert_config.json`` options (the caller passes ``lowercase``) and other
sentencepiece-style vocabularies (``formats/spm.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from engine.errors import FormatError
from engine.limits import MAX_VOCAB_SIZE, check_count, check_token, read_bytes

__all__ = ["bert_tokenizer", "dumps_vocab_txt", "load_bert_tokenizer", "parse_vocab_txt", "read_vocab_txt",
           "write_vocab_txt"]

if TYPE_CHECKING:
    from engine.tokenizer import Tokenizer


def read_vocab_txt(path: str | Path) -> dict[str, int]:
    """Read a vocab.txt into ``{token: id}``; empty lines, duplicates and bad UTF-8 raise FormatError."""
    source = str(path)
    try:
        text = read_bytes(path, source=source).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FormatError(f"The file is not UTF-8 (byte {exc.start} cannot be decoded).", source=source) from None
    except OSError as exc:
        raise FormatError(f"The file cannot be read ({exc.strerror}).", source=source) from None
    return parse_vocab_txt(text, source=source)


def parse_vocab_txt(text: str, *, source: str = "vocab.txt") -> dict[str, int]:
    """Parse vocab.txt text into ``{token: id}`` (see :func:`read_vocab_txt`)."""
    vocab: dict[str, int] = {}
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the newline that ends the last line
    check_count(len(lines), MAX_VOCAB_SIZE, "lines, one token each", name="MAX_VOCAB_SIZE", source=source)
    for number, line in enumerate(lines, 1):
        token = line.removesuffix("\r")
        if token == "":
            raise FormatError("The line is empty; vocab.txt has one token per line.", line=number, source=source)
        check_token(token, line=number, source=source)
        if token in vocab:
            raise FormatError(
                f"The token {token!r} already appeared on line {vocab[token] + 1}; each token must appear once.",
                line=number,
                source=source,
            )
        vocab[token] = number - 1
    if not vocab:
        raise FormatError("The file has no tokens.", source=source)
    return vocab


def dumps_vocab_txt(vocab: Mapping[str, int]) -> str:
    """``{token: id}`` as vocab.txt text; ids must run 0, 1, 2, ... without gaps."""
    ordered = sorted(vocab.items(), key=lambda item: item[1])
    for expected, (token, token_id) in enumerate(ordered):
        if token_id != expected:
            raise FormatError(
                f"vocab.txt stores ids as line numbers, so ids must run from 0 without gaps; "
                f"id {expected} is missing (the next token, {token!r}, has id {token_id})."
            )
        if token == "" or "\n" in token or "\r" in token:
            raise FormatError(f"The token {token!r} (id {token_id}) cannot be written on one vocab.txt line.")
    return "".join(f"{token}\n" for token, _ in ordered)


def write_vocab_txt(vocab: Mapping[str, int], path: str | Path) -> None:
    """Write ``{token: id}`` as a vocab.txt file (see :func:`dumps_vocab_txt`)."""
    Path(path).write_text(dumps_vocab_txt(vocab), encoding="utf-8")


def load_bert_tokenizer(
    path: str | Path, *, lowercase: bool = True, strip_accents: bool | None = None, unk_token: str = "[UNK]"
) -> Tokenizer:
    """A BERT tokenizer from a vocab.txt file (see :func:`bert_tokenizer`)."""
    return bert_tokenizer(
        read_vocab_txt(path), lowercase=lowercase, strip_accents=strip_accents, unk_token=unk_token,
        name=Path(path).stem, source=str(path),
    )


def bert_tokenizer(
    vocab: Mapping[str, int],
    *,
    lowercase: bool = True,
    strip_accents: bool | None = None,
    unk_token: str = "[UNK]",
    name: str = "",
    source: str = "vocab.txt",
) -> Tokenizer:
    """Wrap a WordPiece vocabulary in BERT's pipeline; ``strip_accents`` follows ``lowercase`` when None."""
    from engine.decoders import WordPieceDecoder
    from engine.models.wordpiece import WordPiece
    from engine.normalizers import BertCleanup, Lowercase, Normalizer, Sequence, StripAccents
    from engine.post_processors import TemplateProcessing
    from engine.pretokenizers import BertPreTokenizer
    from engine.tokenizer import Tokenizer

    if unk_token not in vocab:
        raise FormatError(f"The vocabulary has no {unk_token} token, which WordPiece needs for words it cannot spell.",
                          source=source)
    steps: list[Normalizer] = [BertCleanup()]
    if strip_accents if strip_accents is not None else lowercase:
        steps.append(StripAccents())
    if lowercase:
        steps.append(Lowercase())
    specials = {t: vocab[t] for t in ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", unk_token) if t in vocab}
    template = "[CLS] $A [SEP]" if "[CLS]" in specials and "[SEP]" in specials else None
    return Tokenizer(
        WordPiece(dict(vocab), unk_token=unk_token),
        normalizer=Sequence(steps),
        pre_tokenizer=BertPreTokenizer(),
        special_tokens=specials,
        post_processor=TemplateProcessing(template, specials) if template else None,
        decoder=WordPieceDecoder(),
        name=name,
    )
