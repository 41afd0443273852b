"""Every request gets ``ENCODE_TIMEOUT`` CPU seconds of pattern matching (``engine.limits.time_budget``).

An imported pre-tokenizer pattern can backtrack for minutes on a crafted text (``(?:.*,){6}X``
on 2,000 commas took 139 s of a core), and an imported vocabulary can make a model crawl over
one huge piece. The budget opens before the view runs and closes at teardown; the engine
charges it the CPU time of each pattern call on user text and of the models' loops over very
long pieces (``engine.limits.work_meter``), and raises ``EncodeTimeout`` once it is used up. The encode, compare and API
views already show a ``TokenforgeError`` as a 422 with its message; the handler here is the net
under every other view (an evaluation, an export check), so a slow pattern is a 422 with the
engine's sentence, never a 500. Left out: the worker's jobs, bounded by ``JOB_TIME_LIMIT``.
"""

from __future__ import annotations

from contextlib import ExitStack

from flask import Flask, current_app, g, jsonify, render_template
from werkzeug.wrappers import Response

from engine import EncodeTimeout, time_budget
from webapp.web.errors import wants_json
from webapp.web.htmx import is_htmx


def _start() -> None:
    # The budget is a context variable: set here, in the request's own context, it holds for
    # the view and is reset at teardown (ExitStack keeps the context manager between the two).
    stack = ExitStack()
    stack.enter_context(time_budget(float(current_app.config["ENCODE_TIMEOUT"])))
    g.time_budget = stack


def _end(_exc: BaseException | None) -> None:
    stack: ExitStack | None = g.pop("time_budget", None)
    if stack is not None:
        stack.close()


def _timed_out(exc: EncodeTimeout) -> Response | tuple[str, int]:
    """A 422 with the engine's sentence: JSON for the API, the message block for htmx, else a page."""
    if wants_json():
        response = jsonify({"error": str(exc)})
        response.status_code = 422
        return response
    template = "errors/_message.html" if is_htmx() else "errors/error.html"
    return render_template(template, status=422, message=str(exc)), 422


def init_app(app: Flask) -> None:
    """Start the budget before each request, end it at teardown, and answer a timeout with a 422."""
    app.before_request(_start)
    app.teardown_request(_end)
    app.register_error_handler(EncodeTimeout, _timed_out)
