"""Extend a sentencepiece BPE ``.model`` (Llama 2's ``tokenizer.model``): new pieces appended to its proto.

A sentencepiece BPE has no merge list: it merges the adjacent pair whose concatenation is the
piece with the highest score (``models/spm_bpe.py``). So the extension is learned exactly as for
the model's ``tokenizer.json`` form: the base read the way Hugging Face's converter reads it (a
character-level BPE whose merges follow the scores) goes through ``char_bpe.extend_char_bpe``
(new characters by coverage, then merges continued from the base's segmentation, protected by
default). Each new token is then appended to the ``.model``'s pieces as a NORMAL piece, in the
order it was learned, with a score that continues below the base's lowest ordinary score (one
less per piece), so every base piece still merges first; the result is rebuilt from that proto,
so it is what ``SentencePieceProcessor`` loads, and downloads as a ``.model``.

Why protected text keeps its ids: every new piece holds a character the base lacked or one of
an opened script (``char_bpe``'s rule), and sentencepiece can only form a piece whose whole text
occurs, so text without such characters never meets a new piece. A new piece that encoding its
own text does not give (a higher-scoring neighbour took a character first) is counted as
unreachable, never hidden.

Internal: not part of the engine's API (``engine.PUBLIC_MODULES``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

from engine.errors import ConfigError
from engine.extend.char_bpe import extend_char_bpe
from engine.extend.merge import appended_proto
from engine.extend.options import ExtendOptions, Extension
from engine.formats.spm_proto import ModelProto
from engine.tokenizer import Tokenizer
from engine.trainers.base import Reporter


def extend_spm_bpe(base: Tokenizer, files: Sequence[str | Path], options: ExtendOptions, *,
                   reporter: Reporter | None = None) -> Extension:
    """Learn ``options.add`` new pieces for a sentencepiece BPE ``.model`` base (module docstring)."""
    proto: ModelProto | None = getattr(base, "spm_proto", None)
    if proto is None:
        raise ConfigError("This sentencepiece BPE has no .model to append to; extend its tokenizer.json form.",
                          option="tokenizer")
    learned = extend_char_bpe(Tokenizer.from_json(base.to_json()), files, options, reporter=reporter)
    extended = appended_proto(base, proto, [data.decode("utf-8") for _, data in learned.added], "after")
    model = extended.model
    unreached = tuple(token_id for token_id, data in learned.added
                      if model.tokenize(data.decode("utf-8")) != [token_id])
    return dataclasses.replace(learned, tokenizer=extended, unreached=unreached)
