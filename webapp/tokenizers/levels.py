"""Which trainer options each level reads, and a trained tokenizer's options as its pages list them.

Some options are read at one level of their algorithm only (:data:`LEVEL_OPTIONS`): BPE's char
level marks word ends and unknown characters, which byte level has neither of, and its spm level
is a trainer of its own (``engine.trainers.bpe_spm_options``) that reads only its options. A job
stores every option it was given, so the pages list only those its level read
(:func:`shown_options`): the tokenizer page here, and the job pages (``training/views.py``). The
training form (``training/form.py``) follows the same table to show a field only at the levels
that read it. The table lives here, below both, because the tokenizer page must not import the
training area above it.

Left out: the options themselves (``engine.trainers.option_specs``) and the form's fields.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

_BYTE_CHAR = ("byte", "char")
#: The levels that read an option, for options not read at every level of their algorithm.
LEVEL_OPTIONS: dict[str, dict[str, tuple[str, ...]]] = {
    "bpe": {"end_of_word_suffix": ("char",), "unk_token": ("char",), "special_tokens": _BYTE_CHAR,
            "min_frequency": _BYTE_CHAR, "pretokenizer": _BYTE_CHAR, "max_token_length": _BYTE_CHAR,
            "character_coverage": ("spm",), "byte_fallback": ("spm",), "split_digits": ("spm",)},
}


def shown_options(algorithm: str, options: Mapping[str, Any] | None) -> dict[str, Any]:
    """A job's ``options`` less those its level does not read (a byte-level BPE keeps, but never
    used, the char level's end-of-word suffix and unknown token)."""
    options = dict(options or {})
    level = options.get("level")
    only = LEVEL_OPTIONS.get(algorithm, {})
    return {name: value for name, value in options.items() if name not in only or level not in _level_names(only)
            or level in only[name]}


def _level_names(only: Mapping[str, tuple[str, ...]]) -> set[str]:
    return {level for levels in only.values() for level in levels}
