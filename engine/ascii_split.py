"""A faster pre-tokenizer split for the named patterns: the standard ``re`` on ASCII text.

The stdlib ``re`` runs the GPT-2/GPT-4/o200k patterns about twice as fast as ``regex`` but has
no ``\\p{L}``. On ASCII text the Unicode classes reduce to plain ranges, so each named pattern
has an ASCII twin written with explicit classes. ``\\s`` is spelled ``[\\t-\\r ]`` because
``re``'s ``\\s`` also matches the separators ``\\x1c``-``\\x1f`` and ``regex``'s does not.
tests/engine/test_tokenizer.py proves the twins equal on every short string over a
representative alphabet and on random ASCII.

Mixed text is cut at safe points, where none of the named patterns joins text across the cut: a
newline between two non-space characters, the second not ``/`` (as ``Tokenizer.encode_iterable``
also relies on), and a space after a printable ASCII character. The stretches around non-ASCII
characters go to ``regex``, the rest to ``re``. Custom patterns
are left to ``regex``; this module only speeds up, it never changes a split.

Internal: not part of the engine's API (``engine.PUBLIC_MODULES``).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable

import regex

from engine.pretokenizers import GPT2_PATTERN, GPT4_PATTERN, O200K_PATTERN, PreTokenizer, RegexSplit, get_pretokenizer
from engine.unicode_twin import needs_twin

_S = r"[\t-\r ]"  # regex's \s on ASCII
_NS = r"[^\t-\r ]"  # regex's \S on ASCII
_OTHER = r"[^\t-\r A-Za-z0-9]"  # [^\s\p{L}\p{N}] on ASCII
_CONTRACTIONS = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)?"

ASCII_TWINS: dict[str, str] = {
    # " ?" is factored out of the three runs: the same matches (a space followed by none of the
    # runs fails all of them either way), and ~8% fewer instructions in re, which otherwise
    # re-reads the optional space for each alternative that fails.
    GPT2_PATTERN: (
        rf"""'(?:[sdmt]|ll|ve|re)| ?(?:[A-Za-z]++|[0-9]++|{_OTHER}++)|{_S}++$|{_S}+(?!{_NS})|{_S}"""
    ),
    GPT4_PATTERN: (
        rf"""'(?i:[sdmt]|ll|ve|re)|[^\r\nA-Za-z0-9]?+[A-Za-z]++|[0-9]{{1,3}}+| ?{_OTHER}++[\r\n]*+"""
        rf"""|{_S}++$|{_S}*[\r\n]|{_S}+(?!{_NS})|{_S}"""
    ),
    O200K_PATTERN: "|".join(
        [
            rf"""[^\r\nA-Za-z0-9]?[A-Z]*[a-z]+{_CONTRACTIONS}""",
            rf"""[^\r\nA-Za-z0-9]?[A-Z]+[a-z]*{_CONTRACTIONS}""",
            r"""[0-9]{1,3}""",
            rf""" ?{_OTHER}+[\r\n/]*""",
            rf"""{_S}*[\r\n]+""",
            rf"""{_S}+(?!{_NS})""",
            rf"""{_S}+""",
        ]
    ),
}

_NON_ASCII = re.compile(r"[^\x00-\x7f]")
# Safe cuts: Tokenizer.encode_iterable's newline (o200k joins "/" after a newline, "{\n//", so not
# there), and a space after a printable ASCII character: no piece of the named patterns has a
# space after its first character except runs of whitespace, so a piece always ends before such
# a space, whatever follows, and none of the patterns looks behind. The space cut keeps the
# stretches given to regex to about a word around each non-ASCII character.
_CUT_BEFORE = regex.compile(r"(?r)(?<=\S\n)(?=[^\s/])|(?<=[!-~])(?= )")
_CUT_AFTER = regex.compile(r"(?<=\S\n)(?=[^\s/])|(?<=[!-~])(?= )")
_GAP = 2048  # text shorter than this with any non-ASCII goes to regex whole
_JOIN = 64  # ASCII stretches shorter than this between non-ASCII ones stay with regex
_DENSE = 64  # text whose UTF-8 has over 1/64 extra bytes goes to regex whole
_SPLITTERS: dict[str, Callable[[str], list[str]]] = {}


def _make_splitter(pattern: str) -> Callable[[str], list[str]]:
    fast = re.compile(ASCII_TWINS[pattern]).findall
    slow = regex.compile(pattern).findall

    def split(text: str) -> list[str]:
        if text.isascii():
            return fast(text)
        if len(text) < _GAP or (len(text.encode("utf-8")) - len(text)) * _DENSE > len(text):
            return slow(text)  # short or largely non-ASCII: cutting would cost more than it saves
        pieces: list[str] = []
        position, end = 0, len(text)
        while (found := _NON_ASCII.search(text, position)) is not None:
            before = _CUT_BEFORE.search(text, position, found.start())
            start = before.start() if before is not None else position
            stop = found.end()
            while True:  # grow the stretch while more non-ASCII follows closely: fewer slow calls
                after = _CUT_AFTER.search(text, stop)
                stop = after.start() if after is not None else end
                found = _NON_ASCII.search(text, stop, stop + _JOIN)
                if found is None:
                    break
                stop = found.end()
            if start > position:
                pieces += fast(text[position:start])
            pieces += slow(text[start:stop])
            position = stop
        if position < end:
            pieces += fast(text[position:])
        return pieces

    return split


def splitter_for(pattern: object) -> Callable[[str], list[str]] | None:
    """The fast split for a named pattern, or None for any other pattern."""
    if not isinstance(pattern, str) or pattern not in ASCII_TWINS:
        return None
    if pattern not in _SPLITTERS:
        _SPLITTERS[pattern] = _make_splitter(pattern)
    return _SPLITTERS[pattern]


def fastest_split(pre_tokenizer: PreTokenizer) -> Callable[[str], list[str]]:
    """``pre_tokenizer.pieces``, or its ASCII twin where it has one: the same pieces, faster.

    The engine's one way to split text into pre-tokens: the tokenizer, the trainers' counting and
    :func:`pretoken_split` all use it, so their pieces always agree.
    """
    if type(pre_tokenizer) is RegexSplit and (fast := splitter_for(pre_tokenizer.source)):
        return functools.partial(_as_the_reference_reads, fast, pre_tokenizer)
    return pre_tokenizer.pieces


def _as_the_reference_reads(fast: Callable[[str], list[str]], pre_tokenizer: RegexSplit, text: str) -> list[str]:
    """A named pattern: the fast split, unless tiktoken's or Onig's Unicode tables, older than the
    ``regex`` module's, read ``text`` otherwise (``unicode_twin.py``); then the pre-tokenizer's
    own split, which knows."""
    return pre_tokenizer.pieces(text) if needs_twin(pre_tokenizer.source, text, onig_word=pre_tokenizer.onig) \
        else fast(text)


def pretoken_split(name: str) -> Callable[[str], list[str]]:
    """The split of the pre-tokenizer ``get_pretokenizer(name)`` (``"gpt2"``, ``"gpt4"``, ...), as
    the engine runs it when it trains and encodes: its pieces, by the fastest route there is. Public
    (``engine.pretoken_split``), so that a caller's pre-token counts always match the trainers'."""
    return fastest_split(get_pretokenizer(name))
