"""The starting point of character-level BPE training: symbols, the alphabet and its ids.

Classic BPE (Sennrich et al. 2016) starts each word as its characters, the last one carrying
the end-of-word suffix, so ``low`` is ``l o w</w>`` and ``w</w>`` is a symbol of its own. This
module turns pre-token counts into that alphabet and into the one-character-per-symbol word
strings that ``bpe_merge.merge_words`` learns from; numbering the final vocabulary and
assembling the tokenizer stay in ``bpe.py``.

The alphabet is every symbol seen, unless it would not fit in the vocabulary: then the most
frequent symbols are kept (ties: the smaller string), as Hugging Face's ``limit_alphabet``
does, and a dropped symbol becomes the unknown token at encode time. In training a dropped
symbol cuts its word in two, so no merge ever spans it. Kept symbols are numbered in code-point
order of their strings. Left out: the merge loop and ids.

Internal: not part of the engine's API (``engine.PUBLIC_MODULES``).
"""

from __future__ import annotations

from collections import Counter


def word_symbols(word: str, suffix: str) -> list[str]:
    """The symbols a pre-token starts as: its characters, the last with ``suffix``."""
    symbols = list(word)
    if symbols:
        symbols[-1] += suffix
    return symbols


def char_alphabet(counts: dict[str, int], suffix: str, budget: int) -> list[str]:
    """The symbols to keep, at most ``budget``, sorted: the most frequent ones if they do not all fit."""
    seen: Counter[str] = Counter()
    for word, n in counts.items():
        for symbol in word_symbols(word, suffix):
            seen[symbol] += n
    if len(seen) <= budget:
        return sorted(seen)
    kept = sorted(seen, key=lambda symbol: (-seen[symbol], symbol))[: max(budget, 0)]
    return sorted(kept)


def char_words(counts: dict[str, int], alphabet: list[str], suffix: str) -> tuple[list[str], list[int]]:
    """Words for ``merge_words``: one character ``chr(i)`` per symbol ``alphabet[i]``, with counts.

    A symbol outside the alphabet ends one run of symbols and starts the next; equal runs are
    counted together.
    """
    index = {symbol: chr(i) for i, symbol in enumerate(alphabet)}
    runs: Counter[str] = Counter()
    for word, n in counts.items():
        run: list[str] = []
        for symbol in word_symbols(word, suffix):
            code = index.get(symbol)
            if code is not None:
                run.append(code)
            elif run:
                runs["".join(run)] += n
                run = []
        if run:
            runs["".join(run)] += n
    return list(runs), list(runs.values())
