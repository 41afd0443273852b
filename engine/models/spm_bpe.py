"""sentencepiece's BPE encoding (``bpe_model.cc``): merges ranked by piece scores, not a merge list.

A sentencepiece BPE model has no merges: the text starts as characters (a USER_DEFINED piece is
one frozen symbol, never merged further), and repeatedly the adjacent pair whose concatenation
is a piece with the highest score is merged; **ties go to the leftmost pair** (and a score of
-0.0 ranks below 0.0, as sentencepiece ranks it: :func:`_priority`). A heap holds the
candidate pairs; a popped pair whose symbols have changed since it was pushed is stale and
skipped. UNUSED pieces take part in merging but are split back into the two symbols they were
merged from. A symbol that is no piece is unknown: with ``byte_fallback`` it is spelled as the
``<0xNN>`` pieces of its UTF-8 bytes, otherwise adjacent unknown symbols fuse into one unk id
(``sentencepiece_processor.cc``). CONTROL, UNKNOWN and BYTE pieces are never merged into.

Cost: O(n log n) per piece; a piece over ``METERED_CHARS`` characters charges its loop to the
encode's time budget (``engine.limits.work_meter``). Left out: BPE-dropout, training.

Internal: not part of the engine's API (``engine.PUBLIC_MODULES``).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Collection, Sequence
from typing import Any

from engine.errors import FormatError
from engine.limits import MAX_VOCAB_SIZE, TICK_MASK, check_count, shown, work_meter
from engine.models.pieces import PieceVocabulary

METERED_CHARS = 256
BYTE_PIECES = tuple(f"<0x{b:02X}>" for b in range(256))


def _priority(score: float) -> float:
    """The order in which sentencepiece merges a piece: its score, except that it ranks a score of
    -0.0 below 0.0 (measured with sentencepiece 0.2: a trained model's first merge scores -0.0,
    and pieces appended with score 0, as Chinese-LLaMA's merge_tokenizers.py writes them, win
    their ties against it). The nearest double below zero lies above every other float32 score."""
    return math.nextafter(0.0, -1.0) if score == 0.0 and math.copysign(1.0, score) < 0 else score


class SpmBPE(PieceVocabulary):
    """``pieces[i] = (piece, score)`` gives id ``i``; ``mergeable`` ids are NORMAL/USER_DEFINED/UNUSED."""

    kind = "bpe"
    level = "spm"

    def __init__(self, pieces: Sequence[tuple[str, float]], *, unk_id: int, byte_fallback: bool = False,
                 mergeable: Collection[int] | None = None, user_defined: Collection[str] = (),
                 unused: Collection[str] = ()) -> None:
        check_count(len(pieces), MAX_VOCAB_SIZE, "pieces", name="MAX_VOCAB_SIZE")
        self._pieces = [(p, float(s)) for p, s in pieces]
        self._ids: dict[str, int] = {}
        for index, (piece, _) in enumerate(self._pieces):
            if not piece or piece in self._ids:
                raise FormatError(f"Piece {index} ({shown(piece)}) is empty or repeats id {self._ids.get(piece)}.")
            self._ids[piece] = index
        if not 0 <= unk_id < len(self._pieces):
            raise FormatError(f"unk_id {unk_id} is not an id of this {len(self._pieces)}-piece vocabulary.")
        self.unk_id: int | None = unk_id
        self.byte_fallback = byte_fallback
        self._byte_ids: list[int] | None = None
        if byte_fallback:
            missing = [b for b in BYTE_PIECES if b not in self._ids]
            if missing:
                raise FormatError(f"byte_fallback needs all 256 byte pieces; {missing[0]} is missing.")
            self._byte_ids = [self._ids[b] for b in BYTE_PIECES]
        allowed = set(range(len(self._pieces))) if mergeable is None else set(mergeable)
        self._merge = {p: (i, s, _priority(s)) for i, (p, s) in enumerate(self._pieces) if i in allowed}
        self.user_defined = frozenset(user_defined)
        self.unused = frozenset(unused)
        self._user_lengths = sorted({len(p) for p in self.user_defined}, reverse=True)

    # ----------------------------------------------------------------- encoding
    def _symbols(self, text: str) -> tuple[list[str], list[bool]]:
        """Characters, with USER_DEFINED pieces (longest first) as single frozen symbols."""
        symbols: list[str] = []
        frozen: list[bool] = []
        pos = 0
        while pos < len(text):
            for size in self._user_lengths:
                if text[pos:pos + size] in self.user_defined:
                    symbols.append(text[pos:pos + size])
                    frozen.append(True)
                    pos += size
                    break
            else:
                symbols.append(text[pos])
                frozen.append(False)
                pos += 1
        return symbols, frozen

    def segment(self, text: str) -> list[str]:
        """The merged symbols of ``text`` (before ids and byte fallback)."""
        symbols, frozen = self._symbols(text)
        n = len(symbols)
        prev = list(range(-1, n - 1))
        nxt = list(range(1, n + 1))
        nxt[-1:] = [-1]
        heap: list[tuple[float, int, int, int]] = []  # (-priority, left, right, merged length)
        split: dict[str, tuple[str, str]] = {}  # UNUSED piece -> what it was merged from
        merge = self._merge

        def push(left: int, right: int) -> None:
            if left < 0 or right < 0 or frozen[left] or frozen[right]:
                return
            joined = symbols[left] + symbols[right]
            found = merge.get(joined)
            if found is not None:
                heapq.heappush(heap, (-found[2], left, right, len(joined)))
                if joined in self.unused:
                    split[joined] = (symbols[left], symbols[right])

        for i in range(1, n):
            push(i - 1, i)
        meter = work_meter(f"sentencepiece BPE on a {n:,}-character piece",
                           "encode less text at once.") if n > METERED_CHARS else None
        steps = 0
        while heap:
            _, left, right, size = heapq.heappop(heap)
            if not symbols[left] or not symbols[right] or len(symbols[left]) + len(symbols[right]) != size \
                    or nxt[left] != right:
                continue  # stale: one side was merged away since
            steps += 1
            if meter is not None and not steps & TICK_MASK:
                meter.tick()
            symbols[left] += symbols[right]
            symbols[right] = ""
            nxt[left] = nxt[right]
            if nxt[right] >= 0:
                prev[nxt[right]] = left
            push(prev[left], left)
            push(left, nxt[left])
        out: list[str] = []
        for symbol in symbols:
            if symbol:
                self._resegment(symbol, split, out)
        return out

    def _resegment(self, symbol: str, split: dict[str, tuple[str, str]], out: list[str]) -> None:
        stack = [symbol]
        while stack:
            w = stack.pop()
            if w in self.unused and w in split:
                stack.extend(reversed(split[w]))
            else:
                out.append(w)

    def tokenize(self, piece: str) -> list[int]:
        ids: list[int] = []
        previous_unknown = False
        for symbol in self.segment(piece):
            found = self._ids.get(symbol, self.unk_id)  # PieceToId: any piece, else unk
            if found != self.unk_id:
                ids.append(found)  # type: ignore[arg-type]
                previous_unknown = False
            elif self._byte_ids is not None:
                ids.extend(self._byte_ids[b] for b in symbol.encode("utf-8"))
            elif not previous_unknown:
                ids.append(self.unk_id)  # type: ignore[arg-type]  # checked in __init__
                previous_unknown = True
        return ids

    # ----------------------------------------------------------------- vocabulary
    def pieces(self) -> list[tuple[str, float]]:
        return list(self._pieces)

    @property
    def vocab_size(self) -> int:
        return len(self._pieces)

    def merges(self) -> list[tuple[str, str]]:
        """A merge list from the scores, as HF's Llama converter makes it: for each mergeable piece
        by descending score (then id), every split into two pieces, by the ids of the halves. A
        score of -0.0 ranks below 0.0 (:func:`_priority`), where the converter would see a tie:
        so the tokenizer.json of a model with pieces appended at score 0 (merge_tokenizers.py)
        gives sentencepiece's ids in Hugging Face too."""
        ids, found = self._ids, []
        for piece, (index, _, priority) in self._merge.items():
            if len(piece) < 2 or piece in self.user_defined:
                continue
            for cut in range(1, len(piece)):
                left = ids.get(piece[:cut])
                right = ids.get(piece[cut:]) if left is not None else None
                if right is not None:
                    found.append((-priority, index, left, right))
        found.sort()  # (index, left, right) is unique: no two entries tie
        return [(self._pieces[left][0], self._pieces[right][0]) for _, _, left, right in found]

    def to_hf(self) -> dict[str, Any]:
        return {
            "type": "BPE", "dropout": None, "unk_token": self._pieces[self.unk_id][0],  # type: ignore[index]
            "continuing_subword_prefix": None, "end_of_word_suffix": None, "fuse_unk": True,
            "byte_fallback": self.byte_fallback, "ignore_merges": False,
            "vocab": {p: i for i, (p, _) in enumerate(self._pieces)},
            "merges": [[a, b] for a, b in self.merges()],
        }
