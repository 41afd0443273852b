"""Reading a corpus for the Unigram trainer: lines are sentences, words are ``▁``-prefixed.

The counting itself is the shared ``counting.count_pretokens``; this module only says how a
chunk of whole lines splits into words, sentencepiece's way.

Internal: not part of the engine's API (``engine.PUBLIC_MODULES``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import regex

from engine.normalizers import Normalizer
from engine.trainers.base import Reporter
from engine.trainers.corpus import cuts_are_safe
from engine.trainers.counting import count_pretokens
from engine.trainers.unigram.options import UnigramOptions

SPACE = "\u2581"
_WORD = regex.compile(f"{SPACE}[^{SPACE}\\n]*|[^{SPACE}\\n]+")
_LINE_START = regex.compile(r"(?m)^(?=[^\n])")


class MetaspaceSplit:
    """Metaspace pre-tokens of a chunk of whole lines, as a picklable splitter for ``count_pretokens``.

    Lines are sentences: with ``add_dummy_prefix`` each line that does not begin with a space
    gets a ``▁``; every space becomes ``▁``; a word is a ``▁`` and what follows up to the next one
    (or a whole line, without ``split_by_whitespace``). Newlines are read as Python's text mode
    reads them (``\\r\\n`` and a lone ``\\r`` end a line), as the trainer always has.
    """

    def __init__(self, *, add_dummy_prefix: bool, split_by_whitespace: bool) -> None:
        self.add_dummy_prefix = add_dummy_prefix
        self.split_by_whitespace = split_by_whitespace

    def __call__(self, text: str) -> list[str]:
        if "\r" in text:
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        if self.add_dummy_prefix:
            mid_line = text.startswith(" ")
            text = _LINE_START.sub(SPACE, text)
            if mid_line:
                text = text[1:]
        text = text.replace(" ", SPACE)
        if self.split_by_whitespace:
            return _WORD.findall(text)
        return [line for line in text.split("\n") if line]


def count_words(files: Sequence[Path], normalizer: Normalizer | None, options: UnigramOptions,
                reporter: Reporter) -> dict[str, int]:
    """Distinct Metaspace pre-tokens of every line, with counts, on every core (``count_pretokens``).

    No special tokens are cut out: sentencepiece reads them as text too. Over-long documents may
    be cut before a space or newline between letters only when words never cross whitespace: the
    ``▁`` goes with the word after it, which stays whole on the cut's right side, and a chunk that
    begins with a space gets no dummy prefix (:class:`MetaspaceSplit`).
    """
    split = MetaspaceSplit(add_dummy_prefix=options.add_dummy_prefix, split_by_whitespace=options.split_by_whitespace)
    safe_cuts = options.split_by_whitespace and cuts_are_safe("whitespace", normalizer)
    return count_pretokens(files, split=split, normalizer=normalizer, reporter=reporter, safe_cuts=safe_cuts,
                           num_workers=options.num_workers)
