"""Rate limits: a small in-memory sliding-window counter, and the ``429`` response.

A limit is written ``"N/S"``: at most N events per S seconds per key (an IP address, an e-mail
address, a user). Counters live in the memory of each web process, so with gunicorn's
``--workers 2`` a client can reach at most twice the limit; that is the documented trade-off
for needing no extra service. The counters forget keys whose window has passed, so memory
stays bounded by the number of recently active clients.

Left out: which requests are limited (``accounts.py`` for logins, ``security.py`` for the API).
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from collections.abc import Callable

from flask import current_app, jsonify, request
from werkzeug.wrappers import Response

from webapp.config import SettingsError


def parse_limit(raw: str) -> tuple[int, float]:
    """``"10/300"`` → (10, 300.0); raise SettingsError naming the value otherwise."""
    count, _, seconds = str(raw).partition("/")
    try:
        limit = (int(count), float(seconds))
    except ValueError:
        raise SettingsError(f"A rate limit is written N/SECONDS, for example 10/300, not {raw!r}.") from None
    if limit[0] < 1 or limit[1] <= 0:
        raise SettingsError(f"A rate limit needs at least 1 event in a positive number of seconds, not {raw!r}.")
    return limit


class Limiter:
    """Sliding-window counters, one deque of event times per key."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.events: dict[str, deque[float]] = {}
        self.lock = threading.Lock()
        self.calls = 0

    def hit(self, key: str, limit: tuple[int, float]) -> float | None:
        """Count one event; return None if allowed, else seconds until the next is allowed."""
        count, window = limit
        now = self.clock()
        with self.lock:
            self.calls += 1
            if self.calls % 1000 == 0:
                self._forget(now, window)
            times = self.events.setdefault(key, deque())
            while times and times[0] <= now - window:
                times.popleft()
            if len(times) >= count:
                return max(0.0, times[0] + window - now)
            times.append(now)
            return None

    def reset(self, key: str) -> None:
        """Forget a key (after a successful login, its failures no longer count)."""
        with self.lock:
            self.events.pop(key, None)

    def _forget(self, now: float, window: float) -> None:
        for key in [k for k, t in self.events.items() if not t or t[-1] <= now - window]:
            del self.events[key]


def limiter() -> Limiter:
    """The current app's limiter."""
    found: Limiter = current_app.extensions.setdefault("tokenforge.limiter", Limiter())
    return found


def client_ip() -> str:
    """The address the request came from (set ``ProxyFix`` up front if behind a proxy)."""
    return request.remote_addr or "unknown"


def too_many(retry_after: float, what: str) -> Response:
    """A 429 answer in JSON for the API, as plain text otherwise, with ``Retry-After``."""
    seconds = max(1, math.ceil(retry_after))
    message = f"Too many {what}. Wait {seconds} second{'s' if seconds != 1 else ''} and try again."
    if request.path.startswith("/api/"):
        response = jsonify({"error": message})
    else:
        from flask import render_template

        response = Response(render_template("errors/error.html", status=429, message=message),
                            mimetype="text/html")
    response.status_code = 429
    response.headers["Retry-After"] = str(seconds)
    return response
