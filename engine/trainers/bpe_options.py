"""The options of the BPE trainer (byte and char levels), apart from the trainer: building the
CLI's flags or the web form reads them without importing what trains (numpy, the merge loop).

Internal: not part of the engine's API (``engine.PUBLIC_MODULES``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from engine.errors import ConfigError, ConfigProblems
from engine.limits import MAX_TOKEN_LENGTH, shown
from engine.models.bpe_char import END_OF_WORD
from engine.pretokenizers import get_pretokenizer
from engine.trainers.limits import MAX_VOCAB, check_special_count, check_workers

LEVELS = ("byte", "char")
# Levels trained by a module of their own (engine.trainers.LEVELS), named in this trainer's messages.
OTHER_LEVELS = ("spm",)
DEFAULT_SPLIT = {"byte": "gpt2", "char": "whitespace"}
"""The pre-tokenizer of each level when none is given: GPT-2's pattern, or whitespace (textbook BPE)."""


@dataclass(frozen=True)
class BpeOptions:
    """Options of the BPE trainer (CLI flags and the web form are generated from these)."""

    vocab_size: int = field(
        default=32000,
        metadata={"help": "Vocabulary size: special tokens + the alphabet (256 bytes; at char level the "
                          "unknown token and the characters seen) + merges."},
    )
    special_tokens: tuple[str, ...] = field(
        default=("<|endoftext|>",),
        metadata={"help": "Special tokens, one per line; they get ids 0, 1, ... and are never merged."},
    )
    min_frequency: int = field(
        default=2, metadata={"help": "Stop when the most frequent pair occurs fewer times than this."}
    )
    level: str = field(
        default="byte",
        metadata={"help": "byte: GPT-2 style, merges bytes, never an unknown token. char: classic BPE, merges "
                          "characters with an end-of-word suffix; unseen characters become the unknown token.",
                  "choices": LEVELS},
    )
    pretokenizer: str | None = field(
        default=None,
        metadata={"help": "How text is cut before merging: gpt2, gpt4, o200k, whitespace, or a regex "
                          "(empty: gpt2 at byte level, whitespace at char level)."},
    )
    end_of_word_suffix: str = field(
        default=END_OF_WORD, metadata={"help": "Char level: what marks a word's last character."}
    )
    unk_token: str = field(
        default="<unk>", metadata={"help": "Char level: the token for characters not in the vocabulary."}
    )
    max_token_length: int | None = field(
        default=None,
        metadata={"help": "Never create a token longer than this many bytes, or characters at char level "
                          "(empty: no limit)."},
    )
    num_workers: int | None = field(
        default=None, metadata={"help": "Processes that count pre-tokens, at most one per CPU (empty: one per CPU)."}
    )

    def __post_init__(self) -> None:
        if self.pretokenizer == "":
            object.__setattr__(self, "pretokenizer", None)  # an empty form field: the level's default
        problems = ConfigProblems()  # every bad option at once, each naming its field
        problems.run(check_special_count, self.special_tokens)
        if self.level not in LEVELS:
            problems.add(ConfigError(f"level={shown(self.level)} must be one of: {', '.join(LEVELS + OTHER_LEVELS)}.",
                                     option="level"))
        level = self.level if self.level in LEVELS else "byte"  # with a bad level, judge the rest as the default's
        base = 256 if level == "byte" else 1 + (self.unk_token not in self.special_tokens)
        floor = len(self.special_tokens) + base
        if not floor <= self.vocab_size <= MAX_VOCAB:
            what = "256 bytes" if level == "byte" else "the unknown token and one character"
            problems.add(ConfigError(
                f"vocab_size={shown(self.vocab_size)} must be between {floor} (the {len(self.special_tokens)} "
                f"special tokens + {what}) and {MAX_VOCAB:,}; pass a vocab_size in that range.",
                option="vocab_size", value=self.vocab_size, least=floor, most=MAX_VOCAB,
                why=f"the {len(self.special_tokens)} special tokens + {what}",
            ))
        if len(set(self.special_tokens)) != len(self.special_tokens) or "" in self.special_tokens:
            problems.add(ConfigError(
                f"The special tokens {list(self.special_tokens)!r} must be distinct and non-empty.",
                option="special_tokens"))
        for name in ("end_of_word_suffix", "unk_token"):
            value = getattr(self, name)
            if not value or len(value) > MAX_TOKEN_LENGTH:
                problems.add(ConfigError(f"{name}={shown(value)} must be 1 to {MAX_TOKEN_LENGTH} characters long.",
                                         option=name))
        if self.min_frequency < 0:
            problems.add(ConfigError(f"min_frequency={self.min_frequency} must be 0 or more.", option="min_frequency"))
        if self.max_token_length is not None and self.max_token_length < 1:
            problems.add(ConfigError(f"max_token_length={self.max_token_length} must be 1 or more (or empty).",
                                     option="max_token_length"))
        problems.run(check_workers, self.num_workers)
        if self.level in LEVELS:  # the default split depends on a valid level
            problems.run(self._check_pretokenizer)
        problems.raise_if_any()

    def _check_pretokenizer(self) -> None:
        try:
            get_pretokenizer(self.split)
        except ConfigError as exc:  # a bad regex: the message names it; the field is ours to name
            raise ConfigError(str(exc), option="pretokenizer") from None

    @property
    def split(self) -> str:
        """The pre-tokenizer spec in force: the one given, or the level's default."""
        return self.pretokenizer or DEFAULT_SPLIT[self.level]


OPTIONS = BpeOptions
