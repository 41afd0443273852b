"""Tokenizers to and from Hugging Face ``tokenizer.json`` text: the public entry points.

The codec itself (document ↔ pipeline stages, validation, HF compatibility) is
``tokenizer_json.py``, which does not know the :class:`Tokenizer` class; this module joins the
two, so neither ``tokenizer.py`` nor the codec imports the other's importer.

Left out: every other file format (``engine/formats``).
"""

from __future__ import annotations

from typing import Any

from engine.tokenizer import Tokenizer
from engine.tokenizer_json import FORMAT_VERSION, MODEL_TYPES, dumps, to_hf_dict

__all__ = ["FORMAT_VERSION", "MODEL_TYPES", "dumps", "from_hf_dict", "loads", "to_hf_dict"]


def from_hf_dict(data: Any) -> Tokenizer:
    """Build a tokenizer from a ``tokenizer.json`` object, validating as it goes."""
    return Tokenizer.from_hf_dict(data)


def loads(text: str | bytes) -> Tokenizer:
    """Parse a ``tokenizer.json`` document; malformed input raises FormatError, never anything else.

    The size of ``text`` is the caller's to bound (``engine.limits.read_bytes`` for files).
    """
    return Tokenizer.from_json(text)
