"""Hugging Face's normalizers beyond our trainers' own, and HF's character tables.

Covers the steps real ``tokenizer.json`` files use that our trainers never make: ``Prepend``,
``Replace`` (a string or an Onig regex), ``Strip``, HF's ``StripAccents`` (marks only, no NFD:
:class:`StripMarks`), ``Nmt`` and ``BertNormalizer``, each giving exactly what ``tokenizers``
gives. It also holds the character semantics of HF's Rust code where Python's differ:

- Rust lowercases one character at a time (``Σ`` is always ``σ``; Python makes a word-final one
  ``ς``), with Unicode 16 tables where Python 3.11 has Unicode 14 (``_LOWER_DRIFT``).
- HF's mark and control sets come from older Unicode tables than Python's ``unicodedata``
  (``_MARK_DRIFT``, ``_CONTROL_DRIFT``), and so do its NF* forms (``_FORM_DRIFT``: the U+32FF
  era sign, new modifier letters and marks, which HF neither decomposes, reorders nor composes:
  :func:`hf_normal_form`). The ``Punctuation`` and ``BertPreTokenizer`` steps' punctuation comes
  from older tables still, and ``Digits``' numbers (Rust's ``char::is_numeric``) from other ones
  than the ``regex`` module's (:func:`hf_punctuation`, :func:`hf_numeric`). The drift tables were
  read from ``tokenizers`` 0.23 and are tested against it over every code point.
- Rust's whitespace (``char::is_whitespace``) is Python's ``str.isspace`` without U+001C-U+001F.

Steps whose output depends on position (``Prepend``, ``Strip``) or whose pattern may span
grapheme clusters (``Replace``) offer ``aligned(text) -> (out, offsets)``, which
``engine.normalizers.normalize_aligned`` uses instead of its cluster-by-cluster map.

Left out: reading a file (``engine.normalizers.normalizer_from_hf``) and sentencepiece's
``Precompiled`` charsmap (``engine.spm_normalizer``).

Internal: not part of the engine's API (``engine.PUBLIC_MODULES``).
"""

from __future__ import annotations

import array
import functools
import unicodedata
from typing import Any

import regex

from engine.code_points import char_class, codes, holds_any, members, ranges, runs, table
from engine.errors import ConfigError
from engine.limits import run_budgeted, shown
from engine.onig import from_onig, onig_spans

# Rust's char::is_whitespace (the White_Space property): what Strip strips and Bert maps to " ".
RUST_WHITESPACE = ("\t\n\x0b\x0c\r \x85\xa0\u1680" + "".join(map(chr, range(0x2000, 0x200B)))
                   + "\u2028\u2029\u202f\u205f\u3000")

# Where tokenizers 0.23 and Python 3.11's unicodedata 14.0 disagree. Ranges are inclusive.
_MARK_DRIFT_NOT = (  # Python's category M*, but not a mark to HF (newer than HF's tables)
    "07FD 0898-089F 08CA-08D3 09FE 0AFA-0AFF 0B55 0C04 0C3C 0D00 0D3B-0D3C 0D81 0EBA 1715 180F 1ABF-1ACE "
    "1CF7 1DF6-1DFA A82C A8FF 10D24-10D27 10EAB-10EAC 10F46-10F50 10F82-10F85 11070 11073-11074 110C2 "
    "11145-11146 111C9 111CE-111CF 1133B 1145E 1182C-1183A 11930-11935 11937-11938 1193B-1193E 11940 "
    "11942-11943 119D1-119D7 119DA-119E0 119E4 11A01-11A0A 11A33-11A39 11A3B-11A3E 11A47 11A51-11A5B "
    "11A8A-11A99 11D31-11D36 11D3A 11D3C-11D3D 11D3F-11D45 11D47 11D8A-11D8E 11D90-11D91 11D93-11D97 "
    "11EF3-11EF6 16F4F 16F7F-16F87 16FE4 16FF0-16FF1 1CF00-1CF2D 1CF30-1CF46 1E130-1E136 1E2AE 1E2EC-1E2EF"
)
_MARK_DRIFT_PLUS = "1CF2-1CF3"  # marks to HF, letters (Lo) to Python
_BERT_MARK_DRIFT_NOT = (  # Mn to Python, not to BertNormalizer's strip_accents (older tables still)
    "07FD 0898-089F 08CA-08E1 09FE 0AFA-0AFF 0B55 0C04 0C3C 0D00 0D3B-0D3C 0D81 0EBA 180F 1885-1886 1ABF-1ACE "
    "1DF6-1DFB A82C A8C5 A8FF A9BD 10D24-10D27 10EAB-10EAC 10F46-10F50 10F82-10F85 11070 11073-11074 110C2 "
    "111C9 111CF 1123E 1133B 11438-1143F 11442-11444 11446 1145E 1182F-11837 11839-1183A 1193B-1193C 1193E "
    "11943 119D4-119D7 119DA-119DB 119E0 11A01-11A0A 11A33-11A38 11A3B-11A3E 11A47 11A51-11A56 11A59-11A5B "
    "11A8A-11A96 11A98-11A99 11C30-11C36 11C38-11C3D 11C3F 11C92-11CA7 11CAA-11CB0 11CB2-11CB3 11CB5-11CB6 "
    "11D31-11D36 11D3A 11D3C-11D3D 11D3F-11D45 11D47 11D90-11D91 11D95 11D97 11EF3-11EF4 16F4F 16FE4 "
    "1CF00-1CF2D 1CF30-1CF46 1E000-1E006 1E008-1E018 1E01B-1E021 1E023-1E024 1E026-1E02A 1E130-1E136 1E2AE "
    "1E2EC-1E2EF 1E944-1E94A"
)
_BERT_MARK_DRIFT_PLUS = "1734"  # Mc to Python 3.11, Mn to BertNormalizer
_CONTROL_DRIFT_NOT = "0890-0891 08E2 110CD 13430-13438"  # Cf to Python, unassigned (kept) to HF
_FORM_DRIFT = (  # what Python's NF* forms decompose, reorder or compose and HF's leave alone
    "07FD 0898-089F 08CA-08D3 09FE 0C3C 0D3B-0D3C 0EBA 1715 1ABF-1ACE 1DF6-1DFA 32FF A7F2-A7F4 A82C "
    "AB69 10781-10785 10787-107B0 107B2-107BA 10D24-10D27 10EAB-10EAC 10F46-10F50 10F82-10F85 11070 "
    "1133B 1145E 11839-1183A 11930 11935 11938 1193D-1193E 11943 119E0 11A34 11A47 11A99 11D42 "
    "11D44-11D45 11D97 16FF0-16FF1 1E130-1E136 1E2AE 1E2EC-1E2EF 1F16C 1FBF0-1FBF9"
)
_PUNCTUATION_DRIFT_NOT = (  # P* to the regex module, not punctuation to HF's (older) tables
    "061D 09FD 0A76 0C77 0C84 1B4E-1B4F 1B7D-1B7F 2E43-2E4F 2E52-2E5D 2E60-2E63 10D6E 10EAD 10ED0 "
    "10F55-10F59 10F86-10F89 113D4-113D5 113D7-113D8 1144B-1144F 1145A-1145B 1145D 11660-1166C 116B9 "
    "1183B 11944-11946 119E2 11A3F-11A46 11A9A-11A9C 11A9E-11AA2 11B00-11B09 11BE1 11C41-11C45 "
    "11C70-11C71 11EF7-11EF8 11F43-11F4F 11FFF 12FF1-12FF2 16D6D-16D6F 16E97-16E9A 16FE2 1E5FF "
    "1E95E-1E95F"
)
_PUNCTUATION_DRIFT_PLUS = "166D 111C9"  # punctuation to HF, other categories since
_NUMERIC_DRIFT_NOT = "1246F 12475-1247F 12550-12686"  # N* to the regex module, not to Rust's is_numeric
PUNCTUATION_DRIFT = _PUNCTUATION_DRIFT_NOT + " " + _PUNCTUATION_DRIFT_PLUS
NUMERIC_DRIFT = _NUMERIC_DRIFT_NOT
_LOWER_DRIFT = (  # upper-case letters Python 3.11 does not know: first[-last]>lowercase of first
    "1C89>1C8A A7CB>0264 A7CC>A7CD A7CE>A7CF A7D2>A7D3 A7D4>A7D5 A7DA>A7DB A7DC>019B "
    "10D50-10D65>10D70 16EA0-16EB8>16EBB"
)
# HF's is_chinese_char (U+2B820-U+2B91F is not in it).
_CJK = "4E00-9FFF 3400-4DBF 20000-2A6DF 2A700-2B73F 2B740-2B81F 2B920-2CEAF F900-FAFF 2F800-2FA1F"


@functools.cache
def hf_marks() -> frozenset[int]:
    """The code points HF's StripAccents drops (General_Category Mark in HF's Unicode tables)."""
    python = {code for code in range(0x110000) if unicodedata.category(chr(code))[0] == "M"}
    return frozenset((python - codes(_MARK_DRIFT_NOT)) | codes(_MARK_DRIFT_PLUS))


@functools.cache
def _mark_pattern() -> regex.Pattern[str]:
    return regex.compile(char_class(set(hf_marks())) + "+")


@functools.cache
def _bert_mark_pattern() -> regex.Pattern[str]:
    """BertNormalizer's strip_accents drops only nonspacing marks (Mn), from its own tables."""
    python = {code for code in range(0x110000) if unicodedata.category(chr(code)) == "Mn"}
    return regex.compile(char_class((python - codes(_BERT_MARK_DRIFT_NOT)) | codes(_BERT_MARK_DRIFT_PLUS)) + "+")


@functools.cache
def _form_drift_pattern() -> regex.Pattern[str]:
    return regex.compile(char_class(codes(_FORM_DRIFT)))


@functools.cache
def _drift_chars(spec: str) -> frozenset[str]:
    return frozenset(map(chr, codes(spec)))


def holds_drift(text: str, spec: str) -> bool:
    """Whether ``text`` holds a character of the drift table ``spec``: a set test for a line, one
    numpy lookup for a chunk (a regex search of 1 MB took 75 ms, the lookup 2 ms)."""
    if text.isascii():
        return False
    if len(text) < 4096:
        return not _drift_chars(spec).isdisjoint(text)
    return holds_any(table(spec), text)


def hf_normal_form(form: str, text: str) -> str:
    """``unicodedata.normalize(form, text)`` as HF's NF* normalizers give it: a character of
    ``_FORM_DRIFT`` is unknown to their tables, so it stays as it is and nothing reorders or
    composes across it (it is a starter with no decomposition), which normalizing the text
    between such characters on its own gives exactly."""
    if unicodedata.is_normalized(form, text):  # type: ignore[arg-type]
        return text  # then so is it to HF's tables, which agree on every character they know
    if not holds_drift(text, _FORM_DRIFT):
        return unicodedata.normalize(form, text)  # type: ignore[arg-type]
    out: list[str] = []
    last = 0
    for match in _form_drift_pattern().finditer(text):
        out += [unicodedata.normalize(form, text[last:match.start()]), match.group()]  # type: ignore[arg-type]
        last = match.end()
    out.append(unicodedata.normalize(form, text[last:]))  # type: ignore[arg-type]
    return "".join(out)


@functools.cache
def hf_punctuation() -> str:
    """HF's punctuation (its ``Punctuation`` and ``BertPreTokenizer``: ASCII's, and the P* categories
    of its tables) as the members of a ``regex`` class, each range once (~600 characters)."""
    found = _found(r"[!-/:-@\[-`{-~\p{P}]+")
    return members(runs((found - codes(_PUNCTUATION_DRIFT_NOT)) | codes(_PUNCTUATION_DRIFT_PLUS)))


@functools.cache
def hf_numeric() -> str:
    """What HF's ``Digits`` takes (Rust's ``char::is_numeric``) as the members of a ``regex`` class."""
    found = _found(r"\p{N}+")
    return members(runs(found - codes(_NUMERIC_DRIFT_NOT)))


def _found(pattern: str) -> set[int]:
    """The code points ``pattern`` (a run of a class) matches, one scan of every character (~20 ms)."""
    every = _every_character()
    return {ord(c) for match in regex.finditer(pattern, every) for c in match.group()}


def _every_character() -> str:
    """Every code point but the surrogates, in order (an array's bytes: a join of 1.1M ``chr`` took 0.14 s)."""
    points = array.array("I", range(0xD800))
    points.extend(range(0xE000, 0x110000))
    return points.tobytes().decode("utf-32-le")


def strip_marks(text: str) -> str:
    """``text`` without HF's combining marks (no decomposition first)."""
    return _mark_pattern().sub("", text)


@functools.cache
def _lower_table() -> dict[int, int]:
    lowered = {}
    for item in _LOWER_DRIFT.split():
        span, _, lower = item.partition(">")
        (first, last), = ranges(span)
        for code in range(first, last + 1):
            lowered[code] = int(lower, 16) + code - first
    return lowered


def hf_lowercase(text: str) -> str:
    """Rust's ``char::to_lowercase`` applied to each character, as HF's Lowercase does."""
    if text.isascii():
        return text.lower()
    # Python's only context-dependent rule is the final sigma; lowercasing Σ first avoids it.
    return text.replace("Σ", "σ").lower().translate(_lower_table())


class StripMarks:
    """HF's ``StripAccents``: drops combining marks, decomposing nothing (files put NFD before it)."""

    name = "strip_marks"
    ascii_charwise = True

    def normalize(self, text: str) -> str:
        return strip_marks(text)

    def to_hf(self) -> dict[str, Any]:
        return {"type": "StripAccents"}


class Prepend:
    """HF's ``Prepend``: puts ``prepend`` before a non-empty text (an empty one stays empty)."""

    ascii_charwise = False

    def __init__(self, prepend: str) -> None:
        self.prepend = prepend
        self.name = f"prepend({prepend})"

    def normalize(self, text: str) -> str:
        return self.prepend + text if text else text

    def aligned(self, text: str) -> tuple[str, list[int]]:
        """The prepended characters cover no input: they map to position 0."""
        if not text:
            return text, [0]
        return self.prepend + text, [0] * len(self.prepend) + list(range(len(text) + 1))

    def to_hf(self) -> dict[str, Any]:
        return {"type": "Prepend", "prepend": self.prepend}


class Strip:
    """HF's ``Strip``: removes Rust's whitespace (:data:`RUST_WHITESPACE`) at either end."""

    ascii_charwise = False

    def __init__(self, *, left: bool, right: bool) -> None:
        self.left = left
        self.right = right
        self.name = "strip"

    def _span(self, text: str) -> tuple[int, int]:
        start = len(text) - len(text.lstrip(RUST_WHITESPACE)) if self.left else 0
        end = len(text.rstrip(RUST_WHITESPACE)) if self.right else len(text)
        return start, max(start, end)

    def normalize(self, text: str) -> str:
        start, end = self._span(text)
        return text[start:end]

    def aligned(self, text: str) -> tuple[str, list[int]]:
        """Kept characters map to themselves; the end maps to the input's end, as every map's does
        (stripped trailing space joins the last character's span, as a deleted character does)."""
        start, end = self._span(text)
        return text[start:end], [*range(start, end), len(text)]

    def to_hf(self) -> dict[str, Any]:
        return {"type": "Strip", "strip_left": self.left, "strip_right": self.right}


_SLOW = ("The normalizer's Replace pattern", "simplify the pattern or shorten the text.")


class Replace:
    """HF's ``Replace``: every match of a string or an Onig regex becomes ``content``.

    Matches are found as Onig's ``find_iter`` finds them: leftmost first, ``^``/``$`` at every
    line, and an empty match right where the previous match ended is skipped (the regex module
    would take it). An empty text is left as it is, whatever the pattern. Regex matching is
    charged to the caller's ``engine.limits.time_budget``. A pattern whose Onig meaning we do not
    reproduce is refused with a ConfigError.
    """

    ascii_charwise = False

    def __init__(self, *, string: str | None = None, pattern: str | None = None, content: str) -> None:
        if (string is None) == (pattern is None):
            raise ConfigError("A Replace normalizer takes either a string or a regex pattern.")
        self.string = string
        self.pattern = pattern
        self.content = content
        self.name = "replace"
        self._regex: regex.Pattern[str] | None = None
        if pattern is not None:
            source = from_onig(pattern, "Replace pattern")
            try:
                self._regex = regex.compile(source)
            except (regex.error, OverflowError, RecursionError) as exc:
                raise ConfigError(f"The Replace pattern {shown(pattern)} is not a regex we can compile: "
                                  f"{exc}.") from None

    def _matches(self, text: str) -> list[tuple[int, int]]:
        if not text:
            return []
        if self._regex is None:
            needle = self.string or ""
            if not needle:
                return [(i, i) for i in range(len(text) + 1)]
            found, at = [], text.find(needle)
            while at >= 0:
                found.append((at, at + len(needle)))
                at = text.find(needle, at + len(needle))
            return found
        compiled = self._regex
        return run_budgeted(lambda timeout: onig_spans(compiled, text, timeout), *_SLOW)

    def normalize(self, text: str) -> str:
        if self._regex is None:
            return text.replace(self.string or "", self.content) if text else text
        return self.aligned(text)[0]

    def aligned(self, text: str) -> tuple[str, list[int]]:
        """The content of a match maps to where the match began; other characters to themselves."""
        out: list[str] = []
        offsets: list[int] = []
        done = 0
        for start, end in self._matches(text):
            out.append(text[done:start])
            offsets.extend(range(done, start))
            out.append(self.content)
            offsets.extend([start] * len(self.content))
            done = end
        out.append(text[done:])
        offsets.extend(range(done, len(text) + 1))
        return "".join(out), offsets

    def to_hf(self) -> dict[str, Any]:
        key, value = ("String", self.string) if self._regex is None else ("Regex", self.pattern)
        return {"type": "Replace", "pattern": {key: value}, "content": self.content}


_NMT_DROP = regex.compile(r"[\x01-\x08\x0b\x0e-\x1f\x7f\x8f\x9f]+")
_NMT_SPACE = str.maketrans(dict.fromkeys(
    map(ord, "\t\n\x0c\r\u1680\u200b\u200c\u200d\u200e\u200f\u2028\u2029\u2581\ufeff\ufffd"), " "))


class Nmt:
    """HF's ``Nmt``: sentencepiece's NMT rules, dropping some controls and mapping some spaces to " "."""

    name = "nmt"
    ascii_charwise = False

    def normalize(self, text: str) -> str:
        return _NMT_DROP.sub("", text).translate(_NMT_SPACE)

    def to_hf(self) -> dict[str, Any]:
        return {"type": "Nmt"}


@functools.cache
def _bert_patterns() -> tuple[regex.Pattern[str], dict[int, str], regex.Pattern[str]]:
    controls = {code for code in range(0x110000) if unicodedata.category(chr(code)) in ("Cc", "Cf", "Co")}
    controls = (controls - codes(_CONTROL_DRIFT_NOT) - set(map(ord, "\t\n\r"))) | {0, 0xFFFD}
    spaces = str.maketrans(dict.fromkeys(map(ord, RUST_WHITESPACE), " "))
    return regex.compile(char_class(controls) + "+"), spaces, regex.compile(char_class(codes(_CJK)))


class BertCleanup:
    """BERT's text cleaning: drop control characters, map whitespace to spaces, pad CJK chars."""

    name = "bert_cleanup"
    ascii_charwise = False  # drops control characters and maps tabs and newlines to spaces

    def __init__(self, *, clean_text: bool = True, handle_chinese_chars: bool = True) -> None:
        self.clean_text = clean_text
        self.handle_chinese_chars = handle_chinese_chars

    def normalize(self, text: str) -> str:
        controls, spaces, cjk = _bert_patterns()
        if self.clean_text:
            text = controls.sub("", text).translate(spaces)  # HF drops first, then maps
        if self.handle_chinese_chars and not text.isascii():
            text = cjk.sub(r" \g<0> ", text)
        return text

    def to_hf(self) -> dict[str, Any]:
        return {"type": "BertNormalizer", "clean_text": self.clean_text,
                "handle_chinese_chars": self.handle_chinese_chars, "strip_accents": False, "lowercase": False}


class BertNormalizer:
    """HF's ``BertNormalizer`` as one step: cleanup, CJK padding, NFD and Mn marks off, lowercase.

    ``strip_accents`` None follows ``lowercase``, as in HF; the order is HF's.
    """

    name = "bert"

    def __init__(self, *, clean_text: bool, handle_chinese_chars: bool, strip_accents: bool | None,
                 lowercase: bool) -> None:
        self.cleanup = BertCleanup(clean_text=clean_text, handle_chinese_chars=handle_chinese_chars)
        self.strip_accents = strip_accents
        self.lowercase = lowercase
        self.ascii_charwise = not clean_text

    def normalize(self, text: str) -> str:
        text = self.cleanup.normalize(text)
        if self.strip_accents if self.strip_accents is not None else self.lowercase:
            text = _bert_mark_pattern().sub("", hf_normal_form("NFD", text))
        return hf_lowercase(text) if self.lowercase else text

    def to_hf(self) -> dict[str, Any]:
        return {"type": "BertNormalizer", "clean_text": self.cleanup.clean_text,
                "handle_chinese_chars": self.cleanup.handle_chinese_chars,
                "strip_accents": self.strip_accents, "lowercase": self.lowercase}

