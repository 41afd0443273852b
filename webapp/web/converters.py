"""URL converters: ids in URLs are bounded to what the database can hold.

Flask's ``int`` converter accepts any number of digits, and a 30-digit id overflows SQLite's
and PostgreSQL's 64-bit integers inside the query (a 500). Replacing the converter app-wide
makes every ``<int:...>`` route answer 404 for such ids, with no check in each view.
"""

from __future__ import annotations

from typing import Any

from flask import Flask
from werkzeug.routing import IntegerConverter

from webapp.web.numbers import MAX_ID


class BoundedIntConverter(IntegerConverter):
    """``int`` in URLs, refusing (404) values beyond a signed 64-bit integer."""

    def __init__(self, map: Any, *args: Any, **kwargs: Any) -> None:  # noqa: A002 - werkzeug's name
        kwargs.setdefault("max", MAX_ID)
        super().__init__(map, *args, **kwargs)


def init_app(app: Flask) -> None:
    """Install the bounded converter; call before any blueprint is registered."""
    app.url_map.converters["int"] = BoundedIntConverter
