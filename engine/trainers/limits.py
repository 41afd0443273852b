r"""The upper bounds of trainer options that cost processes, memory or time.

Every trainer checks its options against these in ``__post_init__``, so the CLI, the library and
the web form refuse the same values with the same :class:`ConfigError`, which names the value,
the limit and what to pass instead. A bound here is a ceiling no sensible run comes near (the
defaults are far below each); what a run may cost in wall time is the job worker's time limit.

A custom pre-tokenizer pattern gets a CPU-time budget per chunk of the corpus it splits
(:func:`chunk_seconds`, charged like encoding's ``engine.limits.time_budget``): a pattern that
backtracks without end, ``(?:.*,){6}X|\\s|\\S`` on lines of commas, fails the counting within
seconds with :class:`PatternTooSlow` instead of running until the job's time limit. The budget
grows with the chunk (:data:`PATTERN_SECONDS_PER_MB`), so no ordinary pattern comes near it on any
chunk. A front end sets its own rate around a training with :func:`pattern_budget`. Unigram's
memory bounds (:data:`MAX_SENTENCE_BYTES`, :func:`memory_ceiling`) are ``unigram/bounds.py``'s.

Left out: lower bounds and rules across options (each trainer states its own), and the sizes of
imported tokenizers (the loaders in ``engine/formats`` check those).

Internal: not part of the engine's API (``engine.PUBLIC_MODULES``).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from engine.errors import ConfigError, EncodeTimeout
from engine.limits import MAX_SPECIAL_CHARS, MAX_SPECIAL_TOKEN_LENGTH, MAX_SPECIAL_TOKENS, shown

MAX_VOCAB = 1_000_000
"""Largest trained vocabulary; BPE's internal token ids are characters, so they must stay below U+10FFFF."""
MAX_WORKERS = 32
"""Most counting processes one training starts, whatever the machine (each holds a count table)."""
MAX_SEED_SIZE = 10_000_000
"""Most Unigram seed pieces (sentencepiece's default is 1,000,000)."""
MAX_PIECE_LENGTH = 512
"""Longest Unigram piece in characters, sentencepiece's own ceiling (its default is 16); seeding
counts every substring up to this length."""
MAX_SUB_ITERATIONS = 50
"""Most EM iterations between two Unigram pruning rounds (sentencepiece's default is 2)."""
MAX_SHRINKING_FACTOR = 0.95
"""Largest share of pieces a Unigram pruning round may keep: closer to 1, the rounds (each
``n_sub_iterations`` E-steps over the corpus) grow without bound (0.95 already needs six times
the rounds of the default 0.75)."""
MAX_SENTENCE_BYTES = 4192
"""Longest Unigram pre-token in UTF-8 bytes (``▁`` included), sentencepiece's ``max_sentence_length``
default: a longer one (a whole line without ``split_by_whitespace``, or a line with no space) is
skipped, as sentencepiece skips such sentences. Seeding counts up to ``max_piece_length`` substrings
of every character, so one 30 MB line would have needed tens of gigabytes."""
BYTES_PER_SUBSTRING = 64
"""What Unigram seeding and its lattice take per substring occurrence they count (70-100 bytes
measured on made-up words, a little less assumed so that only a clearly hopeless run is refused)."""
PATTERN_SECONDS_PER_MB = 10.0
"""CPU seconds of pattern matching a custom pre-tokenizer pattern may use per million characters of
a chunk it splits in training; a shorter chunk gets the budget of a million. The named patterns
through ``regex`` take 0.2-0.5 s per million characters of mixed-script text, and the GPT-2
pattern written as a custom regex with its gaps kept 0.9 s, so the budget leaves ten times that;
``(?:.*,){6}X|\\s|\\S`` needs hours for 900 KB of lines of commas."""


class NotEnoughMemory(ConfigError):
    """A training would need more memory than this process may use (``memory_ceiling``); raised
    before the work starts."""


class PatternTooSlow(EncodeTimeout):
    """A custom pre-tokenizer pattern ran past its budget on a chunk of the training corpus."""


_RATE: ContextVar[float | None] = ContextVar("tokenforge_pattern_rate", default=None)


@contextmanager
def pattern_budget(seconds_per_mb: float) -> Iterator[None]:
    """Give the trainings inside the block ``seconds_per_mb`` per million characters of each chunk
    instead of :data:`PATTERN_SECONDS_PER_MB` (the web app's setting; the CLI keeps the default)."""
    if (isinstance(seconds_per_mb, bool) or not isinstance(seconds_per_mb, int | float)
            or not 0 < seconds_per_mb < float("inf")):
        raise ConfigError(f"A pattern budget must be a positive number of seconds per million characters, "
                          f"not {shown(seconds_per_mb)}.")
    token = _RATE.set(float(seconds_per_mb))
    try:
        yield
    finally:
        _RATE.reset(token)


def pattern_rate() -> float:
    """The pattern budget of this context, in seconds per million characters."""
    rate = _RATE.get()
    return PATTERN_SECONDS_PER_MB if rate is None else rate


def chunk_seconds(chars: int, seconds_per_mb: float) -> float:
    """The CPU seconds of pattern matching a chunk of ``chars`` characters may use (a chunk under a
    million characters gets a million's: a fraction of a second is too little to be fair)."""
    return seconds_per_mb * max(1.0, chars / 1_000_000)


def memory_ceiling() -> int | None:
    """The bytes this process may allocate: its address-space limit (``RLIMIT_AS``, which the web
    app's job processes have) or the machine's memory, whichever is lower; None if neither is known."""
    ceilings = []
    try:
        import resource

        soft = resource.getrlimit(resource.RLIMIT_AS)[0]
        if soft != resource.RLIM_INFINITY:
            ceilings.append(soft)
    except (ImportError, OSError, ValueError):  # not POSIX
        pass
    try:
        ceilings.append(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, OSError, ValueError):
        pass
    return min(ceilings) if ceilings else None


def cpu_count() -> int:
    """The CPUs this process may run on (its affinity, which containers narrow), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def max_workers() -> int:
    """The most worker processes a training may start here: one per CPU, at most :data:`MAX_WORKERS`."""
    return min(cpu_count(), MAX_WORKERS)


def check_workers(num_workers: int | None, *, name: str = "num_workers", per_cpu: bool = True) -> None:
    """Refuse a worker count below 1 or above :func:`max_workers`; None (one per CPU) is fine.

    With ``per_cpu=False`` only :data:`MAX_WORKERS` applies: for code below the options (such as
    ``count_pretokens``) whose callers, tests among them, may ask for more processes than CPUs.
    """
    if num_workers is None:
        return
    limit = max_workers() if per_cpu else MAX_WORKERS
    if not 1 <= num_workers <= limit:
        cpus = cpu_count()
        why = (f"this machine has {cpus} CPU{'s' if cpus != 1 else ''}" if limit == cpus
               else f"the limit is {MAX_WORKERS} processes")
        raise ConfigError(
            f"{name}={shown(num_workers)} must be between 1 and {limit} ({why}); "
            f"pass a smaller {name}, or leave it empty for one per CPU.", option=name,
        )


def check_at_most(name: str, value: int | float, limit: int | float, *, fix: str = "") -> None:
    """Refuse ``value`` above ``limit``, naming the option, the value and the limit."""
    if value > limit:
        most = f"{limit:,}" if isinstance(limit, int) else f"{limit:g}"
        raise ConfigError(f"{name}={shown(value)} is above the limit of {most}; "
                          f"{fix or f'pass {name} of at most {most}'}.",
                          option=name, value=value, most=limit)


def check_special_count(special_tokens: tuple[str, ...]) -> None:
    """Refuse special tokens beyond what an import accepts (``engine.limits``: their count, each
    one's length, and all of them together), so every trained tokenizer can be loaded again."""
    if len(special_tokens) > MAX_SPECIAL_TOKENS:
        raise ConfigError(
            f"special_tokens lists {len(special_tokens):,} tokens, above the limit of {MAX_SPECIAL_TOKENS:,}; "
            "keep the special tokens your models really use.", option="special_tokens",
        )
    for token in special_tokens:
        if len(token) > MAX_SPECIAL_TOKEN_LENGTH:
            raise ConfigError(f"The special token {shown(token)} is longer than {MAX_SPECIAL_TOKEN_LENGTH} "
                              "characters; pass a shorter one.", option="special_tokens")
    if sum(map(len, special_tokens)) > MAX_SPECIAL_CHARS:
        raise ConfigError(f"The special tokens have more than {MAX_SPECIAL_CHARS:,} characters in all; "
                          "keep the special tokens your models really use.", option="special_tokens")
