"""The HTTP server ``tokenforge serve`` runs: gunicorn with threaded workers, configured here.

Left out: the job workers that ``serve`` starts beside it (``cli.py``), and the app itself.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gunicorn.app.base import BaseApplication

#: How long gunicorn keeps an idle keep-alive connection open. Its default (2 s) is shorter
#: than the pauses of people typing or of scripts between calls, so clients kept reusing
#: connections the server was closing at that very moment, and a request sent into that race
#: was reset. The server should be the side that waits longest: 75 s outlasts the idle timeouts
#: of common proxies (nginx and cloud load balancers use 60 s), so they close first. gthread
#: parks idle connections in its poller, so waiting clients hold no thread.
KEEPALIVE_SECONDS = 75


def run(*, host: str, port: int, workers: int, threads: int,
        on_exit: Callable[[], None]) -> None:
    """Serve ``create_app()`` until SIGTERM or Ctrl-C; ``on_exit`` runs when gunicorn stops."""
    url = f"http://{host}:{port}/"

    class Gunicorn(BaseApplication):  # type: ignore[misc]
        def load_config(self) -> None:
            options = {
                "bind": f"{host}:{port}",
                "workers": workers,
                "threads": threads,
                "worker_class": "gthread",
                "timeout": 120,
                "keepalive": KEEPALIVE_SECONDS,
                "graceful_timeout": 10,
                "when_ready": lambda _arbiter: print(f"Tokenforge is running at {url}", flush=True),
                "on_exit": lambda _arbiter: on_exit(),
            }
            for key, value in options.items():
                self.cfg.set(key, value)

        def load(self) -> Any:
            from webapp import create_app

            return create_app()

    Gunicorn().run()
