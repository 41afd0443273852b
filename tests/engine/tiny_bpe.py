"""A tiny hand-made byte-level BPE for the tokenizer's tests (``test_tokenizer.py``, ``test_span_columns.py``)."""

from __future__ import annotations

from engine.presets import byte_level_bpe
from engine.tokenizer import Tokenizer

EOT = "<|endoftext|>"
# ids: 0 and 1 are special, 2..257 are the bytes (byte b has id b + 2), then the merges.
MERGES = [(b"t", b"h"), (b"th", b"e"), (b" ", b"the"), (b"c", b"a"), (b" ", b"ca"), (b" ca", b"t"), (b"\n", b"/")]


def tiny(pretokenizer: str = "gpt2") -> Tokenizer:
    vocab = {b + 2: bytes([b]) for b in range(256)}
    for index, (left, right) in enumerate(MERGES):
        vocab[258 + index] = left + right
    return byte_level_bpe(vocab, MERGES, pretokenizer=pretokenizer, special_tokens={EOT: 0, EOT * 2: 1})
