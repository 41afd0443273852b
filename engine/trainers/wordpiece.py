"""Train a WordPiece tokenizer (BERT's model) from word counts.

Training is bottom-up merging, as Google's WordPiece and Hugging Face's trainer do it: every word
starts as characters, the first bare and the others with the continuing prefix (``h ##u ##g``),
and the best adjacent pair is merged until the vocabulary is full. Two scores are offered:

- ``score="likelihood"`` (default): count(ab) / (count(a) · count(b)), the gain in unigram
  log-likelihood, log P(ab) − log P(a) − log P(b). Merging changes count(a) and count(b), so
  every pair that contains a or b is re-scored, not only the pairs next to the merge.
- ``score="frequency"``: count(ab), which is what Hugging Face's ``WordPieceTrainer`` does (it
  runs its BPE trainer with the ``##`` prefix).

**Tie-break rule** (both scores): among equal scores the lexicographically greatest pair
``(left, right)`` of token strings wins, comparing code points. Scores are compared as floats.
Pairs seen fewer than ``min_frequency`` times are never merged. The vocabulary is ordered
specials, then the alphabet's characters by code point, then their ``##`` forms by code point,
then merges in the order they were made. ``limit_alphabet`` keeps the most frequent characters
(ties: lower code point first); a word with any other character is left out of training,
since WordPiece encodes it as ``[UNK]`` anyway.

The merge loop is ``trainers/wordpiece_merge.py``. Left out: counting words
(``trainers/counting.py``), the encoder (``models/wordpiece.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from engine.errors import ConfigError
from engine.trainers.base import Reporter, TrainResult
from engine.trainers.limits import MAX_VOCAB, check_at_most, check_special_count
from engine.trainers.wordpiece_merge import learn

if TYPE_CHECKING:
    from engine.tokenizer import Tokenizer

BERT_SPECIALS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
NORMALIZER_CHOICES = ("none", "nfc", "nfkc", "nfd", "nfkd")


@dataclass(frozen=True)
class WordPieceOptions:
    """Options of the WordPiece trainer (CLI flags and the web form are generated from these)."""

    vocab_size: int = field(default=30000, metadata={"help": "Vocabulary size, special tokens and alphabet included."})
    score: str = field(
        default="likelihood",
        metadata={
            "help": "Merge score: likelihood = count(ab)/(count(a)*count(b)); frequency = count(ab) as in Hugging Face.",
            "choices": ("likelihood", "frequency"),
        },
    )
    min_frequency: int = field(default=2, metadata={"help": "Pairs seen fewer times than this are never merged."})
    limit_alphabet: int | None = field(
        default=None, metadata={"help": "Keep only this many most frequent characters (empty: keep all)."}
    )
    special_tokens: tuple[str, ...] = field(
        default=BERT_SPECIALS, metadata={"help": "Special tokens, given the first ids in this order."}
    )
    unk_token: str = field(default="[UNK]", metadata={"help": "Token for words that cannot be matched; must be a special token."})
    continuing_subword_prefix: str = field(default="##", metadata={"help": "Prefix marking pieces that continue a word."})
    max_input_chars_per_word: int = field(default=100, metadata={"help": "Longer words encode as the unknown token."})
    lowercase: bool = field(default=True, metadata={"help": "Lowercase text before training and encoding."})
    strip_accents: bool = field(default=True, metadata={"help": "Decompose (NFD) and drop combining accents."})
    normalizer: str = field(
        default="none",
        metadata={"help": "Unicode normal form applied first.", "choices": NORMALIZER_CHOICES},
    )
    template: str = field(default="", metadata={"help": "Post-processing template, e.g. '[CLS] $A [SEP]' (empty: none)."})

    def __post_init__(self) -> None:
        if self.score not in ("likelihood", "frequency"):
            raise ConfigError(f"Unknown WordPiece score {self.score!r}; use score='likelihood' or score='frequency'.")
        if self.normalizer not in NORMALIZER_CHOICES:
            raise ConfigError(
                f"Unknown normalizer {self.normalizer!r}; choose one of: {', '.join(NORMALIZER_CHOICES)}."
            )
        if self.min_frequency < 0:
            raise ConfigError(f"min_frequency must be 0 or more, not {self.min_frequency}.")
        if self.limit_alphabet is not None and self.limit_alphabet < 1:
            raise ConfigError(f"limit_alphabet must be at least 1 (or empty for no limit), not {self.limit_alphabet}.")
        if self.max_input_chars_per_word < 1:
            raise ConfigError(f"max_input_chars_per_word must be at least 1, not {self.max_input_chars_per_word}.")
        if not self.continuing_subword_prefix:
            raise ConfigError("continuing_subword_prefix must not be empty; WordPiece needs it (e.g. '##').")
        check_special_count(self.special_tokens)
        if len(set(self.special_tokens)) != len(self.special_tokens) or "" in self.special_tokens:
            raise ConfigError(f"special_tokens must be distinct and non-empty: {list(self.special_tokens)}.")
        check_at_most("vocab_size", self.vocab_size, MAX_VOCAB)
        if self.unk_token not in self.special_tokens:
            raise ConfigError(
                f"The unknown token {self.unk_token!r} is not among special_tokens {list(self.special_tokens)}; add it."
            )
        floor = len(self.special_tokens) + (self.limit_alphabet or 1)
        if self.vocab_size < floor:
            raise ConfigError(
                f"vocab_size {self.vocab_size} is smaller than the {len(self.special_tokens)} special tokens plus the "
                f"alphabet; use vocab_size of at least {floor}."
            )
        for part in self.template.split():
            if part != "$A" and part not in self.special_tokens:
                raise ConfigError(f"The template token {part!r} is not a special token; add it to special_tokens.")
        if self.template and self.template.split().count("$A") != 1:
            raise ConfigError(f"The template {self.template!r} must contain $A exactly once, e.g. '[CLS] $A [SEP]'.")

    def normalizer_names(self) -> list[str]:
        """The pipeline normalizer steps these options ask for, in BERT's order."""
        steps = [] if self.normalizer == "none" else [self.normalizer]
        return steps + (["strip_accents"] if self.strip_accents else []) + (["lowercase"] if self.lowercase else [])


OPTIONS = WordPieceOptions
__all__ = ["OPTIONS", "WordPieceOptions", "build_tokenizer", "learn", "train"]


def build_tokenizer(vocab: Sequence[str], options: WordPieceOptions) -> Tokenizer:
    """Assemble the BERT pipeline around a WordPiece vocabulary (ids are positions in ``vocab``)."""
    from engine.decoders import WordPieceDecoder
    from engine.models.wordpiece import WordPiece
    from engine.normalizers import get_normalizer
    from engine.post_processors import TemplateProcessing
    from engine.pretokenizers import BertPreTokenizer
    from engine.tokenizer import Tokenizer

    ids = {token: index for index, token in enumerate(vocab)}
    model = WordPiece(
        ids,
        unk_token=options.unk_token,
        continuing_subword_prefix=options.continuing_subword_prefix,
        max_input_chars_per_word=options.max_input_chars_per_word,
    )
    specials = {token: ids[token] for token in options.special_tokens}
    return Tokenizer(
        model,
        normalizer=get_normalizer(options.normalizer_names()),
        pre_tokenizer=BertPreTokenizer(),
        special_tokens=specials,
        post_processor=TemplateProcessing(options.template, specials) if options.template else None,
        decoder=WordPieceDecoder(options.continuing_subword_prefix),
        name="wordpiece",
    )


def train(files: Sequence[Path], options: WordPieceOptions, *, reporter: Reporter) -> TrainResult:
    """Count the words of ``files`` and learn a WordPiece vocabulary from them."""
    from engine.normalizers import get_normalizer
    from engine.trainers.corpus import DOCUMENT_SEPARATOR
    from engine.trainers.counting import count_pretokens

    # 1. Count BERT's pre-tokens on all cores; the document separator is never text.
    counts = count_pretokens(
        files,
        special_tokens=(*options.special_tokens, DOCUMENT_SEPARATOR),
        split="bert",
        normalizer=get_normalizer(options.normalizer_names()),
        reporter=reporter,
    )
    # 2. Learn the vocabulary, then 3. assemble the BERT pipeline around it.
    vocab, merges, curve = learn(counts, options, reporter)
    stats = {"merges": [list(m) for m in merges], "curve": curve, "words": len(counts)}
    return TrainResult(build_tokenizer(vocab, options), stats)
