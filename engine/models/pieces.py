"""A vocabulary of sentencepiece pieces: ids both ways, and byte pieces that stand for their byte.

Unigram and sentencepiece-style BPE hold their vocabulary the same way (``_pieces[id] =
(piece, score)``, ``_ids[piece] = id``, and with byte fallback ``_byte_ids[byte] = id`` of
``<0xNN>``), so the lookups that only read it live here once. What a model does with the scores
is its own module's business.

Internal: not part of the engine's API (``engine.PUBLIC_MODULES``).
"""

from __future__ import annotations


class PieceVocabulary:
    """Lookups over ``_pieces``, ``_ids`` and ``_byte_ids``, which the model sets up."""

    _pieces: list[tuple[str, float]]
    _ids: dict[str, int]
    _byte_ids: list[int] | None

    def token_bytes(self, token_id: int) -> bytes:
        """The piece's UTF-8 text; a byte piece of a byte-fallback model gives its one byte."""
        piece = self._pieces[token_id][0]
        if self._byte_ids is not None and len(piece) == 6 and piece.startswith("<0x") and piece in self._ids:
            byte = int(piece[3:5], 16)
            if self._byte_ids[byte] == token_id:
                return bytes([byte])
        return piece.encode("utf-8")

    def id_to_token(self, token_id: int) -> str | None:
        return self._pieces[token_id][0] if 0 <= token_id < len(self._pieces) else None

    def token_to_id(self, token: str) -> int | None:
        return self._ids.get(token)

    def vocab(self) -> dict[str, int]:
        return dict(self._ids)
