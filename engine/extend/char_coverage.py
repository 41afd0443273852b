"""The corpus as a character-level BPE base sees it, and which new characters to add by coverage.

A character-level base (Llama 2, Mistral, Gemma: ``engine/models/bpe_char.py``) spells a
character it lacks with byte pieces ``<0xNN>`` (or the unknown token), three or four tokens for
most Chinese characters. Extending it starts by adding the characters of the corpus it lacks as
new single-character pieces, the most frequent first, as sentencepiece's ``character_coverage``
picks its alphabet: characters are taken, most frequent first (ties: the smaller string), while
the ones taken so far cover less than ``coverage`` of all the occurrences of missing characters.

Counting works on lines, as a user encodes text: each line, cut at the base's special and added
tokens, goes through the base's normalizer and pre-tokenizer. A base without a pre-tokenizer
(the sentencepiece-converted files: the whole line is one piece) is cut for learning only before
each run of ``▁``, as sentencepiece's trainer splits on whitespace, so no merge is learned across
words; encoding still runs on whole lines, in HF and here alike. A base whose normalizer puts the
``▁`` after the text (sentencepiece's ``treat_whitespace_as_suffix``: "a b" is ``a▁b▁``) is cut
after each run instead, so its new pieces end with ``▁`` as its own do.

The scripts in which the base lacks most of the corpus's characters are *opened*
(:func:`opened_scripts`): protected mode may then merge the base's own characters of those
scripts too (Llama 2 has about 700 common Han characters; without this, no two of them could
ever merge). Script-neutral characters (digits, punctuation, spaces) are never opened.

Never added: whitespace and control, format, private-use or unassigned characters (a tab or a
zero-width joiner stays byte pieces, so text holding them keeps its ids too). Left out: the merges
(``char_bpe.py``).

Internal: not part of the engine's API (``engine.PUBLIC_MODULES``).
"""

from __future__ import annotations

import unicodedata
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

import regex

from engine.ascii_split import fastest_split
from engine.errors import FormatError
from engine.extend.symbols import by_coverage
from engine.models.bpe_char import CharBPE
from engine.normalizers import Normalizer
from engine.token_scripts import char_script
from engine.tokenizer import Tokenizer
from engine.trainers.base import Reporter
from engine.trainers.bpe_char import word_symbols
from engine.trainers.corpus import special_pattern

SPACE_MARK = "▁"
_WORDS = regex.compile(f"[^{SPACE_MARK}]+|{SPACE_MARK}+[^{SPACE_MARK}]*")  # "▁a▁▁b" -> "▁a", "▁▁b"
_SUFFIX_WORDS = regex.compile(f"[^{SPACE_MARK}]*{SPACE_MARK}+|[^{SPACE_MARK}]+")  # "a▁b▁▁" -> "a▁", "b▁▁"


def _marks_after_words(normalizer: Normalizer | None) -> bool:
    """Whether ``normalizer`` puts the ``▁`` after each word (tried on "a b": a ``.model``'s
    normalizer and its tokenizer.json chain alike)."""
    probe = normalizer.normalize("a b") if normalizer is not None else "a b"
    return probe.endswith(SPACE_MARK) and not probe.startswith(SPACE_MARK)


def count_words(base: Tokenizer, files: Sequence[str | Path], *, reporter: Reporter | None = None,
                marks_after: bool | None = None) -> Counter[str]:
    """``{word: occurrences}`` over the lines of ``files`` (see the module docstring); without a
    pre-tokenizer, cut after each run of ``▁`` if ``marks_after`` (default: where the base's
    normalizer puts it), else before."""
    reporter = reporter or Reporter()
    specials = special_pattern([*base.special_tokens, *base.added_tokens])
    normalizer = base.normalizer
    after = _marks_after_words(normalizer) if marks_after is None else marks_after
    split: Callable[[str], list[str]] = (fastest_split(base.pre_tokenizer) if base.pre_tokenizer
                                         else _SUFFIX_WORDS.findall if after else _WORDS.findall)
    counts: Counter[str] = Counter()
    total = sum(Path(f).stat().st_size for f in files) or 1
    done = 0
    for path in files:
        with open(path, "rb") as stream:
            for number, raw in enumerate(stream, start=1):
                done += len(raw)
                try:
                    line = raw.decode("utf-8").rstrip("\r\n")
                except UnicodeDecodeError:
                    raise FormatError(f"The corpus is not UTF-8 text (line {number} cannot be decoded); convert it "
                                      "to UTF-8 first.", source=str(path)) from None
                for stretch in specials.split(line) if specials is not None else (line,):
                    if stretch:
                        counts.update(split(normalizer.normalize(stretch) if normalizer else stretch))
                if number % 4096 == 0:
                    reporter.update("count", done, total)
    reporter.update("count", total, total, force=True)
    return counts


def corpus_symbols(model: CharBPE, counts: Counter[str]) -> Counter[str]:
    """The symbols (characters with the base's end-of-word suffix where it applies) of the corpus,
    with their occurrences."""
    seen: Counter[str] = Counter()
    if model.suffix:
        for word, n in counts.items():
            for symbol in word_symbols(word, model.suffix):
                seen[symbol] += n
    else:
        for word, n in counts.items():
            for char, k in Counter(word).items():
                seen[char] += k * n
    return seen


def missing_symbols(model: CharBPE, seen: Counter[str]) -> Counter[str]:
    """The symbols of ``seen`` that the base's vocabulary lacks."""
    return Counter({symbol: n for symbol, n in seen.items() if model.token_to_id(symbol) is None})


def opened_scripts(model: CharBPE, seen: Counter[str]) -> frozenset[str]:
    """The scripts (``engine.token_scripts.char_script``) in which the base lacks more than half of
    the corpus's distinct characters: the scripts the extension is for (Han, for Chinese on Llama 2)."""
    distinct: dict[str, set[str]] = {}
    lacking: dict[str, set[str]] = {}
    for symbol in seen:
        char = symbol.removesuffix(model.suffix) or symbol
        script = char_script(char)
        if script is None:
            continue
        distinct.setdefault(script, set()).add(char)
        if model.token_to_id(symbol) is None:
            lacking.setdefault(script, set()).add(char)
    return frozenset(script for script, chars in lacking.items() if 2 * len(chars) > len(distinct[script]))


def addable(char: str) -> bool:
    """Whether a missing character may become a piece (not whitespace, not a control character)."""
    return not char.isspace() and unicodedata.category(char)[0] != "C"


def select_symbols(missing: Counter[str], suffix: str, coverage: float, limit: int) -> list[str]:
    """The new single-character pieces, most frequent first (see the module docstring), at most ``limit``."""
    candidates = {symbol: n for symbol, n in missing.items() if addable(symbol.removesuffix(suffix) or symbol)}
    return by_coverage(candidates, coverage, limit)
