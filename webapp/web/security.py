"""Response hardening and the API's limits: security headers, the CSP, rate limits, busy databases.

- Every response carries a Content-Security-Policy that allows scripts and styles only from
  this site (``script-src 'self'``, ``style-src 'self'``: no inline scripts, no ``on*=``
  handlers, no ``style=`` attributes; ``tests/webapp/web/test_security.py`` checks the templates),
  plus ``X-Content-Type-Options``, ``Referrer-Policy`` (share tokens are in URLs, so they must
  never leak through the Referer header) and framing protection.
- The JSON API's encode and decode calls are rate-limited per user (or per IP address), in the
  limiter every web process shares (``ratelimit.py``), with the API's own window.
- A database that stays locked longer than the busy timeout becomes a 503 with a plain sentence
  asking to retry, never a 500 and never the driver's "database is locked" text.

Left out: CSRF (flask-wtf, wired in ``create_app``) and login and sign-up limits (``access/accounts.py``).
"""

from __future__ import annotations

from flask import Flask, current_app, jsonify, request
from flask_login import current_user
from sqlalchemy.exc import OperationalError
from werkzeug.wrappers import Response

from webapp.store.db import get_session
from webapp.web import ratelimit
from webapp.web.errors import MESSAGES, _page

CSP = "; ".join([
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    "connect-src 'self'",
    "font-src 'self'",
    "object-src 'none'",
    "base-uri 'none'",
    "frame-ancestors 'none'",
    "form-action 'self'",
])
LIMITED_API_ENDPOINTS = frozenset({"api.encode", "api.decode"})
BUSY = "The server is busy writing other changes. Nothing was lost; please try again in a moment."


def add_headers(response: Response) -> Response:
    """Attach the CSP and the other security headers to every response."""
    headers = response.headers
    headers.setdefault("Content-Security-Policy", CSP)
    headers.setdefault("X-Content-Type-Options", "nosniff")
    headers.setdefault("Referrer-Policy", "no-referrer")
    headers.setdefault("X-Frame-Options", "DENY")
    headers.setdefault("Cross-Origin-Opener-Policy", "same-origin")
    if request.path.startswith("/s/") or request.endpoint in ("sharing.manage", "teams.show",
                                                              "accounts.account"):
        headers["Cache-Control"] = "no-store"  # pages that show secrets (links, keys)
    return response


def limit_api() -> Response | None:
    """Before API encode/decode calls: refuse with a 429 once the caller's budget is spent."""
    if request.endpoint not in LIMITED_API_ENDPOINTS:
        return None
    who = f"user:{current_user.id}" if current_user.is_authenticated else f"ip:{ratelimit.client_ip()}"
    return ratelimit.refuse("API_RATE_LIMIT", f"api:{who}", "API calls")


def _is_busy(error: OperationalError) -> bool:
    text = str(error.orig or error).lower()
    return "database is locked" in text or "database is busy" in text or "could not serialize" in text


def init_app(app: Flask) -> None:
    """Register the headers, the API limiter and the busy-database handler."""
    app.after_request(add_headers)
    app.before_request(limit_api)

    @app.errorhandler(OperationalError)
    def busy(error: OperationalError) -> tuple[object, int]:
        get_session().rollback()
        if not _is_busy(error):
            current_app.logger.exception("database error")
            return _page(500, MESSAGES[500])
        current_app.logger.warning("database busy: %s", error)
        if request.path.startswith("/api/"):
            return jsonify({"error": BUSY}), 503
        return _page(503, BUSY)
