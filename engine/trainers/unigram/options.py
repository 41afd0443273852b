"""The Unigram trainer's options: one frozen dataclass, sentencepiece's names and defaults.

One deliberate difference: ``byte_fallback`` is on by default (as in Llama- and Gemma-style
sentencepiece models), so a tokenizer trained with the defaults encodes every text, newlines
and characters rarer than ``character_coverage`` included, without ``<unk>``.

Internal: not part of the engine's API (``engine.PUBLIC_MODULES``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from engine.errors import ConfigError, ConfigProblems
from engine.trainers.limits import (
    MAX_PIECE_LENGTH,
    MAX_SEED_SIZE,
    MAX_SHRINKING_FACTOR,
    MAX_SUB_ITERATIONS,
    MAX_VOCAB,
    check_at_most,
    check_special_count,
    check_workers,
)


@dataclass(frozen=True)
class UnigramOptions:
    vocab_size: int = field(default=8000, metadata={"help": "Final vocabulary size, special and byte pieces included."})
    character_coverage: float = field(
        default=0.9995,
        metadata={"help": "Share of characters the vocabulary must cover; rarer ones are spelled as bytes "
                          "(<unk> without byte_fallback)."},
    )
    seed_size: int = field(
        default=1_000_000, metadata={"help": "Number of seed pieces (most frequent substrings) EM starts from."}
    )
    max_piece_length: int = field(default=16, metadata={"help": "Longest piece, in characters."})
    shrinking_factor: float = field(default=0.75, metadata={"help": "Share of pieces kept by each pruning round."})
    n_sub_iterations: int = field(default=2, metadata={"help": "EM iterations between two pruning rounds."})
    normalization: str = field(
        default="identity",
        metadata={"help": "Text normalization before training and encoding.", "choices": ("identity", "nfkc", "nfc")},
    )
    add_dummy_prefix: bool = field(
        default=True, metadata={"help": "Put a ▁ in front of each line, so the first word looks like the others."}
    )
    split_by_whitespace: bool = field(
        default=True,
        metadata={"help": "Pieces never cross a space (each word is trained on its own). Off: pieces may span words "
                          "(\"▁of▁the\"), as with sentencepiece's split_by_whitespace=false."},
    )
    split_by_unicode_script: bool = field(
        default=True, metadata={"help": "Pieces never mix Unicode scripts (Latin with Han, letters with punctuation)."}
    )
    split_by_number: bool = field(
        default=True,
        metadata={"help": "Decimal digits keep their script (Common): \"1.\" is a piece, \"F1\" is not. "
                          "Off: digits join any script."},
    )
    byte_fallback: bool = field(
        default=True,
        metadata={"help": "Add <0x00>…<0xFF> and spell unknown characters (newlines too) as their UTF-8 bytes, "
                          "so every text encodes without <unk>."},
    )
    special_tokens: tuple[str, ...] = field(
        default=("<unk>", "<s>", "</s>"),
        metadata={"help": "Special tokens, one per line; the first is the unknown token."},
    )
    num_workers: int | None = field(
        default=None,
        metadata={"help": "Processes that count the corpus and run EM, at most one per CPU (empty: one per CPU); "
                          "the result is the same for any number."},
    )

    def __post_init__(self) -> None:
        problems = ConfigProblems()  # every bad option at once, each naming its field
        if not 0 < self.character_coverage <= 1:
            problems.add(ConfigError(f"character_coverage must be in (0, 1], not {self.character_coverage}; "
                                     "0.9995 suits most languages.", option="character_coverage"))
        if not 0 < self.shrinking_factor <= MAX_SHRINKING_FACTOR:
            problems.add(ConfigError(
                f"shrinking_factor must be above 0 and at most {MAX_SHRINKING_FACTOR:g}, not {self.shrinking_factor} "
                "(closer to 1, pruning takes ever more rounds); 0.75 is sentencepiece's default.",
                option="shrinking_factor"))
        if self.max_piece_length < 1:
            problems.add(ConfigError(f"max_piece_length must be at least 1, not {self.max_piece_length}.",
                                     option="max_piece_length"))
        problems.run(check_at_most, "max_piece_length", self.max_piece_length, MAX_PIECE_LENGTH,
                     fix=f"pass max_piece_length of at most {MAX_PIECE_LENGTH} (16 is sentencepiece's default)")
        if self.n_sub_iterations < 1:
            problems.add(ConfigError(f"n_sub_iterations must be at least 1, not {self.n_sub_iterations}.",
                                     option="n_sub_iterations"))
        problems.run(check_at_most, "n_sub_iterations", self.n_sub_iterations, MAX_SUB_ITERATIONS,
                     fix=f"pass n_sub_iterations of at most {MAX_SUB_ITERATIONS} (2 is sentencepiece's default)")
        problems.run(check_at_most, "vocab_size", self.vocab_size, MAX_VOCAB)
        problems.run(check_at_most, "seed_size", self.seed_size, MAX_SEED_SIZE,
                     fix=f"pass seed_size of at most {MAX_SEED_SIZE:,} (1,000,000 is sentencepiece's default)")
        problems.run(check_special_count, self.special_tokens)
        problems.run(check_workers, self.num_workers)
        if not self.special_tokens:
            problems.add(ConfigError("special_tokens needs at least the unknown token, e.g. special_tokens=('<unk>',).",
                                     option="special_tokens"))
        if len(set(self.special_tokens)) != len(self.special_tokens):
            problems.add(ConfigError(f"special_tokens lists a token twice: {list(self.special_tokens)!r}.",
                                     option="special_tokens"))
        # Rules across fields: each belongs to the field to change.
        reserved = len(self.special_tokens) + (256 if self.byte_fallback else 0)
        if self.vocab_size <= reserved:
            fix = f"raise vocab_size above {reserved}" + (" or pass byte_fallback=False" if self.byte_fallback else "")
            problems.add(ConfigError(f"vocab_size {self.vocab_size} leaves no room for pieces after {reserved} special "
                                     f"and byte pieces; {fix}.", option="vocab_size"))
        if self.seed_size < self.vocab_size <= MAX_VOCAB:
            problems.add(ConfigError(f"seed_size {self.seed_size} is smaller than vocab_size {self.vocab_size}; "
                                     "raise seed_size.", option="seed_size"))
        problems.raise_if_any()


OPTIONS = UnigramOptions
