"""The gunicorn that runs is the one ``webapp/web/server.py`` was tested against.

``BufferingWorker`` subclasses gunicorn's ``ThreadWorker`` and ``TConn`` and overrides methods that
are not gunicorn's public API (``accept``, ``enqueue_req``, ``murder_keepalived``, ...), so a new
gunicorn may break it without a word. pyproject.toml pins the series ``TESTED_GUNICORN`` names.
"""

from __future__ import annotations

import re
from pathlib import Path

import gunicorn
from gunicorn.workers.gthread import ThreadWorker

from webapp.web.server import TESTED_GUNICORN, BufferingWorker

ROOT = Path(__file__).resolve().parents[3]


def test_pyproject_pins_the_series_the_worker_was_tested_against() -> None:
    pin = re.search(r'"gunicorn>=([\d.]+),<([\d.]+)"', (ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert pin is not None and pin.group(1) == TESTED_GUNICORN
    assert gunicorn.__version__.startswith(TESTED_GUNICORN + ".")


def test_the_methods_the_worker_overrides_are_still_gunicorns() -> None:
    overridden = {name for name in vars(BufferingWorker) if not name.startswith("_")}
    assert {"accept", "enqueue_req", "finish_request", "handle_request", "murder_keepalived",
            "on_client_socket_readable"} <= overridden
    assert {name for name in overridden if callable(getattr(BufferingWorker, name))} <= set(dir(ThreadWorker))
