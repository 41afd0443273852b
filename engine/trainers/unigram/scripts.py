"""Which characters may share a Unigram piece: sentencepiece's script rule.

sentencepiece (``TrainerInterface::IsValidSentencePiece``) rejects a piece when two neighbouring
characters belong to different Unicode scripts (with ``split_by_unicode_script``). Details that
matter for the vocabulary, all mirrored here:

* Hiragana, Katakana and the prolonged sound mark U+30FC count as Han, so Japanese words are
  one run.
* Decimal digits (ASCII ``0-9`` and fullwidth ``０-９``) keep their script, Common. So
  ``split_by_number=True`` (the default) does *not* isolate digits: "1.", "(1)" and "1.5" are
  valid pieces (digits with Common punctuation), "F1" and "第1" are not (Latin or Han with
  Common). With ``split_by_number=False`` digits are a wildcard that joins any script. On
  zh.txt, treating digits as a class of their own cost about 2% more held-out tokens.
* A wildcard resets the comparison: sentencepiece compares each character with the one before
  it only, so "a1β" is valid without ``split_by_number``. The rule is therefore pairwise, and
  a word splits into *segments* at each incompatible neighbour pair: a substring is a valid
  piece exactly when it lies inside one segment.
* Combining marks (script Inherited) take the class of the character before them. Deviation:
  sentencepiece lets a piece *start* with a combining mark and then accepts any script after
  it; such pieces are left out here (they are rare, and useless for segmenting text).

``▁`` may only start a piece (``split_by_whitespace``), and characters outside the required set
never appear in a piece. Scripts outside ``_SCRIPTS`` share one class; sentencepiece tells them
apart, which matters only where two rare scripts touch.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import regex

ANY = "Any"  # joins every class (digits without split_by_number; everything without scripts)
INHERITED = "Inherited"
# Scripts tested in this order; anything else is classed "Other".
_SCRIPTS = (
    "Latin", "Common", "Han", "Hiragana", "Katakana", "Cyrillic", "Greek", "Hangul", "Arabic",
    "Hebrew", "Thai", "Devanagari", "Inherited", "Armenian", "Georgian", "Bengali", "Tamil",
    "Ethiopic", "Khmer", "Lao", "Myanmar", "Sinhala", "Telugu", "Kannada", "Malayalam",
    "Gujarati", "Gurmukhi", "Oriya", "Tibetan", "Mongolian", "Bopomofo", "Yi", "Cherokee",
)
_SCRIPT_RES = [(name, regex.compile(rf"\p{{Script={name}}}")) for name in _SCRIPTS]
_DECIMAL = regex.compile("[0-9\uff10-\uff19]")  # sentencepiece's is_unicode_decimal_number
_MERGED_INTO_HAN = {"Hiragana", "Katakana"}


def char_class(char: str, *, split_by_unicode_script: bool, split_by_number: bool) -> str:
    """The script class of one character (``ANY`` joins everything; ``INHERITED`` copies the
    class of the character before it)."""
    if not split_by_unicode_script or (not split_by_number and _DECIMAL.match(char)):
        return ANY
    if char == "\u30fc":  # the prolonged sound mark joins Han, as in sentencepiece
        return "Han"
    for name, pattern in _SCRIPT_RES:
        if pattern.match(char):
            return "Han" if name in _MERGED_INTO_HAN else name
    return "Other"


def compatible(before: str, after: str) -> bool:
    """Whether two neighbouring (resolved) classes may sit in one piece."""
    return before == after or before == ANY or after == ANY


def segments(word: str, classes: Mapping[str, str], space: str) -> Iterable[str]:
    """The maximal runs of ``word`` that a valid piece may lie in (``▁`` starts a run).

    ``classes`` maps each required character to its :func:`char_class`; other characters are
    in no run.
    """
    start = -1  # start of the current run, or -1 outside one
    prev = ANY  # resolved class of the previous character in the run
    for i, char in enumerate(word):
        cls = classes.get(char)
        if cls is None:  # not a required character: ends the run, starts none
            if start >= 0:
                yield word[start:i]
            start, prev = -1, ANY
            continue
        if char == space:  # ▁ only as a piece's first character
            if start >= 0:
                yield word[start:i]
            start, prev = i, ANY
            continue
        if cls == INHERITED:
            cls = prev
        if start >= 0 and not compatible(prev, cls):
            yield word[start:i]
            start = -1
        if start < 0:
            start = i
        prev = cls
    if start >= 0:
        yield word[start:]


def is_valid_piece(piece: str, classes: Mapping[str, str], space: str, max_piece_length: int) -> bool:
    """The slow, obviously-correct rule, character by character as sentencepiece states it.

    Tests check that a substring is valid exactly when it lies inside one of :func:`segments`
    (for pieces that do not start with a combining mark, see the module docstring)."""
    if not piece or len(piece) > max_piece_length:
        return False
    prev = ANY
    for pos, char in enumerate(piece):
        if char not in classes:
            return False
        if char == space:
            if pos > 0:
                return False
            continue
        cls = classes[char]
        cls = prev if cls == INHERITED else cls
        if not compatible(prev, cls):
            return False
        prev = cls
    return True
