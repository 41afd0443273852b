"""The templates' ``url_for``, remembered: the same endpoint and values give the same path.

A page calls ``url_for`` about 30 times (the header's links, the tokenizer's tabs, the forms'
actions), and each call builds the path through Werkzeug's URL map again, ~5 microseconds apiece,
for answers that only change when the endpoint or its values do. :func:`remembering_url_for`
wraps the app's ``url_for`` for the templates and keeps the paths it built; :func:`url_for` is
the same for Python code that runs on every page (the playground's links, ``text_links.py``).

Only what cannot depend on anything else is remembered: a relative path (no ``_external``,
``_scheme``, ``_anchor`` or ``_method``), a full endpoint name (not ``.name``, which depends on
the request's blueprint), hashable values, none of them a string longer than :data:`LONGEST` (a text carried in a link
would fill the memo with one-off paths), an app with no ``url_defaults`` functions, built in
a request. The key holds the endpoint, each value with its type (``1`` and ``True`` are equal
keys in a dict but different URLs), and the request's script root (the path prefix a proxy may
mount the app under). Every other call goes to Flask as before. The memo is bounded: it is
emptied when it reaches :data:`REMEMBERED` paths (a page's links are a few dozen; the rest are
one per tokenizer or job id shown).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flask import Flask, current_app, has_request_context, request

REMEMBERED = 4096
LONGEST = 256  # characters of a string value that is still remembered
_EXTENSION = "tokenforge.url_for"


def remembering_url_for(app: Flask) -> Callable[..., str]:
    """The app's ``url_for`` with the relative paths it builds in requests remembered (see above)."""
    build = app.url_for
    memo: dict[tuple[Any, ...], str] = {}

    def url_for(endpoint: str, /, **values: Any) -> str:
        if (endpoint[:1] == "." or any(app.url_default_functions.values()) or not has_request_context()
                or any(name[:1] == "_" for name in values)):
            return build(endpoint, **values)
        key = (endpoint, request.script_root, *((name, type(value), value) for name, value in values.items()))
        try:
            return memo[key]
        except KeyError:
            pass
        except TypeError:  # an unhashable value (a list of query values): not remembered
            return build(endpoint, **values)
        path = build(endpoint, **values)
        if any(isinstance(value, str) and len(value) > LONGEST for value in values.values()):
            return path
        if len(memo) >= REMEMBERED:
            memo.clear()
        memo[key] = path
        return path

    return url_for


def url_for(endpoint: str, /, **values: Any) -> str:
    """The current app's remembering ``url_for`` (Flask's own where :func:`init_app` did not run)."""
    app = current_app
    found = app.extensions.get(_EXTENSION)
    return found(endpoint, **values) if found is not None else app.url_for(endpoint, **values)


def init_app(app: Flask) -> None:
    """Give the templates and :func:`url_for` the remembering ``url_for``."""
    app.extensions[_EXTENSION] = app.jinja_env.globals["url_for"] = remembering_url_for(app)
