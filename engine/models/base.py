"""The protocol every tokenizer model implements.

A model turns one pre-token (already normalized) into ids and knows, for each id, the bytes it
contributes to decoded text. Everything around it (special tokens, normalization,
pre-tokenization, offsets, decoding) is the :class:`engine.tokenizer.Tokenizer` pipeline's job,
so a new algorithm only has to implement this protocol.

Internal: not part of the engine's API (``engine.PUBLIC_MODULES``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

from engine.errors import ConfigError, FormatError
from engine.limits import MAX_TOKEN_LENGTH, MAX_VOCAB_SIZE, check_count, check_id, check_token

WORD_AFFIXES = ("continuing_subword_prefix", "end_of_word_suffix")


def word_affixes(data: Mapping[str, Any]) -> list[str]:
    """The fields of an HF BPE model that mark word pieces; None and "" mark nothing (Qwen3 writes
    "" for both). A byte-level vocabulary with one is CLIP's (``bpe_byte_symbols.py``)."""
    return [name for name in WORD_AFFIXES if data.get(name) not in (None, "")]


@runtime_checkable
class Model(Protocol):
    kind: str  # "bpe" | "wordpiece" | "unigram" | "wordlevel" | "char" | "byte" | "maxmatch"
    unk_id: int | None

    @property
    def vocab_size(self) -> int: ...

    def tokenize(self, piece: str) -> list[int]:
        """Ids for one normalized pre-token."""
        ...

    def token_bytes(self, token_id: int) -> bytes:
        """What ``token_id`` contributes before the decoder (raw bytes for byte-level models)."""
        ...

    def id_to_token(self, token_id: int) -> str | None:
        """The vocabulary string of ``token_id`` (``"Ġthe"``, ``"##ing"``, ``"▁the"``)."""
        ...

    def token_to_id(self, token: str) -> int | None: ...

    def vocab(self) -> dict[str, int]:
        """Every vocabulary string and its id."""
        ...

    def to_hf(self) -> dict[str, Any]:
        """The Hugging Face ``tokenizer.json`` ``model`` object."""
        ...


class StringVocabulary:
    """Vocabulary bookkeeping for models whose tokens are strings: ids both ways and the unknown token.

    WordPiece and the word-level, character and maximum-matching baselines share it; byte-level
    models keep bytes instead.
    """

    kind = ""

    def __init__(self, vocab: Mapping[str, int], *, unk_token: str | None = "[UNK]") -> None:
        self._ids = dict(vocab)
        self._tokens = {i: t for t, i in self._ids.items()}
        for edge in {min(self._tokens, default=0), max(self._tokens, default=0)} & self._tokens.keys():
            check_id(edge, self._tokens[edge])  # vocab_size is the largest id + 1
        if len(self._tokens) != len(self._ids):
            raise FormatError(f"Two tokens of the {self.kind} vocabulary share one id; every token needs its own id.")
        self.unk_token = unk_token
        self.unk_id: int | None = self._ids.get(unk_token) if unk_token is not None else None

    @property
    def vocab_size(self) -> int:
        return max(self._tokens) + 1 if self._tokens else 0

    def vocab(self) -> dict[str, int]:
        return dict(self._ids)

    def id_to_token(self, token_id: int) -> str | None:
        return self._tokens.get(token_id)

    def token_to_id(self, token: str) -> int | None:
        return self._ids.get(token)

    def token_bytes(self, token_id: int) -> bytes:
        return self._tokens[token_id].encode("utf-8")

    def _unknown(self, text: str) -> int:
        if self.unk_id is None:
            raise ConfigError(
                f"{text[:40]!r} is not in the {self.kind} vocabulary and there is no unknown token; "
                f"add {self.unk_token or '[UNK]'!r} to the vocabulary."
            )
        return self.unk_id

    def _sorted_vocab(self) -> dict[str, int]:
        return dict(sorted(self._ids.items(), key=lambda item: item[1]))


def read_string_vocab(data: Mapping[str, Any], kind: str) -> dict[str, int]:
    """The ``"vocab"`` object of a Hugging Face model whose tokens are strings, checked against the limits."""
    vocab = data.get("vocab")
    if not isinstance(vocab, Mapping):
        raise FormatError(f"The {kind} model needs a \"vocab\" object mapping tokens to non-negative integer ids.")
    check_count(len(vocab), MAX_VOCAB_SIZE, "vocabulary entries", name="MAX_VOCAB_SIZE")
    ids = list(vocab.values())
    # The whole vocabulary at once (a 262k one in ~30 ms); entry by entry only to name a bad one.
    if (not ids or (set(map(type, vocab)) == {str} and set(map(type, ids)) == {int} and min(ids) >= 0
                    and max(ids) < MAX_VOCAB_SIZE and max(map(len, vocab)) <= MAX_TOKEN_LENGTH)):
        return dict(vocab)
    for token, token_id in vocab.items():
        if not isinstance(token, str):
            raise FormatError(f"The {kind} vocabulary's tokens must be strings, not {token!r}.")
        check_token(token)
        check_id(token_id, token)
    return dict(vocab)
