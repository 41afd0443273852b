"""Train a BPE tokenizer from corpus files: byte-level (GPT-2 / GPT-4 style) or classic character-level.

The stages: count pre-tokens (``trainers/counting.py``, on all cores), learn merges over the
distinct pre-tokens (``trainers/bpe_merge.py``), then number the vocabulary and assemble the
tokenizer (``engine.presets.byte_level_bpe``, or :class:`engine.models.bpe_char.CharBPE`).

**Tie-break rule**: each step merges the pair with the highest count; among equal counts the
lexicographically greatest pair compared as bytes ``(left, right)`` wins (at char level: the
UTF-8 of the symbols, i.e. code-point order). Training stops when the vocabulary reaches
``vocab_size`` or the best count falls below ``min_frequency``.

``level="char"`` is the textbook algorithm (Sennrich et al.): words split on whitespace by
default, each starting as its characters with ``</w>`` on the last one (``bpe_char.py``). Its
vocabulary: special tokens, then the unknown token (unless it is one of them), then the
alphabet in code-point order, then the merges; a string already in the vocabulary keeps its id
(two merges can spell the same token), so the vocabulary can end a little smaller. A character
never seen in training, or dropped because the alphabet did not fit, encodes as the unknown
token, a run of them as one.

The vocabulary: special tokens get ids ``0..k-1`` in the order given, the 256 single bytes get
``k..k+255`` in GPT-2's byte order (the printable bytes ``!``..``~``, ``¡``..``¬``, ``®``..``ÿ``
first, then the others, which is the code-point order of their GPT-2 symbols and the order of
GPT-2's ``vocab.json``), and merge ``r`` creates id ``k + 256 + r``. Special tokens are cut out
of the text before pre-tokenization, so they never take part in a merge, and no merge crosses a
pre-token or document boundary.

The options and their checks are ``bpe_options.py``. Left out: encoding (``models/bpe.py``,
``models/bpe_char.py``), file formats, and checking the files (the registry in
``trainers/__init__.py`` checks they exist).

Internal: not part of the engine's API (``engine.PUBLIC_MODULES``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from engine.byte_unicode import BYTE_TO_UNICODE
from engine.decoders import BPESuffixDecoder
from engine.models.bpe_char import CharBPE
from engine.presets import byte_level_bpe
from engine.pretokenizers import get_pretokenizer
from engine.tokenizer import Tokenizer
from engine.trainers.base import Reporter, TrainResult
from engine.trainers.bpe_char import char_alphabet, char_words
from engine.trainers.bpe_merge import merge_words
from engine.trainers.bpe_options import BpeOptions
from engine.trainers.byte_table import ByteTable
from engine.trainers.counting import count_pretokens
from engine.trainers.packed import CountedWords, PackedStrings

# Byte values in GPT-2's vocabulary order (ordered by the code point of their symbol).
GPT2_BYTE_ORDER: tuple[int, ...] = tuple(sorted(range(256), key=lambda b: ord(BYTE_TO_UNICODE[b])))
CURVE_POINTS = 256


def _merge(words: Sequence[str] | PackedStrings, freqs: Sequence[int] | np.ndarray, num_merges: int,
           options: BpeOptions, reporter: Reporter, **alphabet: Any
           ) -> tuple[list[tuple[int, int, int, int]], list[bytes]]:
    """Run the merge loop, reporting progress (and so polling cancel) as it goes."""

    def tick(done: int) -> None:
        reporter.update("merge", done, num_merges)

    merges, token_bytes = merge_words(
        words, freqs, num_merges,
        min_frequency=options.min_frequency, max_token_length=options.max_token_length, tick=tick, **alphabet,
    )
    reporter.update("merge", len(merges), num_merges, force=True)
    return merges, token_bytes


def learn(
    word_counts: Mapping[str, int] | ByteTable, options: BpeOptions, *, reporter: Reporter | None = None
) -> tuple[dict[int, bytes], list[tuple[bytes, bytes]], list[tuple[int, int, int, int]]]:
    """Learn byte-level merges from pre-token counts (a dict, or packed as the counting workers
    send them): ``(vocab, merges, merge_stats)`` in final ids.

    ``vocab`` maps every id (special tokens included, as their UTF-8) to its bytes;
    ``merge_stats[r] = (left_id, right_id, count, removed)`` is merge ``r`` with its count when
    made and the number of tokens it removed from the corpus (see ``merge_words``).
    """
    k = len(options.special_tokens)
    # 1. Distinct pre-tokens as their UTF-8 bytes (token b is byte b) with their counts.
    table = word_counts if isinstance(word_counts, ByteTable) else ByteTable.of(word_counts)
    # 2. The merge loop.
    merges, token_bytes = _merge(table.words, table.counts, options.vocab_size - k - 256, options,
                                 reporter or Reporter())
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


def learn_chars(
    word_counts: dict[str, int], options: BpeOptions, *, reporter: Reporter | None = None
) -> tuple[dict[str, int], list[tuple[str, str]], list[tuple[int, int, int, int]]]:
    """Learn character-level merges: ``(vocab, merges, merge_stats)``, the vocabulary as strings.

    ``vocab`` holds the special tokens, the unknown token, the alphabet and the merged tokens
    (see the module docstring for the order); ``merge_stats`` is as in :func:`learn`.
    """
    suffix = options.end_of_word_suffix
    vocab: dict[str, int] = {token: i for i, token in enumerate(options.special_tokens)}
    vocab.setdefault(options.unk_token, len(vocab))
    # 1. The alphabet that fits beside the specials and the unknown token, and the words over it.
    alphabet = char_alphabet(word_counts, suffix, options.vocab_size - len(vocab))
    words, freqs = char_words(word_counts, alphabet, suffix)
    # 2. The merge loop over symbols; a token's length is its characters, the suffix not counted.
    merges, token_bytes = _merge(
        words, freqs, options.vocab_size - len(vocab) - len(alphabet), options, reporter or Reporter(),
        alphabet=[symbol.encode("utf-8") for symbol in alphabet],
        lengths=[len(symbol.removesuffix(suffix)) for symbol in alphabet],
    )
    # 3. Final ids in creation order; a string already in the vocabulary keeps its id. So two
    #    internal tokens can become one ("a"+"bc" and "ab"+"c"), and a later merge of the same
    #    final pair is dropped: encoding uses a pair's first rank (HF would take its last).
    tokens = [token.decode("utf-8") for token in token_bytes]
    final = [vocab.setdefault(token, len(vocab)) for token in tokens]
    pairs: list[tuple[str, str]] = []
    stats: list[tuple[int, int, int, int]] = []
    seen: set[tuple[int, int]] = set()
    for a, b, count, removed in merges:
        if (final[a], final[b]) not in seen:
            seen.add((final[a], final[b]))
            pairs.append((tokens[a], tokens[b]))
            stats.append((final[a], final[b], count, removed))
    return vocab, pairs, stats


def corpus_size(words: CountedWords) -> tuple[int, int]:
    """The UTF-8 bytes and the characters of the text the words spell, each word read with its
    prefix before it: the two ends of the compression curve. In numpy, from the code points
    (encoding the words one by one took ~0.1 s for 400,000 words)."""
    codes, lengths, counts = words.packed.codes, words.packed.lengths, words.counts
    width = 1 + (codes >= 0x80).astype(np.int64) + (codes >= 0x800) + (codes >= 0x10000)  # UTF-8 bytes each
    before = np.concatenate(([0], np.cumsum(width)))
    ends = np.cumsum(lengths)
    return int(counts @ (before[ends] - before[ends - lengths])), int(counts @ lengths)


def compression_curve(total_bytes: int, start_tokens: int, merge_stats: list[tuple[int, int, int, int]],
                      base_vocab: int) -> list[list[float]]:
    """``[vocab_size, bytes_per_token]`` points over training (at most ~256), exact and free.

    The corpus of ``total_bytes`` starts as ``start_tokens`` tokens and each merge removes a
    known number of tokens (its count, except for overlapping pairs), so the token count is a
    running subtraction.
    """
    if not total_bytes:
        return []
    step = max(1, len(merge_stats) // CURVE_POINTS)
    tokens = start_tokens
    curve = [[base_vocab, round(total_bytes / tokens, 4)]]
    for rank, (_, _, _, removed) in enumerate(merge_stats, start=1):
        tokens -= removed
        if rank % step == 0 or rank == len(merge_stats):
            curve.append([base_vocab + rank, round(total_bytes / tokens, 4)])
    return curve


def train(files: list[Path], options: BpeOptions, *, reporter: Reporter) -> TrainResult:
    """Train BPE on ``files``; the registry's ``train("bpe", ...)`` calls this."""
    # 1. Count pre-tokens (special tokens cut out first) on all cores; byte-level BPE wants their
    #    bytes, which the workers send packed.
    counts = count_pretokens(
        files,
        special_tokens=options.special_tokens,
        split=options.split,
        num_workers=options.num_workers,
        reporter=reporter,
        packed=options.level == "byte",
    )
    # 2. Learn the merges and assemble the tokenizer; the corpus's size in bytes, and in the tokens
    #    it starts as: one per byte at the byte level, one per character at the character level.
    specials = {token: i for i, token in enumerate(options.special_tokens)}
    tokenizer: Tokenizer
    if isinstance(counts, ByteTable):
        vocab, merges, merge_stats = learn(counts, options, reporter=reporter)
        tokenizer = byte_level_bpe(vocab, merges, pretokenizer=options.split, special_tokens=specials)
        base_vocab = len(specials) + 256
        total_bytes = start_tokens = counts.total_bytes()
    else:
        strings, char_merges, merge_stats = learn_chars(counts, options, reporter=reporter)
        model = CharBPE(strings, char_merges, unk_token=options.unk_token,
                        end_of_word_suffix=options.end_of_word_suffix)
        tokenizer = Tokenizer(model, pre_tokenizer=get_pretokenizer(options.split), special_tokens=specials,
                              decoder=BPESuffixDecoder(options.end_of_word_suffix))
        base_vocab = len(strings) - len(model.origins)
        total_bytes, start_tokens = corpus_size(CountedWords.of(counts))
    # 3. The statistics the playground shows.
    stats: dict[str, Any] = {
        "merges": [[left, right, count] for left, right, count, _ in merge_stats],
        "curve": compression_curve(total_bytes, start_tokens, merge_stats, base_vocab),
        "distinct_pretokens": len(counts),
        "stopped_early": len(merge_stats) < options.vocab_size - base_vocab,
    }
    return TrainResult(tokenizer=tokenizer, stats=stats)
