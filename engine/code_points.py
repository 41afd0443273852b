"""Sets of code points as the engine's tables spell them: hex ranges in, regex classes and lookup tables out.

The reference libraries' character tables differ from Python's and the ``regex`` module's on a
few hundred code points (``unicode_twin.py``, ``normalizers_hf.py``, ``rust_syntax.py``). Each
keeps its differences as hex ranges (``"0898-089F 32FF"``) and needs them as a set, as a regex
class (to match or to exclude them), or as a table that answers "does this text hold one?" in
one numpy lookup. This module is that one spelling, read and written.

Internal: not part of the engine's API (``engine.PUBLIC_MODULES``).
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING

from engine.errors import ConfigError

if TYPE_CHECKING:
    import numpy as np

__all__ = ["char_class", "codes", "holds_any", "members", "ranges", "runs", "table"]


def ranges(spec: str) -> list[tuple[int, int]]:
    """``(first, last)`` of each hex item of ``spec`` (``"0898-089F 32FF"``), inclusive."""
    pairs = []
    for item in spec.split():
        first, _, last = item.partition("-")
        pairs.append((int(first, 16), int(last or first, 16)))
    return pairs


def codes(spec: str) -> set[int]:
    """Every code point of ``spec``'s ranges."""
    return {code for first, last in ranges(spec) for code in range(first, last + 1)}


def runs(points: set[int]) -> list[tuple[int, int]]:
    """``points`` as ``(first, last)`` runs of consecutive code points, in order."""
    found: list[list[int]] = []
    for point in sorted(points):
        if found and found[-1][1] == point - 1:
            found[-1][1] = point
        else:
            found.append([point, point])
    return [(first, last) for first, last in found]


def char_class(points: set[int]) -> str:
    """A ``regex`` character class of ``points``, each run spelled with ``\\U`` escapes."""
    return "[" + "".join(f"\\U{a:08x}" + (f"-\\U{b:08x}" if b > a else "") for a, b in runs(points)) + "]"


def members(spans: list[tuple[int, int]]) -> str:
    """Class members for ``spans`` of code points, as both the ``regex`` module and Onig read them:
    ASCII letters and digits as themselves, other ASCII as ``\\xNN``, the rest as the character.
    Raises a ConfigError for a surrogate, which is no character, or a number past U+10FFFF."""
    return "".join(_member(first) + (f"-{_member(last)}" if last > first else "") for first, last in spans)


def _member(point: int) -> str:
    if point < 0x80:
        char = chr(point)
        return char if char.isalnum() else f"\\x{point:02x}"
    if 0xD800 <= point <= 0xDFFF:
        raise ConfigError(f"The pattern names the surrogate U+{point:04X}, which is no character.")
    if point > 0x10FFFF:
        raise ConfigError(f"The pattern names U+{point:X}, past the last code point U+10FFFF.")
    return chr(point)


@lru_cache(maxsize=8)
def table(spec: str) -> np.ndarray:
    """Whether each code point is in ``spec``, one bool each (1.1 MB, made once per spec)."""
    import numpy as np  # not at import: the command lines set numpy's threads first (engine/processes.py)

    found = np.zeros(0x110000, bool)
    for first, last in ranges(spec):
        found[first:last + 1] = True
    return found


def holds_any(lookup: np.ndarray, text: str) -> bool:
    """Whether ``text`` holds a code point ``lookup`` (a :func:`table`) marks: one numpy lookup
    (1 MB: ~1 ms; a regex search took 75 ms, Python's ``max()`` 16)."""
    import numpy as np

    return bool(lookup[np.frombuffer(text.encode("utf-32-le", "surrogatepass"), np.uint32)].any())
