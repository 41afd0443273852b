"""Train a byte-level BPE tokenizer (GPT-2 / GPT-4 style) from corpus files.

The stages: count pre-tokens (``trainers/counting.py``, on all cores), learn merges over the
distinct pre-tokens (``trainers/bpe_merge.py``), then number the vocabulary and assemble the
tokenizer with ``engine.presets.byte_level_bpe``.

**Tie-break rule**: each step merges the pair with the highest count; among equal counts the
lexicographically greatest pair compared as bytes ``(left, right)`` wins. Training stops when
the vocabulary reaches ``vocab_size`` or the best count falls below ``min_frequency``.

The vocabulary: special tokens get ids ``0..k-1`` in the order given, the 256 single bytes get
``k..k+255`` in GPT-2's byte order (the printable bytes ``!``..``~``, ``¡``..``¬``, ``®``..``ÿ``
first, then the others, which is the code-point order of their GPT-2 symbols and the order of
GPT-2's ``vocab.json``), and merge ``r`` creates id ``k + 256 + r``. Special tokens are cut out
of the text before pre-tokenization, so they never take part in a merge, and no merge crosses a
pre-token or document boundary.

Left out: encoding (``models/bpe.py``), file formats, and options validation beyond the values
themselves (the registry in ``trainers/__init__.py`` checks files exist).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.byte_unicode import BYTE_TO_UNICODE
from engine.errors import ConfigError
from engine.pretokenizers import get_pretokenizer
from engine.trainers.base import Reporter, TrainResult
from engine.trainers.bpe_merge import merge_words, words_from_counts
from engine.trainers.counting import count_pretokens
from engine.limits import shown
from engine.trainers.limits import MAX_VOCAB, check_special_count, check_workers

# Byte values in GPT-2's vocabulary order (ordered by the code point of their symbol).
GPT2_BYTE_ORDER: tuple[int, ...] = tuple(sorted(range(256), key=lambda b: ord(BYTE_TO_UNICODE[b])))
CURVE_POINTS = 256


@dataclass(frozen=True)
class BpeOptions:
    """Options of the byte-level BPE trainer (CLI flags and the web form are generated from these)."""

    vocab_size: int = field(
        default=32000, metadata={"help": "Vocabulary size: special tokens + 256 bytes + merges."}
    )
    special_tokens: tuple[str, ...] = field(
        default=("<|endoftext|>",),
        metadata={"help": "Special tokens, one per line; they get ids 0, 1, ... and are never merged."},
    )
    min_frequency: int = field(
        default=2, metadata={"help": "Stop when the most frequent pair occurs fewer times than this."}
    )
    pretokenizer: str = field(
        default="gpt2",
        metadata={"help": "How text is cut before merging: gpt2, gpt4, o200k, whitespace, or a regex."},
    )
    max_token_length: int | None = field(
        default=None, metadata={"help": "Never create a token longer than this many bytes (empty: no limit)."}
    )
    num_workers: int | None = field(
        default=None, metadata={"help": "Processes that count pre-tokens, at most one per CPU (empty: one per CPU)."}
    )

    def __post_init__(self) -> None:
        check_special_count(self.special_tokens)
        floor = len(self.special_tokens) + 256
        if not floor <= self.vocab_size <= MAX_VOCAB:
            raise ConfigError(
                f"vocab_size={shown(self.vocab_size)} must be between {floor} (the {len(self.special_tokens)} "
                f"special tokens + 256 bytes) and {MAX_VOCAB:,}; pass a vocab_size in that range."
            )
        if len(set(self.special_tokens)) != len(self.special_tokens) or "" in self.special_tokens:
            raise ConfigError(f"The special tokens {list(self.special_tokens)!r} must be distinct and non-empty.")
        if self.min_frequency < 0:
            raise ConfigError(f"min_frequency={self.min_frequency} must be 0 or more.")
        if self.max_token_length is not None and self.max_token_length < 1:
            raise ConfigError(f"max_token_length={self.max_token_length} must be 1 or more (or empty).")
        check_workers(self.num_workers)
        get_pretokenizer(self.pretokenizer)  # raises ConfigError naming a bad regex


OPTIONS = BpeOptions


def learn(
    word_counts: dict[str, int], options: BpeOptions, *, reporter: Reporter | None = None
) -> tuple[dict[int, bytes], list[tuple[bytes, bytes]], list[tuple[int, int, int, int]]]:
    """Learn merges from pre-token counts: ``(vocab, merges, merge_stats)`` in final ids.

    ``vocab`` maps every id (special tokens included, as their UTF-8) to its bytes;
    ``merge_stats[r] = (left_id, right_id, count, removed)`` is merge ``r`` with its count when
    made and the number of tokens it removed from the corpus (see ``merge_words``).
    """
    reporter = reporter or Reporter()
    k = len(options.special_tokens)
    num_merges = options.vocab_size - k - 256

    # 1. Distinct pre-tokens as token strings (one character per byte) with their counts.
    words, freqs = words_from_counts(word_counts.items())

    # 2. The merge loop, reporting progress (and so polling cancel) as it goes.
    def tick(done: int) -> None:
        reporter.update("merge", done, num_merges)

    merges, token_bytes = merge_words(
        words, freqs, num_merges,
        min_frequency=options.min_frequency, max_token_length=options.max_token_length, tick=tick,
    )
    reporter.update("merge", len(merges), num_merges, force=True)

    # 3. Final ids: specials, bytes in GPT-2 order, then merges in rank order.
    final = [0] * len(token_bytes)
    for position, byte in enumerate(GPT2_BYTE_ORDER):
        final[byte] = k + position
    for rank in range(len(merges)):
        final[256 + rank] = k + 256 + rank
    vocab: dict[int, bytes] = {i: token.encode("utf-8") for i, token in enumerate(options.special_tokens)}
    for internal, token in enumerate(token_bytes):
        vocab[final[internal]] = token
    vocab = dict(sorted(vocab.items()))
    pairs = [(token_bytes[a], token_bytes[b]) for a, b, _, _ in merges]
    stats = [(final[a], final[b], count, removed) for a, b, count, removed in merges]
    return vocab, pairs, stats


def compression_curve(
    word_counts: dict[str, int], merge_stats: list[tuple[int, int, int, int]], base_vocab: int
) -> list[list[float]]:
    """``[vocab_size, bytes_per_token]`` points over training (at most ~256), exact and free.

    The corpus starts as one token per byte and each merge removes a known number of tokens
    (its count, except for overlapping pairs), so the token count is a running subtraction.
    """
    total_bytes = sum(len(w.encode("utf-8")) * n for w, n in word_counts.items())
    if not total_bytes:
        return []
    step = max(1, len(merge_stats) // CURVE_POINTS)
    tokens = total_bytes
    curve = [[base_vocab, 1.0]]
    for rank, (_, _, _, removed) in enumerate(merge_stats, start=1):
        tokens -= removed
        if rank % step == 0 or rank == len(merge_stats):
            curve.append([base_vocab + rank, round(total_bytes / tokens, 4)])
    return curve


def train(files: list[Path], options: BpeOptions, *, reporter: Reporter) -> TrainResult:
    """Train byte-level BPE on ``files``; the registry's ``train("bpe", ...)`` calls this."""
    # 1. Count pre-tokens (special tokens cut out first) on all cores.
    counts = count_pretokens(
        files,
        special_tokens=options.special_tokens,
        split=options.pretokenizer,
        num_workers=options.num_workers,
        reporter=reporter,
    )
    # 2. Learn the merges.
    vocab, merges, merge_stats = learn(counts, options, reporter=reporter)
    # 3. Assemble the tokenizer and the statistics the playground shows.
    from engine.presets import byte_level_bpe  # the tokenizer pipeline is only needed here

    specials = {token: i for i, token in enumerate(options.special_tokens)}
    tokenizer = byte_level_bpe(vocab, merges, pretokenizer=options.pretokenizer, special_tokens=specials)
    stats: dict[str, Any] = {
        "merges": [[left, right, count] for left, right, count, _ in merge_stats],
        "curve": compression_curve(counts, merge_stats, len(specials) + 256),
        "distinct_pretokens": len(counts),
        "stopped_early": len(merges) < options.vocab_size - len(specials) - 256,
    }
    return TrainResult(tokenizer=tokenizer, stats=stats)
