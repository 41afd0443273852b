"""Extend a byte-level BPE tokenizer (GPT-2, cl100k, Llama 3 style): continue its merges on a new corpus.

The stages: count the corpus's pre-tokens with the base's own normalizer and pre-tokenizer
(``trainers/counting.py``, as training does, special and added tokens cut out); in protected
mode keep only the pre-tokens that hold a character the base falls back on (``protect.py``);
segment each with the base's merges; then run the trainer's merge loop
(``trainers/bpe_merge.merge_words``) from that segmentation, the alphabet being the base tokens
that occur in it. Each merge becomes a new token: ids start at the base's ``vocab_size`` (after
its special and added tokens), ranks after the base's last rank, and every base id, merge and
option stays exactly as it was, so a model's embedding rows stay valid.

**Tie-break rule** (the trainer's): the most frequent pair first; among equal counts the
lexicographically greatest pair compared as bytes ``(left, right)``. Learning stops after
``add`` new tokens or when the best count falls below ``min_frequency``.

No merge may spell a token the base already has (such pairs are never merged, and counted as
``duplicates_skipped``); a merge that spells a token an earlier *new* merge made keeps that
token's id (two merges, one token, no new row). Every added token is made by its merge from two
tokens that exist, so none is unreachable.

A character-level base (Llama 2, Mistral, Gemma style tokenizer.json) goes to ``char_bpe.py``, a
sentencepiece BPE ``.model`` to ``spm_bpe.py``, Unigram to ``unigram.py``, WordPiece to
``wordpiece.py``. Left out: the report (``report.py``).

Internal: not part of the engine's API (``engine.PUBLIC_MODULES``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from engine.ascii_split import fastest_split
from engine.errors import ConfigError
from engine.extend.char_bpe import extend_char_bpe
from engine.extend.options import ExtendOptions, Extension, check_add, check_extendable, nothing_new
from engine.extend.protect import covered_chars, falls_back, protected_pairs, unprotected_pairs
from engine.extend.spm_bpe import extend_spm_bpe
from engine.extend.symbols import internal_alphabet
from engine.extend.unigram import extend_unigram
from engine.extend.wordpiece import extend_wordpiece
from engine.limits import MAX_TOKEN_LENGTH
from engine.models.bpe import BPE, MergeIds, ModelSnapshot
from engine.models.bpe_char import CharBPE
from engine.models.spm_bpe import SpmBPE
from engine.models.unigram import Unigram
from engine.models.wordpiece import WordPiece
from engine.tokenizer import Tokenizer
from engine.trainers.base import Reporter
from engine.trainers.bpe_merge import merge_words
from engine.trainers.counting import count_pretokens


def _whole(text: str) -> list[str]:
    """The pre-tokenizer of a base that has none: the text is one piece."""
    return [text] if text else []


def extend_bpe(base: Tokenizer, files: Sequence[str | Path], options: ExtendOptions, *,
               reporter: Reporter | None = None) -> Extension:
    """Learn ``options.add`` new tokens for ``base`` from ``files`` (see the module docstring); a
    character-level base goes to :func:`engine.extend.char_bpe.extend_char_bpe`, a sentencepiece BPE
    ``.model`` to :func:`engine.extend.spm_bpe.extend_spm_bpe`, a Unigram base to
    :func:`engine.extend.unigram.extend_unigram`, a WordPiece base to
    :func:`engine.extend.wordpiece.extend_wordpiece`."""
    model = check_extendable(base)
    if isinstance(model, CharBPE):
        return extend_char_bpe(base, files, options, reporter=reporter)
    if isinstance(model, SpmBPE):
        return extend_spm_bpe(base, files, options, reporter=reporter)
    if isinstance(model, Unigram):
        return extend_unigram(base, files, options, reporter=reporter)
    if isinstance(model, WordPiece):
        return extend_wordpiece(base, files, options, reporter=reporter)
    check_add(base, options.add)
    reporter = reporter or Reporter()
    # 1. Count pre-tokens as the base would cut them; its special and added tokens are never counted.
    split: Callable[[str], list[str]] = fastest_split(base.pre_tokenizer) if base.pre_tokenizer else _whole
    counts = count_pretokens(files, special_tokens=[*base.special_tokens, *base.added_tokens], split=split,
                             normalizer=base.normalizer, num_workers=options.num_workers, reporter=reporter)
    # 2. Protected: only pre-tokens with a character the base falls back on.
    if options.protected:
        covered = covered_chars(model)
        counts = {piece: n for piece, n in counts.items() if falls_back(piece, covered)}
    if not counts:
        raise ConfigError(nothing_new(options, "it holds no character the base falls back on"))
    # 3. The base's segmentation; its tokens (by id) are the merge loop's alphabet.
    pieces = list(counts)
    segments = model.tokenize_many(pieces)
    alphabet_ids, internal = internal_alphabet(token_id for seg in segments for token_id in seg)
    alphabet = [model.token_bytes(i) if i is not None else b"" for i in alphabet_ids]
    words = ["".join([chr(internal[t]) for t in seg]) for seg in segments]
    # 4. The merge loop, a little past ``add`` in case some merges spell a token made before.
    refused = [0]
    allowed = protected_pairs(model, alphabet) if options.protected else unprotected_pairs(model)

    def counted(left: int, right: int, merged: bytes) -> bool:
        if model.id_for_bytes(merged) is not None:
            refused[0] += 1
            return False
        return allowed(left, right, merged)

    def tick(done: int) -> None:
        reporter.update("merge", done, options.add)

    merges, token_bytes = merge_words(
        words, [counts[p] for p in pieces], options.add + options.add // 20 + 16, alphabet=alphabet,
        min_frequency=options.min_frequency, max_token_length=MAX_TOKEN_LENGTH, tick=tick, allowed=counted)
    if not merges:
        raise ConfigError(nothing_new(options, f"no pair of tokens that may merge occurs {options.min_frequency} "
                                                "times or more"))
    # 5. Final ids: base tokens keep theirs; each merge's token is new unless an earlier merge spelt it.
    final: list[int] = [i if i is not None else -1 for i in alphabet_ids]
    new_ids: dict[bytes, int] = {}
    added: list[tuple[int, bytes]] = []
    learned: list[tuple[int, int, int, int]] = []
    next_id = base.vocab_size
    for rank, (a, b, count, _) in enumerate(merges):
        data = token_bytes[len(alphabet) + rank]
        if data not in new_ids:
            if len(added) == options.add:
                break
            new_ids[data] = next_id
            added.append((next_id, data))
            next_id += 1
        final.append(new_ids[data])
        learned.append((final[a], final[b], new_ids[data], count))
    reporter.update("merge", len(added), options.add, force=True)
    extended = _with_merges(base, model, added, learned)
    return Extension(tokenizer=extended, base_vocab_size=base.vocab_size, added=added, merges=learned,
                     duplicates_skipped=refused[0], protected=options.protected, pretokens_counted=len(pieces))


def _with_merges(base: Tokenizer, model: BPE, added: list[tuple[int, bytes]],
                 learned: list[tuple[int, int, int, int]]) -> Tokenizer:
    """``base`` with the new tokens and merges appended; everything else is the base's own."""
    state = model.snapshot()  # ids as they are (a hand-made vocabulary may spell one token twice)
    old = state.merges  # lists or numpy arrays: as plain ints, then the new merges after them
    merges = MergeIds([*map(int, old.lefts), *(a for a, _, _, _ in learned)],
                      [*map(int, old.rights), *(b for _, b, _, _ in learned)],
                      [*map(int, old.merged), *(m for _, _, m, _ in learned)])
    grown = BPE.from_snapshot(ModelSnapshot(state.level, state.options, [*map(int, state.ids), *(i for i, _ in added)],
                                            [*state.spellings, *(data for _, data in added)], merges))
    tokenizer_state = base.__getstate__()
    tokenizer_state["model"] = grown
    extended = Tokenizer.__new__(Tokenizer)
    extended.__setstate__(tokenizer_state)
    return extended
