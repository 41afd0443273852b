"""A job's progress as one ETA for the whole job, from its stages' reports.

The worker hands each ``(stage, current, total)`` report of its child to :class:`Progress`, which
stores the figures (``row``) and predicts the job's end:

- **One ETA for the job.** A job's kind registers its stages' shares of the job's time
  (``JobKind.stages``, one :data:`Plan` per algorithm: the trainers' are ``training/stages.py``),
  so a report becomes the share of the whole job done. Its rate is smoothed over time (an
  exponential average weighted by the seconds that passed, ``SMOOTHING_SECONDS``, so the report
  frequency does not matter); each report predicts the job's end (now + share left / rate).
- **Shown only once steady.** No ETA in the job's first ``MIN_JOB_SECONDS``; then only once the
  predictions of the last ``WINDOW_SECONDS`` (and at least the last ``MIN_PREDICTIONS``) agree within
  ``STABLE_SHARE`` of the time left or ``STABLE_SLACK`` seconds. From then on it stays shown (the
  smoothed rate still follows the pace), so it does not flicker; under ``MIN_SHOWN_SECONDS`` left,
  or with no known plan for the job's stages, there is none.

Left out: what a stage is called and how its figures read (the kind's area: ``training/stages.py``
for the job pages), sending the figures (``worker.py``), storing them (``queue.heartbeat``) and a
job's duration (``queue.run_seconds``, the one interval the job pages show).
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any

SMOOTHING_SECONDS = 2.0  # time constant of the rate's exponential average
MIN_JOB_SECONDS = 3.0  # no ETA during a job's first seconds
WINDOW_SECONDS = 3.0  # predictions compared for stability
MIN_PREDICTIONS = 3  # at least, spanning the window
STABLE_SHARE = 0.2  # the predictions' spread, as a share of the time left
STABLE_SLACK = 2.0  # ... or this many seconds, whichever is larger
MIN_SHOWN_SECONDS = 1.0  # below this the page says nothing rather than "about 0.4 s left"

#: A job's stages, in order, with their share of its wall time (the shares add up to 1).
Plan = tuple[tuple[str, float], ...]


def plan_for(plans: Mapping[str, Plan], algorithm: str | None, stage: str | None) -> Plan | None:
    """``algorithm``'s plan among ``plans``; without it, the one plan that has ``stage`` (None while ambiguous)."""
    if algorithm is not None:
        return plans.get(algorithm)
    found = {plan for plan in plans.values() if any(name == stage for name, _ in plan)}
    return found.pop() if len(found) == 1 else None


def job_share(plan: Plan, stage: str, current: int, total: int) -> float | None:
    """The share of the whole job done at this report; None for a stage not in ``plan``."""
    before = 0.0
    for name, share in plan:
        if name == stage:
            return before + (share * min(1.0, current / total) if total > 0 else 0.0)
        before += share
    return None


class Progress:
    """The latest progress report of one job, with a smoothed, stable ETA for the whole job.

    ``plans`` are the job's kind's (``JobKind.stages``), by algorithm; ``algorithm`` picks one.
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic, *, plans: Mapping[str, Plan] | None = None,
                 algorithm: str | None = None) -> None:
        self._clock = clock
        self._plans = plans or {}
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
        plan = plan_for(self._plans, self._algorithm, stage)
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
