"""What the token inspector shows about one id: its bytes, and why the model has it.

Pure functions over an engine :class:`~engine.Tokenizer` and the training statistics stored
with it. Every token gets its id, vocabulary string, bytes (hex and text with escapes) and
whether it is special. Byte-level BPE tokens also get their merge rank, the two parts, the
pair's count when it was merged (from ``stats["merges"]``, when it was trained here) and the
replay of the merges that built it, in rank order. Unigram pieces get their score, WordPiece
pieces whether they continue a word (``##``).

Any stored tokenizer must give a page of bounded size, so a token's bytes, hex and vocabulary
string are shown cut (``web/shown.py``), with its full byte length beside them.

Left out: HTML, and looking tokenizers up (the views do both).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from engine import Tokenizer
from webapp.web.shown import SHOW_BYTES, shown_string, shown_text

MAX_CHAIN = 64  # deeper merge trees are cut, so one huge token cannot make a huge page
@dataclass(frozen=True, slots=True)
class MergeStep:
    """One merge of the chain: ``left + right → merged`` at ``rank``."""

    rank: int
    left: int
    right: int
    merged: int
    left_text: str
    right_text: str
    merged_text: str
    count: int | None


@dataclass(slots=True)
class TokenInfo:
    """Everything the inspector panel shows about one id."""

    id: int
    token: str
    hex: str
    text: str
    byte_length: int
    special: bool
    kind: str
    rank: int | None = None
    parts: tuple[MergeStep, ...] = ()
    chain: list[MergeStep] = field(default_factory=list)
    chain_truncated: bool = False
    score: float | None = None
    continuation: bool | None = None
    unknown: bool = False
    cut: bool = False  # only the first SHOW_BYTES bytes are shown

    @property
    def merge(self) -> MergeStep | None:
        """The merge that created this token, if it has one."""
        return self.parts[0] if self.parts else None


def _merge_counts(stats: dict[str, Any] | None) -> list[Any]:
    merges = (stats or {}).get("merges")
    return merges if isinstance(merges, list) else []


def _step(tokenizer: Tokenizer, rank: int, left: int, right: int, merged: int, counts: list[Any]) -> MergeStep:
    count = None
    if rank < len(counts):
        entry = counts[rank]
        # Only trust the count if the stored merge is the same pair (stats from another run would not be).
        if isinstance(entry, (list, tuple)) and len(entry) >= 3 and list(entry[:2]) == [left, right]:
            count = int(entry[2])
    show = lambda i: shown_text(tokenizer.token_bytes(i))  # noqa: E731
    return MergeStep(rank, left, right, merged, show(left), show(right), show(merged), count)


def merge_chain(tokenizer: Tokenizer, token_id: int,
                stats: dict[str, Any] | None = None) -> tuple[list[MergeStep], bool]:
    """Every merge in the tree that builds ``token_id``, in the order training learned them."""
    origins: dict[int, tuple[int, int, int]] = getattr(tokenizer.model, "origins", {})
    counts = _merge_counts(stats)
    seen: set[int] = set()
    steps: list[MergeStep] = []
    pending = [token_id]
    truncated = False
    while pending:
        current = pending.pop()
        if current in seen or current not in origins:
            continue
        if len(steps) >= MAX_CHAIN:
            truncated = True
            break
        seen.add(current)
        rank, left, right = origins[current]
        steps.append(_step(tokenizer, rank, left, right, current, counts))
        pending.extend((left, right))
    steps.sort(key=lambda s: s.rank)
    return steps, truncated


def inspect(tokenizer: Tokenizer, token_id: int, stats: dict[str, Any] | None = None) -> TokenInfo:
    """Describe ``token_id``; raises ``engine.UnknownTokenIdError`` for an id not in the vocabulary."""
    data = tokenizer.token_bytes(token_id)
    token = tokenizer.id_to_token(token_id)
    model = tokenizer.model
    info = TokenInfo(
        id=token_id, token=shown_string(token), hex=data[:SHOW_BYTES].hex(" "), text=shown_text(data),
        byte_length=len(data), special=tokenizer.is_special(token_id), kind=model.kind,
        unknown=token_id == model.unk_id, cut=len(data) > SHOW_BYTES,
    )
    origins: dict[int, tuple[int, int, int]] = getattr(model, "origins", {})
    if token_id in origins and not info.special:
        rank, left, right = origins[token_id]
        info.rank = rank
        info.parts = (_step(tokenizer, rank, left, right, token_id, _merge_counts(stats)),)
        info.chain, info.chain_truncated = merge_chain(tokenizer, token_id, stats)
    if model.kind == "unigram" and hasattr(model, "pieces"):
        pieces = model.pieces()
        if 0 <= token_id < len(pieces):
            info.score = pieces[token_id][1]
    if model.kind == "wordpiece" and token is not None:
        prefix = getattr(model, "prefix", "##")
        info.continuation = bool(prefix) and token.startswith(prefix) and len(token) > len(prefix)
    return info
