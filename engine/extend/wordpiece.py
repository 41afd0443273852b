"""Extend a WordPiece tokenizer (BERT style): new tokens fill the base's ``[unused…]`` slots, then append.

The stages: count the corpus's words as the base's normalizer and pre-tokenizer cut them
(``char_coverage.count_words``); add the character forms the base lacks (``c`` for a word's
first character, ``##c`` for the others: a word holding a character without the form it needs
becomes ``[UNK]`` whole) by coverage, the most frequent first, at most half of ``add``;
segment the words with the base plus those forms (greedy longest match, the base's own
encoder), words still ``[UNK]`` left out; then merge adjacent tokens as the WordPiece trainer's
default ``score="frequency"`` does (count of the pair, which is what Hugging Face's trainer
does too), with the BPE merge loop ``trainers/bpe_merge.merge_words``, because the trainer's own
loop (``trainers/wordpiece_merge.learn``) starts from characters and cannot refuse a pair.

**Tie-break rule**: the most frequent pair first; among equal counts the greatest pair of token
strings ``(left, right)``, compared as UTF-8 (code point order) with their ``##``: the
trainer's rule on the base's tokens; a merged token is compared as its two parts spelled one
after the other (``a##b``). Learning stops after ``add`` tokens or when the best count falls
below ``min_frequency``; no token is longer than :data:`MAX_TOKEN_CHARS` characters.

**Ids**: the new tokens (forms, then merged tokens in merge order) take the ids of the base's
``[unusedN]`` entries first, in id order (a slot that is a special or added token is left as
it is), so the vocabulary does not grow until they are used up; the rest get ids after the
base's. Every other id keeps its token. A merged token that spells one an earlier merge made is
counted in ``duplicates_skipped`` and gets no id.

**Protected** (the default): only words holding a character with a new form are learned from,
and a merge needs a side that is new (a merged token then is), so every new token holds such a
character. Why this is exact: WordPiece matches a token only where its text occurs, so **a word
without a character the base lacked keeps exactly the base's ids** (held-out English among it).

Unreachable tokens are checked on the model: a word-initial token must encode its own text
whole, a ``##`` token must come out whole after a one-character word start no longer token
begins with. Left out: the ``likelihood`` score, bases without a continuing-subword prefix.

Internal: not part of the engine's API (``engine.PUBLIC_MODULES``).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from engine.errors import ConfigError
from engine.extend.char_coverage import addable, count_words
from engine.extend.options import ExtendOptions, Extension, check_add, nothing_new
from engine.extend.symbols import by_coverage, internal_alphabet
from engine.models.wordpiece import WordPiece
from engine.tokenizer import Tokenizer
from engine.trainers.base import Reporter
from engine.trainers.bpe_merge import merge_words

MAX_TOKEN_CHARS = 32
UNUSED_SLOT = re.compile(r"\[unused\d+\]")


def extend_wordpiece(base: Tokenizer, files: Sequence[str | Path], options: ExtendOptions, *,
                     reporter: Reporter | None = None) -> Extension:
    """Learn ``options.add`` new tokens for a WordPiece ``base`` (see the module docstring)."""
    model = base.model
    if not isinstance(model, WordPiece):
        raise TypeError(f"extend_wordpiece needs a WordPiece model, not {type(model).__name__}")
    prefix = model.prefix
    if not prefix:
        raise ConfigError("Extending a WordPiece tokenizer without a continuing_subword_prefix is not supported; "
                          "extend supports BERT style bases ('##').", option="tokenizer")
    check_add(base, options.add)
    if model.vocab_size != base.vocab_size:
        raise ConfigError(f"This WordPiece tokenizer has added tokens past its {model.vocab_size:,} entries; new "
                          "tokens would take their ids, so it cannot be extended.", option="tokenizer")
    reporter = reporter or Reporter()
    # 1. Words as the base cuts them, and the character forms it lacks, by coverage.
    counts = count_words(base, files, reporter=reporter)
    counts = Counter({w: n for w, n in counts.items() if 0 < len(w) <= model.max_input_chars_per_word})
    needed: Counter[str] = Counter()
    for word, n in counts.items():
        needed[word[0]] += n
        for char, k in Counter(word[1:]).items():
            needed[prefix + char] += k * n
    forms = _select_forms(Counter({f: n for f, n in needed.items() if model.token_to_id(f) is None}), prefix,
                          options.character_coverage, max(1, options.add // 2))
    vocab = model.vocab()
    with_forms = _model(model, {**vocab, **{f: base.vocab_size + i for i, f in enumerate(forms)}})
    # 2. The words to learn from and their segmentation (words still [UNK] left out).
    open_chars = {f.removeprefix(prefix) if f != prefix else f for f in forms}
    words = [w for w in counts if not options.protected or not open_chars.isdisjoint(w)]
    segments = [with_forms.tokenize(w) for w in words]
    kept = [i for i, seg in enumerate(segments) if seg != [model.unk_id]]
    words, segments = [words[i] for i in kept], [segments[i] for i in kept]
    first_new = base.vocab_size
    # 3. The merge loop over the tokens of the segmentation, numbered past the surrogates.
    used = sorted({t for seg in segments for t in seg})
    alphabet_ids, internal = internal_alphabet(used)
    spelled = [with_forms.id_to_token(t) or "" if t is not None else "" for t in alphabet_ids]
    size = len(alphabet_ids)
    fresh = {internal[t] for t in used if t >= first_new}

    def allowed(left: int, right: int, merged: bytes) -> bool:
        return not options.protected or left >= size or right >= size or left in fresh or right in fresh

    budget = options.add - len(forms)
    merges: list[tuple[int, int, int, int]] = []
    if budget > 0 and segments:
        merges, _ = merge_words(
            ["".join([chr(internal[t]) for t in seg]) for seg in segments], [counts[w] for w in words],
            budget + budget // 20 + 16, alphabet=[s.encode("utf-8") for s in spelled],
            lengths=[len(s.removeprefix(prefix)) if s != prefix else len(s) for s in spelled],
            min_frequency=options.min_frequency, max_token_length=MAX_TOKEN_CHARS,
            tick=lambda done: reporter.update("merge", done, budget), allowed=allowed)
    if not forms and not merges:
        raise ConfigError(nothing_new(options, "it holds no character the base lacks and no pair of tokens that may "
                                               f"merge {options.min_frequency} times or more"))
    # 4. The merged tokens' strings; duplicates skipped; then ids, slots first.
    real = list(spelled)
    new_tokens = list(forms)
    seen = set(vocab) | set(forms)
    duplicates = 0
    for a, b, _, _ in merges:
        token = real[a] + real[b][len(prefix):]
        real.append(token)
        if token in seen:
            duplicates += 1
        elif len(new_tokens) < options.add:
            seen.add(token)
            new_tokens.append(token)
    reporter.update("merge", len(new_tokens), options.add, force=True)
    specials = {*base.special_tokens, *base.added_tokens}
    slots = sorted(i for t, i in vocab.items() if UNUSED_SLOT.fullmatch(t) and t not in specials)
    ids = slots[:len(new_tokens)] + list(range(first_new, first_new + max(0, len(new_tokens) - len(slots))))
    taken = set(ids)
    grown_vocab = {t: i for t, i in vocab.items() if i not in taken}
    grown_vocab.update(zip(new_tokens, ids))
    grown = _model(model, grown_vocab)
    state = base.__getstate__()
    state["model"] = grown
    extended = Tokenizer.__new__(Tokenizer)
    extended.__setstate__(state)
    return Extension(tokenizer=extended, base_vocab_size=base.vocab_size,
                     added=[(i, t.encode("utf-8")) for t, i in zip(new_tokens, ids)], merges=[],
                     duplicates_skipped=duplicates, protected=options.protected, pretokens_counted=len(words),
                     symbols_added=tuple(ids[:len(forms)]),
                     unreached=_unreached(grown, list(zip(new_tokens, ids))), slots_filled=min(len(slots), len(ids)))


def _select_forms(missing: Counter[str], prefix: str, coverage: float, limit: int) -> list[str]:
    """The missing forms to add, most frequent first (ties: the smaller string) while those taken
    cover less than ``coverage`` of their occurrences; whitespace and control characters never."""
    candidates = {f: n for f, n in missing.items() if len(c := f.removeprefix(prefix) or f) == 1 and addable(c)}
    return by_coverage(candidates, coverage, limit)


def _model(model: WordPiece, vocab: dict[str, int]) -> WordPiece:
    """A WordPiece over ``vocab`` with the base's options."""
    return WordPiece(vocab, unk_token=model.unk_token, continuing_subword_prefix=model.prefix,
                     max_input_chars_per_word=model.max_input_chars_per_word)


def _unreached(model: WordPiece, added: list[tuple[str, int]]) -> tuple[int, ...]:
    """The added ids that encoding their own text does not give whole (see the module docstring)."""
    prefix = model.prefix
    vocab = model.vocab()
    starts = {t[0] for t in vocab if len(t) > 1 and not t.startswith(prefix)}
    lead = next((t for t in sorted(vocab, key=vocab.__getitem__)
                 if len(t) == 1 and t not in starts and not t.startswith(prefix[:1])), None)
    missed = []
    for token, token_id in added:
        if token.startswith(prefix) and len(token) > len(prefix):
            text = token[len(prefix):]
            whole = lead is not None and model.tokenize(lead + text)[1:] == [token_id]
        else:
            whole = model.tokenize(token) == [token_id]
        if not whole:
            missed.append(token_id)
    return tuple(missed)
