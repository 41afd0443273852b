"""Which writing system a token is in: the vocabulary browser's script filter and the vocabulary diff's groups.

A token's script is the Unicode script of its letters and marks (``regex``'s ``\\p{Script=…}``):
one script if they all share it, "Mixed" if not. A token with no letters is "Numbers and
symbols" (digits, punctuation, spaces: Unicode's Common and Inherited scripts), and one whose
bytes are not whole UTF-8 characters (a byte-level BPE's pieces of a character) is "Partial
characters". Characters are classified once each and memoised, so a 200,000-token vocabulary
costs one dictionary look-up per character.

Left out: the listings themselves (``webapp/playground/vocab_browser.py``, ``engine/vocab_diff.py``).

Internal: not part of the engine's API (``engine.PUBLIC_MODULES``).
"""

from __future__ import annotations

import functools

import regex

MIXED = "Mixed"
NO_LETTERS = "Numbers and symbols"
PARTIAL = "Partial characters"
OTHER = "Other scripts"

# The scripts named in the filter, most used first; any other one is OTHER.
NAMED = ("Latin", "Cyrillic", "Greek", "Han", "Hiragana", "Katakana", "Hangul", "Arabic", "Hebrew", "Devanagari",
         "Bengali", "Tamil", "Thai", "Armenian", "Georgian", "Ethiopic")
_NAMED = [(name, regex.compile(rf"\p{{Script={name}}}")) for name in NAMED]
_ASCII_LETTER = regex.compile(rb"[A-Za-z]")
_NEUTRAL = regex.compile(r"[\p{Script=Common}\p{Script=Inherited}]")
_MEMO_LIMIT = 1 << 16  # distinct characters remembered; past it, classified each time


@functools.lru_cache(maxsize=_MEMO_LIMIT)
def char_script(char: str) -> str | None:
    """The named script of one character, OTHER for the rest, None for script-neutral ones."""
    if _NEUTRAL.match(char):
        return None
    for name, pattern in _NAMED:
        if pattern.match(char):
            return name
    return OTHER


def token_script(data: bytes) -> str:
    """The script of what a token spells (its bytes)."""
    if data.isascii():  # most tokens: no decoding or per-character work
        return "Latin" if _ASCII_LETTER.search(data) else NO_LETTERS
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return PARTIAL
    found: str | None = None
    for char in set(text):
        script = char_script(char)
        if script is None or script == found:
            continue
        if found is not None:
            return MIXED
        found = script
    return found or NO_LETTERS


def script_order(names: set[str]) -> list[str]:
    """Script names in the filter's order: the named scripts first, then the catch-alls."""
    rank = {name: i for i, name in enumerate((*NAMED, OTHER, MIXED, NO_LETTERS, PARTIAL))}
    return sorted(names, key=lambda name: (rank.get(name, len(rank)), name))
