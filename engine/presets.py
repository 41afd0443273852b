"""Presets assemble pipeline components into the tokenizers people know; they add no logic."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from engine.decoders import ByteLevelDecoder
from engine.models.bpe import BPE
from engine.pretokenizers import PreTokenizer, get_pretokenizer
from engine.tokenizer import Tokenizer


def byte_level_bpe(
    vocab: Mapping[int, bytes],
    merges: Sequence[tuple[bytes, bytes]],
    *,
    pretokenizer: str | PreTokenizer = "gpt2",
    special_tokens: Mapping[str, int] | None = None,
    name: str = "",
) -> Tokenizer:
    """A GPT-2/GPT-4 style tokenizer. Special-token ids may appear in ``vocab``; they are taken out
    of the model, which only ever produces byte tokens."""
    specials = dict(special_tokens or {})
    special_ids = set(specials.values())
    model = BPE({i: b for i, b in vocab.items() if i not in special_ids}, merges)
    pre = get_pretokenizer(pretokenizer) if isinstance(pretokenizer, str) else pretokenizer
    return Tokenizer(model, pre_tokenizer=pre, special_tokens=specials, decoder=ByteLevelDecoder(), name=name)
