"""Hugging Face's regexes are Onig's (Ruby syntax); the engine's are the ``regex`` module's.

A ``tokenizer.json`` pattern (a ``Split`` pre-tokenizer, a ``Replace`` normalizer or decoder)
means what Onig makes of it, and most patterns mean the same in both. Where they differ, checked
against the ``tokenizers`` library:

- **A quantifier after an interval** repeats it: Onig reads ``\\p{N}{1,3}+`` as
  ``(?:\\p{N}{1,3})+`` (every run of digits, whole), the ``regex`` module as the possessive
  ``{1,3}+`` (at most three), as tiktoken does. ``X{2}*`` and ``X{1,2}{3}`` nest the same way,
  and ``X{2}?`` is ``(?:X{2})?`` in Onig but a lazy ``X{2}`` here; a lazy range ``X{1,3}?`` is
  lazy in both.
- **Anchors**: ``^`` and ``$`` hold at every line in Onig (the ``regex`` module's ``(?m)``, but
  for a ``^`` after a final newline, which Onig does not see),
  at the start and the end (or before a final newline) of the text here: Onig's ``\\A`` and
  ``\\Z``. Onig's ``\\Z`` is the ``regex`` module's ``$`` without ``(?m)``; ``\\z`` is the end in both.
- **Empty matches**: the onig crate's ``find_iter`` skips an empty match right where the last
  match ended, which the ``regex`` module takes (:func:`onig_spans`); in a ``Split`` an empty
  match cuts the text like any other.
- ``\\pL`` (a property without braces) is the letters "pL" in Onig, ``\\p{L}`` here: read as letters.
- **POSIX brackets** in a class: Onig's ``[:digit:]`` is every decimal digit (``\\p{Nd}``),
  ``[:alnum:]`` letters and decimal digits (``\\p{Alnum}``) and ``[:punct:]`` all punctuation and
  symbols (``\\p{P}\\p{S}``, the circled letters ``Ⓐ`` included); the ``regex`` module's digits
  are ASCII's and its punctuation leaves out the symbols that are letters. Read as Onig's; a
  ``[:^punct:]`` beside other members has no spelling here and is refused.
- ``\\h``, ``\\H``, option groups other than ``i``, ``x`` and ``-`` (Onig's ``(?m)`` is dot-all), and
  set operations or nested sets in a character class mean other things in each: refused, never
  read with another meaning.

:func:`from_onig` turns a pattern read from a tokenizer.json into one the ``regex`` module reads
as Onig does; :func:`to_onig` writes one of ours (tiktoken's meaning, as the GPT-4 pattern's
``\\p{N}{1,3}+``) so that Onig reads what we mean (``(?>\\p{N}{1,3})``: an atomic group is Onig's
possessive interval). Both find the intervals and anchors with a small scanner that knows
escapes, character classes and groups; a pattern it cannot follow (an unbalanced bracket) is
left to the compiler, which refuses it.

Internal: not part of the engine's API (``engine.PUBLIC_MODULES``).
"""

from __future__ import annotations

import re
import time

import regex

from engine.errors import ConfigError
from engine.limits import check_pattern
from engine.regex_scan import CLASS_ASIDE, apply_edits, class_end, escape_end, outside_classes
from engine.unicode_twin import matcher

__all__ = ["from_onig", "onig_spans", "to_onig"]

# The scanner's own patterns are ASCII and simple: the standard library compiles them in a tenth of
# the regex module's time, which every command would pay at import.
_INTERVAL = re.compile(r"\{(\d*)(,?)(\d*)\}")
_QUANTIFIER_STARTS = "*+?{"
_ONIG_ONLY = {"\\h": "a hex digit", "\\H": "a non-hex-digit"}
_TOKEN = re.compile(r"\\.|\(\?[A-Za-z-]*[:)]|.", re.DOTALL)
# The POSIX brackets Onig reads otherwise than the regex module, as the regex module spells Onig's meaning.
_ONIG_POSIX = {"[:digit:]": "\\p{Nd}", "[:^digit:]": "\\P{Nd}", "[:alnum:]": "\\p{Alnum}",
               "[:^alnum:]": "\\P{Alnum}", "[:punct:]": "\\p{P}\\p{S}"}
_LONE_NOT_PUNCT = {"[[:^punct:]]": "[^\\p{P}\\p{S}]", "[^[:^punct:]]": "[\\p{P}\\p{S}]"}


def _refusal(pattern: str, classes: list[tuple[int, int]]) -> str | None:
    """Why ``pattern`` (its character classes at ``classes``) would mean something else to Onig
    than to the ``regex`` module, other than what :func:`from_onig` rewrites; or None."""
    tokens = _TOKEN.findall(pattern)
    for token in tokens:
        if token in _ONIG_ONLY:
            return f"{token} means {_ONIG_ONLY[token]} in Hugging Face's Onig syntax"
    if (group := _foreign_option(tokens)) is not None:
        return f"the option group {group!r} means something else in Onig (there (?m) is dot-all)"
    for start, end in classes:
        body = CLASS_ASIDE.sub("", pattern[start + 1:end - 1])
        if "&&" in body or "[" in body:
            return (f"the character class {pattern[start:end]!r} has a set operation or a nested set, "
                    "which Onig reads and the regex module does not")
        if "[:^punct:]" in pattern[start:end] and pattern[start:end] not in _LONE_NOT_PUNCT:
            return (f"the character class {pattern[start:end]!r} has [:^punct:] beside other members, "
                    "which Onig reads as neither punctuation nor symbols and the regex module cannot spell")
    return None


def _posix_edits(pattern: str, classes: list[tuple[int, int]]) -> list[tuple[int, int, str]]:
    """The edits that spell the POSIX brackets Onig reads otherwise (:data:`_ONIG_POSIX`) in the
    ``regex`` module's terms; a lone ``[[:^punct:]]`` (or its negation) becomes a class of its own."""
    edits: list[tuple[int, int, str]] = []
    for start, end in classes:
        whole = pattern[start:end]
        if whole in _LONE_NOT_PUNCT:
            edits.append((start, end - start, _LONE_NOT_PUNCT[whole]))
            continue
        for item in CLASS_ASIDE.finditer(pattern, start + 1, end - 1):
            spelled = _ONIG_POSIX.get(item.group())
            if spelled is not None:
                edits.append((item.start(), len(item.group()), spelled))
    return edits


def from_onig(pattern: str, what: str = "pattern") -> str:
    """``pattern`` as Onig reads it, for the ``regex`` module (``(?m)`` first where it has ``^`` or
    ``$``); raises a ConfigError naming ``what`` for a construct we do not reproduce, or for a
    pattern past ``engine.limits``' bounds, as given or as translated."""
    check_pattern(pattern)
    classes, anchors = outside_classes(pattern)
    why = _refusal(pattern, classes)
    if why:
        raise ConfigError(f"The {what} {pattern[:200]!r} is refused: {why}.")
    edits: list[tuple[int, int, str]] = []
    for atom, end, exact in _intervals(pattern):
        follower = pattern[end:end + 1]
        nested = follower in ("+", "*") or (follower == "?" and exact) or (
            follower == "{" and _INTERVAL.match(pattern, end) is not None)
        if nested:  # X{..}+ is (?:X{..})+ in Onig
            edits += [(atom, 0, "(?:"), (end, 0, ")")]
    edits += [(at, 2, letter) for at, letter in _bare_p(pattern)]  # Onig reads \pL as "pL"
    edits += _posix_edits(pattern, classes)
    edits += [(at, 2, "(?=\\n?\\z)") for at, anchor in anchors if anchor == "\\Z"]  # the end, or before a final newline
    edits += [(at, 1, "^(?!\\z)") for at, anchor in anchors if anchor == "^"]  # no line starts after a final newline
    lines = any(anchor in "^$" for _, anchor in anchors)
    return check_pattern(("(?m)" if lines else "") + apply_edits(pattern, edits))


def to_onig(pattern: str) -> str:
    """One of our patterns (the ``regex`` module's meaning) written so that Onig reads the same:
    possessive intervals as atomic groups, a lazy exact interval as the interval alone,
    ``^``/``$``/``\\Z`` as ``\\A``/``\\Z``/``\\z``, or, under a leading ``(?m)``, ``^`` and ``$`` as
    Onig's own (which hold at every line). Raises a ConfigError for another option group Onig
    reads otherwise."""
    lines = pattern.startswith("(?m)") and "(?m" not in pattern[4:]
    if lines:
        pattern = pattern[4:]
    if (group := _foreign_option(_TOKEN.findall(pattern))) is not None:
        raise ConfigError(f"The pattern {pattern[:200]!r} has the option group {group!r}, which Hugging Face's "
                          "Onig syntax reads otherwise ((?m) is dot-all there); it cannot be written to a "
                          "tokenizer.json.")
    edits: list[tuple[int, int, str]] = []
    for atom, end, exact in _intervals(pattern):
        follower = pattern[end:end + 1]
        if follower == "+":  # possessive: X{..}+ is (?>X{..})
            edits += [(atom, 0, "(?>"), (end, 1, ")")]
        elif follower == "?" and exact:  # a lazy exact interval matches what the interval does
            edits.append((end, 1, ""))
    spelled = {"\\Z": "\\z"} if lines else {"^": "\\A", "$": "\\Z", "\\Z": "\\z"}
    edits += [(at, len(anchor), spelled[anchor]) for at, anchor in outside_classes(pattern)[1] if anchor in spelled]
    return apply_edits(pattern, edits)


def onig_spans(compiled: regex.Pattern[str], text: str, timeout: float | None, *,
               onig_tables: bool = True) -> list[tuple[int, int]]:
    """The ``(start, end)`` of each match of ``compiled`` in ``text``, as Hugging Face finds them
    (``find_matches`` over the onig crate's ``find_iter``): none in an empty text, empty matches
    too, except one right where the last match ended (the regex module would take it). Raises
    TimeoutError past ``timeout`` seconds of CPU. With ``onig_tables``, a text with a character
    Onig's Unicode tables read otherwise is matched by the pattern's twin (``unicode_twin.py``)."""
    if not text:
        return []
    if onig_tables:
        compiled = matcher(compiled, text)
    spans = [m.span() for m in compiled.finditer(text, timeout=timeout)]
    if all(a != b for a, b in spans):
        return spans  # without empty matches the two engines agree
    spans = []
    position, last_end = 0, -1
    started = time.process_time()
    while position <= len(text):
        left = None if timeout is None else timeout - (time.process_time() - started)
        if left is not None and left <= 0:
            raise TimeoutError
        match = compiled.search(text, position, timeout=left)
        if match is None:
            break
        start, end = match.span()
        if start == end == last_end:
            position += 1
            continue
        spans.append((start, end))
        position = last_end = end
    return spans


def _intervals(pattern: str) -> list[tuple[int, int, bool]]:
    """``(atom start, interval end, exact)`` of each interval quantifier (``{n}``, ``{n,m}``...)
    outside character classes: where the atom it repeats starts, the position right after its
    ``}``, and whether it is an exact count."""
    found: list[tuple[int, int, bool]] = []
    groups: list[int] = []
    atom: int | None = None  # where the last atom (a character, escape, class or group) starts
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if char == "\\":
            atom, i = i, escape_end(pattern, i)
            continue
        if char == "[":
            end = class_end(pattern, i)
            if end is None:
                return found
            atom, i = i, end
            continue
        if char == "(":
            groups.append(i)
            atom, i = None, i + 1
            continue
        if char == ")":
            atom, i = (groups.pop() if groups else None), i + 1
            continue
        if char == "|":
            atom, i = None, i + 1
            continue
        if char == "{" and (interval := _INTERVAL.match(pattern, i)) is not None and interval.group(1) + \
                interval.group(3):
            if atom is not None:
                found.append((atom, interval.end(), not interval.group(2)))
            i = interval.end()
            continue
        if char in _QUANTIFIER_STARTS:
            i += 1
            continue
        atom, i = i, i + 1
    return found


def _bare_p(pattern: str) -> list[tuple[int, str]]:
    """Where ``\\p`` or ``\\P`` stands without a ``{``, and its letter: Onig has no one-letter
    property (``\\pL``), so the escape is the letter itself, where the regex module reads ``\\p{L}``."""
    found = []
    i = pattern.find("\\")
    while i >= 0:
        end = escape_end(pattern, i)
        if end == i + 2 and pattern[i + 1] in "pP":
            found.append((i, pattern[i + 1]))
        i = pattern.find("\\", end)
    return found


def _foreign_option(tokens: list[str]) -> str | None:
    """The first option group other than ``i``, ``x`` and ``-`` among a pattern's ``tokens``
    (``_TOKEN``'s: Onig's ``(?m)`` is the regex module's ``(?s)``), or None."""
    return next((token for token in tokens if token.startswith("(?") and set(token[2:-1]) - set("ix-")), None)
