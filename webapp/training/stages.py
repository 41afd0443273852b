"""The trainers' stages as a training job's pages and its ETA see them: a label with units for each
stage, and each algorithm's stages with their share of the job's time.

The worker relays the trainer's ``(stage, current, total)`` reports and the job pages show them
(:func:`shown`). Two things a raw report gets wrong, and the fixes:

- **Labels.** Each trainer's stages have a sentence with units (:data:`STAGE_LABELS`): "count"
  reports bytes ("counted 81.8 of 100.0 MB"), Unigram's "seeding" and "lattice" report no numbers,
  and its "EM" reports sub-iterations against an estimated total that shrinks as pruning goes; it
  shows as "EM round 3" with the bar on the share done, which only grows (the total falls).
- **One ETA for the job.** :data:`STAGE_SHARES` gives each algorithm's stages a fixed share of the
  job's time, so a report becomes the share of the whole job done. The "train" kind registers them
  with the queue (``job_kinds.py``), and the queue's ``eta.Progress`` turns them into one ETA
  without knowing any trainer.

Left out: the smoothing and the steadiness of the ETA (``jobs/eta.py``), storing the figures
(``queue.heartbeat``) and number formats (``web/filters.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from webapp.jobs.eta import Plan
from webapp.web.filters import number

DEFAULT_SUB_ITERATIONS = 2  # UnigramOptions.n_sub_iterations, for a job whose options lack it

# Each algorithm's stages, in order, with their share of the job's wall time. Measured once with
# benchmarks-style runs (``engine.trainers.train``, vocab_size 8,000, default options) on en_5M,
# a 5 MB English corpus, on a 2-core machine; the time before the first report and after the
# last goes to the first and last stage. Estimates elsewhere: counting's share falls with more
# CPUs and grows with the corpus, the merges' with the vocabulary. A wrong share only bends the
# ETA at a stage's start; the smoothed rate then follows the real pace.
STAGE_SHARES: Mapping[str, Plan] = {
    "bpe": (("count", 0.35), ("merge", 0.65)),  # 2.0 s; both levels (``bpe_spm`` reports the same stages)
    "wordpiece": (("count", 0.74), ("words", 0.05), ("merges", 0.21)),  # 4.6 s
    "unigram": (("count", 0.10), ("seeding", 0.26), ("lattice", 0.15), ("EM", 0.49)),  # 9.1 s
    "wordlevel": (("count", 1.0),),  # the baselines only count
    "char": (("count", 1.0),),
    "byte": (("count", 1.0),),
    "extend": (("count", 0.35), ("merge", 0.55), ("measure", 0.10)),  # extend_child; not measured, BPE's shares
}


def _bytes(size: int, total: int) -> tuple[str, str]:
    """``size`` and ``total`` in the unit that suits ``total``: decimal, one decimal place."""
    for unit, scale in (("GB", 10**9), ("MB", 10**6), ("kB", 10**3)):
        if total >= scale:
            return f"{size / scale:,.1f}", f"{total / scale:,.1f} {unit}"
    return f"{size:,}", f"{total:,} bytes"


def _count(current: int, total: int, options: Mapping[str, Any]) -> str:
    done, of = _bytes(current, total)
    return f"counted {done} of {of}" if total else "counting words"


def _em(current: int, total: int, options: Mapping[str, Any]) -> str:
    sub = options.get("n_sub_iterations")
    sub = sub if isinstance(sub, int) and not isinstance(sub, bool) and sub > 0 else DEFAULT_SUB_ITERATIONS
    if total and current >= total:  # the last report: every round has run
        return f"EM and pruning: done after {number(-(-current // sub))} rounds"
    return f"EM round {number(current // sub + 1)}: estimating and pruning pieces"


STAGE_LABELS: Mapping[str, Callable[[int, int, Mapping[str, Any]], str]] = {
    "count": _count,  # every trainer; bytes of the corpus read
    "merge": lambda c, t, o: f"learned {number(c)} of {number(t)} merges",  # BPE (both levels)
    "words": lambda c, t, o: f"prepared {number(c)} words",  # WordPiece, once
    "merges": lambda c, t, o: f"vocabulary: {number(c)} of {number(t)} tokens",  # WordPiece
    "seeding": lambda c, t, o: "seeding: choosing the candidate pieces",  # Unigram, no numbers
    "lattice": lambda c, t, o: "lattice: splitting the words into candidate pieces",  # Unigram, no numbers
    "EM": _em,  # Unigram; sub-iterations of an estimated total that shrinks
    "measure": lambda c, t, o: "measuring tokens per character on the held-out and reference text",  # extend
}


@dataclass(frozen=True)
class Shown:
    """What the job page and the jobs list show of a running job's progress."""

    label: str  # a sentence with units: "counted 81.8 of 100.0 MB"
    fraction: float | None  # of the stage done, for the bar; None: a stage without numbers


def shown(stage: str | None, current: int | None, total: int | None, options: Mapping[str, Any] | None = None) -> Shown:
    """The label and bar of one progress row (as ``queue.heartbeat`` stored it)."""
    current, total = max(0, current or 0), max(0, total or 0)
    fraction = min(1.0, current / total) if total else None
    if not stage:
        return Shown("starting", None)
    label = STAGE_LABELS.get(stage)
    if label is not None:
        return Shown(label(current, total, options or {}), fraction)
    return Shown(f"{stage}: {number(current)} of {number(total)}" if total else stage, fraction)  # a stage new to us
