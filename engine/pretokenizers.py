"""Pre-tokenizers: cut text into pieces that no token may cross.

A pre-tokenizer has two views of the same split. ``pieces(text)`` returns just the strings and
is the hot path of encoding and training (one ``findall`` call). ``split(text)`` returns
``Piece`` records that also say where each piece came from, so tokens can be mapped back to the
caller's characters for highlighting. Pre-tokenizers that rewrite text (``Metaspace`` turns
spaces into ``▁`` and may add one in front) carry a per-character offset table.

Covered: the GPT-2 (r50k), GPT-4 (cl100k) and o200k patterns, any custom regex, whitespace
splitting, BERT's split (whitespace, then each punctuation character alone) and sentencepiece's
Metaspace. Each can be written as and read from its Hugging Face ``tokenizer.json`` form.
Normalization (lowercasing etc.) is ``normalizers.py``'s job, not this module's.

Internal: not part of the engine's API (``engine.PUBLIC_MODULES``).
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple, Protocol

import regex

from engine.errors import ConfigError
from engine.limits import check_pattern, run_budgeted, shown
from engine.normalizers_hf import PUNCTUATION_DRIFT, hf_punctuation, holds_drift
from engine.onig import from_onig, onig_spans, to_onig
from engine.rust_syntax import from_rust, refuse_ambiguous, to_rust
from engine.unicode_twin import matcher

GPT2_PATTERN = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s"""
GPT4_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
    r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)
O200K_PATTERN = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)
PATTERNS: dict[str, str] = {"gpt2": GPT2_PATTERN, "gpt4": GPT4_PATTERN, "o200k": O200K_PATTERN}
# Hugging Face's ByteLevel(use_regex=True) splits with GPT-2's pattern (written without the
# possessive quantifiers, which match the same pieces).
HF_BYTELEVEL_PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
# A new pattern is tried on this sample: a piece may not be empty, and a pattern that needs more
# than _PROBE_SECONDS here backtracks catastrophically (the commas and repeats are what
# ``(?:.*,){6}X``-like patterns choke on; such patterns are also caught later by the time budget).
_PROBE = "Hello, world! It's 2024: naïve café, 日本語 👋\n\t  a,b,c,d,e,f,g,h,i,j,k,l aaaaaaaaaaaaaaaaaaaaaaaa!"
_PROBE_SECONDS = 0.5
_SLOW_PATTERN = (
    "The pre-tokenizer pattern",
    "it backtracks too much on this input (nested repeats such as (?:.*,){6} do). "
    "Simplify the pattern, or encode a shorter text.",
)


@functools.cache
def _onig_names() -> dict[str, str]:
    """The named patterns as our tokenizer.json files write them (``to_onig``), to their names."""
    return {to_onig(pattern): name for name, pattern in PATTERNS.items()}


def hf_cuts(compiled: regex.Pattern[str], text: str, timeout: float | None, *,
            onig_tables: bool = True) -> list[tuple[int, int, bool]]:
    """``text`` cut at the matches of a tokenizer.json's regex as Hugging Face cuts it: alternating
    gaps (False) and matches (True), the matches as Onig finds them (``onig.onig_spans``, with
    Onig's Unicode tables unless told otherwise). An empty match is an entry too, so it cuts its
    gap in two; whoever makes pieces drops it."""
    found: list[tuple[int, int, bool]] = []
    end = 0
    for start, stop in onig_spans(compiled, text, timeout, onig_tables=onig_tables):
        if start > end:
            found.append((end, start, False))
        found.append((start, stop, True))
        end = stop
    if end < len(text):
        found.append((end, len(text), False))
    return found


class Piece(NamedTuple):
    """One pre-token: its text, and the span ``[start, end)`` of input characters it covers.

    ``offsets`` is ``None`` when ``text == input[start:end]``; otherwise it has
    ``len(text) + 1`` entries mapping each character boundary of ``text`` to an input position.
    """

    text: str
    start: int
    end: int
    offsets: tuple[int, ...] | None = None

    def boundary(self, index: int) -> int:
        """Input position of the character boundary ``index`` of this piece's text."""
        if self.offsets is None:
            return self.start + index
        return self.offsets[index]


class PreTokenizer(Protocol):
    name: str

    def pieces(self, text: str) -> list[str]: ...

    def split(self, text: str) -> list[Piece]: ...

    def to_hf(self) -> dict[str, Any]: ...


class RegexSplit:
    """Pieces are the matches of a regex, and with ``keep_gaps`` the text between them too.

    The whole match is the piece, as in Hugging Face's ``Split`` and tiktoken, also when the
    pattern has capturing groups (``findall`` would return the groups instead). Matching
    respects the caller's ``engine.limits.time_budget``.

    Text that no match covers is a piece of its own with ``keep_gaps`` (Hugging Face's ``Split``
    with "Isolated": nothing is lost, whatever pattern a user writes), and is dropped without it
    (tiktoken's ``findall``, HF's ``Whitespace``; a tiktoken file's pattern keeps that meaning).
    The named patterns match every character, so the two agree on them; each export writes the
    choice in its own terms (:meth:`to_hf`, :meth:`findall_pattern`).
    """

    def __init__(self, pattern: str, name: str | None = None, *, keep_gaps: bool = True, onig: bool = False,
                 rust: bool = False) -> None:
        # ``onig``: the pattern is a tokenizer.json's, which means what Onig reads (engine/onig.py);
        # ``rust``: a tiktoken file's, which means what Rust reads (engine/rust_syntax.py); else
        # ours, the regex module's. ``source`` is the regex module's spelling, and each file gets
        # the pattern back in its own engine's terms.
        source = check_pattern(pattern)
        if onig:
            named = _onig_names().get(pattern)
            source = PATTERNS[named] if named else from_onig(pattern, "pre-tokenizer pattern")
        elif pattern not in PATTERNS.values():  # the named patterns read alike everywhere (tested)
            if rust:
                source = from_rust(pattern, "pre-tokenizer pattern")
            else:
                refuse_ambiguous(pattern)
        try:
            self._regex = regex.compile(source)
        except (regex.error, OverflowError, RecursionError) as exc:
            raise ConfigError(f"The pre-tokenizer pattern {shown(pattern)} is not a valid regex: {exc}.") from None
        self.pattern, self.source, self.onig, self.rust = pattern, source, onig, rust
        self.name = name or next((n for n, p in PATTERNS.items() if p == source), "custom")
        # The named patterns cover all text: the findall path is theirs, and the same pieces.
        self.keep_gaps = keep_gaps and self.name not in PATTERNS
        self._check_matches()

    def _check_matches(self) -> None:
        """Refuse a pattern that matches an empty piece, or that is slow on a short sample already."""
        try:
            if self._regex.fullmatch("", timeout=_PROBE_SECONDS) is not None:
                where = "the empty string"
            else:
                at = next((m.start() for m in self._regex.finditer(_PROBE, timeout=_PROBE_SECONDS)
                           if m.start() == m.end()), None)
                where = None if at is None else f"an empty piece (at character {at} of {_PROBE!r})"
        except TimeoutError:
            raise ConfigError(
                f"The pre-tokenizer pattern {shown(self.pattern)} took over {_PROBE_SECONDS:g} s on a "
                f"{len(_PROBE)}-character sample; it backtracks without end (nested repeats such as "
                "(?:.*,)* do). Simplify it."
            ) from None
        if where is not None:
            raise ConfigError(
                f"The pre-tokenizer pattern {shown(self.pattern)} matches {where}; "
                "every piece must contain at least one character."
            )

    def pieces(self, text: str) -> list[str]:
        """The matches of the pattern in ``text`` (and the gaps, with ``keep_gaps``), charged to
        the current time budget."""
        if self.onig:
            return [text[a:b] for a, b in run_budgeted(lambda timeout: self._as_hugging_face(text, timeout),
                                                        *_SLOW_PATTERN)]
        if self.keep_gaps:
            return [piece.text for piece in self.split(text)]
        compiled = self._matcher(text)
        if compiled.groups:
            return run_budgeted(lambda timeout: [m.group() for m in compiled.finditer(text, timeout=timeout)],
                                *_SLOW_PATTERN)
        return run_budgeted(lambda timeout: compiled.findall(text, timeout=timeout), *_SLOW_PATTERN)

    def split(self, text: str) -> list[Piece]:
        if self.onig:
            spans = run_budgeted(lambda timeout: self._as_hugging_face(text, timeout), *_SLOW_PATTERN)
            return [Piece(text[a:b], a, b) for a, b in spans]
        compiled = self._matcher(text)
        if not self.keep_gaps:
            return run_budgeted(
                lambda timeout: [Piece(m.group(), m.start(), m.end())
                                 for m in compiled.finditer(text, timeout=timeout)],
                *_SLOW_PATTERN,
            )
        return run_budgeted(lambda timeout: self._with_gaps(compiled, text, timeout), *_SLOW_PATTERN)

    def _matcher(self, text: str) -> regex.Pattern[str]:
        """The pattern, or its twin where tiktoken's Unicode tables, older than the ``regex``
        module's, read ``text`` otherwise (``engine/unicode_twin.py``; a tokenizer.json's pattern
        goes through ``onig_spans``, which does the same with Onig's)."""
        return matcher(self._regex, text, onig_word=False)

    @staticmethod
    def _with_gaps(compiled: regex.Pattern[str], text: str, timeout: float | None) -> list[Piece]:
        found: list[Piece] = []
        end = 0
        for match in compiled.finditer(text, timeout=timeout):
            if match.start() == match.end():  # a lookahead the probe missed: no piece, not an empty one
                continue
            if match.start() > end:
                found.append(Piece(text[end:match.start()], end, match.start()))
            found.append(Piece(match.group(), match.start(), match.end()))
            end = match.end()
        if end < len(text):
            found.append(Piece(text[end:], end, len(text)))
        return found

    def _as_hugging_face(self, text: str, timeout: float | None) -> list[tuple[int, int]]:
        """A tokenizer.json's split, as spans (:func:`hf_cuts`): the non-empty matches, and the
        gaps with ``keep_gaps``."""
        return [(a, b) for a, b, is_match in hf_cuts(self._regex, text, timeout)
                if b > a and (is_match or self.keep_gaps)]

    def findall_pattern(self) -> str:
        """A pattern whose ``findall`` gives these pieces in tiktoken (its ``pat_str``, in Rust's
        terms: ``rust_syntax.to_rust``): with ``keep_gaps``, a gap is a run of positions where the
        pattern does not match."""
        written = self.pattern if self.rust or self.name in PATTERNS else to_rust(self.source)
        if not self.keep_gaps:
            return written
        flags, body = ("(?m)", written[4:]) if written.startswith("(?m)") else ("", written)
        return f"{flags}(?:{body})|(?:(?!(?:{body}))[\\s\\S])+"

    def to_hf(self) -> dict[str, Any]:
        if self.name == "hf-whitespace":
            return {"type": "Whitespace"}
        isolated = self.keep_gaps or self.name in PATTERNS  # (the named patterns leave no gaps)
        # "Removed" with invert: the matches are kept and the rest is dropped (findall).
        written = self.pattern if self.onig else to_onig(self.source)
        return {"type": "Split", "pattern": {"Regex": written}, "behavior": "Isolated" if isolated else "Removed",
                "invert": not isolated}


class WhitespaceSplit(RegexSplit):
    """Split on runs of whitespace, dropping them (Hugging Face's ``WhitespaceSplit``)."""

    def __init__(self) -> None:
        super().__init__(r"\S+", name="whitespace", keep_gaps=False)

    def to_hf(self) -> dict[str, Any]:
        return {"type": "WhitespaceSplit"}


class BertPreTokenizer(RegexSplit):
    """BERT's split: runs of non-space, non-punctuation characters, and each punctuation alone.
    Punctuation is ASCII's and Unicode's P* as Hugging Face's tables have them, older than the
    ``regex`` module's: text with a character they disagree on (``normalizers_hf.PUNCTUATION_DRIFT``)
    is split with HF's set spelled out (:func:`_bert_exact`; 7 times slower), other text with
    ``\\p{P}``."""

    def __init__(self) -> None:
        super().__init__(r"[\p{P}!-/:-@\[-`{-~]|[^\s\p{P}!-/:-@\[-`{-~]+", name="bert", keep_gaps=False)

    def _matcher(self, text: str) -> regex.Pattern[str]:
        return _bert_exact() if holds_drift(text, PUNCTUATION_DRIFT) else self._regex

    def to_hf(self) -> dict[str, Any]:
        return {"type": "BertPreTokenizer"}


@functools.cache
def _bert_exact() -> regex.Pattern[str]:
    punctuation = hf_punctuation()
    return regex.compile(f"[{punctuation}]|[^\\s{punctuation}]+")


class Metaspace:
    """sentencepiece's view of text: spaces become ``▁``, optionally one is put in front.

    With ``split_by_whitespace`` each piece is a word with its leading ``▁``; without it the
    whole text is one piece. The dummy prefix ``▁`` covers no input character.
    """

    name = "metaspace"

    def __init__(
        self,
        replacement: str = "▁",
        *,
        add_dummy_prefix: bool = True,
        split_by_whitespace: bool = True,
        prepend_first_only: bool = False,
    ) -> None:
        if not isinstance(replacement, str) or len(replacement) != 1:
            raise ConfigError(f"The Metaspace replacement must be one character, not {shown(replacement)}.")
        self.replacement = replacement
        self.add_dummy_prefix = add_dummy_prefix
        # Hugging Face's prepend_scheme "first": the prefix only where the text starts, not after
        # a special token (the tokenizer asks ``later`` for those segments).
        self.prepend_first_only = prepend_first_only and add_dummy_prefix
        self.split_by_whitespace = split_by_whitespace
        # A space and the replacement character itself both start a word (HF splits after replacing).
        gap = regex.escape(" " + replacement)
        self._words = regex.compile(f"[{gap}]*[^{gap}]+|[{gap}]+") if split_by_whitespace else None

    def later(self) -> Metaspace:
        """This pre-tokenizer for text that does not start the input: without the prefix under
        prepend_scheme "first", itself otherwise."""
        if not self.prepend_first_only:
            return self
        return Metaspace(self.replacement, add_dummy_prefix=False, split_by_whitespace=self.split_by_whitespace)

    def _prefixed(self, chunk: str) -> bool:
        # Hugging Face looks at the text after spaces became the replacement: "▁" counts as a space.
        return self.add_dummy_prefix and not chunk.startswith((" ", self.replacement))

    def _chunks(self, text: str) -> list[tuple[int, int]]:
        if self._words is None:
            return [(0, len(text))] if text else []
        spans: list[tuple[int, int]] = []
        for match in self._words.finditer(text):
            start, end = match.span()
            # sentencepiece keeps a space with the word after it: "a  b" -> "▁a", "▁", "▁b".
            body = match.group()
            stripped = body.lstrip(" " + self.replacement)
            if stripped and len(body) - len(stripped) > 1:
                lead = len(body) - len(stripped) - 1
                spans.extend((start + i, start + i + 1) for i in range(lead))
                spans.append((start + lead, end))
            elif not stripped:
                spans.extend((start + i, start + i + 1) for i in range(end - start))
            else:
                spans.append((start, end))
        return spans

    def pieces(self, text: str) -> list[str]:
        return [p.text for p in self.split(text)]

    def split(self, text: str) -> list[Piece]:
        result: list[Piece] = []
        for index, (start, end) in enumerate(self._chunks(text)):
            body = text[start:end].replace(" ", self.replacement)
            if index == 0 and self._prefixed(text[start:end]):
                offsets = (start,) + tuple(range(start, end + 1))
                result.append(Piece(self.replacement + body, start, end, offsets))
            else:
                result.append(Piece(body, start, end, None))
        return result

    def to_hf(self) -> dict[str, Any]:
        return {
            "type": "Metaspace",
            "replacement": self.replacement,
            "prepend_scheme": "first" if self.prepend_first_only else "always" if self.add_dummy_prefix else "never",
            "split": self.split_by_whitespace,
        }


def get_pretokenizer(spec: str, *, keep_gaps: bool = True, rust: bool = False) -> PreTokenizer:
    """Build a pre-tokenizer from a name (gpt2, gpt4, o200k, whitespace, bert, metaspace) or a regex
    (whose gaps are pieces too unless ``keep_gaps`` is false: see :class:`RegexSplit`; read as
    tiktoken reads it with ``rust``, else as the ``regex`` module does)."""
    if spec in PATTERNS:
        return RegexSplit(PATTERNS[spec], name=spec)
    if spec == "whitespace":
        return WhitespaceSplit()
    if spec == "bert":
        return BertPreTokenizer()
    if spec == "metaspace":
        return Metaspace()
    if not spec:
        raise ConfigError(
            "The pre-tokenizer must be one of gpt2, gpt4, o200k, whitespace, bert, metaspace, or a regex."
        )
    return RegexSplit(spec, keep_gaps=keep_gaps, rust=rust)
