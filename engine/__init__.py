"""Tokenforge's tokenizer engine: Python on ``regex``, with numpy for the hot numeric work.

The library's API is what ``__all__`` lists: load, train, encode and evaluate. The web app and the
CLI, which ship with the engine, also use its modules directly (``formats``, ``trainers``,
``extend``, ``vocab_diff``, ``limits``, ...); those may change between versions without notice to
other users. The bounds on imported tokenizers and the encode time budget are in ``engine.limits``.
"""

from __future__ import annotations

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
    "get_normalizer",
    "get_pretokenizer",
    "option_specs",
    "time_budget",
    "train",
]
