"""What chat renders one holder may spend: renders a minute, and renders at once.

A chat render runs the tokenizer's own Jinja template in a sandboxed child process for up to
``CHAT_RENDER_SECONDS``, so a shared tokenizer with a template that loops as long as it may
costs seconds of CPU per request, to anyone holding the link. Each render therefore counts
against its holder's ``CHAT_RATE_LIMIT`` (``web/ratelimit.py``) and holds one of the holder's
``CHAT_CONCURRENCY`` slots while it runs (``web/slots.py``), and one of the whole server's
``CHAT_RENDERS_AT_ONCE``: many holders together (fresh accounts, many links) could otherwise
keep every core rendering (a render runs in a render thread, never a request thread: ``web/server.py``).
Beyond any of the three, a 429 that names the setting. The slots are tried first: a lock file
costs microseconds where the rate counts in the database, and a render refused for want of a
slot is not counted against the rate (as the rate limiter counts no refused event), so a holder
who waits for a running render to end still has the renders a minute they had.

The holder is the API key a request came with, else the signed-in member, else the share link
that opened the tokenizer for this visitor (every holder of one link shares its budget, so
fresh sessions do not buy more), else the address.

Left out: the render's own bounds (``sandbox.py``); the API's chat branch calls :func:`admit`
from ``api/views.py``.
"""

from __future__ import annotations

from flask import g
from flask_login import current_user
from werkzeug.wrappers import Response

from webapp.access.visitors import share_token
from webapp.web import ratelimit, slots

SERVER = "chat:server"  # the slot key every render shares


def holder(tokenizer_id: int) -> str:
    """Whose budget a chat render of ``tokenizer_id`` spends (module docstring)."""
    key_id = g.get("api_key_id")
    if key_id is not None:
        return f"key:{key_id}"
    if current_user.is_authenticated:
        return f"member:{current_user.id}"
    token = share_token(tokenizer_id)
    if token is not None:
        return f"link:{token}"
    return f"ip:{ratelimit.client_ip()}"


def admit(tokenizer_id: int) -> Response | None:
    """Count one chat render of ``tokenizer_id`` and hold a slot for it until the request ends;
    the 429 answer if either budget is spent, else None."""
    who = f"chat:{holder(tokenizer_id)}"
    refused = slots.hold("CHAT_CONCURRENCY", who, "Other chat renders of yours are still running.")
    if refused is None:
        refused = slots.hold("CHAT_RENDERS_AT_ONCE", SERVER, "The server is busy rendering other chat templates.")
    if refused is None:
        refused = ratelimit.refuse("CHAT_RATE_LIMIT", who, "chat renders")
    return refused
