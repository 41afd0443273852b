"""Hugging Face's pre-tokenizers as ``tokenizer.json`` files use them, read exactly.

``pretokenizers.py`` holds the pre-tokenizers we train with (a regex split, BERT's, Metaspace);
this module reads everything else a real file may name and reproduces Hugging Face's pieces:

- ``Split`` with a ``String`` or ``Regex`` pattern, every ``behavior`` (Removed, Isolated,
  MergedWithPrevious, MergedWithNext, Contiguous) and ``invert``. The two cases a regex split
  already covers (Isolated; Removed with invert, i.e. findall) stay :class:`RegexSplit`, which
  has the fast paths; the rest are :class:`Split`.
- ``Digits`` and ``Punctuation``, which are splits on a character class.
- ``Sequence`` of any length: each step splits every piece of the step before, and the pieces
  keep their spans in the original text.
- ``ByteLevel``'s ``add_prefix_space``, as a step that puts a space before every piece that
  does not start with one (Hugging Face does it per piece, not once per text).

The ByteLevel step itself is the model's business (a byte-level BPE sees bytes), so
``tokenizer_json.py`` takes it out of the chain before calling :func:`pretokenizer_from_hf`.
Every error names the part and where it sits in the file (``pre_tokenizer.pretokenizers[2]``).

Internal: not part of the engine's API (``engine.PUBLIC_MODULES``).
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable
from typing import Any

import regex

from engine.code_points import ranges
from engine.errors import ConfigError, FormatError
from engine.limits import run_budgeted, shown
from engine.normalizers_hf import NUMERIC_DRIFT, PUNCTUATION_DRIFT, hf_numeric, hf_punctuation, holds_drift
from engine.onig import from_onig
from engine.pretokenizers import BertPreTokenizer, Metaspace, Piece, PreTokenizer, RegexSplit, WhitespaceSplit, hf_cuts

BEHAVIORS = ("Removed", "Isolated", "MergedWithPrevious", "MergedWithNext", "Contiguous")
# A sequence nested deeper than this is refused: real files have one level.
MAX_DEPTH = 8
# Steps in one sequence (DeepSeek V3 has four).
MAX_STEPS = 64
_SLOW = ("The Split pattern", "it backtracks too much on this input. Encode a shorter text.")


def _spans(matches: list[tuple[int, int, bool]], behavior: str) -> list[tuple[int, int]]:
    """The pieces ``[start, end)`` that ``behavior`` makes of a text cut into alternating matches
    and gaps (``is_match``), in Hugging Face's order of rules (normalizer.rs ``split``)."""
    kept: list[list[int]] = []
    if behavior == "Removed":
        return [(a, b) for a, b, is_match in matches if not is_match and a < b]
    if behavior == "Isolated":
        return [(a, b) for a, b, _ in matches if a < b]
    previous = False
    if behavior == "MergedWithNext":
        for a, b, is_match in reversed(matches):
            if is_match and not previous and kept:
                kept[-1][0] = a
            else:
                kept.append([a, b])
            previous = is_match
        kept.reverse()
    else:
        for a, b, is_match in matches:
            joins = (is_match and not previous) if behavior == "MergedWithPrevious" else is_match == previous
            if joins and kept:
                kept[-1][1] = b
            else:
                kept.append([a, b])
            previous = is_match
    return [(a, b) for a, b in kept if a < b]


class Split:
    """Hugging Face's ``Split``: cut at the matches of a pattern and join them as ``behavior`` says."""

    name = "split"

    def __init__(self, pattern: str, *, literal: bool, behavior: str, invert: bool = False) -> None:
        if behavior not in BEHAVIORS:
            raise ConfigError(f"The Split behavior {shown(behavior)} is not one of {', '.join(BEHAVIORS)}.")
        self.pattern, self.literal, self.behavior, self.invert = pattern, literal, behavior, invert
        source = regex.escape(pattern) if literal else from_onig(pattern, "Split pattern")
        try:
            self._regex = regex.compile(source) if pattern else None
        except (regex.error, OverflowError, RecursionError) as exc:
            raise ConfigError(f"The Split pattern {shown(pattern)} is not a valid regex: {exc}.") from None

    def _matches(self, text: str, timeout: float | None) -> list[tuple[int, int, bool]]:
        """The text as alternating gaps and matches (``pretokenizers.hf_cuts``); an empty pattern
        matches nothing (as HF), and an empty text is one empty gap."""
        found = self._cuts(text, timeout) if self._regex is not None else []
        if not found:
            found = [(0, len(text), False)]
        if self.invert:
            found = [(a, b, not is_match) for a, b, is_match in found]
        return found

    def _cuts(self, text: str, timeout: float | None) -> list[tuple[int, int, bool]]:
        assert self._regex is not None
        return hf_cuts(self._regex, text, timeout)

    def split(self, text: str) -> list[Piece]:
        matches = run_budgeted(lambda timeout: self._matches(text, timeout), *_SLOW)
        return [Piece(text[a:b], a, b) for a, b in _spans(matches, self.behavior)]

    def pieces(self, text: str) -> list[str]:
        return [piece.text for piece in self.split(text)]

    def to_hf(self) -> dict[str, Any]:
        return {"type": "Split", "pattern": {"String" if self.literal else "Regex": self.pattern},
                "behavior": self.behavior, "invert": self.invert}


class _TableSplit(Split):
    """A step that cuts at characters of one of HF's own tables (not at a pattern of the file): the
    ``regex`` module's property where the tables agree, HF's set spelled out for a text with a
    character they disagree on (``drift``: a few hundred, none common)."""

    def __init__(self, fast: str, exact: Callable[[], str], drift: str, *, behavior: str) -> None:
        super().__init__(fast, literal=False, behavior=behavior)
        self._exact, self._drift = exact, drift

    def _cuts(self, text: str, timeout: float | None) -> list[tuple[int, int, bool]]:
        compiled = _exact_pattern(self._exact()) if holds_drift(text, self._drift) else self._regex
        assert compiled is not None
        return hf_cuts(compiled, text, timeout, onig_tables=False)


@functools.cache
def _exact_pattern(members: str) -> regex.Pattern[str]:
    return regex.compile(f"[{members}]")


class Digits(_TableSplit):
    """Hugging Face's ``Digits``: each digit alone, or runs of digits together. A digit is what
    Rust's ``char::is_numeric`` takes (``normalizers_hf.hf_numeric``)."""

    name = "digits"

    def __init__(self, *, individual_digits: bool = False) -> None:
        super().__init__(r"\p{N}", hf_numeric, NUMERIC_DRIFT,
                         behavior="Isolated" if individual_digits else "Contiguous")
        self.individual_digits = individual_digits

    def to_hf(self) -> dict[str, Any]:
        return {"type": "Digits", "individual_digits": self.individual_digits}


class Punctuation(_TableSplit):
    """Hugging Face's ``Punctuation``: ASCII punctuation and Unicode P* characters of HF's tables
    (``normalizers_hf.hf_punctuation``), by ``behavior``."""

    name = "punctuation"

    def __init__(self, *, behavior: str = "Isolated") -> None:
        super().__init__(r"[!-/:-@\[-`{-~\p{P}]", hf_punctuation, PUNCTUATION_DRIFT, behavior=behavior)

    def to_hf(self) -> dict[str, Any]:
        return {"type": "Punctuation", "behavior": self.behavior}


class PrefixSpace:
    """ByteLevel's ``add_prefix_space``: a space before every piece that does not start with one.

    The space covers no input character, as Metaspace's dummy prefix does (``Piece.offsets``).
    Written back as part of the ByteLevel step, which ``tokenizer_json.py`` owns.
    """

    name = "prefix-space"

    def split(self, text: str) -> list[Piece]:
        if not text or text.startswith(" "):
            return [Piece(text, 0, len(text))] if text else []
        return [Piece(" " + text, 0, len(text), (0,) + tuple(range(len(text) + 1)))]

    def pieces(self, text: str) -> list[str]:
        return [piece.text for piece in self.split(text)]

    def to_hf(self) -> dict[str, Any]:
        return {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": False}


class UnicodeScripts:
    """Hugging Face's ``UnicodeScripts``: a piece starts wherever the script changes, by HF's own
    table (``engine/hf_scripts.py``: classes of code points, Hiragana, Katakana and U+30FC read
    as Han). A space, or a character the table does not know, has no script: it stays with the
    piece before it and never changes the script the next character is compared with. Text
    before the first character with a script is dropped, as Hugging Face drops it."""

    name = "unicode-scripts"

    def split(self, text: str) -> list[Piece]:
        import numpy as np  # not at import: the command lines set numpy's threads first (engine/processes.py)

        kinds = _script_table()[np.frombuffer(text.encode("utf-32-le", "surrogatepass"), np.uint32)]
        scripted = np.flatnonzero(kinds)
        if not len(scripted):
            return []
        changes = kinds[scripted]
        starts = scripted[np.concatenate(([True], changes[1:] != changes[:-1]))].tolist()
        bounds = [*starts, len(text)]
        return [Piece(text[a:b], a, b) for a, b in zip(bounds, bounds[1:])]

    def pieces(self, text: str) -> list[str]:
        return [piece.text for piece in self.split(text)]

    def to_hf(self) -> dict[str, Any]:
        return {"type": "UnicodeScripts"}


@functools.cache
def _script_table() -> Any:
    """Each code point's script class (``engine/hf_scripts.py``), one byte each (1.1 MB, made once)."""
    import numpy as np

    from engine.hf_scripts import RANGES

    kinds = np.zeros(0x110000, np.uint8)
    for item in RANGES.split():
        span, _, kind = item.partition(":")
        (first, last), = ranges(span)
        kinds[first:last + 1] = int(kind)
    return kinds


class Sequence:
    """Several pre-tokenizers in order: each splits every piece the one before produced.

    A step with a form for text that does not start the input (``later``: a Metaspace with
    prepend_scheme "first") takes that form for every piece but the one at position 0, as
    Hugging Face prepends only where a piece's original offset is 0 (Digits then Metaspace:
    "a 4" is "▁a▁", "4", not "▁4")."""

    name = "sequence"

    def __init__(self, steps: list[PreTokenizer]) -> None:
        self.steps = steps
        self._rest = [getattr(step, "later", lambda step=step: step)() for step in steps]

    def later(self) -> Sequence:
        """This sequence for text after a special token: no piece starts the input (itself
        when no step has another form)."""
        return self if all(map(operator.is_, self._rest, self.steps)) else Sequence(self._rest)

    def split(self, text: str) -> list[Piece]:
        pieces = [Piece(text, 0, len(text))] if text else []
        for step, rest in zip(self.steps, self._rest):
            pieces = [_within(outer, inner) for outer in pieces
                      for inner in (step if outer.start == 0 else rest).split(outer.text)]
        return pieces

    def pieces(self, text: str) -> list[str]:
        return [piece.text for piece in self.split(text)]

    def to_hf(self) -> dict[str, Any]:
        return {"type": "Sequence", "pretokenizers": [step.to_hf() for step in self.steps]}


def _within(outer: Piece, inner: Piece) -> Piece:
    """``inner`` (a piece of ``outer.text``) with its spans in the text ``outer`` came from."""
    if outer.offsets is None and inner.offsets is None:
        return Piece(inner.text, outer.start + inner.start, outer.start + inner.end)
    boundaries = (inner.offsets if inner.offsets is not None
                  else tuple(range(inner.start, inner.end + 1)))
    offsets = tuple(outer.boundary(i) for i in boundaries)
    return Piece(inner.text, offsets[0], offsets[-1], offsets)


def _split_from_hf(data: dict[str, Any], where: str) -> PreTokenizer:
    pattern = data.get("pattern")
    behavior, invert = data.get("behavior", "Isolated"), data.get("invert", False)
    if not isinstance(pattern, dict) or len(pattern) != 1 or not isinstance(next(iter(pattern.values())), str) \
            or next(iter(pattern)) not in ("String", "Regex"):
        raise FormatError(f"{where}.pattern must be {{\"String\": text}} or {{\"Regex\": pattern}}, "
                          f"not {shown(pattern)}.")
    if behavior not in BEHAVIORS or not isinstance(invert, bool):
        raise FormatError(f"{where} has behavior {shown(behavior)} with invert {shown(invert)}; the behavior must be "
                          f"one of {', '.join(BEHAVIORS)} and invert true or false.")
    (kind, source), = pattern.items()
    try:
        # The regex split's two cases have its fast paths (and its own check against empty matches).
        if kind == "Regex" and (behavior, invert) in (("Isolated", False), ("Removed", True)):
            try:
                return RegexSplit(source, keep_gaps=behavior == "Isolated", onig=True)
            except ConfigError:
                pass  # a pattern that matches empty pieces (refused for ours), or a bad one: Split says which
        return Split(source, literal=kind == "String", behavior=behavior, invert=invert)
    except ConfigError as exc:
        raise FormatError(f"{where}: {exc}") from None


def _metaspace_from_hf(data: dict[str, Any], where: str) -> PreTokenizer:
    scheme = data.get("prepend_scheme", "always" if data.get("add_prefix_space", True) else "never")
    if scheme not in ("always", "never", "first"):
        raise FormatError(f"{where}.prepend_scheme must be always, never or first, not {shown(scheme)}.")
    try:
        return Metaspace(data.get("replacement", "▁"), add_dummy_prefix=scheme != "never",
                         split_by_whitespace=bool(data.get("split", True)), prepend_first_only=scheme == "first")
    except ConfigError as exc:
        raise FormatError(f"{where}: {exc}") from None


def pretokenizer_from_hf(data: Any, where: str = "pre_tokenizer", depth: int = 0) -> PreTokenizer | None:
    """Read a Hugging Face ``pre_tokenizer`` object (without its ByteLevel step: see the module
    docstring); a part we do not reproduce exactly is refused, naming ``where`` it is."""
    if data is None:
        return None
    if not isinstance(data, dict):
        raise FormatError(f"{where} must be an object, not {shown(data)}.")
    kind = data.get("type")
    if kind == "Sequence":
        steps = data.get("pretokenizers")
        if not isinstance(steps, list):
            raise FormatError(f"{where}.pretokenizers must be a list.")
        if depth >= MAX_DEPTH or len(steps) > MAX_STEPS:
            raise FormatError(f"{where} nests or chains too many pre-tokenizers (at most {MAX_DEPTH} levels "
                              f"of {MAX_STEPS} steps).")
        read = [pretokenizer_from_hf(step, f"{where}.pretokenizers[{i}]", depth + 1) for i, step in enumerate(steps)]
        flat: list[PreTokenizer] = []
        for step in read:
            if isinstance(step, Sequence):
                flat.extend(step.steps)
            elif step is not None:
                flat.append(step)
        return None if not flat else flat[0] if len(flat) == 1 else Sequence(flat)
    if kind == "Split":
        return _split_from_hf(data, where)
    if kind == "Metaspace":
        return _metaspace_from_hf(data, where)
    if kind == "WhitespaceSplit":
        return WhitespaceSplit()
    if kind == "BertPreTokenizer":
        return BertPreTokenizer()
    if kind == "Whitespace":  # word and punctuation runs; the spaces between are dropped
        return RegexSplit(r"\w+|[^\w\s]+", name="hf-whitespace", keep_gaps=False)
    if kind == "CharDelimiterSplit":  # HF splits at the character and drops it: a Removed Split
        delimiter = data.get("delimiter")
        if not isinstance(delimiter, str) or len(delimiter) != 1:
            raise FormatError(f"{where}.delimiter must be one character, not {shown(delimiter)}.")
        return _split_from_hf({"pattern": {"String": delimiter}, "behavior": "Removed", "invert": False}, where)
    if kind == "Digits":
        return Digits(individual_digits=bool(data.get("individual_digits", False)))
    if kind == "UnicodeScripts":
        return UnicodeScripts()
    if kind == "Punctuation":
        behavior = data.get("behavior", "Isolated")
        if behavior not in BEHAVIORS:
            raise FormatError(f"{where}.behavior must be one of {', '.join(BEHAVIORS)}, not {shown(behavior)}.")
        return Punctuation(behavior=behavior)
    raise FormatError(f"The pre-tokenizer type {shown(kind)} ({where}) is not supported.")
