"""How good is a tokenizer on a held-out text: the figures the CLI's ``eval`` and the web app show.

:func:`evaluate` encodes the text once (special-token strings are treated as plain text) and
reports compression (bytes and characters per token), fertility (tokens per whitespace-separated
word), the share of unknown tokens, whether decoding gives the text back (and where it first
differs if not), how much of the vocabulary the text uses, and the longest tokens it used
(measured on the text they cover). Everything returned is JSON-able.

Left out: comparing two tokenizers (the caller evaluates each) and timing.

Internal: not part of the engine's API (``engine.PUBLIC_MODULES``).
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from engine.tokenizer import Tokenizer

CONTEXT = 20  # characters of each side shown around the first round-trip difference


def _first_difference(expected: str, got: str) -> dict[str, Any] | None:
    if expected == got:
        return None
    index = next((i for i, (a, b) in enumerate(zip(expected, got)) if a != b), min(len(expected), len(got)))
    return {
        "char_offset": index,
        "expected": expected[index : index + CONTEXT],
        "got": got[index : index + CONTEXT],
        "context_before": expected[max(0, index - CONTEXT) : index],
    }


def evaluate(tokenizer: Tokenizer, text: str, *, longest: int = 10) -> dict[str, Any]:
    """Measure ``tokenizer`` on ``text``; see the module docstring for what each figure means."""
    spans = tokenizer.encode_with_offsets(text, allowed_special=frozenset(), disallowed_special=(),
                                          add_special_tokens=False)
    ids = [span.id for span in spans]
    n_tokens = len(ids)
    n_bytes = len(text.encode("utf-8"))
    n_words = len(text.split())
    unk_id = getattr(tokenizer.model, "unk_id", None)
    unknown = sum(1 for i in ids if i == unk_id) if unk_id is not None else 0
    decoded = tokenizer.decode(ids)
    used = Counter(ids)
    vocab_size = tokenizer.vocab_size

    # The longest tokens by the text they cover; unknown tokens cover whole words and are skipped.
    surface: dict[int, str] = {}
    for span in spans:
        if span.id != unk_id and span.id not in surface:
            surface[span.id] = text[span.char_start : span.char_end]
    ranked = sorted(surface.items(), key=lambda kv: (-len(kv[1]), kv[0]))[:longest]

    def ratio(a: int, b: int) -> float | None:
        return round(a / b, 4) if b else None

    return {
        "chars": len(text),
        "bytes": n_bytes,
        "words": n_words,
        "tokens": n_tokens,
        "bytes_per_token": ratio(n_bytes, n_tokens),
        "chars_per_token": ratio(len(text), n_tokens),
        "fertility": ratio(n_tokens, n_words),
        "unk_tokens": unknown,
        "unk_rate": ratio(unknown, n_tokens) if n_tokens else 0.0,
        "lossless": decoded == text,
        "first_difference": _first_difference(text, decoded),
        "vocab_size": vocab_size,
        "vocab_used": len(used),
        "vocab_utilisation": ratio(len(used), vocab_size),
        "longest_tokens": [
            {"id": token_id, "token": tokenizer.id_to_token(token_id), "text": covered, "chars": len(covered),
             "count": used[token_id]}
            for token_id, covered in ranked
        ],
    }
