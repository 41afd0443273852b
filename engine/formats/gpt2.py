"""GPT-2's tokenizer files: ``vocab.json`` (token → id) and ``merges.txt`` (one merge a line).

Both files write tokens in GPT-2's byte-to-unicode alphabet (``Ġthe`` is ``b" the"``). We write
``merges.txt`` with the ``#version: 0.2`` header that Hugging Face writes, and read it with or
without one (OpenAI's original file and CS336's copy have none, and a real merge may start with
``#``, e.g. ``# #``, so only a first line starting with ``#version`` is skipped).

Every import is validated before a model is built, and each problem is a ``FormatError`` that
names the file and line: a token outside the byte alphabet, a duplicate token or id, a merge
that is not two tokens, a merge whose parts or result are not in the vocabulary, and a missing
single byte. Malformed input never raises anything else.

Neither file stores the pre-tokenizer or which tokens are special; the caller passes them (GPT-2
used the ``gpt2`` pattern and ``<|endoftext|>``). :func:`import_gpt2`, what the CLI and the import
form call, guesses the special tokens when none are named (``unreachable.py``: entries no merge
builds that are written like ``<|…|>``) and returns a note saying what it took and what it left.

Left out: other models than byte-level BPE have their own formats (``vocab_txt.py``, ``spm.py``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from engine.byte_unicode import UNICODE_TO_BYTE, bytes_to_symbols
from engine.errors import ConfigError, FormatError
from engine.formats import read_utf8
from engine.formats.unreachable import choose_specials
from engine.json_layout import dumps_indented
from engine.limits import (
    MAX_MERGES,
    MAX_SPECIAL_TOKENS,
    MAX_VOCAB_SIZE,
    check_count,
    check_id,
    check_special_tokens,
    check_token,
    shown,
)
from engine.models.bpe import BPE
from engine.presets import byte_level_bpe
from engine.pretokenizers import PreTokenizer
from engine.tokenizer import Tokenizer

__all__ = ["build_gpt2", "dumps_gpt2", "dumps_merges", "dumps_vocab", "import_gpt2", "load_gpt2", "parse_merges_txt",
           "parse_vocab_json", "save_gpt2"]

MERGES_HEADER = "#version: 0.2"
_WHITESPACE = " \t\n\r"


def _line_of(text: str, position: int) -> int:
    return text.count("\n", 0, position) + 1


def parse_vocab_json(text: str, *, source: str = "vocab.json") -> dict[str, int]:
    """Read a flat JSON object of token → id (see :func:`parse_vocab_lines` for line numbers)."""
    return parse_vocab_lines(text, source=source)[0]


def parse_vocab_lines(text: str, *, source: str = "vocab.json") -> tuple[dict[str, int], dict[str, int]]:
    """Read a flat JSON object of token → id, and the line on which each entry starts.

    ``json.loads`` would silently keep the last of two equal keys and lose every position, so
    the object is walked entry by entry with the standard decoder's own scanners.
    """
    decoder = json.JSONDecoder()
    vocab: dict[str, int] = {}
    lines: dict[str, int] = {}
    owners: dict[int, str] = {}
    end = len(text)
    counted, line = 0, 1  # newlines are counted incrementally: a vocab.json may have 200k lines

    def line_at(position: int) -> int:
        nonlocal counted, line
        line += text.count("\n", counted, position)
        counted = position
        return line

    def skip(i: int) -> int:
        while i < end and text[i] in _WHITESPACE:
            i += 1
        return i

    def fail(message: str, position: int) -> FormatError:
        return FormatError(message, line=_line_of(text, position), source=source)

    i = skip(1 if text.startswith("\ufeff") else 0)
    if i >= end or text[i] != "{":
        raise fail("A vocab.json file must be one JSON object of token to id, starting with '{'.", i)
    i = skip(i + 1)
    if i < end and text[i] == "}":
        return vocab, lines
    while True:
        if i >= end or text[i] != '"':
            raise fail("Expected a token in double quotes.", i)
        start = i
        try:
            token, i = json.decoder.scanstring(text, i + 1)  # type: ignore[attr-defined]
        except (ValueError, RecursionError):
            raise fail("The file is not valid JSON here.", i) from None
        i = skip(i)
        if i >= end or text[i] != ":":
            raise fail(f"Expected ':' after the token {shown(token)}.", i)
        try:
            token_id, i = decoder.raw_decode(text, skip(i + 1))
        except (ValueError, RecursionError):  # JSONDecodeError, or an int of over 4300 digits
            raise fail(f"The id of token {shown(token)} is not valid JSON.", i) from None
        check_token(token, line=line_at(start), source=source)
        check_id(token_id, token, line=line_at(start), source=source)
        if token in vocab:
            raise fail(f"The token {token!r} appears twice.", start)
        if token_id in owners:
            raise fail(f"Id {token_id} is used twice: by {owners[token_id]!r} and by {token!r}.", start)
        vocab[token] = token_id
        lines[token] = line_at(start)
        owners[token_id] = token
        check_count(len(vocab), MAX_VOCAB_SIZE, "vocabulary entries or more", name="MAX_VOCAB_SIZE",
                    source=source)
        i = skip(i)
        if i < end and text[i] == ",":
            i = skip(i + 1)
            continue
        if i < end and text[i] == "}":
            break
        raise fail("Expected ',' or '}' after an entry.", i)
    if skip(i + 1) != end:
        raise fail("Unexpected text after the closing '}'.", skip(i + 1))
    return vocab, lines


def parse_merges_txt(text: str, *, source: str = "merges.txt") -> list[tuple[str, str, int]]:
    """Read merges as ``(left, right, line number)``; the ``#version`` header is optional."""
    merges: list[tuple[str, str, int]] = []
    for number, line in enumerate(text.split("\n"), start=1):
        line = line.removesuffix("\r")  # "\r" is not in the byte alphabet, so it is never a token
        if not line or (number == 1 and line.startswith("#version")):
            continue
        parts = line.split(" ")
        if len(parts) != 2 or not parts[0] or not parts[1]:
            raise FormatError(
                f"A merge must be two tokens separated by one space, not {shown(line)}.", line=number, source=source
            )
        check_token(parts[0], line=number, source=source)
        check_token(parts[1], line=number, source=source)
        merges.append((parts[0], parts[1], number))
        check_count(len(merges), MAX_MERGES, "merges or more", name="MAX_MERGES", source=source)
    return merges


def _symbols_to_bytes(token: str) -> bytes | None:
    try:
        return bytes([UNICODE_TO_BYTE[char] for char in token])
    except KeyError:
        return None


def build_gpt2(
    vocab: Mapping[str, int],
    merges: Iterable[tuple[str, str, int]],
    *,
    pretokenizer: str | PreTokenizer = "gpt2",
    special_tokens: Iterable[str] = (),
    vocab_source: str = "vocab.json",
    merges_source: str = "merges.txt",
    vocab_lines: Mapping[str, int] | None = None,
) -> Tokenizer:
    """Validate parsed files and assemble a byte-level BPE tokenizer.

    A special token keeps its id if the vocabulary has it (GPT-2's ``<|endoftext|>`` is 50256);
    otherwise it gets the next free id, in the order given.
    """
    specials: dict[str, int] = {}
    next_id = max(vocab.values(), default=-1) + 1
    for token in special_tokens:
        if not token:
            raise ConfigError("A special token cannot be the empty string.")
        if token not in specials:
            specials[token] = vocab[token] if token in vocab else next_id
            next_id += token not in vocab
            check_count(len(specials), MAX_SPECIAL_TOKENS, "special tokens", name="MAX_SPECIAL_TOKENS")
    check_special_tokens(specials)
    by_bytes: dict[bytes, int] = {}
    model_vocab: dict[int, bytes] = {}
    for token, token_id in vocab.items():
        if token in specials:
            continue
        data = _symbols_to_bytes(token)
        if data is None:
            raise FormatError(
                f"The token {token!r} has characters outside GPT-2's byte alphabet; if it is a special "
                f"token, pass it with --special-token / special_tokens.",
                line=(vocab_lines or {}).get(token),
                source=vocab_source,
            )
        if data in by_bytes:  # unreachable from parse_vocab_json (its keys are distinct), but cheap
            raise FormatError(f"The token {token!r} appears twice (ids {by_bytes[data]} and {token_id}).",
                              line=(vocab_lines or {}).get(token), source=vocab_source)
        by_bytes[data] = token_id
        model_vocab[token_id] = data
    missing = [b for b in range(256) if bytes([b]) not in by_bytes]
    if missing:
        raise FormatError(
            f"The vocabulary lacks the single byte 0x{missing[0]:02X} ({bytes_to_symbols(bytes([missing[0]]))!r}); "
            f"{len(missing)} of the 256 single bytes are missing and byte-level BPE needs all of them.",
            source=vocab_source,
        )
    pairs: list[tuple[bytes, bytes]] = []
    for left, right, line in merges:
        for part in (left, right, left + right):
            data = _symbols_to_bytes(part)
            if data is None or data not in by_bytes:
                what = "merge result" if part == left + right else "token"
                raise FormatError(
                    f"The merge {left + ' ' + right!r} uses the {what} {part!r}, which is not in the vocabulary.",
                    line=line,
                    source=merges_source,
                )
        pairs.append((bytes([UNICODE_TO_BYTE[c] for c in left]), bytes([UNICODE_TO_BYTE[c] for c in right])))
    return byte_level_bpe(model_vocab, pairs, pretokenizer=pretokenizer, special_tokens=specials)


def import_gpt2(
    vocab_text: str,
    merges_text: str,
    *,
    pretokenizer: str | PreTokenizer = "gpt2",
    special_tokens: Sequence[str] = (),
    vocab_source: str = "vocab.json",
    merges_source: str = "merges.txt",
) -> tuple[Tokenizer, list[str]]:
    """Import the two files' text, and the notes for the user (plain sentences, maybe none).

    With no ``special_tokens``, the vocabulary entries that no merge builds and that are written
    like special tokens are taken as special (``unreachable.choose_specials``); the notes name
    them, and any unreachable entry left ordinary.
    """
    vocab, lines = parse_vocab_lines(vocab_text, source=vocab_source)
    merges = parse_merges_txt(merges_text, source=merges_source)
    choice = choose_specials(vocab, merges, special_tokens)
    tokenizer = build_gpt2(vocab, merges, pretokenizer=pretokenizer, special_tokens=choice.tokens,
                           vocab_source=vocab_source, merges_source=merges_source, vocab_lines=lines)
    return tokenizer, choice.notes()


def load_gpt2(
    vocab_path: str | Path,
    merges_path: str | Path,
    *,
    pretokenizer: str | PreTokenizer = "gpt2",
    special_tokens: Iterable[str] = (),
) -> Tokenizer:
    """Import a ``vocab.json`` + ``merges.txt`` pair with exactly ``special_tokens`` (OSError if a
    file cannot be read); :func:`import_gpt2` is the one that guesses them."""
    vocab_path, merges_path = Path(vocab_path), Path(merges_path)
    vocab, lines = parse_vocab_lines(read_utf8(vocab_path), source=vocab_path.name)
    merges = parse_merges_txt(read_utf8(merges_path), source=merges_path.name)
    return build_gpt2(
        vocab,
        merges,
        pretokenizer=pretokenizer,
        special_tokens=special_tokens,
        vocab_source=vocab_path.name,
        merges_source=merges_path.name,
        vocab_lines=lines,
    )


def _bpe_model(tokenizer: Tokenizer) -> BPE:
    if not isinstance(tokenizer.model, BPE):
        raise ConfigError(
            f"Only byte-level BPE tokenizers have GPT-2 files; this one is {tokenizer.model.kind!r}. "
            "Use its tokenizer.json instead."
        )
    return tokenizer.model


def dumps_vocab(tokenizer: Tokenizer) -> str:
    """``vocab.json`` text: every token, special tokens included, in id order."""
    return _vocab_text(tokenizer, _bpe_model(tokenizer).symbol_names())


def dumps_merges(tokenizer: Tokenizer) -> str:
    """``merges.txt`` text with the ``#version: 0.2`` header, one merge a line in rank order."""
    return _merges_text(_bpe_model(tokenizer).merge_lines())


def dumps_gpt2(tokenizer: Tokenizer) -> tuple[str, str]:
    """``(vocab.json, merges.txt)`` texts, the tokens' byte-level names made once for both (a 32k
    vocabulary: ~20 ms each time)."""
    model = _bpe_model(tokenizer)
    names = model.symbol_names()
    merges = model.merge_lines(names)
    return _vocab_text(tokenizer, names), _merges_text(merges)


def _vocab_text(tokenizer: Tokenizer, names: dict[int, str]) -> str:
    """``vocab.json`` from the model's byte-level ``names`` (changed: the special tokens join them)."""
    names.update({i: token for token, i in tokenizer.special_tokens.items()})
    return dumps_indented({token: i for i, token in sorted(names.items())}) + "\n"


def _merges_text(lines: list[str]) -> str:
    return "\n".join([MERGES_HEADER, *lines]) + "\n"


def save_gpt2(tokenizer: Tokenizer, vocab_path: str | Path, merges_path: str | Path) -> None:
    """Write ``vocab.json`` and ``merges.txt``."""
    vocab_text, merges_text = dumps_gpt2(tokenizer)
    Path(vocab_path).write_text(vocab_text, encoding="utf-8")
    Path(merges_path).write_text(merges_text, encoding="utf-8")
