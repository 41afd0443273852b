"""Train the baseline tokenizers: word-level, character-level and byte-level.

- word-level: the ``vocab_size`` most frequent words (BERT's split: whitespace, then each
  punctuation character alone) seen at least ``min_frequency`` times. **Tie-break rule**: equal
  counts are ordered by the word's code points, smallest first.
- character-level: every character seen at least ``min_frequency`` times, or the ``vocab_size``
  most frequent; same tie-break. Text is split into single characters, so decoding is lossless
  when no character is unknown.
- byte-level: the 256 bytes; there is nothing to learn, the corpus is not read.

Vocabularies are ordered specials first, then by count. Maximum matching (FMM/BMM) needs a word
list rather than a corpus: :func:`maxmatch_tokenizer` builds one from words or from any
tokenizer's vocabulary. The models are in ``models/baselines.py``.

Internal: not part of the engine's API (``engine.PUBLIC_MODULES``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from engine.errors import ConfigError, ConfigProblems
from engine.trainers.base import Reporter, TrainResult
from engine.trainers.limits import MAX_VOCAB, check_at_most, check_special_count
from engine.trainers.tally import CHAR_PATTERN
from engine.trainers.wordpiece_options import BERT_SPECIALS, NORMALIZER_CHOICES

if TYPE_CHECKING:
    from engine.tokenizer import Tokenizer


def _check_common(vocab_size: int | None, min_frequency: int, specials: tuple[str, ...], unk: str,
                  normalizer: str) -> None:
    problems = ConfigProblems()  # every bad option at once, each naming its field
    if normalizer not in NORMALIZER_CHOICES:
        problems.add(ConfigError(f"Unknown normalizer {normalizer!r}; choose one of: {', '.join(NORMALIZER_CHOICES)}.",
                                 option="normalizer"))
    if min_frequency < 1:
        problems.add(ConfigError(f"min_frequency must be at least 1, not {min_frequency}.", option="min_frequency"))
    problems.run(_check_specials, specials)
    if vocab_size is not None:
        problems.run(check_at_most, "vocab_size", vocab_size, MAX_VOCAB)
    if unk not in specials:
        problems.add(ConfigError(f"The unknown token {unk!r} is not among special_tokens {list(specials)}; add it.",
                                 option="unk_token"))
    if vocab_size is not None and vocab_size <= len(specials):  # across fields: the vocabulary is the one to change
        problems.add(ConfigError(
            f"vocab_size {vocab_size} leaves no room after the {len(specials)} special tokens; "
            f"use vocab_size of at least {len(specials) + 1}.", option="vocab_size"))
    problems.raise_if_any()


def _check_specials(specials: tuple[str, ...]) -> None:
    check_special_count(specials)
    if len(set(specials)) != len(specials) or "" in specials:
        raise ConfigError(f"special_tokens must be distinct and non-empty: {list(specials)}.", option="special_tokens")


@dataclass(frozen=True)
class WordLevelOptions:
    """Options of the word-level baseline."""

    vocab_size: int = field(default=30000, metadata={"help": "Vocabulary size, special tokens included."})
    min_frequency: int = field(default=1, metadata={"help": "Words seen fewer times are left out (they become [UNK])."})
    special_tokens: tuple[str, ...] = field(
        default=BERT_SPECIALS, metadata={"help": "Special tokens, given the first ids."}
    )
    unk_token: str = field(default="[UNK]", metadata={"help": "Token for unknown words; must be a special token."})
    lowercase: bool = field(default=False, metadata={"help": "Lowercase text before training and encoding."})
    normalizer: str = field(default="none", metadata={"help": "Unicode normal form.", "choices": NORMALIZER_CHOICES})

    def __post_init__(self) -> None:
        _check_common(self.vocab_size, self.min_frequency, self.special_tokens, self.unk_token, self.normalizer)


@dataclass(frozen=True)
class CharOptions:
    """Options of the character-level baseline."""

    vocab_size: int | None = field(default=None, metadata={"help": "Keep the most frequent characters (empty: all)."})
    min_frequency: int = field(default=1, metadata={"help": "Characters seen fewer times become [UNK]."})
    special_tokens: tuple[str, ...] = field(
        default=("[UNK]",), metadata={"help": "Special tokens, given the first ids."}
    )
    unk_token: str = field(default="[UNK]", metadata={"help": "Token for unknown characters; must be a special token."})
    lowercase: bool = field(default=False, metadata={"help": "Lowercase text before training and encoding."})
    normalizer: str = field(default="none", metadata={"help": "Unicode normal form.", "choices": NORMALIZER_CHOICES})

    def __post_init__(self) -> None:
        _check_common(self.vocab_size, self.min_frequency, self.special_tokens, self.unk_token, self.normalizer)


@dataclass(frozen=True)
class ByteOptions:
    """Options of the byte-level baseline (ids 0..255 are the bytes; specials follow)."""

    special_tokens: tuple[str, ...] = field(default=(), metadata={"help": "Special tokens, given ids from 256 on."})

    def __post_init__(self) -> None:
        _check_specials(self.special_tokens)


OPTIONS = {"wordlevel": WordLevelOptions, "char": CharOptions, "byte": ByteOptions}


def _normalizer_names(options: WordLevelOptions | CharOptions) -> list[str]:
    return ([] if options.normalizer == "none" else [options.normalizer]) + (["lowercase"] if options.lowercase else [])


def _vocabulary(counts: Mapping[str, int], specials: Sequence[str], size: int | None,
                min_frequency: int) -> dict[str, int]:
    vocab = {token: index for index, token in enumerate(specials)}
    ranked = sorted((item for item in counts.items() if item[1] >= min_frequency), key=lambda kv: (-kv[1], kv[0]))
    for token, _ in ranked:
        if size is not None and len(vocab) >= size:
            break
        vocab.setdefault(token, len(vocab))
    return vocab


def train(files: Sequence[Path], options: WordLevelOptions | CharOptions | ByteOptions, *,
          reporter: Reporter) -> TrainResult:
    """Build the baseline that ``options`` belongs to (word, char or byte) from ``files``."""
    from engine.decoders import ByteLevelDecoder, ConcatDecoder, WordPieceDecoder
    from engine.models.baselines import ByteLevel, CharLevel, WordLevel
    from engine.normalizers import get_normalizer
    from engine.pretokenizers import BertPreTokenizer, RegexSplit
    from engine.tokenizer import Tokenizer
    from engine.trainers.corpus import DOCUMENT_SEPARATOR
    from engine.trainers.counting import count_pretokens

    if isinstance(options, ByteOptions):
        specials = {token: 256 + index for index, token in enumerate(options.special_tokens)}
        tokenizer = Tokenizer(ByteLevel(), special_tokens=specials, decoder=ByteLevelDecoder(), name="byte")
        return TrainResult(tokenizer, {})
    names = _normalizer_names(options)
    # Words are BERT's pre-tokens, characters are the char split's; the document separator is never text.
    split = "bert" if isinstance(options, WordLevelOptions) else CHAR_PATTERN
    counts = count_pretokens(
        files, special_tokens=(*options.special_tokens, DOCUMENT_SEPARATOR), split=split,
        normalizer=get_normalizer(names), reporter=reporter,
    )
    if isinstance(options, WordLevelOptions):
        vocab = _vocabulary(counts, options.special_tokens, options.vocab_size, options.min_frequency)
        model: WordLevel = WordLevel(vocab, unk_token=options.unk_token)
        # HF joins word-level tokens with spaces; WordPiece's decoder without cleanup does the same.
        pre, decoder, name = BertPreTokenizer(), WordPieceDecoder(cleanup=False), "wordlevel"
    else:
        vocab = _vocabulary(counts, options.special_tokens, options.vocab_size, options.min_frequency)
        model = CharLevel(vocab, unk_token=options.unk_token)
        pre, decoder, name = RegexSplit(CHAR_PATTERN, name="char"), ConcatDecoder(), "char"
    specials = {token: vocab[token] for token in options.special_tokens}
    tokenizer = Tokenizer(
        model, normalizer=get_normalizer(names), pre_tokenizer=pre, special_tokens=specials, decoder=decoder, name=name
    )
    return TrainResult(tokenizer, {"distinct": len(counts)})


def maxmatch_tokenizer(
    words: Iterable[str], *, direction: str = "forward", unk_token: str = "[UNK]", name: str = ""
) -> Tokenizer:
    """Forward (FMM) or backward (BMM) maximum matching over ``words``; the text is one piece."""
    from engine.decoders import ConcatDecoder
    from engine.models.baselines import MaxMatch
    from engine.tokenizer import Tokenizer

    vocab = {unk_token: 0}
    for word in sorted(set(words)):
        if word:
            vocab.setdefault(word, len(vocab))
    model = MaxMatch(vocab, direction=direction, unk_token=unk_token)
    return Tokenizer(model, special_tokens={unk_token: 0}, decoder=ConcatDecoder(),
                     name=name or f"maxmatch-{direction}")


def vocabulary_words(tokenizer: Tokenizer) -> list[str]:
    """The text of every non-special token of ``tokenizer`` (``##ing`` gives ``ing``), for FMM/BMM."""
    words = set()
    for token_id in tokenizer.model.vocab().values():
        if tokenizer.is_special(token_id):
            continue
        text = tokenizer.decode([token_id], errors="replace").strip()
        if text and "\ufffd" not in text:
            words.add(text)
    return sorted(words)
