"""The ``tokenizer.json`` codec: Hugging Face's document (format version "1.0") ↔ pipeline parts.

This one document is both our download format and what the database stores, so it must load
in the real ``tokenizers`` library with identical ids. Models are dispatched by their HF
``type`` to the class that reads them (imported lazily, so this module does not depend on every
algorithm). Byte-level BPE is written as ``Split(regex)`` followed by ``ByteLevel`` without its
own regex, which states the exact pattern for GPT-2, GPT-4, o200k and custom patterns alike.
Classic (character-level) BPE is its model with ``end_of_word_suffix`` and a ``BPEDecoder``.

This module knows the stages, not the :class:`engine.tokenizer.Tokenizer` that chains them: it
reads any object with the pipeline's attributes and returns the keyword arguments of one, so
``tokenizer.py`` can use it without an import circle. The one way to load a document is
``Tokenizer.from_json`` (``from_file`` for a path), and to write one ``Tokenizer.to_json``.

Left out: HF features that shape a batch for a model rather than split text (truncation,
padding, pair sequences). Reading them does not fail; they are ignored, so a file that sets
``truncation`` gives every id of a long text here, where HF's ``encode`` stops at ``max_length``.

Internal: not part of the engine's API (``engine.PUBLIC_MODULES``).
"""

from __future__ import annotations

import importlib
import json
from typing import Any, Protocol

from engine.decoders import ByteLevelDecoder, ConcatDecoder, Decoder, MetaspaceDecoder, decoder_from_hf
from engine.errors import FormatError
from engine.gc_pause import collector_paused
from engine.json_layout import dumps_indented
from engine.limits import MAX_SPECIAL_TOKENS, check_count, check_special_tokens, shown
from engine.models.base import Model, word_affixes
from engine.normalizers import Normalizer, normalizer_from_hf
from engine.post_processors import TemplateProcessing, post_processor_from_hf
from engine.pretokenizers import GPT2_PATTERN, PreTokenizer, RegexSplit
from engine.pretokenizers_hf import PrefixSpace, pretokenizer_from_hf
from engine.pretokenizers_hf import Sequence as PreTokenizerSequence

FORMAT_VERSION = "1.0"
# HF model "type" -> "module:Class" with a from_hf(data, *, special_tokens) classmethod.
MODEL_TYPES: dict[str, str] = {
    "BPE": "engine.models.bpe:BPE",
    "WordPiece": "engine.models.wordpiece:WordPiece",
    "Unigram": "engine.models.unigram:Unigram",
    "WordLevel": "engine.models.baselines:WordLevel",
    "MaxMatch": "engine.models.baselines:MaxMatch",
}
# Character-level BPE is HF's "BPE" with an end_of_word_suffix; another class reads it, and a
# third one a byte-level BPE with word affixes (CLIP's "</w>").
CHAR_BPE = "engine.models.bpe_char:CharBPE"
BYTE_SYMBOL_BPE = "engine.models.bpe_byte_symbols:ByteSymbolBPE"
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


def _added_tokens_to_hf(tokenizer: Pipeline) -> list[dict[str, Any]]:
    """The ``added_tokens`` list: special tokens, then the other added tokens, each in id order."""
    strip: dict[str, tuple[bool, bool]] = getattr(getattr(tokenizer, "specials", None), "strip", {})
    normalized: frozenset[str] = getattr(getattr(tokenizer, "specials", None), "on_normalized", frozenset())
    single_word: frozenset[str] = getattr(getattr(tokenizer, "specials", None), "single_word", frozenset())
    added: dict[str, int] = getattr(tokenizer, "added_tokens", {})
    entries = [(token_id, token, True) for token, token_id in tokenizer.special_tokens.items()]
    entries += [(token_id, token, False) for token, token_id in added.items()]
    return [
        {
            "id": token_id,
            "content": token,
            "single_word": token in single_word,
            "lstrip": strip.get(token, (False, False))[0],
            "rstrip": strip.get(token, (False, False))[1],
            "normalized": token in normalized,
            "special": special,
        }
        for token_id, token, special in sorted(entries)
    ]


def to_hf_dict(tokenizer: Pipeline, *, entries: bool = True) -> dict[str, Any]:
    """The tokenizer as a ``tokenizer.json`` object; ``entries=False`` leaves the model's
    vocabulary and merges out (a snapshot's header: ``engine/snapshot.py``)."""
    model = tokenizer.model.to_hf() if entries else tokenizer.model.hf_fields()
    added_tokens = _added_tokens_to_hf(tokenizer)
    vocab = model.get("vocab")
    if isinstance(vocab, dict) and added_tokens and entries:
        by_id = {i: t for t, i in vocab.items()}
        for entry in added_tokens:
            by_id[entry["id"]] = entry["content"]
        model["vocab"] = {t: i for i, t in sorted(by_id.items())}
    pre: dict[str, Any] | None = tokenizer.pre_tokenizer.to_hf() if tokenizer.pre_tokenizer else None
    post: dict[str, Any] | None = tokenizer.post_processor.to_hf() if tokenizer.post_processor else None
    if isinstance(tokenizer.decoder, ByteLevelDecoder):
        pre = _byte_level_pre_to_hf(tokenizer.pre_tokenizer)
        post = post or {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False, "use_regex": True}
    return {
        "version": FORMAT_VERSION,
        "truncation": None,
        "padding": None,
        "added_tokens": added_tokens,
        "normalizer": tokenizer.normalizer.to_hf() if tokenizer.normalizer else None,
        "pre_tokenizer": pre,
        "post_processor": post,
        "decoder": _decoder_to_hf(tokenizer),
        "model": model,
    }


def dumps(tokenizer: Pipeline) -> str:
    """Serialize deterministically: the same tokenizer always gives the same text, that of
    ``json.dumps(..., ensure_ascii=False, indent=2)`` (written faster: ``engine/json_layout.py``)."""
    with collector_paused():  # engine/gc_pause.py: the document is many small containers, none in a cycle
        return dumps_indented(to_hf_dict(tokenizer))


def _split_byte_level(data: Any) -> tuple[bool, PreTokenizer | None]:
    """Find the ByteLevel step of a pre-tokenizer; return (is byte-level, the splitting steps).

    The ByteLevel step maps pieces to the byte alphabet, which our byte-level BPE does itself,
    so only what it adds to the split stays: GPT-2's regex with ``use_regex``, and a space in
    front of each piece with ``add_prefix_space`` (before that regex, as Hugging Face does).
    It must be the last step: a split after it would see the byte alphabet.
    """
    if isinstance(data, dict) and data.get("type") == "Sequence" and isinstance(data.get("pretokenizers"), list):
        steps = data["pretokenizers"]
        where = "pre_tokenizer.pretokenizers"
    else:
        steps, where = [data], "pre_tokenizer"
    at = [i for i, step in enumerate(steps) if isinstance(step, dict) and step.get("type") == "ByteLevel"]
    if not at:
        return False, pretokenizer_from_hf(data)
    if at != [len(steps) - 1]:
        raise FormatError(f"The ByteLevel pre-tokenizer ({where}[{at[0]}]) must be the last step; a step after it "
                          "would split the byte alphabet, which we do not reproduce.")
    byte_step = steps[-1]
    added: list[PreTokenizer] = []
    if byte_step.get("add_prefix_space", True):
        added.append(PrefixSpace())
    if byte_step.get("use_regex", True):
        added.append(RegexSplit(GPT2_PATTERN, name="gpt2", onig=True))  # Hugging Face runs it in Onig
    before = pretokenizer_from_hf({"type": "Sequence", "pretokenizers": steps[:-1]}) if len(steps) > 1 else None
    chain = ([*before.steps] if isinstance(before, PreTokenizerSequence) else [before] if before else []) + added
    return True, None if not chain else chain[0] if len(chain) == 1 else PreTokenizerSequence(chain)


def _byte_level_pre_to_hf(pre: PreTokenizer | None) -> dict[str, Any]:
    """The pre-tokenizer of a byte-level tokenizer with its ByteLevel step, the inverse of
    :func:`_split_byte_level`: a trailing prefix step (and GPT-2's regex after it) folds back
    into the ByteLevel step's flags."""
    steps = list(pre.steps) if isinstance(pre, PreTokenizerSequence) else [pre] if pre is not None else []
    byte_step = dict(_BYTE_LEVEL)
    if len(steps) >= 2 and isinstance(steps[-2], PrefixSpace) and isinstance(steps[-1], RegexSplit) \
            and steps[-1].pattern == GPT2_PATTERN:
        byte_step.update(add_prefix_space=True, use_regex=True)
        steps = steps[:-2]
    elif steps and isinstance(steps[-1], PrefixSpace):
        byte_step["add_prefix_space"] = True
        steps = steps[:-1]
    chain = [step.to_hf() for step in steps] + [byte_step]
    return chain[0] if len(chain) == 1 else {"type": "Sequence", "pretokenizers": chain}


def _model_class(kind: object, *, char_level: bool = False, byte_symbols: bool = False) -> Any:
    if not isinstance(kind, str) or kind not in MODEL_TYPES:
        raise FormatError(f"The model type {shown(kind)} is not supported; supported: {', '.join(MODEL_TYPES)}.")
    path = BYTE_SYMBOL_BPE if byte_symbols else CHAR_BPE if char_level else MODEL_TYPES[kind]
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)


def _read_added_tokens(
    entries: Any,
) -> tuple[dict[str, int], dict[str, int], dict[str, tuple[bool, bool]], list[str], list[str]]:
    """``added_tokens`` as (special tokens, other added tokens, their lstrip/rstrip, the contents
    of those matched on normalized text, those matched only as a word of their own), checked as read."""
    if not isinstance(entries, list):
        raise FormatError(f'"added_tokens" must be a list, not {type(entries).__name__}.')
    check_count(len(entries), MAX_SPECIAL_TOKENS, "added tokens", name="MAX_SPECIAL_TOKENS")
    specials: dict[str, int] = {}
    added: dict[str, int] = {}
    strip: dict[str, tuple[bool, bool]] = {}
    normalized: list[str] = []
    single_word: list[str] = []
    for index, entry in enumerate(entries):
        if (not isinstance(entry, dict) or not isinstance(entry.get("content"), str)
                or not isinstance(entry.get("id"), int)):
            raise FormatError(f"An added token must have a string content and an integer id: {shown(entry)} "
                              f"(added_tokens[{index}]).")
        content = entry["content"]
        if content in specials or content in added:
            raise FormatError(f"The added token {shown(content)} appears twice (added_tokens[{index}]).")
        if entry.get("single_word"):
            single_word.append(content)
        (specials if entry.get("special", True) else added)[content] = entry["id"]
        strip[content] = (bool(entry.get("lstrip")), bool(entry.get("rstrip")))
        if entry.get("normalized"):
            normalized.append(content)
    check_special_tokens({**specials, **added})  # non-empty, short, ids in range, one id each
    return specials, added, strip, normalized, single_word


def pipeline_from_hf_dict(data: Any, *, model: Any = None) -> dict[str, Any]:
    """The keyword arguments of a tokenizer from a ``tokenizer.json`` object, validated as read.

    ``model``: one already built (``engine/snapshot.py``), instead of reading ``data["model"]``."""
    if not isinstance(data, dict) or not isinstance(data.get("model"), dict):
        raise FormatError("This is not a tokenizer.json document: it has no \"model\" object.")
    specials, added, strip, normalized, single_word = _read_added_tokens(data.get("added_tokens") or [])
    byte_level, pre = _split_byte_level(data.get("pre_tokenizer"))
    model_data = data["model"]
    kind = model_data.get("type") or ("BPE" if "merges" in model_data else None)
    char_level = kind == "BPE" and not byte_level
    byte_symbols = kind == "BPE" and byte_level and bool(word_affixes(model_data))
    if model is None:
        model = _model_class(kind, char_level=char_level, byte_symbols=byte_symbols).from_hf(
            model_data, special_tokens={**specials, **added})
    default_decoder = ByteLevelDecoder() if byte_level else ConcatDecoder()
    normalizer = normalizer_from_hf(data.get("normalizer"))
    return {
        "model": model,
        "normalizer": normalizer,
        "pre_tokenizer": pre,
        "special_tokens": specials,
        "added_tokens": added,
        "added_token_strip": strip,
        "normalized_tokens": normalized,
        "single_word_tokens": single_word,
        "post_processor": post_processor_from_hf(data.get("post_processor"), specials),
        "decoder": ByteLevelDecoder() if byte_level else decoder_from_hf(data.get("decoder"), default_decoder),
    }


def pipeline_from_json(text: str | bytes) -> dict[str, Any]:
    """Parse a ``tokenizer.json`` document; malformed input raises FormatError, never anything else.

    The size of ``text`` is the caller's to bound (``engine.limits.read_bytes`` for files).
    """
    with collector_paused():  # engine/gc_pause.py: a quarter of a big file's load time
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
