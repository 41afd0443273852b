"""Where an escape and a character class end in a regex: the scanner ``onig.py`` and
``unicode_twin.py`` share to rewrite a tokenizer.json's patterns (Onig's syntax, or the ``regex``
module's once translated: both spell escapes and classes alike).

Internal: not part of the engine's API (``engine.PUBLIC_MODULES``).
"""

from __future__ import annotations

__all__ = ["class_end", "escape_end"]


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
