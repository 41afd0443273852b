"""The Unigram language-model tokenizer (sentencepiece's ``unigram``): Viterbi encoding.

A Unigram model is a list of pieces with log-probability scores; a pre-token is cut into the
sequence of pieces with the highest total score (Viterbi over the lattice of all pieces that
match a substring). A character that no piece covers becomes ``<unk>`` scored at the lowest
piece score minus 10, and runs of such characters are fused into one ``<unk>``, as both
sentencepiece and Hugging Face do. With ``byte_fallback`` such a run is spelled as the pieces
``<0x00>``…``<0xFF>`` of its UTF-8 bytes instead.

Scores add up in float32, as in sentencepiece's ``EncodeOptimized`` (``unigram_model.cc``):
each score is rounded to float32 (what a ``.model`` stores) and every path total is rounded to
float32 after each step. Ties between equal float32 totals go to the path whose last piece
starts earliest (the longest last piece). This reproduces sentencepiece's ids exactly, ties in
runs such as ``^^^^^^^^`` included, which are decided by float32 rounding: every order of the
same pieces has the same exact sum. Hugging Face adds in float64, so it can break those ties
otherwise; no per-piece score can separate two orders of the same pieces, so ``to_hf`` cannot
fix that (``docs/architecture.md``, "Unigram ties").

Special pieces (``<unk>``, control tokens such as ``<s>``) and the byte pieces are never
matched against text: sentencepiece's behaviour, so that the literal text ``<0x41>``
round-trips. Hugging Face's Unigram matches every piece, so ``to_hf`` writes those pieces with
a score below any cover of their text by real pieces (see its docstring for the one case that
score cannot fix).

A ``tokenizer.json`` that we did not write (T5, XLM-R, mBART, ALBERT... as ``transformers``
converts them) is read with Hugging Face's semantics instead (``hugging_face=True``), since
Hugging Face is its reference: every piece is matched, scores add up in float64, the unknown
score is the lowest score of *all* pieces minus 10, and a run of unknown characters fused with
matches of the unknown piece is looked up as a piece, then spelled in byte pieces, else
``<unk>`` (``tokenizers/src/models/unigram/model.rs``). :meth:`Unigram.from_hf` tells the two
apart by the scores our own ``to_hf`` gives the pieces we never match, and ``to_hf`` of a model
read that way writes every score as it is, so each reads back as it was.

Cost: the lattice looks up only the lengths some piece has, and a pre-token over 16 characters
charges it to the encode's time budget (``engine.limits.work_meter``): an imported vocabulary
with pieces of every length up to 1,024 costs 1,024 lookups per character.

Sampling for subword regularization is in ``unigram_sampling.py``; training is
``engine.trainers.unigram``; the ``.vocab`` file format is ``engine.formats.spm``.

Internal: not part of the engine's API (``engine.PUBLIC_MODULES``).
"""

from __future__ import annotations

import array
import math
import random
from collections.abc import Collection, Iterator, Mapping, Sequence
from typing import Any

from engine.errors import FormatError
from engine.limits import MAX_VOCAB_SIZE, TICK_MASK, check_count, check_token, shown, work_meter
from engine.models.pieces import PieceVocabulary
from engine.models.unigram_sampling import ffbs, sample_nbest

# Pieces longer than this many characters charge their lattice to the encode's time budget; a
# shorter one costs at most this many lookups per character, like sentencepiece's default
# longest piece. Metered loops read the clock every engine.limits.TICK_MASK + 1 positions.
METERED_CHARS = 16
UNK_PENALTY = 10.0  # sentencepiece's kUnkPenalty: unknown characters score min_score - 10
BYTE_PIECES = tuple(f"<0x{b:02X}>" for b in range(256))
FLT_MAX = 3.4028234663852886e38  # the largest float32; scores beyond it saturate there
# to_hf's score for pieces Viterbi never matches sits this far below the cheapest real cover.
HF_UNMATCHED_MARGIN = 1.0


def f32(value: float) -> float:
    """``value`` rounded to the nearest float32 (sentencepiece's score type), saturating at ±FLT_MAX."""
    box = array.array("f", [max(-FLT_MAX, min(FLT_MAX, value))])
    return box[0]
FLT_MIN = 1.1754943508222875e-38  # sentencepiece's max_score_ starts here, so USER_DEFINED scores stay below 0


def _advice(longest: int) -> str:
    """What to do when a long pre-token runs out of the encode's time budget."""
    return (f"split the text into shorter pieces with a pre-tokenizer (metaspace or whitespace), or encode less "
            f"at once; this model's pieces are up to {longest:,} characters long.")


def _path(back: list[tuple[int, int]]) -> list[tuple[int, int, int]]:
    """The best path as (start, end, id) triples, from each end's (start, id) back to 0."""
    path: list[tuple[int, int, int]] = []
    end = len(back) - 1
    while end > 0:
        start, token_id = back[end]
        path.append((start, end, token_id))
        end = start
    path.reverse()
    return path


class Unigram(PieceVocabulary):
    """A Unigram model: ``pieces[i] = (piece, score)`` gives id ``i``."""

    kind = "unigram"

    def __init__(
        self,
        pieces: Sequence[tuple[str, float]],
        *,
        unk_id: int | None = 0,
        byte_fallback: bool = False,
        special_tokens: Mapping[str, int] | None = None,
        user_defined: Collection[str] = (),
        unused: Collection[str] = (),
        hugging_face: bool = False,
    ) -> None:
        """``user_defined`` and ``unused`` follow sentencepiece (``unigram_model.cc``): a
        USER_DEFINED piece scores its UTF-8 length times the best normal score (at least FLT_MIN)
        minus 0.1, so it is always taken whole; an UNUSED piece is never matched; the unknown
        score is the lowest score of the normal pieces minus 10. ``hugging_face`` gives Hugging
        Face's semantics instead (module docstring): then nothing is excluded from matching."""
        if not pieces:
            raise FormatError("A Unigram model needs at least one piece.")
        check_count(len(pieces), MAX_VOCAB_SIZE, "pieces", name="MAX_VOCAB_SIZE")
        self._pieces: list[tuple[str, float]] = []
        self._ids: dict[str, int] = {}
        for index, (piece, score) in enumerate(pieces):
            if (not isinstance(piece, str) or not piece or not isinstance(score, (int, float))
                    or isinstance(score, bool)):
                raise FormatError(f"Unigram piece {index} must be a non-empty string and a number, "
                                  f"not {shown(piece)}, {shown(score)}.")
            if isinstance(score, int) and not -(2**1000) < score < 2**1000 or not math.isfinite(score):
                raise FormatError(f"Unigram piece {shown(piece)} has the score {shown(score)}; "
                                  f"scores must be finite numbers.")
            if piece in self._ids:
                raise FormatError(f"The Unigram piece {shown(piece)} appears twice "
                                  f"(ids {self._ids[piece]} and {index}).")
            self._ids[piece] = index
            self._pieces.append((piece, float(score)))
        if unk_id is not None and not 0 <= unk_id < len(self._pieces):
            raise FormatError(f"unk_id {unk_id} is not an id of this {len(self._pieces)}-piece vocabulary.")
        self.unk_id = unk_id
        self.byte_fallback = byte_fallback
        self._byte_ids: list[int] | None = None
        if byte_fallback and not hugging_face:  # Hugging Face spells bytes only where all of a run's pieces exist
            missing = [p for p in BYTE_PIECES if p not in self._ids]
            if missing:
                raise FormatError(f"byte_fallback needs all 256 byte pieces; {missing[0]} is missing.")
            self._byte_ids = [self._ids[p] for p in BYTE_PIECES]
        if unk_id is None and not byte_fallback:
            raise FormatError("A Unigram model needs an unk_id or byte_fallback so every character can be encoded.")
        self.hugging_face = hugging_face
        if hugging_face:
            self._match: dict[str, tuple[int, float]] = {p: (i, s) for i, (p, s) in enumerate(self._pieces)}
            self.max_piece_length = max(len(p) for p in self._match)
            self._lengths = sorted({len(p) for p in self._match})
            self._advice = _advice(self.max_piece_length)
            self.unk_score = min(s for _, s in self._pieces) - UNK_PENALTY
            return
        # Pieces the Viterbi search may match: everything except specials and byte pieces.
        excluded = set(BYTE_PIECES) if byte_fallback else set()
        excluded.update((special_tokens or {}).keys())
        excluded.update(unused)
        if unk_id is not None:
            excluded.add(self._pieces[unk_id][0])
        self._match = {p: (i, s) for i, (p, s) in enumerate(self._pieces) if p not in excluded}
        user_defined = set(user_defined)
        normal = [s for p, (_, s) in self._match.items() if p not in user_defined]
        if user_defined:
            best = max([FLT_MIN, *normal])
            self._match.update({p: (self._ids[p], len(p.encode("utf-8")) * best - 0.1)
                                for p in user_defined if p in self._match})
        # float32 scores, as sentencepiece stores and adds them (see the module docstring).
        self._match = {p: (i, f32(s)) for p, (i, s) in self._match.items()}
        self.max_piece_length = max((len(p) for p in self._match), default=1)
        self._lengths = sorted({len(p) for p in self._match})
        self._advice = _advice(self.max_piece_length)
        scores = normal or [0.0]
        self.unk_score = f32(f32(min(scores)) - UNK_PENALTY)  # float32, as sentencepiece computes it

    # ----------------------------------------------------------------- encoding
    def lattice(self, piece: str) -> list[list[tuple[int, int, float]]]:
        """For each start position, the (end, id, score) of every piece matching there, by end.

        An uncovered character gets an ``(end, -1, unk_score)`` entry (``-1`` marks unknown).
        """
        return list(self._rows(piece))

    def _rows(self, piece: str) -> Iterator[list[tuple[int, int, float]]]:
        """The lattice one start position at a time, so Viterbi holds one row, not all of them.

        Only the lengths some piece has are looked up: one imported 1,024-character piece
        would otherwise make every position slice and hash 1,024 substrings. A piece over
        ``METERED_CHARS`` charges this loop to the encode's time budget (``work_meter``),
        because a model with pieces of every length up to 1,024 still costs that much.
        """
        match = self._match.get
        lengths = self._lengths
        unk_score = self.unk_score
        n = len(piece)
        meter = None
        if n > METERED_CHARS:
            meter = work_meter(f"The Unigram lattice of a {n:,}-character piece", self._advice)
        for i in range(n):
            if meter is not None and not i & TICK_MASK:
                meter.tick()
            here: list[tuple[int, int, float]] = []
            for size in lengths:  # ascending, so here[0] is the shortest match
                end = i + size
                if end > n:
                    break
                found = match(piece[i:end])
                if found is not None:
                    here.append((end, found[0], found[1]))
            if not here or here[0][0] != i + 1:
                here.append((i + 1, -1, unk_score))
            yield here
        if meter is not None:
            meter.tick()

    def viterbi(self, piece: str) -> list[tuple[int, int, int]]:
        """The best path as (start, end, id) triples; id ``-1`` is an unknown character.

        sentencepiece's arithmetic: totals are float32 (``array("f")`` rounds on store, and the
        float64 sum of two float32 values rounds to the float32 sum, since 53 >= 2 * 24 + 2),
        and a candidate replaces the best only when strictly greater, so of equal float32
        totals the one whose last piece starts earliest keeps the place.
        """
        n = len(piece)
        if self.hugging_face:
            return self._viterbi64(piece)
        best = array.array("f", [-math.inf]) * (n + 1)  # scores are finite, so -inf is "not reached"
        best[0] = 0.0
        back: list[tuple[int, int]] = [(0, 0)] * (n + 1)
        total = array.array("f", [0.0])  # one float32 slot that rounds each candidate
        for i, here in enumerate(self._rows(piece)):
            base = best[i]
            for end, token_id, score in here:
                total[0] = base + score
                if total[0] > best[end]:  # strict: the earliest start keeps a tie
                    best[end] = total[0]
                    back[end] = (i, token_id)
        return _path(back)

    def _viterbi64(self, piece: str) -> list[tuple[int, int, int]]:
        """:meth:`viterbi` with Hugging Face's float64 totals (the same tie rule)."""
        n = len(piece)
        best = [-math.inf] * (n + 1)
        best[0] = 0.0
        back: list[tuple[int, int]] = [(0, 0)] * (n + 1)
        for i, here in enumerate(self._rows(piece)):
            base = best[i]
            for end, token_id, score in here:
                total = base + score
                if total > best[end]:
                    best[end] = total
                    back[end] = (i, token_id)
        return _path(back)

    def ids_for_path(self, piece: str, path: Sequence[tuple[int, int, int]]) -> list[int]:
        """Turn a path into ids, fusing each run of unknown characters into one unk (or bytes).

        With Hugging Face's semantics the run also takes the matches of the unknown piece it
        touches (its ``fuse_unk``), and is then a piece if it spells one (:meth:`_unknown_run`)."""
        unknown = (-1, self.unk_id) if self.hugging_face else (-1,)
        ids: list[int] = []
        run_start = -1
        for k, (start, end, token_id) in enumerate(path):
            if token_id not in unknown:
                ids.append(token_id)
                continue
            if run_start < 0:
                run_start = start
            if k + 1 < len(path) and path[k + 1][2] in unknown:
                continue
            ids += self._unknown_run(piece[run_start:end])
            run_start = -1
        return ids

    def _unknown_run(self, text: str) -> list[int]:
        """The ids of a fused run of unknown text. sentencepiece: its byte pieces with
        ``byte_fallback``, else one unk. Hugging Face: the piece it spells, else its byte pieces
        where all exist, else one unk."""
        if not self.hugging_face:
            if self._byte_ids is not None:
                return [self._byte_ids[b] for b in text.encode("utf-8")]
            return [self.unk_id]  # type: ignore[list-item]  # guaranteed by __init__
        found = self._ids.get(text)
        if found is not None:
            return [found]
        spelled = [self._ids.get(BYTE_PIECES[b]) for b in text.encode("utf-8")] if self.byte_fallback else [None]
        if None not in spelled:
            return spelled  # type: ignore[return-value]
        if self.unk_id is not None:
            return [self.unk_id]
        raise FormatError(f"The Unigram model has no unk_id for the text {shown(text)}.")

    def tokenize(self, piece: str) -> list[int]:
        return self.ids_for_path(piece, self.viterbi(piece))

    def sample(self, piece: str, *, rng: random.Random, alpha: float = 0.1, nbest_size: int = -1) -> list[int]:
        """Subword regularization: a random segmentation of ``piece`` (sentencepiece semantics).

        ``nbest_size`` 0 or 1 gives the Viterbi path; ``> 1`` samples among the n best paths
        with probability proportional to ``exp(alpha * score)``; ``< 0`` samples from all
        paths by forward-filtering backward-sampling with the scores scaled by ``alpha``.
        """
        if not piece:
            return []
        if nbest_size in (0, 1):
            path = self.viterbi(piece)
        elif nbest_size < 0:
            path = ffbs(self.lattice(piece), rng=rng, alpha=alpha)
        else:
            path = sample_nbest(self.lattice(piece), nbest_size, rng=rng, alpha=alpha)
        return self.ids_for_path(piece, path)

    # ----------------------------------------------------------------- vocabulary
    def pieces(self) -> list[tuple[str, float]]:
        """All (piece, score) pairs in id order."""
        return list(self._pieces)

    @property
    def vocab_size(self) -> int:
        return len(self._pieces)

    # ----------------------------------------------------------------- tokenizer.json
    def to_hf(self) -> dict[str, Any]:
        """The model as Hugging Face reads it, giving our ids wherever HF's Unigram can.

        HF puts every piece in its trie, so it would match the text ``<0x18>``, ``<unk>`` or
        ``<s>`` to those pieces (``models/unigram/model.rs``). Each piece our Viterbi never
        matches is therefore written with :meth:`hf_unmatched_score`: a cover of ``L``
        characters by real pieces scores at least ``L * min(lowest real score, 0)``, and that
        score is below it for the longest such piece, so HF never prefers it. The one case no
        score fixes: HF's unknown score is the lowest score of *all* pieces minus 10, so where
        the literal text holds a character that no piece covers (``<`` in a vocabulary without
        ``<``), HF takes the whole piece over the path through ``<unk>``. The other pieces keep
        their scores; ties are ``docs/architecture.md``'s "Unigram ties".
        """
        floor = self.hf_unmatched_score() if not self.hugging_face else 0.0  # no piece is unmatched then
        return {
            "type": "Unigram",
            "unk_id": self.unk_id,
            "vocab": [[piece, score if piece in self._match else floor] for piece, score in self._pieces],
            "byte_fallback": self.byte_fallback,
        }

    def hf_unmatched_score(self) -> float:
        """The score ``to_hf`` gives the pieces Viterbi never matches (byte, unknown, control)."""
        longest = max((len(p) for p, _ in self._pieces if p not in self._match), default=1)
        lowest = min((s for _, s in self._match.values()), default=0.0)
        return float(longest * min(lowest, 0.0) - HF_UNMATCHED_MARGIN)

    @classmethod
    def from_hf(cls, data: Mapping[str, Any], *, special_tokens: Mapping[str, int] | None = None) -> Unigram:
        vocab = data.get("vocab")
        if not isinstance(vocab, list) or not all(isinstance(e, list) and len(e) == 2 for e in vocab):
            raise FormatError('A Unigram model needs "vocab": a list of [piece, score] pairs.')
        check_count(len(vocab), MAX_VOCAB_SIZE, "pieces", name="MAX_VOCAB_SIZE")
        for piece, _ in vocab:
            if isinstance(piece, str):
                check_token(piece)
        unk_id = data.get("unk_id")
        if unk_id is not None and (not isinstance(unk_id, int) or isinstance(unk_id, bool)):
            raise FormatError(f'The Unigram "unk_id" must be an integer or null, not {shown(unk_id)}.')
        pieces = [(e[0], e[1]) for e in vocab]
        byte_fallback = bool(data.get("byte_fallback", False))
        if not byte_fallback or set(BYTE_PIECES) <= {piece for piece, _ in pieces}:
            model = cls(pieces, unk_id=unk_id, byte_fallback=byte_fallback, special_tokens=special_tokens)
            # Our own export wrote the never-matched pieces at hf_unmatched_score (see to_hf): they
            # read back at sentencepiece's 0.0, with our semantics, so the .vocab, the .model and a
            # second export stay the same.
            floor = model.hf_unmatched_score()
            unmatched = [i for i, (p, _) in enumerate(pieces) if p not in model._match]
            if unmatched and all(pieces[i][1] == floor for i in unmatched):
                for i in unmatched:
                    pieces[i] = (pieces[i][0], 0.0)
                return cls(pieces, unk_id=unk_id, byte_fallback=byte_fallback, special_tokens=special_tokens)
        # Any other file: Hugging Face is its reference (module docstring).
        return cls(pieces, unk_id=unk_id, byte_fallback=byte_fallback, hugging_face=True)
