"""Train sentencepiece-style BPE (Llama 2, Mistral): ``tokenforge train --model bpe --level spm``.

What sentencepiece's BPE trainer (``bpe_model_trainer.cc``) does, on our shared machinery:

1. Lines are sentences. sentencepiece's normalization with the identity rule: a dummy ``▁``
   before each line, every space as ``▁`` (extra spaces kept, as Llama 2 keeps them). Words
   start at each ``▁`` (``split_by_whitespace``); they are counted on every core by
   ``counting.count_pretokens`` (:func:`unmarked_words`), without their ``▁``, which the steps
   after read before each word (``prefix``). Each counting process also cuts its own words into
   segments (step 3) and counts their characters (``bpe_spm_parts.py``).
2. The alphabet is characters, not bytes: the most frequent ones covering
   ``character_coverage`` of the text (``unigram.seed.covering``). A rarer character
   is spelled as ``<0xNN>`` byte pieces at encode time (``byte_fallback``), else ``<unk>``.
3. Merges never make a piece sentencepiece would refuse (``IsValidSentencePiece``): ``▁`` only
   first, no two Unicode scripts (letters and punctuation differ: "a." is no piece), no digit
   beside anything (``split_digits``), no rare character, at most 16 characters. Each of these
   forbids a pair of neighbours, so words are cut there into *segments* first
   (``unigram/segments.py``, in every counting process: ``bpe_spm_parts.py``) and the merge loop
   never sees a forbidden pair.
4. Merges are learned by frequency over the distinct segments (``bpe_merge.merge_words``).
5. The pieces: ``<unk>``, ``<s>``, ``</s>`` (ids 0, 1, 2), the 256 ``<0xNN>`` pieces, the merged
   pieces scored ``-rank`` (0, -1, -2, ...), then the alphabet by descending frequency, its
   scores continuing downwards, as sentencepiece writes them. The model is
   :class:`engine.models.spm_bpe.SpmBPE`, which merges by those scores at encode time.

**Tie-break rule**: the merge loop's (``bpe_merge``): the pair with the highest count wins;
among equal counts, the greatest pair compared as UTF-8 bytes ``(left, right)``. (sentencepiece
itself prefers the shorter, then the smaller piece; only the order of equal counts differs.)
Two merges can spell the same piece ("aa"+"a", "a"+"aa"): the piece keeps its first rank and
the later one adds nothing, as in sentencepiece, which skips it (here it is still merged in
the training text). Training stops at ``vocab_size`` or when no pair is left.

Left out: sentencepiece's other normalization rules (nmt_nfkc), user-defined symbols,
``treat_whitespace_as_suffix``, sentence sampling, the limit on sentence length.

Internal: not part of the engine's API (``engine.PUBLIC_MODULES``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from engine.errors import ConfigError
from engine.formats.spm_model import SpmDecoder
from engine.models.spm_bpe import BYTE_PIECES, SpmBPE
from engine.spm_normalizer import SPACE, SpmNormalizer
from engine.tokenizer import Tokenizer
from engine.trainers.base import Reporter, TrainResult
from engine.trainers.bpe import compression_curve
from engine.trainers.bpe_merge import merge_words
from engine.trainers.bpe_spm_options import LEVEL_HELP, SPECIAL_TOKENS, SpmBpeOptions, options_from
from engine.trainers.bpe_spm_parts import SpmCounts, SpmSegmenting
from engine.trainers.counting import count_pretokens
from engine.trainers.packed import PackedStrings

MAX_PIECE_CHARS = 16  # sentencepiece's max_sentencepiece_length
__all__ = ["LEVEL_HELP", "SpmBpeOptions", "build_tokenizer", "learn", "options_from", "spelled", "train",
           "unmarked_words"]


# ----------------------------------------------------------------------- training
def unmarked_words(text: str) -> list[str]:
    """sentencepiece's words of a chunk of lines, each *without* its leading ``▁`` (a picklable
    splitter for ``count_pretokens``; the later steps read the ``▁`` before each distinct word).

    Each line gets the dummy ``▁`` and its spaces become ``▁``; a word is a ``▁`` and what follows
    up to the next one, so "a  b" gives "▁a", "▁", "▁b": here "a", "", "b", the line split at its
    spaces (and at a ``▁`` in the text, which is one). Only "\n" ends a line (a "\r" is a
    character, as sentencepiece reads lines), and empty lines are skipped. Counted without the
    mark, most words are strings of one byte a character, which hash faster (en_5M: 0.30 s of CPU
    with the marking against 0.38 s for marked words). A chunk that starts with a space was cut
    before it inside a line (``corpus``'s safe cut): no dummy ``▁``, so the empty word before that
    space is dropped. (A file that starts with a space is read the same way: one "▁" fewer than
    sentencepiece counts.)
    """
    mid_line = text.startswith(" ")
    while "\n\n" in text:  # empty lines; a few passes of a C replace beat one regex pass
        text = text.replace("\n\n", "\n")
    text = text.strip("\n")
    if not text:
        return []
    if SPACE in text:
        text = text.replace(SPACE, " ")
    words = text.replace("\n", " ").split(" ")
    return words[1:] if mid_line else words


def spelled(segs: PackedStrings, alphabet: Sequence[str]) -> PackedStrings:
    """Each segment with symbol ``i`` for its character ``alphabet[i]``, as ``merge_words`` reads
    packed words: one numpy lookup from code point to index over all segments at once
    (``str.translate`` looks up a dict per character: zh_5M, 0.15 s for 0.9M characters). Every
    character of a segment is in the alphabet (the segments are cut at any other: ``bpe_spm_parts``)."""
    if not len(segs):
        return segs
    alphabet_points = np.fromiter(map(ord, alphabet), dtype=np.uint32, count=len(alphabet))
    index = np.full(max(int(segs.codes.max()), int(alphabet_points.max(initial=0))) + 1, len(alphabet),
                    dtype=np.uint32)
    index[alphabet_points] = np.arange(len(alphabet), dtype=np.uint32)
    return PackedStrings(index[segs.codes], segs.lengths)


def learn(counts: SpmCounts, options: SpmBpeOptions, reporter: Reporter | None = None
          ) -> tuple[list[tuple[str, float]], list[tuple[int, int, int, int]], int]:
    """``(pieces, merge_stats, alphabet_size)`` from the counted corpus (``bpe_spm_parts``): every
    piece with its score, in id order, and ``merge_stats[r] = (left_id, right_id, count,
    removed)`` of each merge kept (see ``merge_words``)."""
    reporter = reporter or Reporter()
    # 1. The alphabet, by descending count (ties: code point), as sentencepiece orders it.
    alphabet = list(counts.alphabet)
    pieces: list[tuple[str, float]] = [(t, 0.0) for t in SPECIAL_TOKENS]
    if options.byte_fallback:
        pieces += [(b, 0.0) for b in BYTE_PIECES]
    room = options.vocab_size - len(pieces) - len(alphabet)
    if room < 0:
        raise ConfigError(
            f"vocab_size={options.vocab_size} cannot hold the {len(alphabet)} characters that cover "
            f"{options.character_coverage:g} of the text beside {len(pieces)} special and byte pieces; pass a "
            f"vocab_size of at least {len(pieces) + len(alphabet)} or a lower character_coverage.",
            option="vocab_size", value=options.vocab_size, least=len(pieces) + len(alphabet))
    # 2. Segments spelled one symbol per character (symbol i is alphabet[i]), packed.
    symbols = spelled(counts.segments, alphabet)
    # 3. The merge loop; a few merges more than room, for the pieces that come twice.
    want = room + room // 50 + 8 if room else 0

    def tick(done: int) -> None:
        reporter.update("merge", min(done, room), room)

    merges, token_bytes = merge_words(
        symbols, counts.segment_counts, want, alphabet=[c.encode("utf-8") for c in alphabet],
        lengths=[1] * len(alphabet), max_token_length=MAX_PIECE_CHARS, min_frequency=1, tick=tick)
    # 4. Final ids: merged pieces by rank (a repeated string keeps its first), then the alphabet.
    ids = {p: i for i, (p, _) in enumerate(pieces)}
    base = len(pieces)
    final = [-1] * len(token_bytes)
    stats: list[tuple[int, int, int, int]] = []
    strings = [token.decode("utf-8") for token in token_bytes]
    for r, (a, b, count, removed) in enumerate(merges):
        if len(pieces) - base >= room:
            break
        t = len(alphabet) + r
        if strings[t] not in ids:
            ids[strings[t]] = len(pieces)
            pieces.append((strings[t], -float(len(pieces) - base)))
            stats.append((a, b, count, removed))
        final[t] = ids[strings[t]]
    for i, char in enumerate(alphabet):
        if char not in ids:  # a character never spells a special or byte piece; kept safe anyway
            ids[char] = len(pieces)
            pieces.append((char, -float(len(pieces) - base)))
        final[i] = ids[char]
    stats = [(final[a], final[b], count, removed) for a, b, count, removed in stats]
    reporter.update("merge", room, room, force=True)
    return pieces, stats, len(alphabet)


def build_tokenizer(pieces: list[tuple[str, float]], options: SpmBpeOptions) -> Tokenizer:
    """The Llama 2 pipeline around the pieces: identity normalization with the dummy ``▁`` and
    escaped spaces, no pre-tokenizer, :class:`SpmBPE`, and sentencepiece's decoding."""
    first_normal = len(SPECIAL_TOKENS) + (256 if options.byte_fallback else 0)
    model = SpmBPE(pieces, unk_id=0, byte_fallback=options.byte_fallback,
                   mergeable=range(first_normal, len(pieces)))
    normalizer = SpmNormalizer(b"", add_dummy_prefix=True, remove_extra_whitespaces=False,
                               escape_whitespaces=True, name="identity")
    decoder = SpmDecoder(SPECIAL_TOKENS[1:], SPECIAL_TOKENS[0], " \u2047 ", strip_first=True, strip_all=False,
                         byte_fallback=options.byte_fallback)
    return Tokenizer(model, normalizer=normalizer, pre_tokenizer=None,
                     special_tokens={t: i for i, t in enumerate(SPECIAL_TOKENS)}, decoder=decoder, name="spm-bpe")


def train(files: list[Path], options: SpmBpeOptions, *, reporter: Reporter) -> TrainResult:
    """Train sentencepiece-style BPE on ``files``; ``train("bpe", ..., {"level": "spm"})`` calls this."""
    # 1. Count the ▁-prefixed words of every line on all cores (no special tokens: sentencepiece
    #    reads "<s>" as text too).
    #    Each counting process cuts its words into segments and counts their characters.
    counts: SpmCounts = count_pretokens(files, split=unmarked_words, num_workers=options.num_workers,
                                        reporter=reporter, safe_cuts=True,
                                        summary=SpmSegmenting(options.character_coverage, options.split_digits))
    if not counts.alphabet:
        raise ConfigError("The corpus has no text to train on.")
    # 2. Alphabet, merges and pieces.
    pieces, merge_stats, n_chars = learn(counts, options, reporter)
    # 3. The tokenizer and the statistics the playground shows.
    base_vocab = len(pieces) - len(merge_stats)
    stats: dict[str, Any] = {
        "merges": [[left, right, count] for left, right, count, _ in merge_stats],
        "curve": compression_curve(*counts.size, merge_stats, base_vocab),
        "distinct_segments": len(counts.segments),
        "required_chars": n_chars,
        "stopped_early": len(pieces) < options.vocab_size,
    }
    return TrainResult(tokenizer=build_tokenizer(pieces, options), stats=stats)
