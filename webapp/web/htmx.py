"""Serving a full page or just the region htmx swaps, from the same route.

A view calls :func:`render` with a template and the name of a block in it: ordinary requests
get the whole page, htmx requests (``HX-Request``, except history restores, which need the full
page) get only that block, rendered with the same context. ``Vary: HX-Request`` keeps caches
from mixing the two. Nothing else about htmx lives here.
"""

from __future__ import annotations

from typing import Any

from flask import current_app, make_response, request
from werkzeug.wrappers import Response


def is_htmx() -> bool:
    """Whether this request came from htmx and wants a fragment.

    Read from the WSGI environ, where ``request.headers.get`` reads them too: a page asks this
    several times, and Werkzeug's lookup of a header that is absent (``HX-History-Restore-Request``,
    nearly always) raises and catches a ``KeyError`` each time.
    """
    environ = request.environ
    return environ.get("HTTP_HX_REQUEST") == "true" and environ.get("HTTP_HX_HISTORY_RESTORE_REQUEST") != "true"


def render_block(template_name: str, block_name: str, **context: Any) -> str:
    """Render one named block of a template with the usual context processors applied."""
    env = current_app.jinja_env
    template = env.get_or_select_template(template_name)
    current_app.update_template_context(context)
    ctx = template.new_context(context)
    return "".join(template.blocks[block_name](ctx))


def render(template_name: str, block_name: str | None = None, *, status: int = 200,
           **context: Any) -> Response:
    """The whole page, or only ``block_name`` for htmx requests."""
    from flask import render_template

    if block_name is not None and is_htmx():
        body = render_block(template_name, block_name, **context)
    else:
        body = render_template(template_name, **context)
    response = make_response(body, status)
    response.headers["Vary"] = "HX-Request"
    return response
