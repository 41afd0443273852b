"""What every extension shares: its options, its result, and the checks made before any work.

Split from ``bpe.py`` (byte-level bases) so that ``char_bpe.py`` (character-level bases) needs
only this module, and ``bpe.extend_bpe`` can hand a character-level base over without an import
circle.

Internal: not part of the engine's API (``engine.PUBLIC_MODULES``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from engine.errors import ConfigError
from engine.limits import MAX_VOCAB_SIZE, shown
from engine.models.bpe import BPE
from engine.models.bpe_byte_symbols import ByteSymbolBPE
from engine.models.bpe_char import CharBPE
from engine.models.spm_bpe import SpmBPE
from engine.models.unigram import Unigram
from engine.models.wordpiece import WordPiece
from engine.tokenizer import Tokenizer
from engine.trainers.limits import check_workers

SUPPORTED = ("byte-level BPE (GPT-2, GPT-4 / cl100k, Llama 3 style), character-level BPE (Llama 2, Mistral, "
             "Gemma style tokenizer.json or sentencepiece .model), Unigram (tokenizer.json or sentencepiece .model) "
             "and WordPiece (BERT style)")


@dataclass(frozen=True)
class ExtendOptions:
    """Options of an extension (the CLI's flags)."""

    add: int = field(default=1000, metadata={"help": "How many new tokens to learn."})
    protected: bool = field(
        default=True,
        metadata={"help": "Only learn merges inside characters the base falls back on, so text without them "
                          "keeps its exact ids."},
    )
    min_frequency: int = field(default=2, metadata={"help": "Stop when the best pair occurs fewer times than this."})
    num_workers: int | None = field(
        default=None, metadata={"help": "Processes that count the corpus (empty: one per CPU)."}
    )
    character_coverage: float = field(
        default=0.9995,
        metadata={"help": "Character-level bases: add the characters the base lacks, most frequent first, until "
                          "they cover this fraction of their occurrences in the corpus (sentencepiece's "
                          "character_coverage)."},
    )

    def __post_init__(self) -> None:
        if isinstance(self.add, bool) or not isinstance(self.add, int) or self.add < 1:
            raise ConfigError(f"add={shown(self.add)} must be a whole number of new tokens, 1 or more.", option="add")
        if self.min_frequency < 1:
            raise ConfigError(f"min_frequency={self.min_frequency} must be 1 or more.", option="min_frequency")
        check_workers(self.num_workers)
        coverage = self.character_coverage
        if isinstance(coverage, bool) or not isinstance(coverage, (int, float)) or not 0 < coverage <= 1:
            raise ConfigError(f"character_coverage={shown(coverage)} must be a fraction above 0 and at most 1 "
                              "(for example 0.9995).", option="character_coverage")


@dataclass
class Extension:
    """An extended tokenizer and what the extension did (``report.py`` adds the measurements)."""

    tokenizer: Tokenizer
    base_vocab_size: int
    added: list[tuple[int, bytes]]  # (new id, its bytes) in id order
    merges: list[tuple[int, int, int, int]]  # (left id, right id, merged id, count) after the base's ranks
    duplicates_skipped: int  # candidate pairs refused because the base already has their token
    protected: bool
    pretokens_counted: int  # distinct pre-tokens the merges were learned from
    symbols_added: tuple[int, ...] = ()  # new single-character pieces, each checked to be reached as a symbol
    # Unigram and WordPiece: the added ids that encoding the piece's own text does not give whole
    # (None for BPE, where the merges say it).
    unreached: tuple[int, ...] | None = None
    slots_filled: int = 0  # WordPiece: new tokens that took an [unused…] slot's id instead of a new id

    @property
    def unreachable(self) -> int:
        """Added tokens the encoder can never produce: for BPE those no merge makes (an appended piece
        with no split into two tokens) and that are not a character reached as a symbol; for Unigram
        and WordPiece those whose own text does not encode to them."""
        if self.unreached is not None:
            return len(self.unreached)
        made = {merged for _, _, merged, _ in self.merges} | set(self.symbols_added)
        return sum(token_id not in made for token_id, _ in self.added)


def check_extendable(base: Tokenizer) -> BPE | CharBPE | SpmBPE | Unigram | WordPiece:
    """The base's model when engine/extend can extend it; ConfigError naming what is supported otherwise."""
    model = base.model
    if isinstance(model, ByteSymbolBPE):  # CLIP's: new merges would have to be learnt over byte symbols
        raise ConfigError("Extending a byte-level BPE with word affixes (CLIP's </w>) is not supported yet; "
                          f"extend supports {SUPPORTED} bases.", option="tokenizer")
    if not isinstance(model, (BPE, CharBPE, SpmBPE, Unigram, WordPiece)):
        level = getattr(model, "level", "")
        kind = f"{level}-level {model.kind}" if model.kind == "bpe" and level else model.kind
        raise ConfigError(f"Extending a {kind} tokenizer is not supported yet; extend supports {SUPPORTED} bases.",
                          option="tokenizer")
    return model


def check_add(base: Tokenizer, add: int) -> None:
    """Refuse ``add`` past the engine's vocabulary limit (``engine.limits.MAX_VOCAB_SIZE``)."""
    room = MAX_VOCAB_SIZE - base.vocab_size
    if add > room:
        raise ConfigError(
            f"add={add:,} would take the vocabulary past the engine's limit of {MAX_VOCAB_SIZE:,} tokens "
            f"(the base has {base.vocab_size:,}); ask for at most {max(room, 0):,} new tokens.",
            option="add", value=add, least=1, most=room)


def nothing_new(options: ExtendOptions, why: str) -> str:
    fix = ("; turn protection off (--unprotected) to learn merges of text the base already handles"
           if options.protected else "; give a larger corpus, or a lower min_frequency")
    return f"The corpus has nothing new to learn for this tokenizer: {why}{fix}."
