"""Tokenforge's tokenizer engine: pure Python on ``regex``.

The public API is what ``__all__`` lists; everything else is internal and may change.
"""

from __future__ import annotations

from engine.errors import (
    ConfigError,
    FormatError,
    SpecialTokenError,
    TokenforgeError,
    TrainingCancelled,
    UnknownTokenIdError,
)
from engine.offsets import TokenSpan
from engine.presets import byte_level_bpe
from engine.pretokenizers import PATTERNS, get_pretokenizer
from engine.tokenizer import Tokenizer

__all__ = [
    "PATTERNS",
    "ConfigError",
    "FormatError",
    "SpecialTokenError",
    "TokenSpan",
    "Tokenizer",
    "TokenforgeError",
    "TrainingCancelled",
    "UnknownTokenIdError",
    "byte_level_bpe",
    "get_pretokenizer",
]
