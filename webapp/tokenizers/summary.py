"""A tokenizer's summary figures and first merges, read from its model rather than its training stats.

Training stats exist only for tokenizers trained here, so figures taken from them were wrong
for everything else: an imported GPT-2 has 50,000 merges in its model and none in its stats.
So the figures come from the model and show what applies to it: merges for BPE (imported or
trained), merges made by the trainer for a trained WordPiece, pieces for Unigram. The first
merges of a BPE come from the model's ranks (so an import shows them too), with the counts the
trainer recorded when there are any; a WordPiece's from its trainer's record (its model keeps
no merges), shown as the two pieces and the token they make (``中`` + ``##文`` = ``中文``).

Left out: HTML (``templates/tokenizers/show.html``) and formatting (``web/filters.py``).
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from typing import Any

from engine import TokenforgeError, Tokenizer
from webapp.web.filters import Figure
from webapp.web.shown import shown_string, shown_text


@dataclass(frozen=True, slots=True)
class MergeRow:
    """One merge as people read it: the two parts and the token they make."""

    rank: int
    left: str
    right: str
    result: str
    count: int | None


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _stats_merges(stats: dict[str, Any]) -> list[Any]:
    merges = stats.get("merges")
    return merges if isinstance(merges, list) else []


def figures(tokenizer: Tokenizer, stats: dict[str, Any]) -> list[Figure]:
    """The figures that apply to this tokenizer's model, beyond its name, size and dates."""
    model = tokenizer.model
    special = tokenizer.special_tokens
    out: list[Figure] = []
    if model.kind == "bpe":
        out.append(Figure("Merges", len(getattr(model, "origins", {})), testid="merges"))
    elif model.kind == "wordpiece":
        merges = _stats_merges(stats)
        if merges:
            out.append(Figure("Merges made in training", len(merges), testid="merges"))
        prefix = getattr(model, "prefix", "")
        if prefix:
            continuing = sum(1 for token in model.vocab() if token.startswith(prefix) and len(token) > len(prefix))
            out.append(Figure(f"Continuing pieces ({prefix}…)", continuing, testid="continuing"))
    elif model.kind == "unigram":
        out.append(Figure("Pieces", tokenizer.vocab_size - len(special), testid="pieces"))
        rounds = _int(stats.get("rounds"))
        if rounds is not None:
            out.append(Figure("EM rounds", rounds, testid="rounds"))
    out.append(Figure("Special tokens", sorted(special, key=special.__getitem__), testid="special-tokens"))
    return out


def first_merges(tokenizer: Tokenizer, stats: dict[str, Any], n: int) -> list[MergeRow]:
    """The first ``n`` merges in rank order, as text; empty for models without merges."""
    kind = tokenizer.model.kind
    if kind == "bpe":
        return _bpe_merges(tokenizer, _stats_merges(stats), n)
    if kind == "wordpiece":
        return _wordpiece_merges(getattr(tokenizer.model, "prefix", ""), _stats_merges(stats), n)
    return []


def _bpe_merges(tokenizer: Tokenizer, recorded: list[Any], n: int) -> list[MergeRow]:
    origins: dict[int, tuple[int, int, int]] = getattr(tokenizer.model, "origins", {})
    first = heapq.nsmallest(n, ((rank, left, right, merged) for merged, (rank, left, right) in origins.items()))

    def text(token_id: int) -> str:
        try:
            return shown_text(tokenizer.token_bytes(token_id))
        except (TokenforgeError, TypeError, KeyError, IndexError):
            return f"#{token_id}"

    rows = []
    for rank, left, right, merged in first:
        entry = recorded[rank] if rank < len(recorded) else None
        count = None
        if isinstance(entry, (list, tuple)) and len(entry) > 2 and list(entry[:2]) == [left, right]:
            count = _int(entry[2])
        rows.append(MergeRow(rank, text(left), text(right), text(merged), count))
    return rows


def _wordpiece_merges(prefix: str, recorded: list[Any], n: int) -> list[MergeRow]:
    rows = []
    for rank, entry in enumerate(recorded[:n]):
        if not isinstance(entry, (list, tuple)) or len(entry) < 2:
            continue
        left, right = str(entry[0]), str(entry[1])
        joined = left + (right[len(prefix):] if prefix and right.startswith(prefix) else right)
        count = _int(entry[2]) if len(entry) > 2 else None
        rows.append(MergeRow(rank, shown_string(left), shown_string(right), shown_string(joined), count))
    return rows


@dataclass(frozen=True, slots=True)
class PieceTypes:
    """sentencepiece's view of a vocabulary: how many ids of each piece type, and the spec fields
    that act at encode time (only where the tokenizer came from a ``.model``)."""

    counts: dict[str, int]
    spec: dict[str, object]


def piece_types(tokenizer: Tokenizer, model_file: bytes | None = None) -> PieceTypes:
    """The piece-type counts of any tokenizer: from its imported ``.model`` when there is one
    (USER_DEFINED and UNUSED exist only there), inferred from its vocabulary otherwise."""
    from engine.formats.spm_model import load_spm_model, piece_type_counts

    spec: dict[str, object] = {}
    if model_file is not None:
        try:
            tokenizer = load_spm_model(model_file)
        except TokenforgeError:
            model_file = None
    proto = getattr(tokenizer, "spm_proto", None) if model_file is not None else None
    if proto is not None:
        trainer, normalizer = proto.trainer_spec, proto.normalizer_spec
        spec = {"model type": {1: "Unigram", 2: "BPE", 3: "word", 4: "char"}.get(trainer.model_type, "?"),
                "normalization": normalizer.name or "(none named)", "add_dummy_prefix": normalizer.add_dummy_prefix,
                "remove_extra_whitespaces": normalizer.remove_extra_whitespaces,
                "escape_whitespaces": normalizer.escape_whitespaces, "byte_fallback": trainer.byte_fallback,
                "split_digits": trainer.split_digits, "treat_whitespace_as_suffix": trainer.treat_whitespace_as_suffix,
                "unk / bos / eos / pad ids":
                    f"{trainer.unk_id} / {trainer.bos_id} / {trainer.eos_id} / {trainer.pad_id}"}
    return PieceTypes(piece_type_counts(tokenizer), spec)
