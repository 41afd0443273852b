"""A job's progress and an ETA that is shown only once it is stable.

The worker relays the trainer's ``(stage, current, total)`` reports; the job page shows "about
N left". Dividing the time since the stage began by the share done is wrong in both directions:
a stage whose first steps are slow (BPE's first merges wait for the pair counts) promised 20
minutes twelve seconds before the end, and a stage that jumps to its total at once promised
"0.00 s". So:

- the rate is smoothed over time: each report's rate (steps since the last report, over the
  seconds between them) enters an exponential average whose weight depends on the seconds that
  passed (``SMOOTHING_SECONDS``), so it does not matter how often reports come;
- each report also predicts when the stage will end (now + steps left / smoothed rate); an ETA is
  given only once the stage has run ``MIN_STAGE_SECONDS`` and the predictions of the last
  ``WINDOW_SECONDS`` (at least ``MIN_PREDICTIONS``) agree: their spread is at most
  ``STABLE_SHARE`` of the time left, or ``STABLE_SLACK`` seconds. From then on the stage keeps
  its ETA (the smoothed rate still follows the pace), so the figure does not flicker;
- less than ``MIN_SHOWN_SECONDS`` left, or nothing left to count, gives no ETA at all.

Left out: sending the figures (``worker.py``) and showing them (``filters.duration``).
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable
from typing import Any

SMOOTHING_SECONDS = 2.0  # time constant of the rate's exponential average
MIN_STAGE_SECONDS = 3.0  # no ETA during a stage's first seconds
WINDOW_SECONDS = 3.0  # predictions compared for stability
MIN_PREDICTIONS = 3  # at least, spanning the window
STABLE_SHARE = 0.2  # the predictions' spread, as a share of the time left
STABLE_SLACK = 2.0  # ... or this many seconds, whichever is larger
MIN_SHOWN_SECONDS = 1.0  # below this the page says nothing rather than "about 0.4 s left"


class Progress:
    """The latest progress report of one job, with a smoothed, stable ETA."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self.stage: str | None = None
        self.current = 0
        self.total = 0
        self._begin("")

    def _begin(self, stage: str | None) -> None:
        now = self._clock()
        self.stage = stage or None
        self._stage_started = now
        self._last: tuple[float, int] | None = None  # (time, current) of the previous report
        self._rate: float | None = None  # smoothed steps per second
        self._predictions: deque[tuple[float, float]] = deque()  # (when made, predicted end time)
        self._stable = False  # once the predictions agreed, the ETA stays shown for the stage

    def update(self, stage: str, current: int, total: int) -> None:
        """Record a report; a new stage starts its rate and predictions afresh."""
        if stage != self.stage:
            self._begin(stage)
        now = self._clock()
        self.current, self.total = current, total
        if self._last is not None:
            seconds, steps = now - self._last[0], current - self._last[1]
            if seconds <= 0 or steps < 0:
                return
            sample = steps / seconds
            weight = 1.0 - math.exp(-seconds / SMOOTHING_SECONDS)
            self._rate = sample if self._rate is None else self._rate + weight * (sample - self._rate)
        self._last = (now, current)
        if self._rate and total > current:
            self._predictions.append((now, now + (total - current) / self._rate))
        # Keep the window's predictions and the last one before it, so that they span the window
        # however rarely reports come.
        while len(self._predictions) > 2 and self._predictions[1][0] <= now - WINDOW_SECONDS:
            self._predictions.popleft()

    def eta(self) -> float | None:
        """Seconds left in the current stage, or None while there is no stable estimate."""
        now = self._clock()
        if not (0 < self.current < self.total) or now - self._stage_started < MIN_STAGE_SECONDS:
            return None
        if len(self._predictions) < MIN_PREDICTIONS or self._predictions[0][0] > now - WINDOW_SECONDS:
            return None
        recent = [end for _, end in self._predictions]
        left = recent[-1] - now
        if not self._stable:
            self._stable = max(recent) - min(recent) <= max(STABLE_SHARE * left, STABLE_SLACK)
        return left if self._stable and left >= MIN_SHOWN_SECONDS else None

    def row(self) -> dict[str, Any]:
        """The figures ``jobs.heartbeat`` stores."""
        return {"stage": self.stage, "current": self.current, "total": self.total, "eta_seconds": self.eta()}
