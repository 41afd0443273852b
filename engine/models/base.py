"""The protocol every tokenizer model implements.

A model turns one pre-token (already normalized) into ids and knows, for each id, the bytes it
contributes to decoded text. Everything around it (special tokens, normalization,
pre-tokenization, offsets, decoding) is the :class:`engine.tokenizer.Tokenizer` pipeline's job,
so a new algorithm only has to implement this protocol.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable


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
