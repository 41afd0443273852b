"""Rate limits: one sliding-window counter per key, kept in the database, and the ``429`` answer.

A limit is written ``"N/S"``: at most N events per S seconds per key (an IP address, an e-mail
address, a user). The counters live in the ``rate_limits`` table, so every gunicorn worker
counts against the same budget and a restart forgets nothing.

The counter is the "sliding window counter" estimate: time is cut into windows of S seconds,
each key's row holds the hits of the current window and of the one before, and an event is
allowed while ``previous × (share of the previous window still inside the last S seconds) +
hits + 1 <= N``. Refused events are not counted, so a client that waits as ``Retry-After``
says gets through. Each event costs one conditional ``UPDATE`` that checks and counts at once
(atomic on SQLite and PostgreSQL alike); only the first event of a window, or a refusal, needs
one more statement. Rows expire two windows after theirs started (when they count for nothing),
each by its own window, and are deleted at most once a minute per process.

Keys are stored as their SHA-256: rows stay small whatever the key, and the table holds no
e-mail or IP address in the clear.

Every 429 names the setting that raises its budget (:func:`too_many`); :func:`refused` builds the
same answer for the budgets that count requests running at once (``slots.py``).

Left out: which requests are limited (``access/accounts.py`` for logins and sign-ups, ``security.py``
for the API, ``sharing/views.py`` for shared texts, ``corpora/budgets.py`` for uploads,
``chat/budgets.py`` for chat renders).
"""

from __future__ import annotations

import hashlib
import math
import time
from collections.abc import Callable
from typing import Any

from flask import current_app, jsonify, render_template, request
from sqlalchemy import Connection, Engine, Float, bindparam, case, delete, select, update
from sqlalchemy.dialects import postgresql, sqlite
from werkzeug.wrappers import Response

from webapp.store.models_auth import RateLimit
from webapp.web.config import ENV_DEFAULTS, parse_limit
from webapp.web.htmx import is_htmx

TABLE = RateLimit.__table__
CLEANUP_SECONDS = 60.0  # how often one process deletes expired rows (one indexed DELETE)
_c = TABLE.c
# Built once: constructing a statement costs more than running it on SQLite.
# Count the event if this window's row has room: the check and the count are one UPDATE.
# (``>=``: a process whose clock lags a little behind counts in the newer window.)
_COUNT = update(TABLE).where(
    _c.key == bindparam("digest"), _c.window_start_ms >= bindparam("start"),
    _c.previous * bindparam("weight", type_=Float()) + _c.hits + 1 <= bindparam("count"),
).values(hits=_c.hits + 1)
_ROW = select(_c.window_start_ms, _c.hits, _c.previous).where(_c.key == bindparam("digest"))


def _digest(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()


class Limiter:
    """Sliding-window counters in the ``rate_limits`` table of ``engine``'s database."""

    def __init__(self, engine: Engine, clock: Callable[[], float] = time.time) -> None:
        self.engine = engine
        self.clock = clock  # wall-clock seconds: windows must agree across processes and restarts
        self.cleaned_at = -math.inf

    def hit(self, key: str, limit: tuple[int, float]) -> float | None:
        """Count one event; return None if allowed, else seconds until the next is allowed."""
        count, window = limit
        now = self.clock()
        now_ms = int(now * 1000)
        window_ms = max(1, round(window * 1000))
        start = now_ms - now_ms % window_ms
        # The share of the previous window that still lies within the last ``window`` seconds.
        weight = 1.0 - (now_ms - start) / window_ms
        digest = _digest(key)
        with self.engine.begin() as conn:
            if self._count(conn, digest, start, weight, count):
                allowed = True
            else:
                row = self._row(conn, digest)
                if row is not None and row.window_start_ms >= start:
                    allowed = False  # this window's row exists and has no room left
                else:  # no row yet, or an old window's: roll it forward, then try again
                    self._roll(conn, digest, start, window_ms)
                    allowed = self._count(conn, digest, start, weight, count)
                    row = None if allowed else self._row(conn, digest)
        if now - self.cleaned_at > CLEANUP_SECONDS:
            self.cleanup(now_ms)
        if allowed:
            return None
        return _wait(row, count, window_ms, now_ms) if row is not None else window

    def reset(self, key: str) -> None:
        """Forget a key (after a successful login, its failures no longer count)."""
        with self.engine.begin() as conn:
            conn.execute(delete(TABLE).where(TABLE.c.key == _digest(key)))

    def cleanup(self, now_ms: int | None = None) -> int:
        """Delete the rows whose own window has passed; return how many went."""
        if now_ms is None:
            now_ms = int(self.clock() * 1000)
        self.cleaned_at = now_ms / 1000
        with self.engine.begin() as conn:
            return int(conn.execute(delete(TABLE).where(TABLE.c.expires_ms < now_ms)).rowcount or 0)

    @staticmethod
    def _count(conn: Connection, digest: str, start: int, weight: float, count: int) -> bool:
        """Count the event if this window's row has room (see ``_COUNT``)."""
        done = conn.execute(_COUNT, {"digest": digest, "start": start, "weight": weight, "count": count})
        return bool(done.rowcount)

    @staticmethod
    def _row(conn: Connection, digest: str) -> Any:
        return conn.execute(_ROW, {"digest": digest}).first()

    @staticmethod
    def _roll(conn: Connection, digest: str, start: int, window_ms: int) -> None:
        """Make the key's row describe the window starting at ``start`` (idempotent under races)."""
        c = TABLE.c
        insert = (postgresql.insert if conn.dialect.name == "postgresql" else sqlite.insert)(TABLE)
        current = c.window_start_ms >= start  # another process rolled it already: keep it
        conn.execute(insert.values(key=digest, window_start_ms=start, hits=0, previous=0,
                                   expires_ms=start + 2 * window_ms).on_conflict_do_update(
            index_elements=[c.key],
            set_={  # every right-hand side reads the old row
                "previous": case((current, c.previous), (c.window_start_ms == start - window_ms, c.hits),
                                 else_=0),
                "hits": case((current, c.hits), else_=0),
                "window_start_ms": case((current, c.window_start_ms), else_=start),
                "expires_ms": case((current, c.expires_ms), else_=start + 2 * window_ms),
            }))


def _wait(row: Any, count: int, window_ms: int, now_ms: int) -> float:
    """Seconds until ``row`` has room for one more event, if nothing else is counted meanwhile."""
    start, hits, previous = row.window_start_ms, row.hits, row.previous
    if hits + 1 <= count:  # room once enough of the previous window has slid out
        share = 1.0 - (count - 1 - hits) / previous if previous else 0.0
        until = start + share * window_ms
    else:  # this window is full: in the next, its hits become the previous window's
        until = start + window_ms + (1.0 - (count - 1) / hits) * window_ms
    return max(0.0, (until - now_ms) / 1000)


def limiter() -> Limiter:
    """The current app's limiter (on the app's database engine)."""
    found = current_app.extensions.get("tokenforge.limiter")
    if found is None:
        from webapp.store.db import get_engine

        found = current_app.extensions["tokenforge.limiter"] = Limiter(get_engine())
    return found  # type: ignore[no-any-return]


def refuse(setting: str, key: str, what: str) -> Response | None:
    """Count one event of ``key`` against the limit in the app setting ``setting``.

    Returns the 429 answer (naming ``what``) once the budget is spent, else None.
    """
    limit = parse_limit(current_app.config[setting])
    wait = limiter().hit(key, limit)
    if wait is None:
        return None
    count, seconds = limit
    return too_many(wait, what, budget=f"The server allows {count:,} per {seconds:g} seconds "
                                      f"({setting_name(setting)} raises it).")


def setting_name(setting: str) -> str:
    """The environment variable behind an app setting (``CHAT_RATE_LIMIT`` -> ``TOKENFORGE_CHAT_RATE_LIMIT``)."""
    name = f"TOKENFORGE_{setting}"
    return name if name in ENV_DEFAULTS else setting


def client_ip() -> str:
    """The address the request came from (set ``ProxyFix`` up front if behind a proxy)."""
    return request.remote_addr or "unknown"


def too_many(retry_after: float, what: str, *, budget: str = "") -> Response:
    """A 429 answer in JSON for the API, as a page otherwise, with ``Retry-After``; ``budget`` is
    the sentence that says which budget was spent and how to raise it."""
    seconds = max(1, math.ceil(retry_after))
    message = f"Too many {what}. Wait {seconds} second{'s' if seconds != 1 else ''} and try again."
    return refused(f"{message} {budget}".strip(), retry_after=seconds)


def refused(message: str, *, retry_after: float, status: int = 429) -> Response:
    """An over-budget answer (429, or 413 for a quota) with ``message``: JSON for the API, the
    message fragment for htmx (``static/js/app.js`` shows it, as for other errors), else a page
    of its own that asks nothing of the database (``errors/refused.html`` says why)."""
    seconds = max(1, math.ceil(retry_after))
    if request.path.startswith("/api/"):
        response = jsonify({"error": message})
    else:
        template = "errors/_message.html" if is_htmx() else "errors/refused.html"
        response = Response(render_template(template, status=status, message=message), mimetype="text/html")
    response.status_code = status
    if status == 429:
        response.headers["Retry-After"] = str(seconds)
    return response
