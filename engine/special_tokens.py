"""Special tokens: find them in text, longest match first, and check the caller allowed them.

Special tokens are matched on the raw text before normalization and pre-tokenization, so a
special token is never split or merged. Where two special tokens overlap at the same position
the longer one wins (``<|endoftext|><|endoftext|>`` beats ``<|endoftext|>``), which is why the
alternation is built longest first.

The tokens are checked on construction (``engine.limits.check_special_tokens``): an empty one
would match between every two characters. Matching respects ``engine.limits.time_budget``,
and only a few alternations are kept (the API lets each request name its own allowed set).

Internal: not part of the engine's API (``engine.PUBLIC_MODULES``).
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping
from typing import Literal

import regex

from engine.errors import SpecialTokenError
from engine.limits import check_special_tokens, run_budgeted
from engine.unicode_twin import matcher

AllowedSpecial = Literal["all"] | Collection[str]
_KEPT_PATTERNS = 8  # alternations kept per tokenizer; more distinct allowed sets start afresh
_SLOW = ("Looking for special tokens", "encode a shorter text.")


# Hugging Face's lstrip/rstrip take Unicode whitespace (Rust's char::is_whitespace) into the match.
_SPACE = r"\p{White_Space}*"
_LEADING_SPACE = regex.compile(_SPACE)
_WORD = regex.compile(r"\w")


def _is_word(char: str) -> bool:
    """Whether ``char`` is in Rust's ``\\w`` (single_word's test), with its Unicode tables."""
    return matcher(_WORD, char, onig_word=False).match(char) is not None


def _alternation(tokens: Collection[str], strip: Mapping[str, tuple[bool, bool]]) -> regex.Pattern[str] | None:
    r"""One pattern matching any of ``tokens``, the longest where several start at one position.

    The tokens go into a trie written as nested groups (``<unused1`` and ``<unused12`` share
    their prefix), each node's longer continuations before its own end, so the regex engine
    walks one path per position instead of trying every token in turn: Gemma 3's 6,415 added
    tokens compile twice as fast and match a text about 80 times faster than as a flat
    longest-first alternation. Tokens that take the whitespace before them (lstrip) form a
    second trie behind ``\p{White_Space}*``, tried first; rstrip puts it after the token's end.
    """
    if not tokens:
        return None
    before = [token for token in tokens if strip.get(token, (False, False))[0]]
    rest = [token for token in tokens if not strip.get(token, (False, False))[0]]
    after = {token for token in tokens if strip.get(token, (False, False))[1]}
    parts = ([_SPACE + "(?:" + _trie(before, after) + ")"] if before else []) + ([_trie(rest, after)] if rest else [])
    return regex.compile("|".join(parts))


def _trie(tokens: Collection[str], rstrip: Collection[str]) -> str:
    r"""A pattern for ``tokens`` shaped as their trie: at each node the continuations by character,
    then the node's own end (``""``, or ``\p{White_Space}*`` for an rstrip token) last, so the
    longest token wins. Built bottom-up without recursion (a token may be 1,024 characters)."""
    end = object()  # marks a node where a token ends; its value is what follows the token
    root: dict[object, dict] = {}  # type: ignore[type-arg]
    for token in tokens:
        node = root
        for char in token:
            node = node.setdefault(char, {})
        node[end] = _SPACE if token in rstrip else ""  # type: ignore[assignment]
    written: dict[int, str] = {}
    stack: list[tuple[dict, bool]] = [(root, False)]  # type: ignore[type-arg]
    while stack:
        node, children_done = stack.pop()
        children = sorted((char, child) for char, child in node.items() if char is not end)  # type: ignore[type-var]
        if not children_done:
            stack.append((node, True))
            stack.extend((child, False) for _, child in children)
            continue
        branches = [regex.escape(char) + written.pop(id(child)) for char, child in children]
        if end in node:
            branches.append(node[end])  # type: ignore[arg-type]
        written[id(node)] = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
    return written[id(root)]


class SpecialTokens:
    """A fixed set of special tokens and their ids, and the other added tokens.

    ``added`` are Hugging Face's non-special added tokens (Gemma's runs of spaces, HTML tags):
    part of the vocabulary, matched whole wherever they occur like special tokens, but never
    refused and never in need of allowing. ``strip`` names the tokens whose match takes the
    whitespace before (lstrip) or after (rstrip) it, as Hugging Face's added tokens may.
    ``normalized`` names the tokens Hugging Face matches on the normalized text (``"normalized":
    true``, NLLB's ``<mask>``): :meth:`split` leaves them to a second split of each normalized
    stretch (``normalized=True``), as Hugging Face's ``extract_and_normalize`` does.
    ``single_word`` names those that count only as a word of their own: a match with a word
    character (Rust's ``\\w``) right before or after it is text, as Hugging Face's ``find_matches``
    discards it, and the search goes on after it (it never looks inside a discarded match).
    """

    def __init__(
        self,
        tokens: Mapping[str, int] | None = None,
        *,
        added: Mapping[str, int] | None = None,
        strip: Mapping[str, tuple[bool, bool]] | None = None,
        normalized: Collection[str] = (),
        single_word: Collection[str] = (),
    ) -> None:
        self.ids: dict[str, int] = dict(tokens or {})
        self.added: dict[str, int] = dict(added or {})
        check_special_tokens({**self.ids, **self.added})
        self.on_normalized = frozenset(normalized) & {*self.ids, *self.added}
        self.single_word = frozenset(single_word) & {*self.ids, *self.added}
        self.strip: dict[str, tuple[bool, bool]] = {t: flags for t, flags in (strip or {}).items() if any(flags)}
        self.by_id: dict[int, str] = {i: t for t, i in {**self.ids, **self.added}.items()}
        self.special_ids = frozenset(self.ids.values())  # what decoding may skip: not the added tokens
        self._patterns: dict[frozenset[str], regex.Pattern[str] | None] = {}

    def by_id_of(self, token: str) -> int:
        """The id of a special or added token."""
        found = self.ids.get(token)
        return found if found is not None else self.added[token]

    def __len__(self) -> int:
        return len(self.ids)

    def __contains__(self, token: object) -> bool:
        return token in self.ids

    def _pattern(self, tokens: frozenset[str]) -> regex.Pattern[str] | None:
        found = self._patterns.get(tokens, False)
        if found is False:
            if len(self._patterns) >= _KEPT_PATTERNS:
                self._patterns = {}  # a new dict, not clear(): other threads may be reading the old one
            found = self._patterns[tokens] = _alternation(tokens, self.strip)
        return found

    def _token(self, matched: str) -> str:
        """The token a match stands for: itself, or itself without the whitespace it took in."""
        if matched in self.ids or matched in self.added:
            return matched
        for candidate in (matched.strip(), matched.lstrip(), matched.rstrip()):
            if candidate in self.ids or candidate in self.added:
                return candidate
        raise KeyError(matched)  # pragma: no cover - every alternative is a known token

    def _alone(self, text: str, match: regex.Match[str], token: str) -> bool:
        """Whether the token of ``match`` (which may hold the whitespace it strips) has no word
        character right before or after it in ``text``."""
        lead = len(_LEADING_SPACE.match(match.group()).group()) - len(_LEADING_SPACE.match(token).group())
        start = match.start() + max(lead, 0) if self.strip.get(token, (False, False))[0] else match.start()
        end = start + len(token)
        return not (start > 0 and _is_word(text[start - 1])) and not (end < len(text) and _is_word(text[end]))

    def resolve(self, allowed_special: AllowedSpecial,
                disallowed_special: AllowedSpecial) -> tuple[frozenset[str], frozenset[str]]:
        """Turn tiktoken-style arguments into (allowed, disallowed) sets of known tokens."""
        allowed = frozenset(self.ids) if allowed_special == "all" else frozenset(allowed_special)
        unknown = sorted(allowed - set(self.ids))
        if unknown:
            raise SpecialTokenError(
                f"{unknown[0]!r} is not a special token of this tokenizer; "
                f"its special tokens are: {', '.join(sorted(self.ids)) or 'none'}."
            )
        if disallowed_special == "all":
            disallowed = frozenset(self.ids) - allowed
        else:
            disallowed = frozenset(disallowed_special) & frozenset(self.ids)
        return allowed, disallowed

    def check_disallowed(self, text: str, disallowed: frozenset[str]) -> None:
        """Raise SpecialTokenError naming the first disallowed special token found in ``text``."""
        pattern = self._pattern(disallowed)
        if pattern is None:
            return
        match = run_budgeted(lambda timeout: pattern.search(text, timeout=timeout), *_SLOW)
        if match is not None:
            token = self._token(match.group())
            raise SpecialTokenError(
                f"The text contains the special token {token!r} (at character {match.start()}), "
                f"which is not allowed. Pass allowed_special={{{token!r}}} (or allowed_special=\"all\") "
                f"to encode it as a special token, or disallowed_special=() to encode it as plain text."
            )

    def split(self, text: str, allowed: frozenset[str], *, normalized: bool = False
              ) -> Iterator[tuple[int, int, int | None]]:
        """Yield ``(start, end, id)`` segments of ``text``; ``id`` is None for ordinary text.

        The added tokens are always matched, beside the ``allowed`` special tokens: those matched
        on the text as typed, or with ``normalized`` those matched on normalized text."""
        tokens = allowed | frozenset(self.added)
        pattern = self._pattern(tokens & self.on_normalized if normalized else tokens - self.on_normalized)
        position = 0
        if pattern is not None:
            matches = run_budgeted(lambda timeout: list(pattern.finditer(text, timeout=timeout)), *_SLOW)
            for match in matches:
                token = self._token(match.group())
                if token in self.single_word and not self._alone(text, match, token):
                    continue  # text, as the text around it
                if match.start() > position:
                    yield position, match.start(), None
                yield match.start(), match.end(), self.by_id_of(token)
                position = match.end()
        if position < len(text):
            yield position, len(text), None
