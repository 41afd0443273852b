"""Unigram trainer, as sentencepiece does it: seed, EM, prune by likelihood loss, finalize.

Training works on a table of distinct pre-tokens (``▁``-prefixed words) with counts, never on
repeated sentences. Lines are sentences (as in sentencepiece); Metaspace pre-tokenization puts
``▁`` for each space and, with ``add_dummy_prefix``, in front of each line. The words are
counted on every core by the shared ``counting.count_pretokens`` (:class:`MetaspaceSplit`).

Stages (numbered in :func:`train`): count words → required characters (``character_coverage``)
→ seed vocabulary (frequent right-branching substrings, ``unigram_seed``) → repeat
{``n_sub_iterations`` × (E-step, M-step); prune to ``shrinking_factor`` of its size, weighing
pieces by their Viterbi counts (``unigram_viterbi``); stop once the vocabulary is at most
1.1 × ``vocab_size``} → finalize: the required characters, then the highest-scoring pieces
until ``vocab_size``.

Tie-break rule: pieces with equal scores are ordered by the piece string (code point order); in
seeding, equal ``count × length`` goes to the smaller string; in pruning, equal loss keeps the
piece with the better seed rank. Required characters are never pruned.

Left out: sentencepiece's ``.model`` protobuf, user-defined symbols, TSV input. The lattice
arithmetic is ``unigram_trie`` (one prefix trie per shard of the words, ``unigram_shards``);
EM and pruning are ``unigram_em`` and ``unigram_prune``.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import regex

from engine.decoders import MetaspaceDecoder
from engine.errors import ConfigError
from engine.models.unigram import BYTE_PIECES, Unigram
from engine.normalizers import Normalizer, get_normalizer
from engine.pretokenizers import Metaspace
from engine.tokenizer import Tokenizer
from engine.trainers.base import Reporter, TrainResult
from engine.trainers.corpus import cuts_are_safe
from engine.trainers.counting import count_pretokens
from engine.trainers.limits import (
    MAX_PIECE_LENGTH, MAX_SEED_SIZE, MAX_SHRINKING_FACTOR, MAX_SUB_ITERATIONS, MAX_VOCAB, check_at_most,
    check_special_count,
)
from engine.trainers.unigram_em import e_step, m_step, prune
from engine.trainers.unigram_shards import ShardedLattice
from engine.trainers.unigram_seed import required_chars, seed_pieces

SPACE = "\u2581"
_WORD = regex.compile(f"{SPACE}[^{SPACE}\\n]*|[^{SPACE}\\n]+")
_LINE_START = regex.compile(r"(?m)^(?=[^ \n])")


@dataclass(frozen=True)
class UnigramOptions:
    vocab_size: int = field(default=8000, metadata={"help": "Final vocabulary size, special and byte pieces included."})
    character_coverage: float = field(default=0.9995, metadata={"help": "Share of characters the vocabulary must cover; rarer ones become <unk> (or bytes)."})
    seed_size: int = field(default=1_000_000, metadata={"help": "Number of seed pieces (most frequent substrings) EM starts from."})
    max_piece_length: int = field(default=16, metadata={"help": "Longest piece, in characters."})
    shrinking_factor: float = field(default=0.75, metadata={"help": "Share of pieces kept by each pruning round."})
    n_sub_iterations: int = field(default=2, metadata={"help": "EM iterations between two pruning rounds."})
    normalization: str = field(default="identity", metadata={"help": "Text normalization before training and encoding.", "choices": ("identity", "nfkc", "nfc")})
    add_dummy_prefix: bool = field(default=True, metadata={"help": "Put a ▁ in front of each line, so the first word looks like the others."})
    split_by_whitespace: bool = field(default=True, metadata={"help": "Pieces never cross a space (each word is trained on its own)."})
    split_by_unicode_script: bool = field(default=True, metadata={"help": "Pieces never mix Unicode scripts (Latin with Han, letters with punctuation)."})
    split_by_number: bool = field(default=True, metadata={"help": "Decimal digits keep their script (Common): \"1.\" is a piece, \"F1\" is not. Off: digits join any script."})
    byte_fallback: bool = field(default=False, metadata={"help": "Add <0x00>…<0xFF> and spell unknown characters as their UTF-8 bytes."})
    special_tokens: tuple[str, ...] = field(default=("<unk>", "<s>", "</s>"), metadata={"help": "Special tokens, one per line; the first is the unknown token."})

    def __post_init__(self) -> None:
        if not 0 < self.character_coverage <= 1:
            raise ConfigError(f"character_coverage must be in (0, 1], not {self.character_coverage}; 0.9995 suits most languages.")
        if not 0 < self.shrinking_factor <= MAX_SHRINKING_FACTOR:
            raise ConfigError(
                f"shrinking_factor must be above 0 and at most {MAX_SHRINKING_FACTOR:g}, not {self.shrinking_factor} "
                "(closer to 1, pruning takes ever more rounds); 0.75 is sentencepiece's default."
            )
        if self.max_piece_length < 1:
            raise ConfigError(f"max_piece_length must be at least 1, not {self.max_piece_length}.")
        check_at_most("max_piece_length", self.max_piece_length, MAX_PIECE_LENGTH,
                      fix=f"pass max_piece_length of at most {MAX_PIECE_LENGTH} (16 is sentencepiece's default)")
        if self.n_sub_iterations < 1:
            raise ConfigError(f"n_sub_iterations must be at least 1, not {self.n_sub_iterations}.")
        check_at_most("n_sub_iterations", self.n_sub_iterations, MAX_SUB_ITERATIONS,
                      fix=f"pass n_sub_iterations of at most {MAX_SUB_ITERATIONS} (2 is sentencepiece's default)")
        check_at_most("vocab_size", self.vocab_size, MAX_VOCAB)
        check_at_most("seed_size", self.seed_size, MAX_SEED_SIZE,
                      fix=f"pass seed_size of at most {MAX_SEED_SIZE:,} (1,000,000 is sentencepiece's default)")
        check_special_count(self.special_tokens)
        if not self.special_tokens:
            raise ConfigError("special_tokens needs at least the unknown token, e.g. special_tokens=('<unk>',).")
        if len(set(self.special_tokens)) != len(self.special_tokens):
            raise ConfigError(f"special_tokens lists a token twice: {list(self.special_tokens)!r}.")
        reserved = len(self.special_tokens) + (256 if self.byte_fallback else 0)
        if self.vocab_size <= reserved:
            raise ConfigError(f"vocab_size {self.vocab_size} leaves no room for pieces after {reserved} special and byte pieces; raise vocab_size.")
        if self.seed_size < self.vocab_size:
            raise ConfigError(f"seed_size {self.seed_size} is smaller than vocab_size {self.vocab_size}; raise seed_size.")


OPTIONS = UnigramOptions


class MetaspaceSplit:
    """Metaspace pre-tokens of a chunk of whole lines, as a picklable splitter for ``count_pretokens``.

    Lines are sentences: with ``add_dummy_prefix`` each line that does not begin with a space
    gets a ``▁``; every space becomes ``▁``; a word is a ``▁`` and what follows up to the next one
    (or a whole line, without ``split_by_whitespace``). Newlines are read as Python's text mode
    reads them (``\\r\\n`` and a lone ``\\r`` end a line), as the trainer always has.
    """

    def __init__(self, *, add_dummy_prefix: bool, split_by_whitespace: bool) -> None:
        self.add_dummy_prefix = add_dummy_prefix
        self.split_by_whitespace = split_by_whitespace

    def __call__(self, text: str) -> list[str]:
        if "\r" in text:
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        if self.add_dummy_prefix:
            text = _LINE_START.sub(SPACE, text)
        text = text.replace(" ", SPACE)
        if self.split_by_whitespace:
            return _WORD.findall(text)
        return [line for line in text.split("\n") if line]


def count_words(files: Sequence[Path], normalizer: Normalizer | None, options: UnigramOptions, reporter: Reporter) -> dict[str, int]:
    """Distinct Metaspace pre-tokens of every line, with counts, on every core (``count_pretokens``).

    No special tokens are cut out: sentencepiece reads them as text too. Over-long documents may
    be cut before a space or newline between letters only when words never cross whitespace: the
    ``▁`` goes with the word after it, which stays whole on the cut's right side, and a chunk that
    begins with a space or newline gets no dummy prefix.
    """
    split = MetaspaceSplit(add_dummy_prefix=options.add_dummy_prefix, split_by_whitespace=options.split_by_whitespace)
    safe_cuts = options.split_by_whitespace and cuts_are_safe("whitespace", normalizer)
    return count_pretokens(files, split=split, normalizer=normalizer, reporter=reporter, safe_cuts=safe_cuts)


def train_on_counts(word_counts: Counter[str] | dict[str, int], options: UnigramOptions, reporter: Reporter | None = None) -> tuple[Unigram, dict[str, object]]:
    """Train on a word-count table; returns the model and statistics."""
    reporter = reporter or Reporter()
    if not word_counts:
        raise ConfigError("The corpus has no text to train on.")
    # 2. Required characters.
    required = required_chars(word_counts, options.character_coverage)
    reserved = len(options.special_tokens) + (256 if options.byte_fallback else 0)
    if options.vocab_size < reserved + len(required):
        raise ConfigError(
            f"vocab_size {options.vocab_size} is smaller than the {len(required)} required characters plus "
            f"{reserved} special/byte pieces; raise vocab_size to at least {reserved + len(required)} or lower character_coverage."
        )
    # 3. Seed vocabulary.
    reporter.update("seeding", 0, force=True)
    seed = seed_pieces(
        word_counts, required, seed_size=options.seed_size, max_piece_length=options.max_piece_length,
        split_by_unicode_script=options.split_by_unicode_script, split_by_number=options.split_by_number,
    )
    pieces = [p for p, _ in seed]
    unk = len(pieces)  # the id of "unknown character" in the lattices
    sid_of = {p: s for s, p in enumerate(pieces)}
    total = sum(s for _, s in seed)
    logp = [math.log(s) - math.log(total) for _, s in seed] + [0.0]
    required_ids = [sid_of[c] for c in required] + [unk]
    alive = [True] * (unk + 1)
    stats: dict[str, object] = {"seed_size": len(pieces), "required_chars": len(required), "rounds": []}
    # 4. EM rounds with pruning, the lattices in worker processes.
    lattices = ShardedLattice(word_counts, sid_of, options.max_piece_length, unk)
    try:
        _em_rounds(lattices, pieces, sid_of, logp, alive, required_ids, options, reporter, stats)
    finally:
        lattices.close()
    # 5. Finalize: required characters (missing ones just below the lowest score), then the best.
    final: dict[str, float] = {}
    live_scores = [logp[s] for s in range(unk) if alive[s]]
    floor = min(live_scores)
    penalty = 0.0
    for char in required:  # by descending frequency
        sid = sid_of[char]
        if alive[sid] and logp[sid] > -math.inf:
            final[char] = logp[sid]
        else:
            final[char] = floor + penalty
            penalty += 0.0001
    room = options.vocab_size - reserved
    ranked = sorted(((logp[s], pieces[s]) for s in range(unk) if alive[s]), key=lambda t: (-t[0], t[1]))
    for score, piece in ranked:
        if len(final) >= room:
            break
        final.setdefault(piece, score)
    ordered = sorted(final.items(), key=lambda kv: (-kv[1], kv[0]))
    vocab: list[tuple[str, float]] = [(t, 0.0) for t in options.special_tokens]
    if options.byte_fallback:
        vocab.extend((b, 0.0) for b in BYTE_PIECES)
    vocab.extend((p, round(s, 6)) for p, s in ordered)
    specials = {t: i for i, t in enumerate(options.special_tokens)}
    model = Unigram(vocab, unk_id=0, byte_fallback=options.byte_fallback, special_tokens=specials)
    return model, stats



def _em_rounds(
    lattices: ShardedLattice, pieces: list[str], sid_of: dict[str, int], logp: list[float], alive: list[bool],
    required_ids: list[int], options: UnigramOptions, reporter: Reporter, stats: dict[str, object],
) -> None:
    """Stage 4: EM and pruning until the vocabulary is small enough; updates ``logp`` and ``alive``."""
    unk = len(pieces)
    desired = int(options.vocab_size * 1.1)
    for round_no in range(1000):
        for sub in range(options.n_sub_iterations):
            reporter.update("EM", round_no, force=True)
            logp[unk] = min(v for s, v in enumerate(logp[:unk]) if alive[s]) - 10.0
            prob = [math.exp(v) if alive[s] else 0.0 for s, v in enumerate(logp)]
            expected, loglik = e_step(lattices, prob, sid_of, options.max_piece_length, unk)
            logp[:] = m_step(expected, alive, required_ids)
            if sub < options.n_sub_iterations - 1:  # the M-step drops pieces too (most of the seed's)
                _filter(lattices, alive, options.n_sub_iterations - 1 - sub, desired, options)
        stats["rounds"].append([sum(alive) - 1, round(loglik, 3)])  # type: ignore[attr-defined]
        # Prune after every round, the last one too, then stop once small enough (sentencepiece
        # 0.2's order); pieces are weighed by their counts in the Viterbi paths, as there.
        logp[unk] = min(v for s, v in enumerate(logp[:unk]) if alive[s]) - 10.0
        freq = lattices.viterbi_counts([v if alive[s] else -math.inf for s, v in enumerate(logp)])
        prune(
            pieces, freq, logp, alive, set(required_ids), target=desired,
            shrinking_factor=options.shrinking_factor, max_len=options.max_piece_length, unk_sid=unk,
        )
        if sum(alive) - 1 <= desired:
            return
        _filter(lattices, alive, options.n_sub_iterations, desired, options)


def _filter(lattices: ShardedLattice, alive: list[bool], left_this_round: int, desired: int, options: UnigramOptions) -> None:
    """Drop dead pieces' edges when that pays: a filter costs about one E-step, and saves the
    dead share of each E-step still to come (this round's, then ``n_sub_iterations`` a round)."""
    size, rounds = sum(alive) - 1, 0
    while size > desired:
        size = max(desired, int(size * options.shrinking_factor))
        rounds += 1
    lattices.filter(alive, min_share=1.0 / (left_this_round + rounds * options.n_sub_iterations))


def build_tokenizer(model: Unigram, options: UnigramOptions) -> Tokenizer:
    """Wrap a trained model in the sentencepiece-style pipeline."""
    return Tokenizer(
        model,
        normalizer=get_normalizer(options.normalization),
        pre_tokenizer=Metaspace(SPACE, add_dummy_prefix=options.add_dummy_prefix, split_by_whitespace=options.split_by_whitespace),
        special_tokens={t: i for i, t in enumerate(options.special_tokens)},
        decoder=MetaspaceDecoder(SPACE, add_dummy_prefix=options.add_dummy_prefix),
        name="unigram",
    )


def train(files: Sequence[Path], options: UnigramOptions, *, reporter: Reporter) -> TrainResult:
    """Train a Unigram tokenizer on ``files``."""
    # 1. Count distinct words.
    normalizer = get_normalizer(options.normalization)
    counts = count_words(files, normalizer, options, reporter)
    model, stats = train_on_counts(counts, options, reporter)
    return TrainResult(build_tokenizer(model, options), stats)
