"""The reference libraries' Unicode tables for a regex: a twin pattern for text that needs them.

Hugging Face matches a tokenizer.json's regexes with Oniguruma, and tiktoken with Rust's
``regex`` crate; both have Unicode 16's tables (tokenizers 0.23.3, tiktoken 0.14: the same
unassigned code points, tested), older than the ``regex`` module's (17.0 in regex 2026.11). A
character assigned since (the Saudi riyal sign U+20C1, Unicode 17's emoji, CJK Extension J) is
unassigned (``\\p{Cn}``) to them and a symbol or a letter here, so DeepSeek V3's
``[\\p{P}\\p{S}]+`` took such a symbol and the punctuation after it as one piece where Hugging
Face cuts them apart, and GPT-4's and GPT-4o's presets gave other ids than tiktoken on strings
of such characters. Checked against both libraries for the general categories, scripts,
``\\w``, ``\\d`` and POSIX classes: every difference is such a character, which they treat
exactly as an unassigned one; and Oniguruma's ``\\w`` (not tiktoken's) leaves out U+200C and
U+200D.

So a pattern keeps its compiled form for the text nearly everyone types, and a text with one of
those characters (:func:`needs_twin`: one numpy lookup, none for ASCII) is matched by its *twin*
(:func:`twin`): the same pattern with every property (``\\p{..}``, ``\\w``, ``\\d``, POSIX
classes) and every class holding one read as the references read it, and ``\\b``/``\\B`` spelled with
that ``\\w``. Only the characters the tables disagree on can be read otherwise, and to the
references each is unassigned; so a set becomes itself without those it takes here and they do
not, or one of those they take (:func:`_set_twin`). ``onig_unassigned.py`` lists the unassigned
code points, generated from the ``tokenizers`` library; those the ``regex`` module assigns are
found when the first twin is made (~0.07 s, once). Used by ``onig.onig_spans`` (a tokenizer.json's
``Split``, ``Replace`` normalizer and decoder, ``ByteLevel``'s own regex) and by
``pretokenizers.RegexSplit`` and the named patterns' fast split (tiktoken's, ours, and Hugging
Face's ``Whitespace``, which runs on Rust's ``regex`` crate too).

Two more differences, found by comparing every code point's general category and every form of
``\\w`` with the libraries: one character changed category between the versions (``ʕ`` U+0295 is
a lowercase letter ``Ll`` to the references, ``Lo`` here), which the twin reads as the references
do through a stand-in with its old properties (``ʖ`` U+0296, :data:`_CHANGED`); and Oniguruma's
``\\w``, ``\\p{Word}`` and ``\\b`` *outside* a class also take ``²³¹¼½¾`` (its Latin-1 table's word
characters; ``[\\w]`` does not, nor does Rust's ``\\w``), so "Z²" is one piece of ``\\w+|[^\\w\\s]+``
and "!²" another.

A twin is built on first need, one per pattern, and matches 4 to 7 times slower (300,000
characters of Chinese: 0.05-0.09 s against 0.01-0.02 s). Left out, all case-insensitive: a
property (``(?i)\\p{Lu}``, which Oniguruma does not fold and the ``regex`` module does), and the
case pairs Unicode 17 added (``(?i)ß`` takes U+1DF95 here); the twin's own classes name characters
and never fold (``(?-i:...)``), so ``(?i)\\w`` reads every code point as Oniguruma does.

Internal: not part of the engine's API (``engine.PUBLIC_MODULES``).
"""

from __future__ import annotations

import re
from functools import lru_cache

import regex

from engine.code_points import char_class, holds_any, table
from engine.errors import ConfigError
from engine.limits import MAX_TWIN_LENGTH, shown
from engine.onig_unassigned import RANGES
from engine.regex_scan import POSIX_BRACKET, class_end, escape_end

__all__ = ["matcher", "needs_twin", "twin"]

_ONIG_NOT_WORD = "\u200c\u200d"  # in the regex module's \w, in no form of Oniguruma's
_ONIG_BARE_WORD = "\u00b2\u00b3\u00b9\u00bc\u00bd\u00be"  # in Oniguruma's \w outside a class only
_CHANGED = {"\u0295": "\u0296"}
"""Characters both tables assign, in other categories, each with a stand-in that has, in the
``regex`` module, every property the character has to the references (``ʕ``: ``Ll``, Latin, IPA
Extensions, lowercase, no case mapping; tested against ``tokenizers`` and ``tiktoken``)."""
_WORD_ESCAPES = re.compile(r"\\[wWbB]|\[:\^?word:\]|\\[pP]\{\^?word\}", re.IGNORECASE)
_PROPERTIES = re.compile(r"\\[pPwWdDbB]|\[:")
_UNASSIGNED_PROBE = "\u0378"  # the first code point Oniguruma leaves unassigned; so far in every Unicode version


@lru_cache(maxsize=1)
def _newer() -> str:
    """The characters the ``regex`` module assigns and the references do not: the only ones on which
    a property reads otherwise (~18,000, found once, when a twin is first made)."""
    import numpy as np  # not at import: the command lines set numpy's threads first (engine/processes.py)

    points = np.flatnonzero(table(RANGES))
    unassigned = points[(points < 0xD800) | (points > 0xDFFF)].astype(np.uint32).tobytes().decode("utf-32-le")
    return "".join(regex.findall(r"\P{Cn}", unassigned))


def needs_twin(source: str, text: str, *, onig_word: bool = True) -> bool:
    """Whether ``text`` may match ``source`` otherwise with the reference libraries' tables: the
    pattern reads a property and the text holds a character they leave unassigned (one numpy
    lookup, ``code_points.holds_any``; none for ASCII), one that changed
    category (:data:`_CHANGED`), or, for an Oniguruma pattern (``onig_word``) that uses ``\\w``,
    U+200C, U+200D or one of ``²³¹¼½¾``. A few microseconds
    for a line of Chinese (a fifth of Qwen 3's encode of such a line; a few thousandths of a
    2 KB text's)."""
    if text.isascii():
        return False
    properties, word = _reads(source)
    if not properties:
        return False
    if onig_word and word and any(c in text for c in _ONIG_NOT_WORD + _ONIG_BARE_WORD):
        return True
    if any(c in text for c in _CHANGED):
        return True
    return holds_any(table(RANGES), text)


def matcher(compiled: regex.Pattern[str], text: str, *, onig_word: bool = True) -> regex.Pattern[str]:
    """``compiled``, or its :func:`twin` where the references' tables read ``text`` otherwise."""
    return twin(compiled, onig_word=onig_word) if needs_twin(compiled.pattern, text, onig_word=onig_word) else compiled


@lru_cache(maxsize=256)
def _reads(source: str) -> tuple[bool, bool]:
    """Whether ``source`` reads a property the tables change, and whether ``\\w`` among them."""
    return _PROPERTIES.search(source) is not None, _WORD_ESCAPES.search(source) is not None


@lru_cache(maxsize=64)
def twin(compiled: regex.Pattern[str], *, onig_word: bool = True) -> regex.Pattern[str]:
    """``compiled`` with the reference libraries' Unicode tables (see the module docstring); with
    ``onig_word``, ``\\w`` without the joiners, as Oniguruma reads it. Raises a ConfigError for a
    twin past ``limits.MAX_TWIN_LENGTH``."""
    source = _twin_source(compiled.pattern, onig_word)
    if len(source) > MAX_TWIN_LENGTH:
        raise ConfigError(
            f"The pattern {shown(compiled.pattern)} has too many Unicode properties to read this text with the "
            f"reference libraries' Unicode tables: its twin would have {len(source):,} characters, over "
            f"{MAX_TWIN_LENGTH:,} (engine.limits.MAX_TWIN_LENGTH).")
    return regex.compile(source, compiled.flags)


def _twin_source(source: str, onig_word: bool = True) -> str:
    out: list[str] = []
    i = 0
    while i < len(source):
        char = source[i]
        if char == "\\":
            end = escape_end(source, i)
            out.append(_escape_twin(source[i:end], onig_word))
            i = end
        elif char == "[":
            end = class_end(source, i)
            if end is None:  # the compiler refused it already; keep it as it is
                out.append(source[i:])
                break
            out.append(_class_twin(source[i:end], onig_word))
            i = end
        else:
            out.append(char)
            i += 1
    return "".join(out)


def _escape_twin(escape: str, onig_word: bool) -> str:
    """An escape outside a class: a property as one character's twin, a word boundary spelled
    with the twin of ``\\w``, anything else as it is."""
    if escape in ("\\b", "\\B"):
        word = _set_twin("\\w", (), ("\\w",), negated=False, onig_word=onig_word, bare=True)
        if escape == "\\b":
            return f"(?:(?<={word})(?!{word})|(?<!{word})(?={word}))"
        return f"(?:(?<={word})(?={word})|(?<!{word})(?!{word}))"
    if not _is_property(escape):
        return escape
    return _set_twin(escape, (), (escape,), negated=False, onig_word=onig_word, bare=True)


def _class_twin(text: str, onig_word: bool) -> str:
    """A character class whose properties take the references' tables (itself when it has none)."""
    negated = text.startswith("[^")
    body = text[2 if negated else 1:-1]
    literals: list[str] = []
    properties: list[str] = []
    i = 0
    while i < len(body):
        if body[i] == "\\":
            end = escape_end(body, i)
        elif (posix := POSIX_BRACKET.match(body, i)) is not None:
            end = posix.end()
        else:
            end = i + 1
        item = body[i:end]
        if _is_property(item):
            properties.append(item)
            if body[end:end + 1] == "-":  # "a\w-z" must not become the range a-z
                literals.append("\\")
        else:
            literals.append(item)
        i = end
    if not properties:
        return text
    return _set_twin(text, tuple(literals), tuple(properties), negated=negated, onig_word=onig_word)


def _is_property(item: str) -> bool:
    """Whether ``item`` (an escape or a POSIX bracket) is a property the tables change."""
    return item in ("\\w", "\\W", "\\d", "\\D") or (len(item) >= 3 and item[0] == "\\" and item[1] in "pP") or \
        POSIX_BRACKET.fullmatch(item) is not None


@lru_cache(maxsize=1024)  # a pattern repeats its sets: each is read against ~18,000 characters once
def _set_twin(whole: str, literals: tuple[str, ...], properties: tuple[str, ...], *, negated: bool,
              onig_word: bool, bare: bool = False) -> str:
    """One character of the set ``whole`` (a class, or one property escape) as the references read it.

    Only the characters the tables disagree on (:func:`_newer`, :data:`_CHANGED`, and for a form of
    ``\\w`` in Oniguruma the joiners and, ``bare`` outside a class, ``²³¹¼½¾``) can be read
    otherwise. To the references a newer character is unassigned: it is in the set when a literal
    member names it, or when a property holds for unassigned characters (tried on U+0378); a
    changed one is in it when a literal names it or a property holds for its stand-in. So the twin
    is ``whole`` but for those it takes here and they do not, or one of those they take and it
    does not: two alternatives no character satisfies both of, so a repeat of the twin backtracks
    no more than a repeat of ``whole``."""
    words = [p for p in properties if _word_sign(p) is not None]
    extras = _ONIG_NOT_WORD + _ONIG_BARE_WORD if onig_word and words else ""
    candidates = _newer() + "".join(_CHANGED) + extras
    taken = set(regex.findall(whole, candidates))
    literal = regex.compile(f"[{''.join(literals)}]") if literals else None
    named = set(literal.findall(candidates)) if literal is not None else set()
    # A newer character is unassigned to the references: every property reads it as it reads U+0378.
    newer_in = set(_newer()) if any(regex.match(f"[{p}]", _UNASSIGNED_PROBE) for p in properties) else set()
    changed_in = {c for c, stand_in in _CHANGED.items() if any(regex.match(f"[{p}]", stand_in) for p in properties)}
    extras_in = {c for c in extras if any(_holds_in_onig(p, c, bare) for p in properties)}
    members = named | newer_in | changed_in | extras_in
    onig = set(candidates) - members if negated else members
    excluded, included = taken - onig, onig - taken
    # The two classes name characters, not letters: under (?i) they must not take their other cases.
    twin = f"(?!(?-i:{char_class(set(map(ord, excluded)))})){whole}" if excluded else whole
    if not included:
        return f"(?:{twin})" if excluded else twin
    return f"(?:{twin}|(?-i:{char_class(set(map(ord, included)))}))"


def _word_sign(item: str) -> bool | None:
    """Whether ``item`` is a form of ``\\w`` (True), of its complement (False), or neither (None)."""
    if item in ("\\w", "[:word:]"):
        return True
    if item in ("\\W", "[:^word:]"):
        return False
    name = item[3:-1].lower() if item[:3].lower() == "\\p{" and item.endswith("}") else ""
    if name.lstrip("^") != "word":
        return None
    return (item[1] == "p") != name.startswith("^")


def _holds_in_onig(item: str, char: str, bare: bool) -> bool:
    """Whether property ``item`` holds in Oniguruma for ``char``, a joiner or one of ``²³¹¼½¾``: as
    here, but that no form of its ``\\w`` takes a joiner, and one outside a class (``bare``) takes
    ``²³¹¼½¾``."""
    sign = _word_sign(item)
    if sign is None:
        return regex.match(f"[{item}]", char) is not None
    return (bare and char in _ONIG_BARE_WORD) == sign
