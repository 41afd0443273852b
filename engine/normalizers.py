"""Normalizers: rewrite text before it is pre-tokenized (lowercase, strip accents, NFC/NFKC).

Each normalizer has ``normalize(text) -> str``. For highlighting, ``normalize_aligned`` also
returns, for every character boundary of the output, the input position it came from. It
normalizes one grapheme cluster at a time, which is exact for the normalizers here (none of
them moves characters across a cluster boundary) and cheap to map: a cluster whose output has
the same length maps character by character, any other cluster maps as a whole. Normalizers
that turn every ASCII character into exactly one character, whatever its neighbours
(``ascii_charwise``), have their ASCII runs normalized whole instead: the same output and map,
without a Python call per character.

Deliberately left out: normalizers that need a model (sentencepiece's precompiled charsmap);
importing a tokenizer.json that uses one fails with a clear FormatError.
"""

from __future__ import annotations

import functools
import unicodedata
from collections.abc import Callable
from typing import Any, Protocol

import regex

from engine.errors import ConfigError, FormatError

_GRAPHEME = regex.compile(r"\X")
_ASCII_RUN = regex.compile(r"[\x00-\x7f]+")


class Normalizer(Protocol):
    name: str

    def normalize(self, text: str) -> str: ...

    def to_hf(self) -> dict[str, Any]: ...


def normalize_aligned(normalizer: Normalizer, text: str) -> tuple[str, list[int]]:
    """Normalize ``text``; also return ``len(out) + 1`` input positions, one per output boundary.

    With an ``ascii_charwise`` normalizer, ASCII runs are normalized whole and map character by
    character; a run's last character is left to the grapheme path when a non-ASCII character
    follows, since a combining mark after it would join its cluster. An ASCII character never
    combines with what precedes it (no canonical composition has an ASCII second character),
    so a run can start anywhere. The result equals :func:`normalize_aligned_reference`'s.
    """
    out: list[str] = []
    offsets: list[int] = []
    done = 0
    if getattr(normalizer, "ascii_charwise", False):
        for match in _ASCII_RUN.finditer(text):
            start, end = match.span()
            if end < len(text):
                end -= 1
            if end == start:
                continue
            _by_cluster(normalizer, text, done, start, out, offsets)
            out.append(normalizer.normalize(text[start:end]))
            offsets.extend(range(start, end))
            done = end
    _by_cluster(normalizer, text, done, len(text), out, offsets)
    offsets.append(len(text))
    return _with_context(normalizer, text, "".join(out), offsets)


def _by_cluster(normalizer: Normalizer, text: str, start: int, stop: int, out: list[str], offsets: list[int]) -> None:
    """Normalize ``text[start:stop]`` one grapheme cluster at a time, appending to ``out`` and ``offsets``."""
    for match in _GRAPHEME.finditer(text, start, stop):
        a, b = match.span()
        piece = normalizer.normalize(match.group())
        if len(piece) == b - a:
            offsets.extend(range(a, b))
        else:
            offsets.extend([a] * len(piece))
        out.append(piece)


def _with_context(normalizer: Normalizer, text: str, joined: str, offsets: list[int]) -> tuple[str, list[int]]:
    """The whole text's normalization, with ``offsets`` mended where it differs from ``joined``.

    A cluster cannot see its neighbours, but a normalizer may: Python lowercases a word-final
    "Σ" to "ς", and "σ" elsewhere. The output must be exactly what ``normalize`` gives (the ids
    must match ``encode``'s), so where the two differ, the stretch between their common prefix
    and common suffix maps as one unit to the input where it begins.
    """
    whole = normalizer.normalize(text)
    if whole == joined:
        return joined, offsets
    prefix = 0
    limit = min(len(whole), len(joined))
    while prefix < limit and whole[prefix] == joined[prefix]:
        prefix += 1
    suffix = 0
    while suffix < limit - prefix and whole[-1 - suffix] == joined[-1 - suffix]:
        suffix += 1
    middle = len(whole) - prefix - suffix
    return whole, offsets[:prefix] + [offsets[prefix]] * middle + offsets[len(joined) - suffix :]


def normalize_aligned_reference(normalizer: Normalizer, text: str) -> tuple[str, list[int]]:
    """The slow, obviously-correct :func:`normalize_aligned`: every cluster on its own, then the
    whole text's context."""
    out: list[str] = []
    offsets: list[int] = []
    _by_cluster(normalizer, text, 0, len(text), out, offsets)
    offsets.append(len(text))
    return _with_context(normalizer, text, "".join(out), offsets)


class Lowercase:
    name = "lowercase"
    ascii_charwise = True

    def normalize(self, text: str) -> str:
        return text.lower()

    def to_hf(self) -> dict[str, Any]:
        return {"type": "Lowercase"}


class UnicodeForm:
    """One of the four Unicode normal forms."""

    def __init__(self, form: str) -> None:
        if form not in ("NFC", "NFD", "NFKC", "NFKD"):
            raise ConfigError(f"Unknown Unicode normal form {form!r}; use NFC, NFD, NFKC or NFKD.")
        self.form = form
        self.name = form.lower()
        self.ascii_charwise = True  # ASCII is invariant under all four forms

    def normalize(self, text: str) -> str:
        return unicodedata.normalize(self.form, text)  # type: ignore[arg-type]

    def to_hf(self) -> dict[str, Any]:
        return {"type": self.form}


@functools.cache
def _mark_stripper() -> Callable[[str], str]:
    """A function removing every character ``unicodedata`` calls Mn (a nonspacing mark).

    One regex substitution is ~15x faster than testing each character's category. The regex
    module's Unicode tables may be newer than ``unicodedata``'s, so the class is corrected by
    the differences; if the corrected class still disagrees, ``str.translate`` does it exactly.
    """
    every = "".join(map(chr, range(0x110000)))
    ours = {c for c in every if unicodedata.category(c) == "Mn"}
    theirs = set(regex.findall(r"\p{Mn}", every))
    extra = "".join(regex.escape(c) for c in sorted(theirs - ours))
    missing = "".join(regex.escape(c) for c in sorted(ours - theirs))
    marks = r"[[\p{Mn}" + (f"--[{extra}]" if extra else "") + "]" + (f"[{missing}]" if missing else "") + "]"
    if set(regex.findall("(?V1)" + marks, every)) != ours:  # pragma: no cover - defensive
        table = dict.fromkeys(map(ord, ours))
        return lambda text: text.translate(table)
    pattern = regex.compile("(?V1)" + marks + "+")
    return lambda text: pattern.sub("", text)


def strip_marks_reference(text: str) -> str:
    """The obviously-correct (slow) StripAccents, for tests: NFD, then drop category Mn."""
    return "".join(c for c in unicodedata.normalize("NFD", text) if unicodedata.category(c) != "Mn")


class StripAccents:
    """Decompose (NFD) and drop combining marks, as BERT's uncased models do."""

    name = "strip_accents"
    ascii_charwise = True

    def normalize(self, text: str) -> str:
        return _mark_stripper()(unicodedata.normalize("NFD", text))

    def to_hf(self) -> dict[str, Any]:
        # HF's StripAccents only drops marks; it expects an NFD step before it.
        return {"type": "Sequence", "normalizers": [{"type": "NFD"}, {"type": "StripAccents"}]}


class Sequence:
    """Apply several normalizers in order."""

    def __init__(self, normalizers: list[Normalizer]) -> None:
        self.normalizers = normalizers
        self.name = "+".join(n.name for n in normalizers)
        self.ascii_charwise = all(getattr(n, "ascii_charwise", False) for n in normalizers)

    def normalize(self, text: str) -> str:
        for normalizer in self.normalizers:
            text = normalizer.normalize(text)
        return text

    def to_hf(self) -> dict[str, Any]:
        steps: list[dict[str, Any]] = []
        for normalizer in self.normalizers:
            data = normalizer.to_hf()
            steps.extend(data["normalizers"] if data["type"] == "Sequence" else [data])
        return {"type": "Sequence", "normalizers": steps}


NORMALIZER_NAMES = ("identity", "lowercase", "strip_accents", "nfc", "nfd", "nfkc", "nfkd")


def get_normalizer(spec: str | list[str] | tuple[str, ...] | None) -> Normalizer | None:
    """Build a normalizer from names such as ``"nfkc"``, ``"lowercase,strip_accents"`` or a list."""
    if spec is None:
        return None
    names = [n.strip() for n in spec.split(",")] if isinstance(spec, str) else list(spec)
    steps: list[Normalizer] = []
    for name in names:
        if name in ("", "identity", "none"):
            continue
        if name == "lowercase":
            steps.append(Lowercase())
        elif name == "strip_accents":
            steps.append(StripAccents())
        elif name.upper() in ("NFC", "NFD", "NFKC", "NFKD"):
            steps.append(UnicodeForm(name.upper()))
        else:
            raise ConfigError(
                f"Unknown normalizer {name!r}; choose from: {', '.join(NORMALIZER_NAMES)}."
            )
    if not steps:
        return None
    return steps[0] if len(steps) == 1 else Sequence(steps)


def normalizer_from_hf(data: dict[str, Any] | None) -> Normalizer | None:
    """Read a Hugging Face ``normalizer`` object."""
    if data is None:
        return None
    kind = data.get("type")
    if kind == "Sequence":
        inner = [normalizer_from_hf(d) for d in data.get("normalizers", [])]
        # NFD followed by StripAccents is our single StripAccents step.
        steps: list[Normalizer] = []
        for step in inner:
            if step is None:
                continue
            if isinstance(step, StripAccents) and steps and getattr(steps[-1], "form", None) == "NFD":
                steps.pop()
            steps.append(step)
        return None if not steps else steps[0] if len(steps) == 1 else Sequence(steps)
    if kind == "Lowercase":
        return Lowercase()
    if kind == "StripAccents":
        return StripAccents()
    if kind in ("NFC", "NFD", "NFKC", "NFKD"):
        return UnicodeForm(kind)
    if kind == "BertNormalizer":
        steps = []
        if data.get("lowercase", True):
            steps.append(Lowercase())
        strip = data.get("strip_accents")
        if strip or (strip is None and data.get("lowercase", True)):
            steps.append(StripAccents())
        if data.get("clean_text", True) or data.get("handle_chinese_chars", True):
            steps.insert(0, BertCleanup(
                clean_text=bool(data.get("clean_text", True)),
                handle_chinese_chars=bool(data.get("handle_chinese_chars", True)),
            ))
        return steps[0] if len(steps) == 1 else Sequence(steps)
    raise FormatError(f"The normalizer type {kind!r} is not supported.")


def _is_cjk(code: int) -> bool:
    return (
        0x4E00 <= code <= 0x9FFF or 0x3400 <= code <= 0x4DBF or 0x20000 <= code <= 0x2A6DF
        or 0x2A700 <= code <= 0x2B73F or 0x2B740 <= code <= 0x2B81F or 0x2B820 <= code <= 0x2CEAF
        or 0xF900 <= code <= 0xFAFF or 0x2F800 <= code <= 0x2FA1F
    )


class BertCleanup:
    """BERT's text cleaning: drop control characters, map whitespace to spaces, pad CJK chars."""

    name = "bert_cleanup"
    ascii_charwise = False  # drops control characters and maps tabs and newlines to spaces

    def __init__(self, *, clean_text: bool = True, handle_chinese_chars: bool = True) -> None:
        self.clean_text = clean_text
        self.handle_chinese_chars = handle_chinese_chars

    def normalize(self, text: str) -> str:
        out = []
        for char in text:
            code = ord(char)
            if self.clean_text:
                if code == 0 or code == 0xFFFD or (
                    unicodedata.category(char).startswith("C") and char not in "\t\n\r"
                ):
                    continue
                if char in "\t\n\r" or unicodedata.category(char) == "Zs":
                    char = " "
            if self.handle_chinese_chars and _is_cjk(code):
                out.append(f" {char} ")
            else:
                out.append(char)
        return "".join(out)

    def to_hf(self) -> dict[str, Any]:
        return {
            "type": "BertNormalizer",
            "clean_text": self.clean_text,
            "handle_chinese_chars": self.handle_chinese_chars,
            "strip_accents": False,
            "lowercase": False,
        }
