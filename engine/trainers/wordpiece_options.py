"""The options of the WordPiece trainer, one frozen dataclass (CLI flags and the web form come from it).

Kept apart from ``trainers/wordpiece.py`` (which assembles the tokenizer) so that the merge loop in
``trainers/wordpiece_merge.py`` can read its options without importing the module that imports it.

Internal: not part of the engine's API (``engine.PUBLIC_MODULES``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from engine.errors import ConfigError, ConfigProblems
from engine.trainers.limits import MAX_VOCAB, check_at_most, check_special_count, check_workers

BERT_SPECIALS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
NORMALIZER_CHOICES = ("none", "nfc", "nfkc", "nfd", "nfkd")


@dataclass(frozen=True)
class WordPieceOptions:
    """Options of the WordPiece trainer (CLI flags and the web form are generated from these)."""

    vocab_size: int = field(default=30000, metadata={"help": "Vocabulary size, special tokens and alphabet included."})
    score: str = field(
        default="frequency",
        metadata={
            "help": "Merge score. frequency = count(ab), as Hugging Face trains BERT's WordPiece: the choice for a "
            "vocabulary to use. likelihood = count(ab)/(count(a)*count(b)), the WordPiece paper's score, is for "
            "studying it: it merges rare pairs first and never compressed as well (on English, 1.7x the tokens "
            "at min_frequency 2, 1.08x at 20).",
            "choices": ("frequency", "likelihood"),
        },
    )
    min_frequency: int = field(default=2, metadata={"help": "Pairs seen fewer times than this are never merged."})
    limit_alphabet: int | None = field(
        default=None, metadata={"help": "Keep only this many most frequent characters (empty: keep all)."}
    )
    special_tokens: tuple[str, ...] = field(
        default=BERT_SPECIALS, metadata={"help": "Special tokens, given the first ids in this order."}
    )
    unk_token: str = field(
        default="[UNK]", metadata={"help": "Token for words that cannot be matched; must be a special token."}
    )
    continuing_subword_prefix: str = field(
        default="##", metadata={"help": "Prefix marking pieces that continue a word."}
    )
    max_input_chars_per_word: int = field(default=100, metadata={"help": "Longer words encode as the unknown token."})
    lowercase: bool = field(default=True, metadata={"help": "Lowercase text before training and encoding."})
    strip_accents: bool = field(default=True, metadata={"help": "Decompose (NFD) and drop combining accents."})
    normalizer: str = field(
        default="none",
        metadata={"help": "Unicode normal form applied first.", "choices": NORMALIZER_CHOICES},
    )
    template: str = field(
        default="", metadata={"help": "Post-processing template, e.g. '[CLS] $A [SEP]' (empty: none)."}
    )
    num_workers: int | None = field(
        default=None, metadata={"help": "Processes that count the words, at most one per CPU (empty: one per CPU)."}
    )

    def __post_init__(self) -> None:
        problems = ConfigProblems()  # every bad option at once, each naming its field
        if self.score not in ("likelihood", "frequency"):
            problems.add(ConfigError(
                f"Unknown WordPiece score {self.score!r}; use score='frequency' or score='likelihood'.",
                option="score"))
        if self.normalizer not in NORMALIZER_CHOICES:
            problems.add(ConfigError(
                f"Unknown normalizer {self.normalizer!r}; choose one of: {', '.join(NORMALIZER_CHOICES)}.",
                option="normalizer"))
        if self.min_frequency < 0:
            problems.add(ConfigError(f"min_frequency must be 0 or more, not {self.min_frequency}.",
                                     option="min_frequency"))
        if self.limit_alphabet is not None and self.limit_alphabet < 1:
            problems.add(ConfigError(
                f"limit_alphabet must be at least 1 (or empty for no limit), not {self.limit_alphabet}.",
                option="limit_alphabet"))
        if self.max_input_chars_per_word < 1:
            problems.add(ConfigError(
                f"max_input_chars_per_word must be at least 1, not {self.max_input_chars_per_word}.",
                option="max_input_chars_per_word"))
        if not self.continuing_subword_prefix:
            problems.add(ConfigError("continuing_subword_prefix must not be empty; WordPiece needs it (e.g. '##').",
                                     option="continuing_subword_prefix"))
        problems.run(check_special_count, self.special_tokens)
        problems.run(check_workers, self.num_workers)
        if len(set(self.special_tokens)) != len(self.special_tokens) or "" in self.special_tokens:
            problems.add(ConfigError(f"special_tokens must be distinct and non-empty: {list(self.special_tokens)}.",
                                     option="special_tokens"))
        problems.run(check_at_most, "vocab_size", self.vocab_size, MAX_VOCAB)
        if self.unk_token not in self.special_tokens:
            problems.add(ConfigError(
                f"The unknown token {self.unk_token!r} is not among special_tokens {list(self.special_tokens)}; "
                f"add it.",
                option="unk_token"))
        floor = len(self.special_tokens) + (self.limit_alphabet or 1)
        if self.vocab_size < floor:  # a rule across fields; the vocabulary is the one to change
            problems.add(ConfigError(
                f"vocab_size {self.vocab_size} is smaller than the {len(self.special_tokens)} special tokens plus the "
                f"alphabet; use vocab_size of at least {floor}.", option="vocab_size"))
        for part in self.template.split():
            if part != "$A" and part not in self.special_tokens:
                problems.add(ConfigError(
                    f"The template token {part!r} is not a special token; add it to special_tokens.",
                    option="template"))
                break
        if self.template and self.template.split().count("$A") != 1:
            problems.add(ConfigError(
                f"The template {self.template!r} must contain $A exactly once, e.g. '[CLS] $A [SEP]'.",
                option="template"))
        problems.raise_if_any()

    def normalizer_names(self) -> list[str]:
        """The pipeline normalizer steps these options ask for, in BERT's order."""
        steps = [] if self.normalizer == "none" else [self.normalizer]
        return steps + (["strip_accents"] if self.strip_accents else []) + (["lowercase"] if self.lowercase else [])


OPTIONS = WordPieceOptions
