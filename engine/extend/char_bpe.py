"""Extend a character-level BPE tokenizer (Llama 2, Mistral, Gemma style tokenizer.json).

The stages: count the corpus's words as the base cuts them (``char_coverage.count_words``); add
the characters the base lacks (it spells them with byte pieces or the unknown token) as new
single-character pieces by coverage, ids right after the base's (``char_coverage.select_symbols``);
segment the words with the base plus those characters (each now one symbol, then the base's
merges); then run the trainer's merge loop (``trainers/bpe_merge.merge_words``) from that
segmentation, its alphabet the tokens that occur in it, each UTF-8 string ordering ties. The new
characters count towards ``add`` and take at most half of it; the merges fill the rest. (A new
character saves two or three tokens where it occurs, a merge one, but the characters past the
first few hundred are rare: on Llama 2 and 16 MB of Chinese, 5,000 tokens all but spent on 4,944
characters cut Chinese tokens by 15%, and 2,620 characters with 2,380 merges by 41%.) Ids of
merged tokens follow the new characters', ranks follow the base's last rank, and every base id,
merge and option stays as it was, so a model's embedding rows stay valid.

**Tie-break rule** (the trainer's): the most frequent pair first; among equal counts the greatest
pair compared as UTF-8 bytes ``(left, right)``. Learning stops after ``add`` tokens, when the best
count falls below ``min_frequency``, and never makes a token longer than ``MAX_PIECE_CHARS``
characters (sentencepiece's ``max_sentencepiece_length``).

Never merged: byte pieces and the unknown token (HF's ByteFallback decoder reads only a lone
``<0xNN>``). No merge may spell a token the base has (counted as ``duplicates_skipped``); one that
spells a token an earlier new merge made keeps its id, and a later merge of the same pair of final
ids is dropped (HF would encode with its last rank, we with the first).

**Protected** (the default): a token is *open* when it is new or holds a character of an opened
script (one in which the base lacks most of the corpus's characters: ``char_coverage.opened_scripts``,
Han for Chinese on Llama 2); only words holding an open token are learned from, and a merge is
allowed only when one side is open (a merged token then is too). Why this is exact: new merges
rank after every base merge, so on text whose every character is in the base and of no opened
script, the symbols are the base's, the base's merges run to the end first, and the first new
merge would need two base tokens that are not open, which the rule refused. So **text without a
character the base falls back on, and without a character of an opened script, keeps exactly the
base's ids** (held-out English among it). With ``ignore_merges``, a pre-token that equals a new
token holds a new character too.

Left out: a base with a ``continuing_subword_prefix`` (refused with one sentence), sentencepiece
``.model`` BPE (``check_extendable`` refuses it and points to the tokenizer.json form).

Internal: not part of the engine's API (``engine.PUBLIC_MODULES``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from engine.decoders import byte_piece_value
from engine.errors import ConfigError
from engine.extend.char_coverage import corpus_symbols, count_words, missing_symbols, opened_scripts, select_symbols
from engine.extend.options import ExtendOptions, Extension, check_add, nothing_new
from engine.extend.symbols import internal_alphabet
from engine.models.bpe import MergeIds, ModelSnapshot
from engine.models.bpe_char import CharBPE
from engine.token_scripts import char_script
from engine.tokenizer import Tokenizer
from engine.trainers.base import Reporter
from engine.trainers.bpe_merge import merge_words

MAX_PIECE_CHARS = 16


def extend_char_bpe(base: Tokenizer, files: Sequence[str | Path], options: ExtendOptions, *,
                    reporter: Reporter | None = None) -> Extension:
    """Learn ``options.add`` new tokens for a character-level BPE ``base`` (see the module docstring)."""
    model = base.model
    if not isinstance(model, CharBPE):
        raise TypeError(f"extend_char_bpe needs a character-level BPE, not {type(model).__name__}")
    if model.prefix:
        raise ConfigError(f"Extending a character-level BPE with a continuing_subword_prefix ({model.prefix!r}) "
                          "is not supported; extend supports the Llama 2 / Mistral / Gemma style and classic "
                          "end-of-word-suffix bases.", option="tokenizer")
    check_add(base, options.add)
    reporter = reporter or Reporter()
    # 1. Words as the base cuts them, and the new characters by coverage.
    counts = count_words(base, files, reporter=reporter)
    seen = corpus_symbols(model, counts)
    chosen = select_symbols(missing_symbols(model, seen), model.suffix, options.character_coverage,
                            max(1, options.add // 2))
    first_new = base.vocab_size
    with_chars = _grown(model, [(first_new + i, symbol) for i, symbol in enumerate(chosen)], [])
    # 2. Protected: only words holding an open token (a quick test on characters, then on ids).
    opened = opened_scripts(model, seen) if options.protected else frozenset()
    words = list(counts)
    if options.protected:
        open_chars = {symbol.removesuffix(model.suffix) or symbol for symbol in chosen}
        open_chars |= {char for symbol in seen if char_script(char := symbol.removesuffix(model.suffix) or symbol)
                       in opened}
        words = [w for w in words if not open_chars.isdisjoint(w)]
    segments = [with_chars.tokenize(w) for w in words]

    def is_open(token_id: int) -> bool:
        if token_id >= first_new:
            return True
        surface = (with_chars.id_to_token(token_id) or "").removesuffix(model.suffix)
        return not _frozen(with_chars, token_id) and any(char_script(ch) in opened for ch in surface)

    if options.protected:
        open_ids = {t for t in {t for seg in segments for t in seg} if is_open(t)}
        kept = [i for i, seg in enumerate(segments) if not open_ids.isdisjoint(seg)]
        words, segments = [words[i] for i in kept], [segments[i] for i in kept]
    if not chosen and (options.protected or not words):
        raise ConfigError(nothing_new(options, "it holds no character the base falls back on"))
    # 3. The merge loop's alphabet: the tokens of the segmentation, numbered past the surrogates.
    used = sorted({token_id for seg in segments for token_id in seg})
    alphabet_ids, internal = internal_alphabet(used)
    spelled = [with_chars.id_to_token(i) or "" if i is not None else "" for i in alphabet_ids]
    frozen = {internal[t] for t in used if _frozen(with_chars, t)}
    fresh = {internal[t] for t in used if is_open(t)}
    size = len(alphabet_ids)
    refused = [0]

    def allowed(left: int, right: int, merged: bytes) -> bool:
        if left in frozen or right in frozen:
            return False
        if options.protected and not (left >= size or right >= size or left in fresh or right in fresh):
            return False
        token = merged.decode("utf-8")
        if with_chars.token_to_id(token) is not None:
            refused[0] += 1
            return False
        return True

    budget = options.add - len(chosen)
    merges: list[tuple[int, int, int, int]] = []
    token_bytes: list[bytes] = []
    if budget and segments:
        words_internal = ["".join([chr(internal[t]) for t in seg]) for seg in segments]
        freqs = [counts[w] for w in words]
        merges, token_bytes = merge_words(
            words_internal, freqs, budget + budget // 20 + 16, alphabet=[s.encode("utf-8") for s in spelled],
            lengths=[len(s.removesuffix(model.suffix)) for s in spelled], min_frequency=options.min_frequency,
            max_token_length=MAX_PIECE_CHARS, tick=lambda done: reporter.update("merge", done, budget),
            allowed=allowed)
    if not chosen and not merges:
        raise ConfigError(nothing_new(options, f"no pair of tokens that may merge occurs {options.min_frequency} "
                                               "times or more"))
    # 4. Final ids: the new characters, then each merge's token unless an earlier merge spelt it.
    added = [(first_new + i, symbol.encode("utf-8")) for i, symbol in enumerate(chosen)]
    final = [i if i is not None else -1 for i in alphabet_ids]
    new_ids: dict[bytes, int] = {}
    learned: list[tuple[int, int, int, int]] = []
    pairs: set[tuple[int, int]] = set()
    for rank, (a, b, count, _) in enumerate(merges):
        data = token_bytes[size + rank]
        if data not in new_ids:
            if len(added) == options.add:
                break
            new_ids[data] = first_new + len(added)
            added.append((new_ids[data], data))
        final.append(new_ids[data])
        if (final[a], final[b]) not in pairs:
            pairs.add((final[a], final[b]))
            learned.append((final[a], final[b], new_ids[data], count))
    reporter.update("merge", len(added), options.add, force=True)
    grown = _grown(model, [(i, data.decode("utf-8")) for i, data in added], learned)
    reached = tuple(first_new + i for i, symbol in enumerate(chosen) if _reached(grown, symbol, first_new + i))
    state = base.__getstate__()
    state["model"] = grown
    extended = Tokenizer.__new__(Tokenizer)
    extended.__setstate__(state)
    return Extension(tokenizer=extended, base_vocab_size=base.vocab_size, added=added, merges=learned,
                     duplicates_skipped=refused[0], protected=options.protected, pretokens_counted=len(words),
                     symbols_added=reached)


def _frozen(model: CharBPE, token_id: int) -> bool:
    """Byte pieces and the unknown token: never part of a merge."""
    token = model.id_to_token(token_id) or ""
    return token_id == model.unk_id or (model.byte_fallback and byte_piece_value(token) is not None)


def _reached(model: CharBPE, symbol: str, token_id: int) -> bool:
    """Whether text reaches the new single-character piece ``symbol`` as a symbol of its own."""
    char = symbol.removesuffix(model.suffix) or symbol
    if model.suffix and not symbol.endswith(model.suffix):
        return model.symbols(char * 2)[0] == token_id  # a word's first character carries no suffix
    return model.symbols(char) == [token_id]


def _grown(model: CharBPE, tokens: list[tuple[int, str]], merges: list[tuple[int, int, int, int]]) -> CharBPE:
    """``model`` with ``tokens`` and ``merges`` appended; everything else is the base's own."""
    state = model.snapshot()
    old = state.merges
    grown = MergeIds([*map(int, old.lefts), *(a for a, _, _, _ in merges)],
                     [*map(int, old.rights), *(b for _, b, _, _ in merges)],
                     [*map(int, old.merged), *(m for _, _, m, _ in merges)])
    return CharBPE.from_snapshot(ModelSnapshot(state.level, state.options,
                                               [*map(int, state.ids), *(i for i, _ in tokens)],
                                               [*state.spellings, *(t.encode("utf-8") for _, t in tokens)], grown))
