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
apart, which matters only where two rare scripts touch. The seed finds the segments with one
regex (``segments.segment_pattern``); the slow, obviously-correct rules it is tested against
(``segments``, ``is_valid_piece``) are in ``tests/engine/unigram_reference.py``.

Internal: not part of the engine's API (``engine.PUBLIC_MODULES``).
"""

from __future__ import annotations

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
