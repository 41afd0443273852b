"""Where an escape and a character class end in a regex, where its anchors stand, and edits at
those places: the scanner ``onig.py``, ``rust_syntax.py`` and ``unicode_twin.py`` share to rewrite
a pattern from one engine's syntax into another's (Onig's, Rust's and the ``regex`` module's spell
escapes and classes alike).

Internal: not part of the engine's API (``engine.PUBLIC_MODULES``).
"""

from __future__ import annotations

import re

__all__ = ["CLASS_ASIDE", "POSIX_BRACKET", "apply_edits", "class_end", "escape_end", "outside_classes"]

POSIX_BRACKET = re.compile(r"\[:(\^?)([a-z]+):\]")
"""A POSIX bracket inside a class (``[:alpha:]``, ``[:^digit:]``): its negation and its name."""
CLASS_ASIDE = re.compile(r"\\.|\[:\^?[a-z]+:\]")
"""What a class holds besides plain characters: an escape or a POSIX bracket."""


def escape_end(pattern: str, i: int) -> int:
    """The end of the escape at ``i`` (``\\p{L}``, ``\\x{41}``, ``\\N{...}`` and ``\\k<name>`` whole)."""
    if pattern[i + 1:i + 2] in ("p", "P", "x", "N", "u", "U") and pattern[i + 2:i + 3] == "{":
        close = pattern.find("}", i + 3)
        return len(pattern) if close < 0 else close + 1
    if pattern[i + 1:i + 2] in ("k", "g") and pattern[i + 2:i + 3] == "<":
        close = pattern.find(">", i + 3)
        return len(pattern) if close < 0 else close + 1
    return min(i + 2, len(pattern))


def class_end(pattern: str, i: int) -> int | None:
    """The position after the character class that starts at ``i`` (nested classes and POSIX
    brackets included; a ``]`` first in the class is a member), or None if it never closes."""
    depth = 0
    j = i
    while j < len(pattern):
        char = pattern[j]
        if char == "\\":
            j = escape_end(pattern, j)
            continue
        if char == "[":
            depth += 1
            j += 1
            if pattern[j:j + 1] == "^":
                j += 1
            if pattern[j:j + 1] == "]":  # a literal ] first
                j += 1
            continue
        if char == "]":
            depth -= 1
            if depth == 0:
                return j + 1
        j += 1
    return None


def outside_classes(pattern: str) -> tuple[list[tuple[int, int]], list[tuple[int, str]]]:
    """The ``(start, end)`` of each outermost character class, and the ``(position, anchor)`` of
    each ``^``, ``$``, ``\\Z`` and ``\\z`` outside them."""
    classes: list[tuple[int, int]] = []
    anchors: list[tuple[int, str]] = []
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if char == "\\":
            if pattern[i + 1:i + 2] in ("Z", "z"):
                anchors.append((i, pattern[i:i + 2]))
            i = escape_end(pattern, i)
        elif char == "[":
            end = class_end(pattern, i)
            if end is None:
                break
            classes.append((i, end))
            i = end
        else:
            if char in "^$":
                anchors.append((i, char))
            i += 1
    return classes, anchors


def apply_edits(pattern: str, edits: list[tuple[int, int, str]]) -> str:
    """``pattern`` with each ``(position, length, text)`` applied: the ``length`` characters at
    ``position`` (none for an insertion) replaced by ``text``; insertions at a position go first."""
    out: list[str] = []
    last = 0
    for at, length, text in sorted(edits, key=lambda edit: (edit[0], edit[1])):
        out += [pattern[last:at], text]
        last = at + length
    out.append(pattern[last:])
    return "".join(out)
