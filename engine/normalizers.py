"""Normalizers: rewrite text before it is pre-tokenized (lowercase, strip accents, NFC/NFKC).

Each normalizer has ``normalize(text) -> str``. For highlighting, ``normalize_aligned`` also
returns, for every character boundary of the output, the input position it came from. It
normalizes one grapheme cluster at a time, which is exact for the normalizers here (none of
them moves characters across a cluster boundary) and cheap to map: a cluster whose output has
the same length maps character by character, any other cluster maps as a whole. Normalizers
that turn every ASCII character into exactly one character, whatever its neighbours
(``ascii_charwise``), have their ASCII runs normalized whole instead: the same output and map,
without a Python call per character.

A normalizer whose output depends on position (Prepend, Strip) or whose pattern may span
clusters (Replace) has its own exact ``aligned(text)``, which ``normalize_aligned`` uses; a
``Sequence`` composes the maps of its steps. Hugging Face's steps and character semantics
(per-character lowercase, HF's marks and controls) are in ``engine.normalizers_hf``.

Deliberately left out: sentencepiece's precompiled charsmap, read through
``engine.spm_normalizer`` when that module is there, refused with a FormatError otherwise.

Internal: not part of the engine's API (``engine.PUBLIC_MODULES``).
"""

from __future__ import annotations

import importlib
from typing import Any, Protocol

import regex

from engine.errors import ConfigError, FormatError
from engine.limits import shown
from engine.normalizers_hf import (
    BertCleanup,
    BertNormalizer,
    Nmt,
    Prepend,
    Replace,
    Strip,
    StripMarks,
    hf_lowercase,
    hf_marks,
    hf_normal_form,
    strip_marks,
)

__all__ = [
    "BertCleanup", "BertNormalizer", "Lowercase", "Nmt", "Normalizer", "Prepend", "Replace", "Sequence", "Strip",
    "StripAccents", "StripMarks", "UnicodeForm", "get_normalizer", "normalize_aligned", "normalize_aligned_reference",
    "normalizer_from_hf", "strip_marks_reference", "MAX_NORMALIZER_DEPTH", "MAX_NORMALIZER_STEPS",
]

MAX_NORMALIZER_DEPTH = 32
"""How deeply ``Sequence`` normalizers may nest in a file; real files nest at most twice."""

MAX_NORMALIZER_STEPS = 1024
"""Normalizer objects in one file, Sequences included; real ones have a dozen at most."""

_GRAPHEME = regex.compile(r"\X")
_ASCII_RUN = regex.compile(r"[\x00-\x7f]+")


class Normalizer(Protocol):
    name: str

    def normalize(self, text: str) -> str: ...

    def to_hf(self) -> dict[str, Any]: ...


def normalize_aligned(normalizer: Normalizer, text: str) -> tuple[str, list[int]]:
    """Normalize ``text``; also return ``len(out) + 1`` input positions, one per output boundary.

    A normalizer with its own ``aligned`` method gives the map itself; the others are mapped
    one grapheme cluster at a time by :func:`_clusterwise`. The offsets are non-decreasing,
    run from 0 to ``len(text)``, and the text is always ``normalizer.normalize(text)``.
    """
    own = getattr(normalizer, "aligned", None)
    return own(text) if own is not None else _clusterwise(normalizer, text)


def _clusterwise(normalizer: Normalizer, text: str) -> tuple[str, list[int]]:
    """:func:`normalize_aligned` for a normalizer that never moves text across a cluster boundary.

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
    """HF's Lowercase: Rust's per-character lowercase, so a final "Σ" is "σ", as HF makes it."""

    name = "lowercase"
    ascii_charwise = True

    def normalize(self, text: str) -> str:
        return hf_lowercase(text)

    def to_hf(self) -> dict[str, Any]:
        return {"type": "Lowercase"}


class UnicodeForm:
    """One of the four Unicode normal forms, as Hugging Face's tables make them (``hf_normal_form``)."""

    def __init__(self, form: str) -> None:
        if form not in ("NFC", "NFD", "NFKC", "NFKD"):
            raise ConfigError(f"Unknown Unicode normal form {form!r}; use NFC, NFD, NFKC or NFKD.")
        self.form = form
        self.name = form.lower()
        self.ascii_charwise = True  # ASCII is invariant under all four forms

    def normalize(self, text: str) -> str:
        return hf_normal_form(self.form, text)

    def to_hf(self) -> dict[str, Any]:
        return {"type": self.form}


def strip_marks_reference(text: str) -> str:
    """The obviously-correct (slow) StripAccents, for tests: NFD, then drop HF's marks one by one."""
    marks = hf_marks()
    return "".join(c for c in hf_normal_form("NFD", text) if ord(c) not in marks)


class StripAccents:
    """Decompose (NFD) and drop combining marks (HF's set: Mn, Mc and Me), as BERT's uncased models do."""

    name = "strip_accents"
    ascii_charwise = True

    def normalize(self, text: str) -> str:
        return strip_marks(hf_normal_form("NFD", text))

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

    def aligned(self, text: str) -> tuple[str, list[int]]:
        """Each stretch of cluster-local steps mapped by cluster, each other step by its own map,
        composed: an output boundary maps through every step's map back to the input."""
        if not any(hasattr(step, "aligned") for step in self.normalizers):
            return _clusterwise(self, text)
        offsets = list(range(len(text) + 1))
        local: list[Normalizer] = []
        for step in [*self.normalizers, None]:
            if step is not None and not hasattr(step, "aligned"):
                local.append(step)
                continue
            stages: list[Normalizer] = ([local[0]] if len(local) == 1 else [Sequence(local)]) if local else []
            for stage in stages + ([step] if step is not None else []):
                text, inner = normalize_aligned(stage, text)
                offsets = [offsets[i] for i in inner]
            local = []
        return text, offsets

    def to_hf(self) -> dict[str, Any]:
        steps: list[dict[str, Any]] = []
        for normalizer in self.normalizers:
            data = normalizer.to_hf()
            # Our StripAccents writes [NFD, StripAccents]: splice it in. A Sequence read from a
            # file stays nested, so the file is written back as it was read.
            nested = data["type"] == "Sequence" and not isinstance(normalizer, Sequence)
            steps.extend(data["normalizers"] if nested else [data])
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


def normalizer_from_hf(data: Any, path: str = "normalizer") -> Normalizer | None:
    """Read a Hugging Face ``normalizer`` object; ``to_hf`` of the result writes it back unchanged.

    Every FormatError names where in the file the bad part is (``normalizer.normalizers[1]``).
    """
    if data is None:
        return None
    return _read(data, path, depth=0, count=[0])


def _read(data: Any, path: str, *, depth: int, count: list[int]) -> Normalizer:
    count[0] += 1
    if count[0] > MAX_NORMALIZER_STEPS:
        raise FormatError(f"{path}: the file has over {MAX_NORMALIZER_STEPS:,} normalizers "
                          "(engine.normalizers.MAX_NORMALIZER_STEPS).")
    if not isinstance(data, dict):
        raise FormatError(f"{path}: a normalizer must be an object, not {shown(data)}.")
    kind = data.get("type")
    if kind == "Sequence":
        if depth >= MAX_NORMALIZER_DEPTH:
            raise FormatError(f"{path}: Sequence normalizers nest more than {MAX_NORMALIZER_DEPTH} deep "
                              "(engine.normalizers.MAX_NORMALIZER_DEPTH).")
        steps = _field(data, "normalizers", list, path)
        return Sequence([_read(step, f"{path}.normalizers[{i}]", depth=depth + 1, count=count)
                         for i, step in enumerate(steps)])
    simple = {"Lowercase": Lowercase, "StripAccents": StripMarks, "Nmt": Nmt}
    if kind in simple:
        return simple[kind]()  # type: ignore[no-any-return]
    if kind in ("NFC", "NFD", "NFKC", "NFKD"):
        return UnicodeForm(kind)
    if kind == "Prepend":
        return Prepend(_field(data, "prepend", str, path))
    if kind == "Strip":
        return Strip(left=_field(data, "strip_left", bool, path), right=_field(data, "strip_right", bool, path))
    if kind == "Replace":
        return _replace(data, path)
    if kind == "BertNormalizer":
        strip = data.get("strip_accents", "missing")
        if strip is not None and not isinstance(strip, bool):
            raise FormatError(f"{path}.strip_accents must be true, false or null, not {shown(strip)}.")
        return BertNormalizer(clean_text=_field(data, "clean_text", bool, path),
                              handle_chinese_chars=_field(data, "handle_chinese_chars", bool, path),
                              strip_accents=strip, lowercase=_field(data, "lowercase", bool, path))
    if kind == "Precompiled":
        try:  # written elsewhere; until it is there, such a file is refused
            precompiled = importlib.import_module("engine.spm_normalizer").Precompiled
        except (ImportError, AttributeError):
            raise FormatError(f"The normalizer type 'Precompiled' is not supported (at {path}).") from None
        try:
            return precompiled.from_hf(data)  # type: ignore[no-any-return]
        except FormatError as exc:
            raise FormatError(f"{path}: {exc}") from None
    raise FormatError(f"The normalizer type {shown(kind)} is not supported (at {path}).")


def _field(data: dict[str, Any], key: str, kind: type, path: str) -> Any:
    value = data.get(key)
    if not isinstance(value, kind):
        raise FormatError(f"{path}.{key} must be a {kind.__name__}, not {shown(value)}.")
    return value


def _replace(data: dict[str, Any], path: str) -> Replace:
    pattern = data.get("pattern")
    content = _field(data, "content", str, path)
    if not isinstance(pattern, dict) or len(pattern) != 1 or next(iter(pattern)) not in ("String", "Regex"):
        raise FormatError(f'{path}.pattern must be {{"String": ...}} or {{"Regex": ...}}, not {shown(pattern)}.')
    (key, value), = pattern.items()
    if not isinstance(value, str):
        raise FormatError(f"{path}.pattern.{key} must be a string, not {shown(value)}.")
    if key == "String":
        return Replace(string=value, content=content)
    try:
        return Replace(pattern=value, content=content)
    except ConfigError as exc:
        raise FormatError(f"{path}.pattern.Regex: {exc}") from None
