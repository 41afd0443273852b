"""tiktoken's regexes are Rust's; the engine's are the ``regex`` module's.

tiktoken matches its ``pat_str`` with fancy-regex over Rust's ``regex`` crate. Most patterns mean
the same to both engines; where they differ, checked against the ``tiktoken`` library:

- **Anchors**: Rust's ``$`` is the end of the text only (the ``regex`` module's ``\\Z``), where the
  ``regex`` module's ``$`` also holds before a final newline; Rust's ``\\Z`` holds at the end and
  before any run of newlines that ends the text (``(?=\\n*\\z)``), the ``regex`` module's at the end
  only. ``(?m)`` reads both alike, and so does ``\\z``.
- **POSIX brackets** are ASCII's in Rust (``[[:alpha:]]`` is ``[A-Za-z]``, ``[[:punct:]]`` ASCII's
  32 marks) and mostly Unicode's in the ``regex`` module; ``\\h`` is a hex digit in Rust and
  horizontal space here.
- ``\\x{1F600}``, ``\\u{41}`` and ``\\e`` are Rust escapes the ``regex`` module does not know.
- **Set operations** (``[a-z&&[^aeiou]]``, ``--``, ``~~``) and nested sets are Rust's, and mean
  other things (or nothing) here: refused, never read with another meaning, as ``\\N{...}`` is.

:func:`from_rust` turns a pattern read from a tiktoken file into one the ``regex`` module reads as
tiktoken does; :func:`to_rust` writes one of ours (the ``regex`` module's meaning) as tiktoken
should read it, for a tiktoken file's ``pat_str``. :func:`refuse_ambiguous` keeps the constructs
the three engines (Onig, Rust, the ``regex`` module) read three ways out of the patterns people
type. Left out: case-insensitive classes, which the ``regex`` module folds more widely (``(?i)[A-Z]``
takes the dotless ``ı`` here, not in Rust); Unicode tables are ``unicode_twin.py``'s.

Internal: not part of the engine's API (``engine.PUBLIC_MODULES``).
"""

from __future__ import annotations

import re

from engine.code_points import members
from engine.errors import ConfigError
from engine.limits import check_pattern, shown
from engine.regex_scan import CLASS_ASIDE, POSIX_BRACKET, apply_edits, escape_end, outside_classes

__all__ = ["from_rust", "refuse_ambiguous", "to_rust"]

# Rust's ASCII classes (the regex crate's documentation), as ranges of code points.
_ASCII_CLASSES: dict[str, tuple[tuple[int, int], ...]] = {
    "alnum": ((0x30, 0x39), (0x41, 0x5A), (0x61, 0x7A)), "alpha": ((0x41, 0x5A), (0x61, 0x7A)),
    "ascii": ((0x00, 0x7F),), "blank": ((0x09, 0x09), (0x20, 0x20)), "cntrl": ((0x00, 0x1F), (0x7F, 0x7F)),
    "digit": ((0x30, 0x39),), "graph": ((0x21, 0x7E),), "lower": ((0x61, 0x7A),), "print": ((0x20, 0x7E),),
    "punct": ((0x21, 0x2F), (0x3A, 0x40), (0x5B, 0x60), (0x7B, 0x7E)), "space": ((0x09, 0x0D), (0x20, 0x20)),
    "upper": ((0x41, 0x5A),), "word": ((0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A)),
    "xdigit": ((0x30, 0x39), (0x41, 0x46), (0x61, 0x66)),
}
_HEX = _ASCII_CLASSES["xdigit"]
_ALIKE_IN_BOTH = ("ascii", "digit", "xdigit")  # POSIX classes the regex module reads as ASCII too
_ALIKE_IN_ALL = ("ascii", "xdigit")  # and Onig too (its [:digit:] is Unicode's)
_OPTIONS = re.compile(r"\(\?([A-Za-z-]*)[:)]")
_CODE_ESCAPE = re.compile(r"\\[xu]\{([0-9A-Fa-f]{1,6})\}")
_SET_OPERATORS = ("&&", "--", "~~")


def from_rust(pattern: str, what: str = "pre-tokenizer pattern") -> str:
    """``pattern`` as tiktoken reads it, for the ``regex`` module; raises a ConfigError naming
    ``what`` for a construct we do not reproduce, or for a pattern past ``engine.limits``' bounds."""
    check_pattern(pattern)
    classes, anchors = outside_classes(pattern)
    why = _refusal(pattern, classes, anchors)
    if why:
        raise ConfigError(f"The {what} {shown(pattern)} is refused: {why}.")
    edits = _class_edits(pattern, classes)
    edits += _escape_edits(pattern, classes)
    global_lines = _lines_flag(pattern) == "global"
    for at, anchor in anchors:
        if anchor == "$" and not global_lines:
            edits.append((at, 1, "\\Z"))
        elif anchor == "\\Z":
            edits.append((at, 2, "(?=\\n*\\z)"))
    return check_pattern(apply_edits(pattern, edits))


def to_rust(source: str) -> str:
    """One of our patterns (the ``regex`` module's meaning) written so that tiktoken reads the
    same: ``$`` as the end or before a final newline, ``\\Z`` as ``\\z``. Raises a ConfigError for
    a POSIX bracket or an option group Rust reads otherwise."""
    classes, anchors = outside_classes(source)
    for start, end in classes:
        posix = next((m.group() for m in POSIX_BRACKET.finditer(source, start, end)
                      if m.group(2) not in _ALIKE_IN_BOTH), None)
        if posix is not None:
            raise ConfigError(f"The pattern {shown(source)} has the POSIX class {posix}, which tiktoken (Rust) reads "
                              "as ASCII only; write a Unicode property such as \\p{Alphabetic} instead.")
    lines = _lines_flag(source)
    if lines == "scoped" and any(anchor == "$" for _, anchor in anchors):
        raise ConfigError(f"The pattern {shown(source)} turns (?m) on for a part only, so its $ means two things; "
                          "tiktoken cannot be given the same meaning.")
    edits = [(at, 1, "(?=\\n?\\z)") for at, anchor in anchors if anchor == "$" and lines != "global"]
    edits += [(at, 2, "\\z") for at, anchor in anchors if anchor == "\\Z"]
    return apply_edits(source, edits)


def refuse_ambiguous(pattern: str) -> None:
    """Raise a ConfigError for what Onig, Rust and the ``regex`` module read three ways in a
    pattern people type (ours are the ``regex`` module's): a POSIX bracket but ``[:ascii:]`` and
    ``[:xdigit:]``, or ``\\h``/``\\H``."""
    for start, end in outside_classes(pattern)[0]:
        posix = next((m for m in POSIX_BRACKET.finditer(pattern, start, end) if m.group(2) not in _ALIKE_IN_ALL), None)
        if posix is not None:
            raise ConfigError(
                f"The pre-tokenizer pattern {shown(pattern)} has the POSIX class {posix.group()}, which Python's "
                "regex, Hugging Face (Onig) and tiktoken (Rust) read differently (Unicode or ASCII letters, "
                "digits and marks); write a Unicode property such as \\p{Alphabetic} or \\p{Nd}, or the "
                "characters themselves.")
    i = pattern.find("\\")
    while i >= 0:
        if pattern[i + 1:i + 2] in ("h", "H"):
            raise ConfigError(
                f"The pre-tokenizer pattern {shown(pattern)} has {pattern[i:i + 2]}, horizontal space to Python's "
                "regex and a hex digit to Hugging Face and tiktoken; write [ \\t] or [0-9A-Fa-f].")
        i = pattern.find("\\", escape_end(pattern, i))


def _refusal(pattern: str, classes: list[tuple[int, int]], anchors: list[tuple[int, str]]) -> str | None:
    """Why ``pattern`` would mean something else to the ``regex`` module than to tiktoken, beyond
    what :func:`from_rust` rewrites; or None."""
    for start, end in classes:
        body = CLASS_ASIDE.sub("", pattern[start + 1:end - 1])
        if "[" in body or any(op in body for op in _SET_OPERATORS):
            return (f"the character class {shown(pattern[start:end])} has a set operation or a nested set, "
                    "which tiktoken reads and the regex module does not")
        if (bad := POSIX_BRACKET.search(pattern, start, end)) is not None and bad.group(2) not in _ASCII_CLASSES:
            return f"{bad.group()} is no POSIX class tiktoken knows"
    if "\\N{" in pattern:
        return "\\N{...} means something else to tiktoken"
    if _lines_flag(pattern) == "scoped" and any(anchor == "$" for _, anchor in anchors):
        return "(?m) is on for a part of it only, and its $ would mean two things"
    return None


def _lines_flag(pattern: str) -> str | None:
    """``"global"`` when the pattern starts by turning ``m`` on for all of it, ``"scoped"`` when
    any other option group mentions ``m``, else None."""
    groups = [(m.start(), m.group(1), m.group().endswith(")")) for m in _OPTIONS.finditer(pattern)]
    with_m = [(at, flags, whole) for at, flags, whole in groups if "m" in flags]
    if not with_m:
        return None
    first = with_m[0]
    if len(with_m) == 1 and first[0] == 0 and first[2] and "m" in first[1].split("-")[0]:
        return "global"
    return "scoped"


def _class_edits(pattern: str, classes: list[tuple[int, int]]) -> list[tuple[int, int, str]]:
    """POSIX brackets and ``\\h``/``\\H`` inside classes spelled as Rust's ASCII ranges."""
    edits: list[tuple[int, int, str]] = []
    for start, end in classes:
        for item in CLASS_ASIDE.finditer(pattern, start + 1, end - 1):
            token = item.group()
            if (posix := POSIX_BRACKET.fullmatch(token)) is not None:
                edits.append((item.start(), len(token), _ranges(_ASCII_CLASSES[posix.group(2)], bool(posix.group(1)))))
            elif token in ("\\h", "\\H"):
                edits.append((item.start(), 2, _ranges(_HEX, token == "\\H")))
    return edits


def _escape_edits(pattern: str, classes: list[tuple[int, int]]) -> list[tuple[int, int, str]]:
    """``\\x{..}``, ``\\u{..}`` and ``\\e`` anywhere, and ``\\h``/``\\H`` outside classes, in the
    ``regex`` module's spelling."""
    edits: list[tuple[int, int, str]] = []
    inside = [range(start, end) for start, end in classes]
    i = pattern.find("\\")
    while i >= 0:
        end = escape_end(pattern, i)
        token = pattern[i:end]
        in_class = any(i in span for span in inside)
        if (code := _CODE_ESCAPE.fullmatch(token)) is not None:
            point = int(code.group(1), 16)
            edits.append((i, len(token), members([(point, point)])))
        elif token == "\\e":
            edits.append((i, 2, "\\x1b"))
        elif token in ("\\h", "\\H") and not in_class:
            edits.append((i, 2, "[" + _ranges(_HEX, token == "\\H") + "]"))
        i = pattern.find("\\", end)
    return edits


def _ranges(spans: tuple[tuple[int, int], ...], negated: bool) -> str:
    """Class members for ``spans`` of code points, or for every code point outside them."""
    if negated:
        edges = [-1, *(x for first, last in spans for x in (first, last)), 0x110000]
        spans = tuple((lo + 1, hi - 1) for lo, hi in zip(edges[::2], edges[1::2]) if lo + 1 <= hi - 1)
    return members(list(spans))
