"""Hugging Face's BPE with word affixes on a byte-level vocabulary (CLIP): the character-level
model run on a pre-token's byte symbols.

CLIP's ``tokenizer.json`` maps each pre-token to GPT-2's byte alphabet (a ``ByteLevel``
pre-tokenizer step, ``"Ġ"`` for a space) and then runs HF's ordinary ``BPE`` model on those
symbols, with ``end_of_word_suffix: "</w>"`` on each word's last symbol (``"a"`` and ``"a</w>"``
are two tokens). Our byte-level :class:`engine.models.bpe.BPE` works on bytes and has no
affixes, and :class:`engine.models.bpe_char.CharBPE` has the affixes but sees characters; this is
the second fed with what the first would see: ``tokenize`` spells the pre-token's UTF-8 in the
byte alphabet and leaves the rest to ``CharBPE``, so unknown symbols, merges and ``ignore_merges``
follow HF exactly. A token's bytes are its symbols read back through the byte alphabet, affixes
included (HF's ``ByteLevel`` decoder prints ``"a</w>"``), its surface without them.

Internal: not part of the engine's API (``engine.PUBLIC_MODULES``).
"""

from __future__ import annotations

from engine.byte_unicode import bytes_to_symbols, symbols_to_bytes
from engine.models.bpe_char import CharBPE


def _spelled(token: str) -> bytes:
    """A token's bytes through the byte alphabet; a token outside it (an added one) as its UTF-8."""
    try:
        return symbols_to_bytes(token)
    except KeyError:
        return token.encode("utf-8")


class ByteSymbolBPE(CharBPE):
    """:class:`CharBPE` over the byte symbols of each pre-token (module docstring)."""

    snapshot_level = "byte_symbols"

    def tokenize(self, piece: str) -> list[int]:
        return super().tokenize(bytes_to_symbols(piece.encode("utf-8", "surrogatepass")))

    def token_bytes(self, token_id: int) -> bytes:
        return _spelled(self._tokens[token_id])

    def surface_bytes(self, token_id: int) -> bytes:
        cached = self._surface.get(token_id)
        if cached is None:
            cached = self._surface[token_id] = _spelled(self._bare(token_id))
        return cached
