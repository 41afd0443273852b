"""Vocabulary entries that no merge can build, and which of them to take as special tokens.

GPT-2's ``vocab.json`` holds ``<|endoftext|>`` at 50256, but ``merges.txt`` cannot build it and the
file does not say it is special. Imported as an ordinary token it is dead weight, and the text
``<|endoftext|>`` encodes as 7 pieces where every GPT-2 tokenizer gives one special token. So when
the user names no special tokens, an entry that is *unreachable* (neither a single byte nor the
result of any merge) and *looks special* (``<…>`` or ``[…]`` without spaces: ``<|endoftext|>``,
``<s>``, ``</s>``, ``<unk>``, ``[CLS]``, ``<mask>``) is taken as one. An unreachable entry that does
not look special stays in the vocabulary, where it still decodes, and is reported, never dropped
in silence. When the user names special tokens, nothing is guessed; unreachable entries they did
not name are reported.

Left out: reading the files (``gpt2.py``) and building the tokenizer (``gpt2.build_gpt2``).

Internal: not part of the engine's API (``engine.PUBLIC_MODULES``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import regex

from engine.byte_unicode import UNICODE_TO_BYTE
from engine.limits import MAX_SPECIAL_CHARS, MAX_SPECIAL_TOKEN_LENGTH, MAX_SPECIAL_TOKENS, shown

# Angle or square brackets around at least one character that is neither whitespace nor a
# bracket of the same kind: `<|endoftext|>`, `</s>`, `[MASK]`; not `< a >`, `<>` or `<<x>>`.
_LOOKS_SPECIAL = regex.compile(r"<[^\s<>]+>|\[[^\s\[\]]+\]")
NAMED_IN_NOTE = 5  # tokens quoted in one note; the rest are counted


def looks_special(token: str) -> bool:
    """Whether ``token`` is written like a special token: ``<…>`` or ``[…]`` with no spaces inside."""
    return _LOOKS_SPECIAL.fullmatch(token) is not None


def unreachable(vocab: Mapping[str, int], merges: Iterable[tuple[str, str, int]]) -> list[str]:
    """The entries of ``vocab`` that are neither a single byte nor a merge's result, in id order."""
    built = {left + right for left, right, _line in merges}
    return sorted((t for t in vocab if t not in built and not (len(t) == 1 and t in UNICODE_TO_BYTE)),
                  key=vocab.__getitem__)


@dataclass(frozen=True, slots=True)
class SpecialChoice:
    """The special tokens an import uses, which of them were guessed, and what stays unreachable."""

    tokens: tuple[str, ...]  # the special tokens to build with: the user's, or the guessed ones
    guessed: tuple[tuple[str, int], ...]  # (token, id) taken as special because they look special
    stranded: tuple[tuple[str, int], ...]  # (token, id) unreachable entries left as ordinary tokens

    def notes(self) -> list[str]:
        """One plain sentence for the guessed tokens and one for the stranded ones (none if neither)."""
        notes = []
        if self.guessed:
            one = len(self.guessed) == 1
            notes.append(f"Taken as special {'token' if one else 'tokens'}, since no special tokens were named: "
                         f"{_named(self.guessed)}; vocab.json holds {'it' if one else 'them'}, no merge in "
                         f"merges.txt builds {'it' if one else 'them'}, and {'it is' if one else 'they are'} "
                         "written like a special token (<…> or […]). Name the special tokens to choose others.")
        if self.stranded:
            one = len(self.stranded) == 1
            notes.append(f"No merge in merges.txt builds {_named(self.stranded)}, so encoding never gives "
                         f"{'it' if one else 'them'}; {'it stays' if one else 'they stay'} in the vocabulary "
                         f"and still {'decodes' if one else 'decode'}. "
                         + ("If it is a special token, name it among the special tokens." if one else
                            "Name those that are special tokens among the special tokens."))
        return notes


def _named(entries: Sequence[tuple[str, int]]) -> str:
    """``'<|endoftext|>' (id 50256)``, a few of them, then how many more."""
    named = ", ".join(f"{shown(token)} (id {token_id})" for token, token_id in entries[:NAMED_IN_NOTE])
    more = len(entries) - NAMED_IN_NOTE
    return f"{named} and {more:,} more" if more > 0 else named


def choose_specials(vocab: Mapping[str, int], merges: Iterable[tuple[str, str, int]],
                    given: Sequence[str] = ()) -> SpecialChoice:
    """The special tokens to import with: ``given`` if any, else the unreachable entries that look special.

    Guessing stops within the engine's bounds on special tokens (count, length, total characters),
    so a strange file makes a longer note, never a refused import; the entries past a bound are
    reported with the other stranded ones.
    """
    lost = unreachable(vocab, merges)
    if given:
        named = set(given)
        return SpecialChoice(tuple(given), (), tuple((t, vocab[t]) for t in lost if t not in named))
    guessed: list[tuple[str, int]] = []
    stranded: list[tuple[str, int]] = []
    chars = 0
    for token in lost:
        fits = (len(guessed) < MAX_SPECIAL_TOKENS and len(token) <= MAX_SPECIAL_TOKEN_LENGTH
                and chars + len(token) <= MAX_SPECIAL_CHARS)
        if fits and looks_special(token):
            guessed.append((token, vocab[token]))
            chars += len(token)
        else:
            stranded.append((token, vocab[token]))
    return SpecialChoice(tuple(t for t, _ in guessed), tuple(guessed), tuple(stranded))
