"""``tokenforge serve --access-log FILE``: one line per request, written by gunicorn's access log.

A line reads ``127.0.0.1 [31/Jan/2025:10:00:00 +0000] "GET /tokenizers/3/play HTTP/1.1" 200 5120
12ms "Mozilla/5.0 …"``: the client's address, the time, the method, path and protocol, the status,
the bytes sent, the time the app took, and the user agent. ``-`` writes the lines to stderr
beside gunicorn's own messages (gunicorn's ``-`` means stdout, where ``serve`` prints its URL);
a file is opened for appending, and gunicorn reopens it on SIGUSR1 (log rotation).

Left out of every line, because they carry what people type or what opens their data: the query
string (``?text=`` is the playground's text), the Referer (it holds the same), cookies and the
``Authorization`` header, and the tokens of share links (``/s/<token>``) and invite links
(``/join/<token>``), of which only the first :data:`TOKEN_SHOWN` characters are kept so that
one link's requests can still be told apart.
Left out: the server itself (``server.py``) and the app's own logging.
"""

from __future__ import annotations

import re
import sys
from typing import Any

from gunicorn import glogging

#: The line's fields (gunicorn's atoms): no ``%(q)s``, ``%(r)s`` (holds the query), ``%(f)s``, headers.
ACCESS_LOG_FORMAT = '%(h)s %(t)s "%(m)s %(U)s %(H)s" %(s)s %(b)s %(M)sms "%(a)s"'
TOKEN_SHOWN = 6
_TOKEN_PATH = re.compile(r"^(/(?:s|join)/)([^/]+)")


def redact(path: str) -> str:
    """``path`` with a share or invite link's token cut to its first :data:`TOKEN_SHOWN` characters."""
    return _TOKEN_PATH.sub(lambda m: m.group(1) + m.group(2)[:TOKEN_SHOWN] + "…", path or "-", count=1)


def options(target: str | None) -> dict[str, Any]:
    """gunicorn settings for an access log at ``target`` (a file, or ``-`` for stderr); none when None."""
    if target is None:
        return {}
    return {"accesslog": target, "access_log_format": ACCESS_LOG_FORMAT, "logger_class": AccessLogger}


class AccessLogger(glogging.Logger):  # type: ignore[misc]
    """gunicorn's logger, with ``-`` meaning stderr and link tokens cut out of the path."""

    def _set_handler(self, log: Any, output: Any, fmt: Any, stream: Any = None) -> None:
        if log is self.access_log and output == "-":
            stream = sys.stderr
        super()._set_handler(log, output, fmt, stream)

    def atoms(self, resp: Any, req: Any, environ: Any, request_time: Any) -> dict[str, Any]:
        atoms: dict[str, Any] = super().atoms(resp, req, environ, request_time)
        atoms["U"] = redact(atoms.get("U") or "-")
        return atoms
