"""The textbook tokenizers the playground compares subword models with.

- ``WordLevel``: one id per known word (a frequency vocabulary), ``[UNK]`` for the rest.
- ``CharLevel``: one id per character; unknown characters are ``[UNK]``.
- ``ByteLevel``: one id per UTF-8 byte, ids 0..255; nothing is ever unknown.
- ``MaxMatch``: dictionary maximum matching, forward (FMM: from the left, the longest word
  that matches) or backward (BMM: from the right). A position no word matches becomes a
  one-character ``[UNK]``. The classic case: 研究生命科学 is 研究生/命/科学 forward and
  研究/生命/科学 backward.

Each is a real :class:`~engine.models.base.Model`, so encode/decode/offsets come from the
pipeline. Hugging Face has WordLevel and BPE (a byte vocabulary without merges is our
``ByteLevel``), so those export losslessly; ``CharLevel`` is written as ``WordLevel`` behind a
one-character ``Split``; ``MaxMatch`` has no HF equivalent and is written as a Tokenforge
``{"type": "MaxMatch"}`` model that only Tokenforge reads. Training lives in
``trainers/baselines.py``.

Internal: not part of the engine's API (``engine.PUBLIC_MODULES``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engine.byte_unicode import BYTE_TO_UNICODE, UNICODE_TO_BYTE
from engine.errors import ConfigError, FormatError
from engine.limits import TICK_MASK, check_token, shown, work_meter
from engine.models.base import StringVocabulary, read_string_vocab
from engine.models.bpe import hf_byte_level_model

DIRECTIONS = ("forward", "backward")
# Maximum matching tries every length the vocabulary has at each position (up to 1,024 in an
# imported one), so a piece longer than this charges its loop to the encode's time budget,
# reading the clock every engine.limits.TICK_MASK + 1 tokens.
METERED_CHARS = 100
MATCH_ADVICE = "split the text into shorter words with a pre-tokenizer, or encode a shorter text."


class WordLevel(StringVocabulary):
    """A word vocabulary: each pre-token is one id, or the unknown token."""

    kind = "wordlevel"

    def tokenize(self, piece: str) -> list[int]:
        if not piece:
            return []
        found = self._ids.get(piece)
        return [found if found is not None else self._unknown(piece)]

    def to_hf(self) -> dict[str, Any]:
        return {"type": "WordLevel", "vocab": self._sorted_vocab(), "unk_token": self.unk_token}

    @classmethod
    def from_hf(cls, data: Mapping[str, Any], *, special_tokens: Mapping[str, int] | None = None) -> WordLevel:
        unk = data.get("unk_token")
        if unk is not None and not isinstance(unk, str):
            raise FormatError(f"The WordLevel unk_token must be a string, not {shown(unk)}.")
        if unk is not None:
            check_token(unk)
        return cls(read_string_vocab(data, "WordLevel"), unk_token=unk)


class CharLevel(WordLevel):
    """A character vocabulary: every character of a pre-token is one id."""

    kind = "char"

    def tokenize(self, piece: str) -> list[int]:
        ids = self._ids
        return [ids[c] if c in ids else self._unknown(c) for c in piece]


class ByteLevel:
    """Raw UTF-8 bytes: the id of a byte is its value; vocabulary strings use GPT-2's alphabet."""

    kind = "byte"
    unk_id: int | None = None
    vocab_size = 256

    def tokenize(self, piece: str) -> list[int]:
        return list(piece.encode("utf-8"))

    def token_bytes(self, token_id: int) -> bytes:
        if not 0 <= token_id < 256:
            raise KeyError(token_id)
        return bytes((token_id,))

    def id_to_token(self, token_id: int) -> str | None:
        return BYTE_TO_UNICODE.get(token_id)

    def token_to_id(self, token: str) -> int | None:
        return UNICODE_TO_BYTE.get(token)

    def vocab(self) -> dict[str, int]:
        return {BYTE_TO_UNICODE[b]: b for b in range(256)}

    def to_hf(self) -> dict[str, Any]:
        # The same object as a byte-level BPE with no merges, which is what Hugging Face loads.
        return hf_byte_level_model(self.vocab(), [])


class MaxMatch(StringVocabulary):
    """Dictionary maximum matching over a word list, forward (FMM) or backward (BMM)."""

    kind = "maxmatch"

    def __init__(
        self, vocab: Mapping[str, int], *, direction: str = "forward", unk_token: str | None = "[UNK]"
    ) -> None:
        if direction not in DIRECTIONS:
            raise ConfigError(f"Unknown matching direction {direction!r}; use direction='forward' or 'backward'.")
        super().__init__(vocab, unk_token=unk_token)
        self.direction = direction
        # The token lengths the vocabulary has, longest first: only those are worth a lookup.
        self._lengths = sorted({len(t) for t in self._ids if t != unk_token}, reverse=True) or [1]

    def tokenize(self, piece: str) -> list[int]:
        meter = None
        if len(piece) > METERED_CHARS:
            meter = work_meter(f"Maximum matching on a {len(piece):,}-character piece", MATCH_ADVICE)
        ids = self._forward(piece, meter) if self.direction == "forward" else self._backward(piece, meter)
        if meter is not None:
            meter.tick()
        return ids

    def _forward(self, piece: str, meter: Any) -> list[int]:
        ids, vocab, n, start = [], self._ids, len(piece), 0
        while start < n:
            if meter is not None and not len(ids) & TICK_MASK:
                meter.tick()
            for length in self._lengths:
                end = start + length
                found = vocab.get(piece[start:end]) if end <= n else None
                if found is not None and found != self.unk_id:
                    ids.append(found)
                    start = end
                    break
            else:
                ids.append(self._unknown(piece[start]))
                start += 1
        return ids

    def _backward(self, piece: str, meter: Any) -> list[int]:
        ids, vocab, end = [], self._ids, len(piece)
        while end > 0:
            if meter is not None and not len(ids) & TICK_MASK:
                meter.tick()
            for length in self._lengths:
                start = end - length
                found = vocab.get(piece[start:end]) if start >= 0 else None
                if found is not None and found != self.unk_id:
                    ids.append(found)
                    end = start
                    break
            else:
                ids.append(self._unknown(piece[end - 1]))
                end -= 1
        ids.reverse()
        return ids

    def to_hf(self) -> dict[str, Any]:
        return {
            "type": "MaxMatch",
            "direction": self.direction,
            "unk_token": self.unk_token,
            "vocab": self._sorted_vocab(),
        }

    @classmethod
    def from_hf(cls, data: Mapping[str, Any], *, special_tokens: Mapping[str, int] | None = None) -> MaxMatch:
        direction = data.get("direction", "forward")
        if direction not in DIRECTIONS:
            raise FormatError(f"The MaxMatch direction must be 'forward' or 'backward', not {shown(direction)}.")
        unk = data.get("unk_token")
        if unk is not None and not isinstance(unk, str):
            raise FormatError(f"The MaxMatch unk_token must be a string, not {shown(unk)}.")
        if unk is not None:
            check_token(unk)
        return cls(read_string_vocab(data, "MaxMatch"), direction=direction, unk_token=unk)
