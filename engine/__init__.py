"""Tokenforge's tokenizer engine: Python on ``regex``, with numpy for the hot numeric work.

The public API is what ``__all__`` lists; everything else is internal and may change. The bounds
on imported tokenizers and the encode time budget are in ``engine.limits``.
"""

from __future__ import annotations

from engine.ascii_split import fastest_split
from engine.errors import (
    ConfigError,
    EncodeTimeout,
    FormatError,
    SpecialTokenError,
    TokenforgeError,
    TrainingCancelled,
    UnknownTokenIdError,
)
from engine.limits import time_budget
from engine.metrics import evaluate
from engine.models.baselines import ByteLevel, CharLevel, MaxMatch, WordLevel
from engine.models.bpe import BPE
from engine.models.unigram import Unigram
from engine.models.wordpiece import WordPiece
from engine.normalizers import get_normalizer
from engine.offsets import TokenSpan
from engine.presets import byte_level_bpe
from engine.pretokenizers import PATTERNS, get_pretokenizer
from engine.tokenizer import Tokenizer
from engine.trainers import TrainResult, option_specs, train

__all__ = [
    "BPE",
    "PATTERNS",
    "ByteLevel",
    "CharLevel",
    "MaxMatch",
    "TrainResult",
    "Unigram",
    "WordLevel",
    "WordPiece",
    "ConfigError",
    "EncodeTimeout",
    "FormatError",
    "SpecialTokenError",
    "TokenSpan",
    "Tokenizer",
    "TokenforgeError",
    "TrainingCancelled",
    "UnknownTokenIdError",
    "byte_level_bpe",
    "evaluate",
    "fastest_split",
    "get_normalizer",
    "get_pretokenizer",
    "option_specs",
    "time_budget",
    "train",
]
