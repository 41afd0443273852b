"""The engine's bounds: how big an imported tokenizer may be, and how long encoding may match patterns.

A tokenizer file comes from outside, so every number in it is checked before the engine sizes
anything by it: an id of 2**31 once made ``BPE`` allocate a list of two billion entries. The
loaders of every format (``Tokenizer.from_json``, ``formats/*``, the models' ``from_hf``) call the
``check_*`` helpers here, and the model constructors check ids again, so the CLI and library
users get the same refusals as the web app. A refusal is a :class:`FormatError` that names the
entry and the limit. Each limit admits every real tokenizer we know of with room to spare.

Encoding time is bounded by a *budget*: ``with time_budget(2.0): tokenizer.encode(text)`` lets
pattern matching in the block take 2 s in all, after which :class:`EncodeTimeout` is raised.
``regex``'s ``timeout=`` covers one call (a ``finditer`` counts its whole iteration), while one
encode makes many calls, so the budget lives in a context variable: each call on user text
(``run_budgeted``) gets the time left as its timeout and is charged what it took. ``regex``
measures its timeout in CPU time of the process (C ``clock()``), so the budget does too: wall
time is longer on a busy machine, and in a threaded server other threads' matching counts.
The models' work on long pieces is charged too, on the same clock (``WorkMeter``): a Unigram
lattice or a WordPiece word of 200,000 characters against 1,024-character tokens took 20-40 s.
Parsing, BPE merging (O(n log n) on long pieces) and short pieces are not charged. Without a
budget nothing is limited, which is what training and the CLI want. The named patterns' ASCII
fast path (``ascii_split``) runs in linear time and is not charged.

Left out: request sizes (the web app's), training options (``engine.trainers``).

Internal: not part of the engine's API (``engine.PUBLIC_MODULES``).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import TypeVar

from engine.errors import ConfigError, EncodeTimeout, FormatError

MAX_VOCAB_SIZE = 2_000_000
"""Ids run from 0 to ``MAX_VOCAB_SIZE - 1``. The largest real vocabularies are far below (XLM-V
901,629; Gemma 262,144; o200k 200,019). Tables indexed by id take 8 bytes an id, so at most
16 MB, while the id 2**31 that an attacker sent would have needed 17 GB."""

MAX_MERGES = MAX_VOCAB_SIZE
"""A BPE merge creates a token, so a real merge list is never longer than the vocabulary."""

MAX_RANK_FILE_WORK = 100_000_000
"""The sum of the squared byte lengths of a tiktoken rank file's tokens. Deriving each token's
merge replays tiktoken's merge loop, which costs up to the square of the token's length: GPT-2's
tokens sum to 2.5 M (0.5 s), o200k's to an estimated 15 M, while the prefixes of three
1,024-byte strings (a 2.5 MB file) summed to 1.1 G and took 48 s."""

MAX_TOKEN_LENGTH = 1024
"""Characters in one vocabulary token (bytes for byte-level BPE and tiktoken tokens). Real
tokens are short (GPT-2's longest is 128 bytes, sentencepiece's default limit is 16
characters); a 10 MB token made every page that lists tokens slow and huge."""

MAX_SPECIAL_TOKENS = 8192
"""Special (added) tokens in one tokenizer. Llama 3 has 256 and Mistral's Tekken 1,000. They are
matched by one alternation, whose compile time and memory grow with their total length."""

MAX_SPECIAL_TOKEN_LENGTH = 256
"""Characters in one special token; the longest real ones are about 30 (``<|reserved_special_token_250|>``)."""

MAX_SPECIAL_CHARS = 131_072
"""Characters in all special tokens together: an alternation of this size compiles in about a
second and 30 MB; 10,000 tokens of 256 characters took 21 s and 550 MB."""

MAX_PATTERN_LENGTH = 2048
"""Characters in a custom pre-tokenizer regex; the o200k pattern, the longest named one, has 422."""

MAX_PATTERN_SIZE = 100_000
"""Elements of a custom pattern once its counted repeats are expanded (``(?:a{1000}){1000}`` is a
million). ``regex`` expands them while compiling, which no timeout can stop: that pattern took
0.2 s, and ``((a{1000}){1000}){1000}``, 24 characters, did not finish compiling."""

MAX_TWIN_LENGTH = 262_144
"""Characters in a pattern's Unicode twin (``engine/unicode_twin.py``): each property there is a
class of the characters the Unicode tables disagree on, and ``\\b`` four of them, so 400 ``\\b\\w``
in a 2 KB pattern made 2.2 MB, compiled in 1.5 s that no timeout stops. Real patterns' twins
are 1-10 KB; one of this size compiles in about 0.2 s."""

MAX_FILE_BYTES = 256 << 20
"""Bytes of one file the engine's loaders read. Gemma's tokenizer.json, among the largest, is
about 34 MB; the web app's own upload limit is smaller still."""

_SHOWN = 40  # characters of a value quoted in a message
T = TypeVar("T")


def shown(value: object) -> str:
    """``repr(value)``, cut to a readable length (a refused token may be megabytes long, a number
    thousands of digits)."""
    if isinstance(value, str | bytes) and len(value) > _SHOWN:
        unit = "bytes" if isinstance(value, bytes) else "characters"
        return f"{value[:_SHOWN]!r}… ({len(value):,} {unit})"
    text = repr(value)
    if isinstance(value, int) and len(text) > 24:
        return f"{text[:12]}… ({len(text)} digits)"
    return text if len(text) <= 2 * _SHOWN else text[: 2 * _SHOWN] + "…"


# ----------------------------------------------------------------------- tokenizer files
def check_id(token_id: object, token: object, *, line: int | None = None, source: str | None = None) -> int:
    """``token_id`` if it is an int in ``[0, MAX_VOCAB_SIZE)``; otherwise a FormatError naming ``token``."""
    if not isinstance(token_id, int) or isinstance(token_id, bool) or token_id < 0:
        raise FormatError(f"The id of token {shown(token)} must be a non-negative integer, not {shown(token_id)}.",
                          line=line, source=source)
    if token_id >= MAX_VOCAB_SIZE:
        raise FormatError(
            f"The token {shown(token)} has the id {token_id}; ids must be below {MAX_VOCAB_SIZE:,} "
            f"(engine.limits.MAX_VOCAB_SIZE). Renumber the vocabulary from 0.",
            line=line, source=source,
        )
    return token_id


def check_token(token: str | bytes, *, line: int | None = None, source: str | None = None) -> None:
    """Refuse a vocabulary token longer than ``MAX_TOKEN_LENGTH``."""
    if len(token) > MAX_TOKEN_LENGTH:
        unit = "bytes" if isinstance(token, bytes) else "characters"
        raise FormatError(
            f"The token {shown(token)} is longer than {MAX_TOKEN_LENGTH:,} {unit} "
            "(engine.limits.MAX_TOKEN_LENGTH); no real tokenizer has such a token.",
            line=line, source=source,
        )


def check_count(count: int, limit: int, what: str, *, name: str, source: str | None = None) -> None:
    """Refuse ``count`` entries of ``what`` beyond ``limit``, the constant ``name`` of this module."""
    if count > limit:
        raise FormatError(f"The tokenizer has {count:,} {what}; at most {limit:,} are accepted "
                          f"(engine.limits.{name}).", source=source)


def check_special_tokens(specials: Mapping[str, int], *, source: str | None = None) -> None:
    """Refuse special tokens that are empty, too long, too many, out of id range or sharing an id."""
    check_count(len(specials), MAX_SPECIAL_TOKENS, "special tokens", name="MAX_SPECIAL_TOKENS", source=source)
    owners: dict[int, str] = {}
    total = 0
    for token, token_id in specials.items():
        if not isinstance(token, str) or not token:
            raise FormatError(
                f"A special token must be a non-empty string, not {shown(token)} (id {shown(token_id)}); "
                "an empty one would match between every two characters.", source=source)
        if len(token) > MAX_SPECIAL_TOKEN_LENGTH:
            raise FormatError(
                f"The special token {shown(token)} is longer than {MAX_SPECIAL_TOKEN_LENGTH} characters "
                "(engine.limits.MAX_SPECIAL_TOKEN_LENGTH).", source=source)
        check_id(token_id, token, source=source)
        if token_id in owners:
            raise FormatError(f"The special tokens {shown(owners[token_id])} and {shown(token)} share the id "
                              f"{token_id}; each needs its own.", source=source)
        owners[token_id] = token
        total += len(token)
    if total > MAX_SPECIAL_CHARS:
        raise FormatError(f"The special tokens have {total:,} characters in all; at most {MAX_SPECIAL_CHARS:,} "
                          "are accepted (engine.limits.MAX_SPECIAL_CHARS).", source=source)


def check_pattern(pattern: object) -> str:
    """``pattern`` if it is a string within ``MAX_PATTERN_LENGTH`` and ``MAX_PATTERN_SIZE``; ConfigError otherwise."""
    if not isinstance(pattern, str):
        raise ConfigError(f"A pre-tokenizer pattern must be a string, not {shown(pattern)}.")
    if len(pattern) > MAX_PATTERN_LENGTH:
        raise ConfigError(f"The pre-tokenizer pattern has {len(pattern):,} characters; at most "
                          f"{MAX_PATTERN_LENGTH:,} are accepted (engine.limits.MAX_PATTERN_LENGTH).")
    if expanded_size(pattern) > MAX_PATTERN_SIZE:
        raise ConfigError(f"The pre-tokenizer pattern {shown(pattern)} has nested counted repeats that expand to "
                          f"over {MAX_PATTERN_SIZE:,} elements (engine.limits.MAX_PATTERN_SIZE); use * or + "
                          "instead of large {n} counts inside repeated groups.")
    return pattern


_COUNT = re.compile(r"\{(\d*)(,?)(\d*)\}")
_NAMED_ESCAPE = re.compile(r"\\[pPNxuUg]\{[^}]*\}")


def expanded_size(pattern: str) -> int:
    """An upper estimate of the number of elements ``pattern`` has once counted repeats are expanded.

    It is a scan, not a parser: an escape or a character class is one element, a group is the
    sum of its elements (alternatives add up), and ``X{m,n}`` counts ``X`` max(m, n) times.
    Values are capped just above ``MAX_PATTERN_SIZE``, so the arithmetic stays small.
    """
    cap = MAX_PATTERN_SIZE + 1
    stack: list[list[int]] = [[0, 0]]  # per open group: [its size so far, the size of its last element]
    i, end = 0, len(pattern)
    while i < end:
        char, size = pattern[i], 1
        if char == "\\":
            named = _NAMED_ESCAPE.match(pattern, i)  # \p{L}, \x{41}: its braces are not a count
            i = named.end() if named else i + 2
        elif char == "[":
            # The class ends at the first unescaped "]". A nested set of the V1 syntax ends
            # earlier than the compiler thinks, so its rest counts as elements: an overestimate.
            i += 1 + (pattern[i + 1 : i + 2] == "^")
            i += pattern[i : i + 1] == "]"  # a leading "]" is a member
            while i < end and pattern[i] != "]":
                i += 2 if pattern[i] == "\\" else 1
            i += 1
        elif char == "(":
            stack.append([0, 0])
            i += 1
            continue
        elif char == ")" and len(stack) > 1:
            size = max(stack.pop()[0], 1)
            i += 1
        elif char == "{" and (count := _COUNT.match(pattern, i)) and (count.group(1) or count.group(3)):
            times = max(int(count.group(1) or 0), int(count.group(3) or 0))
            top = stack[-1]
            top[0] = min(top[0] + top[1] * (times - 1), cap)
            top[1] = min(top[1] * times, cap)
            i = count.end()
            continue
        elif char in "*+?|":
            i += 1
            continue
        else:
            i += 1
        top = stack[-1]
        top[0], top[1] = min(top[0] + size, cap), size
    while len(stack) > 1:  # an unclosed group: the compiler will refuse the pattern anyway
        size = stack.pop()[0]
        stack[-1][0] = min(stack[-1][0] + size, cap)
    return stack[0][0]


def read_bytes(path: str | Path, *, source: str | None = None, limit: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of ``path``, refusing files over ``limit`` before reading them whole (OSError passes)."""
    with open(path, "rb") as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise FormatError(f"The file is larger than {limit >> 20} MiB, the most the engine reads "
                          "(engine.limits.MAX_FILE_BYTES).", source=source or Path(path).name)
    return data


# ----------------------------------------------------------------------- time budget
class _Budget:
    """The seconds of work on user text a ``time_budget`` block grants, and how many are left."""

    __slots__ = ("seconds", "left")

    def __init__(self, seconds: float, left: float) -> None:
        self.seconds = seconds
        self.left = left


_BUDGET: ContextVar[_Budget | None] = ContextVar("tokenforge_time_budget", default=None)
"""The innermost ``time_budget`` of this context (each thread and each request has its own), or None."""


@contextmanager
def time_budget(seconds: float | None) -> Iterator[None]:
    """Let the work on user text inside the block take at most ``seconds`` in all (None: no limit).

    Only budgeted pattern calls and the models' metered loops count, not parsing.
    A nested budget gets no more than the outer one has left, and what it spends is the outer's.
    """
    if seconds is None:
        yield
        return
    if not isinstance(seconds, int | float) or isinstance(seconds, bool) or not seconds > 0:
        raise ConfigError(f"A time budget must be a positive number of seconds, not {seconds!r}.")
    outer = _BUDGET.get()
    budget = _Budget(float(seconds), float(seconds) if outer is None else min(float(seconds), outer.left))
    start_left = budget.left
    token = _BUDGET.set(budget)
    try:
        yield
    finally:
        _BUDGET.reset(token)
        if outer is not None:
            outer.left -= start_left - budget.left


def run_budgeted(call: Callable[[float | None], T], what: str, advice: str) -> T:
    """``call(timeout)`` for one ``regex`` call on user text, charged to the current budget.

    ``timeout`` is the time left (None without a budget). The time the call takes is measured
    with the clock ``regex`` uses for its timeout, the process's CPU time. A call that runs out
    raises :class:`EncodeTimeout` naming ``what`` and giving ``advice``.
    """
    budget = _BUDGET.get()
    if budget is None:
        return call(None)
    if budget.left <= 0:
        raise _expired(budget, what, advice)
    started = time.process_time()
    try:
        return call(budget.left)
    except TimeoutError:
        budget.left = 0.0
        raise _expired(budget, what, advice) from None
    finally:
        budget.left -= time.process_time() - started


def _expired(budget: _Budget, what: str, advice: str) -> EncodeTimeout:
    return EncodeTimeout(f"{what} took longer than {budget.seconds:g} s on this text; {advice}")


class WorkMeter:
    """Charges the current budget for a model's loop over one long piece, on the budget's clock.

    The loop calls :meth:`tick` every so many steps and once at its end; each call charges the
    CPU time since the previous one (or since :func:`work_meter` made the meter) and raises
    :class:`EncodeTimeout` once the budget is spent. A tick costs one clock read (~0.2 µs), so
    loops call it only every few dozen steps and only on pieces long enough to matter.
    """

    __slots__ = ("_budget", "_last", "_what", "_advice")

    def __init__(self, budget: _Budget, what: str, advice: str) -> None:
        self._budget = budget
        self._last = time.process_time()
        self._what = what
        self._advice = advice

    def tick(self) -> None:
        now = time.process_time()
        self._budget.left -= now - self._last
        self._last = now
        if self._budget.left <= 0:
            raise _expired(self._budget, self._what, self._advice)


#: Metered loops call :meth:`WorkMeter.tick` when their step count masked by this is 0, every
#: 64 steps: a clock read is ~0.2 µs, so checking that often costs nothing measurable, and a
#: step is at most a few thousand lookups, so the budget is overrun by milliseconds at most.
TICK_MASK = 63


def work_meter(what: str, advice: str) -> WorkMeter | None:
    """A :class:`WorkMeter` on the current budget, or None without one (then nothing is charged).

    ``what`` and ``advice`` make the :class:`EncodeTimeout` message, as for :func:`run_budgeted`.
    """
    budget = _BUDGET.get()
    return None if budget is None else WorkMeter(budget, what, advice)
