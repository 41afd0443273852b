"""The upper bounds of trainer options that cost processes, memory or time.

Every trainer checks its options against these in ``__post_init__``, so the CLI, the library and
the web form refuse the same values with the same :class:`ConfigError`, which names the value,
the limit and what to pass instead. A bound here is a ceiling no sensible run comes near (the
defaults are far below each); what a run may cost in wall time is the job worker's time limit.

Left out: lower bounds and rules across options (each trainer states its own), and the sizes of
imported tokenizers (the loaders in ``engine/formats`` check those).
"""

from __future__ import annotations

import os

from engine.errors import ConfigError
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
        why = f"this machine has {cpus} CPU{'s' if cpus != 1 else ''}" if limit == cpus else f"the limit is {MAX_WORKERS} processes"
        raise ConfigError(
            f"{name}={shown(num_workers)} must be between 1 and {limit} ({why}); "
            f"pass a smaller {name}, or leave it empty for one per CPU.", option=name,
        )


def check_at_most(name: str, value: int | float, limit: int | float, *, fix: str = "") -> None:
    """Refuse ``value`` above ``limit``, naming the option, the value and the limit."""
    if value > limit:
        most = f"{limit:,}" if isinstance(limit, int) else f"{limit:g}"
        raise ConfigError(f"{name}={shown(value)} is above the limit of {most}; {fix or f'pass {name} of at most {most}'}.",
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
