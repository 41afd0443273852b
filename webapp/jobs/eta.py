"""A training job's progress as a user reads it: stage labels, and one ETA for the whole job.

The worker relays the trainer's ``(stage, current, total)`` reports (``Progress``); the job page
and the jobs list show them (``shown``). Three things a raw report gets wrong, and the fixes:

- **Labels.** Each trainer's stages have a sentence with units (``STAGE_LABELS``): "count" reports
  bytes ("counted 81.8 of 100.0 MB"), Unigram's "seeding" and "lattice" report no numbers, and
  its "EM" reports sub-iterations against an estimated total that shrinks as pruning goes; it
  shows as "EM round 3" with the bar on the share done, which only grows (the total falls).
- **One ETA for the job.** ``STAGE_SHARES`` gives each algorithm's stages a fixed share of the
  job's time, so a report becomes the share of the whole job done. Its rate is smoothed over time
  (an exponential average weighted by the seconds that passed, ``SMOOTHING_SECONDS``, so the
  report frequency does not matter); each report predicts the job's end (now + share left / rate).
- **Shown only once steady.** No ETA in the job's first ``MIN_JOB_SECONDS``; then only once the
  predictions of the last ``WINDOW_SECONDS`` (and at least the last ``MIN_PREDICTIONS``) agree within
  ``STABLE_SHARE`` of the time left or ``STABLE_SLACK`` seconds. From then on it stays shown (the
  smoothed rate still follows the pace), so it does not flicker; under ``MIN_SHOWN_SECONDS`` left,
  or with no known plan for the job's stages, there is none.

Left out: sending the figures (``worker.py``), storing them (``queue.heartbeat``), a job's
duration (``queue.run_seconds``, the one interval both pages show) and number formats
(``web/filters.py``).
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from webapp.web.filters import number

SMOOTHING_SECONDS = 2.0  # time constant of the rate's exponential average
MIN_JOB_SECONDS = 3.0  # no ETA during a job's first seconds
WINDOW_SECONDS = 3.0  # predictions compared for stability
MIN_PREDICTIONS = 3  # at least, spanning the window
STABLE_SHARE = 0.2  # the predictions' spread, as a share of the time left
STABLE_SLACK = 2.0  # ... or this many seconds, whichever is larger
MIN_SHOWN_SECONDS = 1.0  # below this the page says nothing rather than "about 0.4 s left"
DEFAULT_SUB_ITERATIONS = 2  # UnigramOptions.n_sub_iterations, for a job whose options lack it

# Each algorithm's stages, in order, with their share of the job's wall time. Measured once with
# benchmarks-style runs (``engine.trainers.train``, vocab_size 8,000, default options) on en_5M,
# a 5 MB English corpus, on a 2-core machine; the time before the first report and after the
# last goes to the first and last stage. Estimates elsewhere: counting's share falls with more
# CPUs and grows with the corpus, the merges' with the vocabulary. A wrong share only bends the
# ETA at a stage's start; the smoothed rate then follows the real pace.
STAGE_SHARES: Mapping[str, tuple[tuple[str, float], ...]] = {
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


def plan_for(algorithm: str | None, stage: str | None) -> tuple[tuple[str, float], ...] | None:
    """``algorithm``'s stages; without it, the one plan that has ``stage`` (None while ambiguous)."""
    if algorithm is not None:
        return STAGE_SHARES.get(algorithm)
    plans = {plan for plan in STAGE_SHARES.values() if any(name == stage for name, _ in plan)}
    return plans.pop() if len(plans) == 1 else None


def job_share(plan: tuple[tuple[str, float], ...], stage: str, current: int, total: int) -> float | None:
    """The share of the whole job done at this report; None for a stage not in ``plan``."""
    before = 0.0
    for name, share in plan:
        if name == stage:
            return before + (share * min(1.0, current / total) if total > 0 else 0.0)
        before += share
    return None


class Progress:
    """The latest progress report of one job, with a smoothed, stable ETA for the whole job."""

    def __init__(self, clock: Callable[[], float] = time.monotonic, *, algorithm: str | None = None) -> None:
        self._clock = clock
        self._algorithm = algorithm
        self.stage: str | None = None
        self.current = 0
        self.total = 0
        self._started = clock()
        self._done = 0.0  # share of the job done; never falls (Unigram's EM total shrinks)
        self._last: tuple[float, float] | None = None  # (time, share done) of the previous report
        self._rate: float | None = None  # smoothed share per second
        self._predictions: deque[tuple[float, float]] = deque()  # (when made, predicted end time)
        self._stable = False  # once the predictions agreed, the ETA stays shown

    def update(self, stage: str, current: int, total: int) -> None:
        """Record a report; the job's share done moves with it, and the rate and predictions follow."""
        now = self._clock()
        self.stage, self.current, self.total = stage or None, current, total
        plan = plan_for(self._algorithm, stage)
        share = job_share(plan, stage, current, total) if plan else None
        if share is None:  # a stage we cannot place: no new prediction
            return
        self._done = max(self._done, share)
        if self._last is not None:
            seconds, gained = now - self._last[0], self._done - self._last[1]
            if seconds <= 0:
                return
            sample = gained / seconds
            weight = 1.0 - math.exp(-seconds / SMOOTHING_SECONDS)
            self._rate = sample if self._rate is None else self._rate + weight * (sample - self._rate)
        self._last = (now, self._done)
        if self._rate and self._done < 1.0:
            self._predictions.append((now, now + (1.0 - self._done) / self._rate))
        # Keep the window's predictions and the last one before it, so that they span the window,
        # and at least MIN_PREDICTIONS: Unigram's seeding and lattice send one report each, seconds apart.
        while len(self._predictions) > MIN_PREDICTIONS and self._predictions[1][0] <= now - WINDOW_SECONDS:
            self._predictions.popleft()

    def eta(self) -> float | None:
        """Seconds left in the whole job, or None while there is no steady estimate."""
        now = self._clock()
        if not 0 < self._done < 1 or now - self._started < MIN_JOB_SECONDS:
            return None
        if len(self._predictions) < MIN_PREDICTIONS or self._predictions[0][0] > now - WINDOW_SECONDS:
            return None
        recent = [end for _, end in self._predictions]
        left = recent[-1] - now
        if not self._stable:
            self._stable = max(recent) - min(recent) <= max(STABLE_SHARE * left, STABLE_SLACK)
        return left if self._stable and left >= MIN_SHOWN_SECONDS else None

    def row(self) -> dict[str, Any]:
        """The figures ``queue.heartbeat`` stores."""
        return {"stage": self.stage, "current": self.current, "total": self.total, "eta_seconds": self.eta()}
