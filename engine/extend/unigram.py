"""Extend a Unigram tokenizer (sentencepiece style): new pieces with scores estimated on the corpus.

The stages: count the corpus's words as the base cuts them (``char_coverage.count_words``); add
the characters the base lacks (it spells them with ``<unk>`` or byte pieces) by coverage, at most
half of ``add`` (``char_coverage.select_symbols``); take the candidates from the Unigram
trainer's seed step (``trainers/unigram/seed.seed_pieces``: frequent right-branching substrings)
that are not pieces already (counted as ``duplicates_skipped``); run :data:`EM_ITERATIONS` rounds
of the trainer's E-step and M-step (``trainers/unigram/em``) over the base's pieces plus the
candidates, where **only the new pieces' scores are re-estimated** and the base's stay as they
are; keep the new characters and the candidates with the highest expected counts (ties: the
smaller string); then one last E-step and M-step over the base plus the kept pieces gives the
final scores. A score is the trainer's: ``digamma(expected count) - digamma(total expected
count)``, the log of the piece's share of the corpus's pieces, so it sits in the base's scale,
and it is clamped to the base's range of scores so the ``<unk>`` score (the lowest minus 10) and
user-defined scores stay the base's. New pieces get ids after the base's, by descending score
(ties: the smaller string). A kept piece that Viterbi never produces from its own text is
dropped and the next candidate taken (:data:`REFILL_ROUNDS` times); what is left is counted
honestly as ``unreachable``.

**Protected** (the default): a candidate must hold a character the base lacks or a character of
an opened script (one in which the base lacks more than half of the corpus's distinct
characters, as ``char_coverage.opened_scripts`` says for BPE). Why this is exact: a new piece
adds lattice edges only where its text occurs, the base's scores are unchanged and so are the
unknown and user-defined scores (the clamp), so **text whose every character is a base piece and
of no opened script keeps exactly the base's ids** (held-out English among it).

A sentencepiece ``.model`` base keeps its proto: the new pieces are appended as NORMAL pieces,
so ``formats/spm_model.dump_spm_model`` writes a ``.model`` sentencepiece loads. Left out:
sentencepiece's pruning by likelihood loss (the expected count decides), user-defined pieces'
own scores in the EM (their stored score is used), bases whose added tokens sit past the model.

Internal: not part of the engine's API (``engine.PUBLIC_MODULES``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Sequence
from pathlib import Path

import numpy as np

from engine.errors import ConfigError
from engine.extend.char_coverage import count_words, select_symbols
from engine.extend.options import ExtendOptions, Extension, check_add, nothing_new
from engine.formats.spm_proto import NORMAL, UNUSED, USER_DEFINED, ModelProto, Piece, with_pieces
from engine.models.unigram import BYTE_PIECES, Unigram, f32
from engine.token_scripts import char_script
from engine.tokenizer import Tokenizer
from engine.trainers.base import Reporter
from engine.trainers.unigram.bounds import skip_long_words
from engine.trainers.unigram.em import EXPECTED_FREQUENCY_THRESHOLD, e_step, m_step
from engine.trainers.unigram.lattice import Lattice
from engine.trainers.unigram.seed import seed_pieces

EM_ITERATIONS = 4  # the trainer's n_sub_iterations is 2 per round; the base's scores anchor these
REFILL_ROUNDS = 3  # times an unreachable piece is replaced by the next candidate
MAX_PIECE_CHARS = 16  # the trainer's max_piece_length
SEED_PER_TOKEN = 20  # candidates seeded per token asked for


def extend_unigram(base: Tokenizer, files: Sequence[str | Path], options: ExtendOptions, *,
                   reporter: Reporter | None = None) -> Extension:
    """Learn ``options.add`` new pieces for a Unigram ``base`` (see the module docstring)."""
    model = base.model
    if not isinstance(model, Unigram):
        raise TypeError(f"extend_unigram needs a Unigram model, not {type(model).__name__}")
    check_add(base, options.add)
    if model.vocab_size != base.vocab_size:
        raise ConfigError(f"This Unigram tokenizer has added tokens past its {model.vocab_size:,} pieces (ids up to "
                          f"{base.vocab_size - 1:,}); new pieces would take their ids, so it cannot be extended.",
                          option="tokenizer")
    reporter = reporter or Reporter()
    # 1. Words as the base cuts them; the characters it lacks and the scripts it mostly lacks.
    #    Cut before each ▁ even where the base puts it after words (treat_whitespace_as_suffix): the
    #    seed makes pieces with ▁ first only, and from words cut after it none would hold a ▁ (held-out
    #    English, 300 pieces added to a 2,000-piece base: 4.2% fewer tokens against 3.8%).
    counts, _ = skip_long_words(count_words(base, files, reporter=reporter, marks_after=False))
    chars: Counter[str] = Counter()
    for word, n in counts.items():
        for char, k in Counter(word).items():
            chars[char] += k * n
    lacked = {c for c in chars if _lacks(model, c)}
    opened = _opened_scripts(chars, lacked)
    # 2. New characters by coverage, then the seed's candidates (only of characters that will be pieces).
    new_chars = select_symbols(Counter({c: chars[c] for c in lacked}), "", options.character_coverage,
                               max(1, options.add // 2))
    usable = {c: n for c, n in chars.items() if c not in lacked or c in new_chars}
    seed = seed_pieces(counts, usable, seed_size=len(usable) + SEED_PER_TOKEN * options.add + 1000,
                       max_piece_length=MAX_PIECE_CHARS)
    taken = set(new_chars)
    duplicates = 0
    candidates: list[str] = []
    for piece, _ in seed:
        if len(piece) < 2 or piece in taken:
            continue
        if model.token_to_id(piece) is not None:
            duplicates += 1
            continue
        if options.protected and not any(c in lacked or char_script(c) in opened for c in piece):
            continue
        candidates.append(piece)
    if not new_chars and not candidates:
        raise ConfigError(nothing_new(options, "it holds no character the base lacks and no frequent substring "
                                               "the base has not got"))
    # 3. EM over the base's pieces (fixed) and the new ones.
    reporter.update("EM", 0, EM_ITERATIONS + 1, force=True)
    matched = _matched_ids(base)
    fixed = [model.id_to_token(i) or "" for i in matched]
    fresh = [*new_chars, *candidates]
    pieces = [*fixed, *fresh]
    first = len(fixed)
    seed_score = dict(seed)
    initial = np.array([max(seed_score.get(p, 1.0), 1.0) for p in fresh])
    base_pieces = model.pieces()
    logp = np.concatenate(([base_pieces[i][1] for i in matched], np.log(initial) - np.log(initial.sum()), [0.0]))
    lattice = Lattice(list(counts), list(counts.values()), {p: s for s, p in enumerate(pieces)}, MAX_PIECE_CHARS,
                      len(pieces))
    keep_always = np.append(np.arange(first + len(new_chars)), len(pieces))  # the base, new characters, unk
    alive = np.ones(len(pieces) + 1, bool)
    expected = _estimate(lattice, logp, alive, keep_always, first, EM_ITERATIONS, model.unk_score, reporter)
    # 4. Keep the new characters and the best candidates; final scores; refill unreachable pieces.
    order = sorted(range(first + len(new_chars), len(pieces)), key=lambda s: (-expected[s], pieces[s]))
    order = [s for s in order if expected[s] >= EXPECTED_FREQUENCY_THRESHOLD]  # the rest lost their edges
    budget = options.add - len(new_chars)
    chosen = [*range(first, first + len(new_chars)), *order[:budget]]
    spare = order[budget:]
    lowest, highest = _score_range(base_pieces, matched)
    check_rebuilds(base)
    for round_no in range(REFILL_ROUNDS + 1):
        alive = np.zeros(len(pieces) + 1, bool)
        alive[:first] = True
        alive[chosen] = True
        alive[-1] = True
        logp[~alive] = -np.inf
        final = _estimate(lattice, logp, alive, np.flatnonzero(alive), first, 1, model.unk_score, None, scores=True)
        scored = sorted(((float(np.clip(final[s], lowest, highest)), pieces[s]) for s in chosen),
                        key=lambda t: (-t[0], t[1]))
        new_pieces = [(p, f32(round(score, 6))) for score, p in scored]
        grown = rebuild_unigram(base, [*base_pieces, *new_pieces])
        unreached = [p for i, (p, _) in enumerate(new_pieces) if grown.tokenize(p) != [base.vocab_size + i]]
        if not unreached or not spare or round_no == REFILL_ROUNDS:
            break
        dropped = {pieces.index(p) for p in unreached}
        refill, spare = spare[:len(dropped)], spare[len(dropped):]
        chosen = [s for s in chosen if s not in dropped] + refill
    reporter.update("EM", EM_ITERATIONS + 1, EM_ITERATIONS + 1, force=True)
    added = [(base.vocab_size + i, p.encode("utf-8")) for i, (p, _) in enumerate(new_pieces)]
    state = base.__getstate__()
    state["model"] = grown
    proto: ModelProto | None = getattr(base, "spm_proto", None)
    if proto is not None:
        state["spm_proto"] = with_pieces(proto, [Piece(p, s, NORMAL) for p, s in new_pieces])
    extended = Tokenizer.__new__(Tokenizer)
    extended.__setstate__(state)
    ids = {p: token_id for token_id, p in ((i, d.decode("utf-8")) for i, d in added)}
    return Extension(tokenizer=extended, base_vocab_size=base.vocab_size, added=added, merges=[],
                     duplicates_skipped=duplicates, protected=options.protected, pretokens_counted=len(counts),
                     symbols_added=tuple(sorted(ids[c] for c in new_chars if c in ids and c not in unreached)),
                     unreached=tuple(ids[p] for p in unreached))


def _estimate(lattice: Lattice, logp: np.ndarray, alive: np.ndarray, keep: np.ndarray, first: int, rounds: int,
              unk_score: float, reporter: Reporter | None, *, scores: bool = False) -> np.ndarray:
    """``rounds`` of E-step then M-step re-estimating only ids ``first`` and up (the base's, below
    ``first``, stay); returns the last expected counts, or the last M-step's scores with ``scores``."""
    expected = np.zeros(len(logp))
    estimated = logp
    for done in range(rounds):
        logp[-1] = unk_score
        expected, _ = e_step(lattice, logp)
        estimated = m_step(expected, alive, keep)
        logp[first:-1] = estimated[first:-1]
        lattice.filter(alive)
        if reporter is not None:
            reporter.update("EM", done + 1, rounds + 1, force=True)
    return estimated if scores else expected


def _lacks(model: Unigram, char: str) -> bool:
    """Whether the base spells ``char`` with ``<unk>`` or byte pieces."""
    ids = model.tokenize(char)
    return len(ids) != 1 or ids[0] == model.unk_id or (model.byte_fallback and model.id_to_token(ids[0]) in BYTE_PIECES)


def _opened_scripts(chars: Collection[str], lacked: Collection[str]) -> frozenset[str]:
    """The scripts in which the base lacks more than half of the corpus's distinct characters."""
    distinct: Counter[str] = Counter()
    missing: Counter[str] = Counter()
    for char in chars:
        script = char_script(char)
        if script is not None:
            distinct[script] += 1
            missing[script] += char in lacked
    return frozenset(s for s, n in missing.items() if 2 * n > distinct[s])


def _unmatched(base: Tokenizer) -> tuple[set[str], set[str], set[str]]:
    """The base's special pieces, user-defined pieces and unused pieces (those a ``.model`` marks)."""
    specials = {*base.special_tokens, *base.added_tokens}
    proto: ModelProto | None = getattr(base, "spm_proto", None)
    if proto is None:
        return specials, set(), set()
    return (specials, {p.piece for p in proto.pieces if p.type == USER_DEFINED},
            {p.piece for p in proto.pieces if p.type == UNUSED})


def _matched_ids(base: Tokenizer) -> list[int]:
    """The ids of the pieces Viterbi may match (not special, unknown, byte or unused)."""
    model = base.model
    specials, _, unused = _unmatched(base)
    skip = specials | unused | (set(BYTE_PIECES) if model.byte_fallback else set())
    return [i for i, (p, _) in enumerate(model.pieces()) if i != model.unk_id and p not in skip]


def _score_range(pieces: list[tuple[str, float]], matched: list[int]) -> tuple[float, float]:
    scores = [pieces[i][1] for i in matched] or [0.0]
    return min(scores), max(scores)


def rebuild_unigram(base: Tokenizer, pieces: list[tuple[str, float]]) -> Unigram:
    """A Unigram of ``pieces`` with the base's unknown id, byte fallback, piece kinds and semantics
    (sentencepiece's, or Hugging Face's for a tokenizer.json read as HF reads it)."""
    model = base.model
    if model.hugging_face:
        return Unigram(pieces, unk_id=model.unk_id, byte_fallback=model.byte_fallback, hugging_face=True)
    specials, user, unused = _unmatched(base)
    return Unigram(pieces, unk_id=model.unk_id, byte_fallback=model.byte_fallback,
                   special_tokens=dict.fromkeys(specials, 0), user_defined=user, unused=unused)


def check_rebuilds(base: Tokenizer) -> None:
    """Refuse a base that :func:`_rebuild` would not give back exactly (a piece kind it cannot tell)."""
    if rebuild_unigram(base, base.model.pieces()).to_hf() != base.model.to_hf():
        raise ConfigError("This Unigram tokenizer's pieces cannot be told apart as special, unused or normal, so it "
                          "cannot be extended exactly; extend its sentencepiece .model instead.", option="tokenizer")
