"""A parsed BPE tokenizer written as arrays, so that the next process loads it without parsing.

Reading a large ``tokenizer.json`` is mostly the making of strings: Gemma 3's 33 MB document
is 262,144 vocabulary strings and 514,906 merges "a b", each split, hashed and looked up, which
took 2-3 s before the first encode. A snapshot keeps what that work produced, the model's ids:
the vocabulary as one byte string with the ids and end offsets of its entries, and the merges as
three id arrays (left, right, merged) in rank order. Everything else (normalizer, pre-tokenizer,
added tokens, decoder, the model's options) is the tokenizer's own ``tokenizer.json`` with an
empty vocabulary and merge list, read back by the same code that reads any document, so a
snapshot can build nothing a document could not.

The file is numpy's ``.npz`` (read with ``allow_pickle=False``: arrays only, no code). It is a
cache, not a format: callers key it by the document it came from, and any problem reading it
(:class:`SnapshotError`) means "parse the document instead". Only the two BPE models have one,
the ones whose documents are large; :func:`snapshot_of` says None for the others.

Internal: not part of the engine's API (``engine.PUBLIC_MODULES``).
"""

from __future__ import annotations

import io
import json
import zipfile
from typing import IO

from engine.errors import TokenforgeError
from engine.gc_pause import collector_paused
from engine.models.bpe import BPE, MergeIds, ModelSnapshot
from engine.models.bpe_byte_symbols import ByteSymbolBPE
from engine.models.bpe_char import CharBPE
from engine.tokenizer import Tokenizer
from engine.tokenizer_json import pipeline_from_hf_dict, to_hf_dict

SNAPSHOT_VERSION = 1  # bumped whenever the arrays or their meaning change: an older snapshot is unread
_LEVELS = {"byte": BPE, "char": CharBPE, "byte_symbols": ByteSymbolBPE}


class SnapshotError(TokenforgeError):
    """A snapshot that cannot be read back: the caller parses the document instead."""


def snapshot_of(tokenizer: Tokenizer) -> bytes | None:
    """The tokenizer as a snapshot file's bytes, or None when its model has no snapshot form."""
    import numpy as np  # here: the engine's small commands never load numpy

    model = tokenizer.model
    state: ModelSnapshot | None = model.snapshot() if isinstance(model, BPE | CharBPE) else None
    if state is None:
        return None
    document = to_hf_dict(tokenizer, entries=False)
    header = {"version": SNAPSHOT_VERSION, "level": state.level, "options": state.options, "document": document}
    ends = np.cumsum([len(spelling) for spelling in state.spellings], dtype=np.int64)
    out = io.BytesIO()
    np.savez(
        out,
        header=np.frombuffer(json.dumps(header, ensure_ascii=False).encode("utf-8"), np.uint8),
        ids=np.asarray(state.ids, np.int32),
        spellings=np.frombuffer(b"".join(state.spellings), np.uint8),
        ends=ends,
        lefts=np.asarray(state.merges.lefts, np.int32),
        rights=np.asarray(state.merges.rights, np.int32),
        merged=np.asarray(state.merges.merged, np.int32),
    )
    return out.getvalue()


def load_snapshot(file: IO[bytes]) -> Tokenizer:
    """The tokenizer a snapshot file holds; SnapshotError if it is not one this version wrote."""
    with collector_paused():  # engine/gc_pause.py
        return _load(file)


def _load(file: IO[bytes]) -> Tokenizer:
    import numpy as np

    try:
        with np.load(file, allow_pickle=False) as arrays:
            header = json.loads(arrays["header"].tobytes().decode("utf-8"))
            ids, data, ends = arrays["ids"].tolist(), arrays["spellings"].tobytes(), arrays["ends"].tolist()
            merges = MergeIds(arrays["lefts"], arrays["rights"], arrays["merged"])  # stay numpy: no int objects
    except (OSError, ValueError, KeyError, EOFError, UnicodeDecodeError, zipfile.BadZipFile) as exc:
        raise SnapshotError(f"The snapshot cannot be read: {exc}.") from None
    if not isinstance(header, dict) or header.get("version") != SNAPSHOT_VERSION or header.get("level") not in _LEVELS:
        raise SnapshotError("The snapshot was written by another version.")
    if len(ids) != len(ends) or (ends and ends[-1] != len(data)) or not len(merges.lefts) == len(merges.rights) \
            == len(merges.merged):
        raise SnapshotError("The snapshot's arrays do not agree in length.")
    bound = max(ids, default=-1) + 1
    if min(ids, default=0) < 0 or any(len(part) and (part.min() < 0 or part.max() >= bound) for part in merges):
        raise SnapshotError("The snapshot has ids outside its vocabulary.")
    spellings = [data[start:stop] for start, stop in zip([0, *ends], ends)]
    state = ModelSnapshot(header["level"], header["options"], ids, spellings, merges)
    try:
        model = _LEVELS[state.level].from_snapshot(state)
        return Tokenizer(**pipeline_from_hf_dict(header["document"], model=model))
    except (TokenforgeError, TypeError, ValueError, KeyError, AttributeError, IndexError) as exc:
        raise SnapshotError(f"The snapshot does not make a tokenizer: {exc}.") from None
