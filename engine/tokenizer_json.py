"""The ``tokenizer.json`` codec: Hugging Face's document (format version "1.0") ↔ pipeline parts.

This one document is both our download format and what the database stores, so it must load
in the real ``tokenizers`` library with identical ids. Models are dispatched by their HF
``type`` to the class that reads them (imported lazily, so this module does not depend on every
algorithm). Byte-level BPE is written as ``Split(regex)`` followed by ``ByteLevel`` without its
own regex, which states the exact pattern for GPT-2, GPT-4, o200k and custom patterns alike.
Classic (character-level) BPE is its model with ``end_of_word_suffix`` and a ``BPEDecoder``.

This module knows the stages, not the :class:`engine.tokenizer.Tokenizer` that chains them: it
reads any object with the pipeline's attributes and returns the keyword arguments of one, so
``tokenizer.py`` can use it without an import circle. ``serialization.py`` holds the public
``loads``/``dumps``.

Left out: HF features the playground does not use (truncation, padding, pair sequences, added
tokens that are not special). Reading them does not fail; they are ignored.
"""

from __future__ import annotations

import importlib
import json
from typing import Any, Protocol

from engine.decoders import ByteLevelDecoder, ConcatDecoder, Decoder, MetaspaceDecoder, decoder_from_hf
from engine.errors import FormatError
from engine.limits import MAX_SPECIAL_TOKENS, check_count, check_special_tokens, shown
from engine.models.base import Model
from engine.normalizers import Normalizer, normalizer_from_hf
from engine.post_processors import TemplateProcessing, post_processor_from_hf
from engine.pretokenizers import GPT2_PATTERN, PreTokenizer, RegexSplit, pretokenizer_from_hf

FORMAT_VERSION = "1.0"
# HF model "type" -> "module:Class" with a from_hf(data, *, special_tokens) classmethod.
MODEL_TYPES: dict[str, str] = {
    "BPE": "engine.models.bpe:BPE",
    "WordPiece": "engine.models.wordpiece:WordPiece",
    "Unigram": "engine.models.unigram:Unigram",
    "WordLevel": "engine.models.baselines:WordLevel",
    "MaxMatch": "engine.models.baselines:MaxMatch",
}
# Character-level BPE is HF's "BPE" with an end_of_word_suffix; another class reads it.
CHAR_BPE = "engine.models.bpe_char:CharBPE"
_BYTE_LEVEL = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}


class Pipeline(Protocol):
    """What the codec reads from a tokenizer: its stages."""

    model: Model
    normalizer: Normalizer | None
    pre_tokenizer: PreTokenizer | None
    post_processor: TemplateProcessing | None
    decoder: Decoder

    @property
    def special_tokens(self) -> dict[str, int]: ...


def _decoder_to_hf(tokenizer: Pipeline) -> dict[str, Any]:
    """The decoder as HF must run it. Our byte-fallback model gives a byte piece's byte whatever
    the decoder, so the model decides, for every such tokenizer: trained, or read from a file
    whose decoder prints "<0xC3>" (ours before, or an import's)."""
    decoder = tokenizer.decoder
    if isinstance(decoder, MetaspaceDecoder) and getattr(tokenizer.model, "byte_fallback", False):
        return decoder.to_hf_byte_fallback()
    return decoder.to_hf()


def to_hf_dict(tokenizer: Pipeline) -> dict[str, Any]:
    """The tokenizer as a ``tokenizer.json`` object."""
    model = tokenizer.model.to_hf()
    specials = sorted(tokenizer.special_tokens.items(), key=lambda kv: kv[1])
    vocab = model.get("vocab")
    if isinstance(vocab, dict) and specials:
        by_id = {i: t for t, i in vocab.items()}
        for token, token_id in specials:
            by_id[token_id] = token
        model["vocab"] = {t: i for i, t in sorted(by_id.items())}
    pre: dict[str, Any] | None = tokenizer.pre_tokenizer.to_hf() if tokenizer.pre_tokenizer else None
    post: dict[str, Any] | None = tokenizer.post_processor.to_hf() if tokenizer.post_processor else None
    if isinstance(tokenizer.decoder, ByteLevelDecoder):
        pre = {"type": "Sequence", "pretokenizers": [pre, _BYTE_LEVEL]} if pre else dict(_BYTE_LEVEL)
        post = post or {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False, "use_regex": True}
    return {
        "version": FORMAT_VERSION,
        "truncation": None,
        "padding": None,
        "added_tokens": [
            {
                "id": token_id,
                "content": token,
                "single_word": False,
                "lstrip": False,
                "rstrip": False,
                "normalized": False,
                "special": True,
            }
            for token, token_id in specials
        ],
        "normalizer": tokenizer.normalizer.to_hf() if tokenizer.normalizer else None,
        "pre_tokenizer": pre,
        "post_processor": post,
        "decoder": _decoder_to_hf(tokenizer),
        "model": model,
    }


def dumps(tokenizer: Pipeline) -> str:
    """Serialize deterministically: the same tokenizer always gives the same text."""
    return json.dumps(to_hf_dict(tokenizer), ensure_ascii=False, indent=2)


def _split_byte_level(data: dict[str, Any] | None) -> tuple[bool, PreTokenizer | None]:
    """Find a ByteLevel step in a pre-tokenizer; return (is byte-level, the splitting step)."""
    if data is None:
        return False, None
    if data.get("type") == "ByteLevel":
        if data.get("add_prefix_space"):
            raise FormatError("ByteLevel with add_prefix_space=true is not supported; re-export with add_prefix_space=false.")
        return True, RegexSplit(GPT2_PATTERN, name="gpt2") if data.get("use_regex", True) else None
    if data.get("type") == "Sequence":
        steps = data.get("pretokenizers", [])
        byte_steps = [s for s in steps if s.get("type") == "ByteLevel"]
        if byte_steps:
            others = [s for s in steps if s.get("type") != "ByteLevel"]
            if len(others) > 1 or (others and byte_steps[0].get("use_regex", True)):
                raise FormatError("Only one Split step before a ByteLevel pre-tokenizer is supported.")
            if others:
                return True, pretokenizer_from_hf(others[0])
            return _split_byte_level(byte_steps[0])
        if len(steps) == 1:
            return False, pretokenizer_from_hf(steps[0])
        raise FormatError("Pre-tokenizer sequences are only supported around a ByteLevel step.")
    return False, pretokenizer_from_hf(data)


def _model_class(kind: object, *, char_level: bool = False) -> Any:
    if not isinstance(kind, str) or kind not in MODEL_TYPES:
        raise FormatError(f"The model type {shown(kind)} is not supported; supported: {', '.join(MODEL_TYPES)}.")
    module, _, name = (CHAR_BPE if char_level else MODEL_TYPES[kind]).partition(":")
    return getattr(importlib.import_module(module), name)


def pipeline_from_hf_dict(data: Any) -> dict[str, Any]:
    """The keyword arguments of a tokenizer from a ``tokenizer.json`` object, validated as read."""
    if not isinstance(data, dict) or not isinstance(data.get("model"), dict):
        raise FormatError("This is not a tokenizer.json document: it has no \"model\" object.")
    specials: dict[str, int] = {}
    added = data.get("added_tokens") or []
    if not isinstance(added, list):
        raise FormatError(f'"added_tokens" must be a list, not {type(added).__name__}.')
    check_count(len(added), MAX_SPECIAL_TOKENS, "added tokens", name="MAX_SPECIAL_TOKENS")
    for entry in added:
        if not isinstance(entry, dict) or not isinstance(entry.get("content"), str) or not isinstance(entry.get("id"), int):
            raise FormatError(f"An added token must have a string content and an integer id: {shown(entry)}.")
        if entry["content"] in specials:
            raise FormatError(f"The added token {shown(entry['content'])} appears twice.")
        specials[entry["content"]] = entry["id"]
    check_special_tokens(specials)  # non-empty, short, ids in range, one id each
    byte_level, pre = _split_byte_level(data.get("pre_tokenizer"))
    model_data = data["model"]
    kind = model_data.get("type") or ("BPE" if "merges" in model_data else None)
    char_level = kind == "BPE" and not byte_level
    if char_level and not model_data.get("end_of_word_suffix"):
        raise FormatError("Only byte-level BPE models are supported, and character-level ones with an end_of_word_suffix "
                          "(this one has neither a ByteLevel pre-tokenizer nor a suffix).")
    model = _model_class(kind, char_level=char_level).from_hf(model_data, special_tokens=specials)
    default_decoder = ByteLevelDecoder() if byte_level else ConcatDecoder()
    return {
        "model": model,
        "normalizer": normalizer_from_hf(data.get("normalizer")),
        "pre_tokenizer": pre,
        "special_tokens": specials,
        "post_processor": post_processor_from_hf(data.get("post_processor"), specials),
        "decoder": ByteLevelDecoder() if byte_level else decoder_from_hf(data.get("decoder"), default_decoder),
    }


def pipeline_from_json(text: str | bytes) -> dict[str, Any]:
    """Parse a ``tokenizer.json`` document; malformed input raises FormatError, never anything else.

    The size of ``text`` is the caller's to bound (``engine.limits.read_bytes`` for files).
    """
    try:
        data = json.loads(text)
    except RecursionError:
        raise FormatError("The file is not valid JSON here: it is nested too deeply.") from None
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError, an integer of over 4,300 digits
        line = getattr(exc, "lineno", None)
        raise FormatError(f"The file is not valid JSON ({getattr(exc, 'msg', exc)}).", line=line) from None
    try:
        return pipeline_from_hf_dict(data)
    except FormatError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError, IndexError, OverflowError, RecursionError) as exc:
        raise FormatError(f"The tokenizer.json document is malformed: {str(exc)[:200]}.") from None
