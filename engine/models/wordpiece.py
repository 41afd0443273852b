"""WordPiece encoding as BERT does it: greedy longest match first, whole word to ``[UNK]``.

A pre-token (a word, already normalized and split off by the BERT pre-tokenizer) is cut from
the left: at each position the longest vocabulary entry that fits is taken, the first one
bare and the following ones with the continuing-subword prefix (``##``). If some position
matches nothing, or the word is longer than ``max_input_chars_per_word`` characters, the whole
word becomes the unknown token; WordPiece never emits half a word next to an ``[UNK]``.
A word over 100 characters, which only a raised ``max_input_chars_per_word`` lets through, is
charged to the encode's time budget (``engine.limits.work_meter``).

Covered here: the model, its Hugging Face ``model`` object (``to_hf``/``from_hf``) and the
character spans of each piece (``surface_bytes``) for highlighting. Training is
``trainers/wordpiece.py``; gluing ``##`` pieces back together is ``decoders.WordPieceDecoder``.

Internal: not part of the engine's API (``engine.PUBLIC_MODULES``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engine.errors import ConfigError, FormatError
from engine.limits import TICK_MASK, check_token, work_meter
from engine.models.base import StringVocabulary, read_string_vocab

DEFAULT_UNK = "[UNK]"
DEFAULT_PREFIX = "##"
DEFAULT_MAX_INPUT_CHARS = 100
# Words longer than this (HF's default cap, so only a raised max_input_chars_per_word lets them
# through) charge their loop to the encode's time budget, reading the clock every
# engine.limits.TICK_MASK + 1 pieces. A shorter word costs at most 100 lookups per character:
# 0.9 s for 200,000 characters.
METERED_CHARS = DEFAULT_MAX_INPUT_CHARS


class WordPiece(StringVocabulary):
    """A WordPiece vocabulary (strings to ids, ``##`` marking pieces that continue a word)."""

    kind = "wordpiece"

    def __init__(
        self,
        vocab: Mapping[str, int],
        *,
        unk_token: str = DEFAULT_UNK,
        continuing_subword_prefix: str = DEFAULT_PREFIX,
        max_input_chars_per_word: int = DEFAULT_MAX_INPUT_CHARS,
    ) -> None:
        if max_input_chars_per_word < 1:
            raise ConfigError(
                f"max_input_chars_per_word must be at least 1, not {max_input_chars_per_word}."
            )
        super().__init__(vocab, unk_token=unk_token)
        self.prefix = continuing_subword_prefix
        self.max_input_chars_per_word = max_input_chars_per_word
        # Word-initial pieces and continuing pieces (keyed without their prefix) are looked up in
        # separate tables so the hot loop never builds "##" + substring.
        self._initial: dict[str, int] = {}
        self._continuing: dict[str, int] = {}
        for token, token_id in self._ids.items():
            if self.prefix and token.startswith(self.prefix) and len(token) > len(self.prefix):
                self._continuing[token[len(self.prefix):]] = token_id
            self._initial.setdefault(token, token_id)
        if not self.prefix:  # without a prefix a continuing piece is any vocabulary entry
            self._continuing = self._initial
        self._longest = max(map(len, self._initial), default=0)
        self._longest_continuing = max(map(len, self._continuing), default=0)
        self._surface: dict[int, bytes] = {}
        self._advice = ("split the text into shorter words with a pre-tokenizer, or lower max_input_chars_per_word "
                        f"(now {max_input_chars_per_word:,}; Hugging Face's default is {DEFAULT_MAX_INPUT_CHARS}).")

    # ------------------------------------------------------------------ vocabulary
    # token_bytes (from StringVocabulary) is the piece as stored: "##ing" keeps its prefix,
    # which the decoder uses to glue words.

    def surface_bytes(self, token_id: int) -> bytes:
        """The bytes of the word this piece covers ("##ing" covers "ing"); used for offsets."""
        cached = self._surface.get(token_id)
        if cached is None:
            token = self._tokens[token_id]
            if (self.prefix and token.startswith(self.prefix)
                    and self._continuing.get(token[len(self.prefix):]) == token_id):
                token = token[len(self.prefix):]
            cached = self._surface[token_id] = token.encode("utf-8")
        return cached

    # ------------------------------------------------------------------ encoding
    def tokenize(self, piece: str) -> list[int]:
        """Greedy longest-match-first pieces of one word, or ``[unk_id]`` for the whole word."""
        length = len(piece)
        if length == 0:
            return []
        if length > self.max_input_chars_per_word:
            return [self._unknown(piece)]
        # Each step may slice and look up as many substrings as the longest token has characters
        # (up to 1,024 in an imported vocabulary), so a long word, which only a raised
        # max_input_chars_per_word lets through, charges its loop to the encode's time budget.
        meter = None
        if length > METERED_CHARS:
            meter = work_meter(f"WordPiece on a {length:,}-character word", self._advice)
        ids: list[int] = []
        table, longest = self._initial, self._longest
        start = 0
        while start < length:
            if meter is not None and not len(ids) & TICK_MASK:
                meter.tick()
            end = min(length, start + longest)
            while end > start:
                found = table.get(piece[start:end])
                if found is not None:
                    break
                end -= 1
            else:
                return [self._unknown(piece)]
            ids.append(found)
            start = end
            table, longest = self._continuing, self._longest_continuing
        if meter is not None:
            meter.tick()
        return ids

    def _unknown(self, piece: str) -> int:
        if self.unk_id is None:
            raise ConfigError(
                f"The word {piece[:40]!r} has no WordPiece segmentation and the vocabulary has no "
                f"{self.unk_token!r} token; add it to the vocabulary or set unk_token."
            )
        return self.unk_id

    # ------------------------------------------------------------------ Hugging Face form
    def to_hf(self) -> dict[str, Any]:
        return {
            "type": "WordPiece",
            "unk_token": self.unk_token,
            "continuing_subword_prefix": self.prefix,
            "max_input_chars_per_word": self.max_input_chars_per_word,
            "vocab": dict(sorted(self._ids.items(), key=lambda item: item[1])),
        }

    @classmethod
    def from_hf(cls, data: Mapping[str, Any], *, special_tokens: Mapping[str, int] | None = None) -> WordPiece:
        """Read a Hugging Face ``{"type": "WordPiece", ...}`` model object.

        Special tokens stay in the vocabulary (``[UNK]`` must, to be emitted by the model).
        """
        vocab = read_string_vocab(data, "WordPiece")
        max_chars = data.get("max_input_chars_per_word", DEFAULT_MAX_INPUT_CHARS)
        if not isinstance(max_chars, int) or isinstance(max_chars, bool):
            raise FormatError(f"max_input_chars_per_word must be an integer, not {max_chars!r}.")
        prefix = data.get("continuing_subword_prefix", DEFAULT_PREFIX)
        unk = data.get("unk_token", DEFAULT_UNK)
        if not isinstance(prefix, str) or not isinstance(unk, str):
            raise FormatError("The WordPiece unk_token and continuing_subword_prefix must be strings.")
        check_token(unk)
        check_token(prefix)
        return cls(vocab, unk_token=unk, continuing_subword_prefix=prefix, max_input_chars_per_word=max_chars)
