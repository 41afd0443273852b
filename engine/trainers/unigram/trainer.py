"""The Unigram trainer's stages in order (the package docstring tells them): ``train`` reads the
corpus, ``train_on_counts`` trains on its word table, ``build_tokenizer`` wraps the model.

Internal: not part of the engine's API (``engine.PUBLIC_MODULES``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from engine.decoders import MetaspaceDecoder
from engine.errors import ConfigError
from engine.models.unigram import BYTE_PIECES, UNK_PENALTY, Unigram
from engine.normalizers import Normalizer, get_normalizer
from engine.normalizers import Sequence as NormalizerSequence
from engine.normalizers_hf import Prepend, Replace
from engine.pretokenizers import Metaspace
from engine.spm_normalizer import SpmNormalizer
from engine.tokenizer import Tokenizer
from engine.trainers.base import Reporter, TrainResult
from engine.trainers.limits import MAX_SENTENCE_BYTES, max_workers
from engine.trainers.packed import CountedWords
from engine.trainers.unigram.bounds import check_memory, skip_long_words
from engine.trainers.unigram.em import m_step
from engine.trainers.unigram.options import UnigramOptions
from engine.trainers.unigram.parallel import Shards, slice_count
from engine.trainers.unigram.prune import prune_pieces
from engine.trainers.unigram.seed import required_chars, seed_pieces
from engine.trainers.unigram.words import SPACE, count_words

SCORE_STEP = 2.0**-8  # see on_score_grid

__all__ = ["SCORE_STEP", "build_tokenizer", "on_score_grid", "rounds_left", "train", "train_on_counts"]


def train_on_counts(word_counts: Mapping[str, int], options: UnigramOptions,
                    reporter: Reporter | None = None) -> tuple[Unigram, dict[str, object]]:
    """Train on a word-count table; returns the model and statistics."""
    reporter = reporter or Reporter()
    if not word_counts:
        raise ConfigError("The corpus has no text to train on.")
    # 0. Bounds: over-long words skipped, a table too big for this machine refused (``bounds``).
    word_counts, skipped = skip_long_words(word_counts)
    if not word_counts:
        raise ConfigError(f"Every {'word' if options.split_by_whitespace else 'line'} of the corpus is longer than "
                          f"{MAX_SENTENCE_BYTES:,} bytes, sentencepiece's max_sentence_length, so all were skipped.")
    check_memory(word_counts, max_piece_length=options.max_piece_length,
                 split_by_whitespace=options.split_by_whitespace)
    # 1. Required characters (the words packed once: the slices read them too).
    words = CountedWords.of(word_counts)
    required = required_chars(words, options.character_coverage)
    if not required:  # NUL only: no character a piece may hold
        raise ConfigError("The corpus has no character a piece may hold (NUL is never one).")
    reserved = len(options.special_tokens) + (256 if options.byte_fallback else 0)
    if options.vocab_size < reserved + len(required):
        raise ConfigError(
            f"vocab_size {options.vocab_size} is smaller than the {len(required)} required characters plus "
            f"{reserved} special/byte pieces; raise vocab_size to at least {reserved + len(required)} "
            f"or lower character_coverage.",
            option="vocab_size",
        )
    # 2. The lattice workers start on the words (``parallel``: their tries need no pieces), and
    #    do the seed's heavy steps. Worker processes only where the table makes several slices.
    workers = min(options.num_workers or max_workers(), slice_count(words))
    with Shards(words, workers=workers, reporter=reporter) as shards:
        # 3. Seed vocabulary; piece id ``unk`` (one past the seed) is "unknown character".
        reporter.update("seeding", 0, force=True)
        seed = seed_pieces(
            word_counts, required, seed_size=options.seed_size, max_piece_length=options.max_piece_length,
            split_by_unicode_script=options.split_by_unicode_script, split_by_number=options.split_by_number,
            split_by_whitespace=options.split_by_whitespace, work=shards,
        )
        del word_counts, words  # the workers hold the words now; the caller's table may be the only other copy
        pieces = [p for p, _ in seed]
        unk = len(pieces)
        scores = np.array([s for _, s in seed] + [1.0])
        del seed
        logp = np.log(scores) - np.log(scores[:unk].sum())
        is_required = np.zeros(unk + 1, bool)
        is_required[: len(required)] = True  # the seed lists the required characters first
        is_required[unk] = True
        alive = np.ones(unk + 1, bool)
        stats: dict[str, object] = {"seed_size": unk, "required_chars": len(required), "rounds": []}
        if skipped:
            stats["skipped_long_words"] = skipped
        # 4. The corpus lattice, each slice's built by the worker that owns it.
        reporter.update("lattice", 0, force=True)
        shards.build(pieces, options.max_piece_length, unk)
        # 5. EM rounds with pruning.
        logp = _em_rounds(shards, pieces, logp, alive, is_required, options, reporter, stats)
    # 6. Finalize: required characters (missing ones just below the lowest score), then the best.
    final: dict[str, float] = {}
    floor = float(logp[:unk][alive[:unk]].min())
    penalty = 0.0
    for sid, char in enumerate(required):  # by descending frequency
        if alive[sid] and logp[sid] > -np.inf:
            final[char] = float(logp[sid])
        else:
            final[char] = floor + penalty
            penalty += SCORE_STEP
    room = options.vocab_size - reserved
    vocab: list[tuple[str, float]] = [(t, 0.0) for t in options.special_tokens]
    if options.byte_fallback:
        vocab.extend((b, 0.0) for b in BYTE_PIECES)
    taken = {p for p, _ in vocab}  # a corpus may spell "<0x0A>" or "<s>" as text: they keep their id
    ranked = sorted(((float(logp[s]), pieces[s]) for s in np.flatnonzero(alive[:unk])), key=lambda t: (-t[0], t[1]))
    for score, piece in ranked:
        if len(final) >= room:
            break
        if piece not in taken:
            final.setdefault(piece, score)
    on_grid = {p: on_score_grid(s) for p, s in final.items()}
    vocab.extend(sorted(on_grid.items(), key=lambda kv: (-kv[1], kv[0])))
    specials = {t: i for i, t in enumerate(options.special_tokens)}
    return Unigram(vocab, unk_id=0, byte_fallback=options.byte_fallback, special_tokens=specials), stats


def on_score_grid(score: float) -> float:
    """``score`` rounded to a multiple of :data:`SCORE_STEP`.

    Why: sentencepiece adds path scores in float32, Hugging Face in float64, and both break ties
    alike. Every order of the same pieces (``^^|^`` and ``^|^^``) has the same exact total, so
    with arbitrary scores float32 rounding picks one order in sentencepiece and the tie rule
    another in Hugging Face. Scores on a grid of 2**-8 (at most 0.002 nats off) add exactly in
    both, for any word whose total stays above -65,536 (tens of thousands of characters), so a
    trained model gives the same ids in both libraries.
    """
    return round(score / SCORE_STEP) * SCORE_STEP


def _em_rounds(shards: Shards, pieces: list[str], logp: np.ndarray, alive: np.ndarray, is_required: np.ndarray,
               options: UnigramOptions, reporter: Reporter, stats: dict[str, object]) -> np.ndarray:
    """Stage 4: EM and pruning until the vocabulary is small enough; returns the final log-probabilities."""
    unk = len(pieces)
    desired = int(options.vocab_size * 1.1)
    required = np.flatnonzero(is_required)
    for round_no in range(1000):
        total = ((round_no + 1 + rounds_left(int(alive.sum()) - 1, desired, options.shrinking_factor))
                 * options.n_sub_iterations)
        for sub in range(options.n_sub_iterations):
            reporter.update("EM", round_no * options.n_sub_iterations + sub, total, force=True)
            logp[unk] = logp[:unk][alive[:unk]].min() - UNK_PENALTY
            expected, loglik = shards.e_step(logp)
            logp = m_step(expected, alive, required)  # drops pieces too (most of the seed's): -inf
        stats["rounds"].append([int(alive.sum()) - 1, round(loglik, 3)])  # type: ignore[attr-defined]
        # Prune after every round, the last one too, then stop once small enough (sentencepiece
        # 0.2's order); pieces are weighed by their counts in the Viterbi paths, as there.
        logp[unk] = logp[:unk][alive[:unk]].min() - UNK_PENALTY
        freq = shards.viterbi_counts(logp)
        prune_pieces(pieces, freq, logp, alive, is_required, target=desired, shrinking_factor=options.shrinking_factor,
                     max_len=options.max_piece_length, unk=unk, paths=shards.alternative_paths)
        logp[~alive] = -np.inf
        if alive.sum() - 1 <= desired:
            done = (round_no + 1) * options.n_sub_iterations
            reporter.update("EM", done, done, force=True)  # the estimate may have run ahead: 100% now
            return logp
    return logp


def rounds_left(alive: int, desired: int, shrinking_factor: float) -> int:
    """How many more rounds pruning takes after this one: each keeps ``shrinking_factor`` of the
    pieces, never fewer than ``desired``, and the rounds stop at ``desired``. An estimate: the first
    M-step drops many seed pieces too, so the total falls as the rounds go (the ETA follows)."""
    left = 0
    alive = max(desired, int(alive * shrinking_factor))
    while alive > desired:
        alive = max(desired, int(alive * shrinking_factor))
        left += 1
    return left


def build_tokenizer(model: Unigram, options: UnigramOptions) -> Tokenizer:
    """Wrap a trained model in sentencepiece's pipeline: a ``▁`` before the text (one that begins
    with a space too, as sentencepiece adds it and as the words were counted), every space as
    ``▁``, the words cut at each ``▁`` (the same pieces as a lattice over the whole text, since
    a piece holds ``▁`` only first), and sentencepiece's decoding.

    With identity normalization the normalizer is sentencepiece's own (``SpmNormalizer``), so
    the tokenizer, its ``tokenizer.model`` and its ``tokenizer.json`` (Hugging Face's
    ``Replace`` and ``Prepend``) give the same ids; NFKC and NFC run before the same two steps.
    (A Metaspace pre-tokenizer that adds the ``▁`` itself, as before, adds none before a text
    that begins with a space: such texts got other ids from the ``.model``.)"""
    if options.normalization == "identity":
        normalizer: Normalizer = SpmNormalizer(add_dummy_prefix=options.add_dummy_prefix,
                                               remove_extra_whitespaces=False, name="identity")
    else:  # the training's own form (``get_normalizer``), then the two steps
        form = get_normalizer(options.normalization)
        steps = [form] if form is not None else []
        steps.append(Replace(string=" ", content=SPACE))
        if options.add_dummy_prefix:
            steps.append(Prepend(SPACE))
        normalizer = NormalizerSequence(steps)
    return Tokenizer(
        model,
        normalizer=normalizer,
        pre_tokenizer=Metaspace(SPACE, add_dummy_prefix=False, split_by_whitespace=options.split_by_whitespace),
        special_tokens={t: i for i, t in enumerate(options.special_tokens)},
        decoder=MetaspaceDecoder(SPACE, add_dummy_prefix=options.add_dummy_prefix),
        name="unigram",
    )


def train(files: Sequence[Path], options: UnigramOptions, *, reporter: Reporter) -> TrainResult:
    """Train a Unigram tokenizer on ``files``: count the distinct words, then :func:`train_on_counts`."""
    model, stats = train_on_counts(count_words(files, get_normalizer(options.normalization), options, reporter),
                                   options, reporter)
    return TrainResult(build_tokenizer(model, options), stats)
