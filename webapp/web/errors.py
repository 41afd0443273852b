"""Error pages: every failure a user can meet renders a friendly page, never a traceback.

HTTP errors (404, 405, 413, a failed CSRF check, …) keep their status code and get a plain
sentence; anything unexpected is logged with its traceback and shown as a 500 page that says
what to do. For htmx requests only the message fragment is returned (``static/app.js`` shows
it, since htmx does not swap error responses). Everything under ``/api/`` (unknown routes
included) answers JSON ``{"error": sentence}`` instead, with the same status, because scripts
read those answers, not people.

Left out: validation errors, which views answer themselves (forms re-render with inline
messages and a 4xx; ``api/views.py`` sends its own JSON errors).
"""

from __future__ import annotations

from flask import Flask, current_app, jsonify, render_template, request
from flask_wtf.csrf import CSRFError
from werkzeug.exceptions import Forbidden, HTTPException, RequestEntityTooLarge
from werkzeug.wrappers import Response

from webapp.web.htmx import is_htmx
from webapp.web.requests import size_text

MESSAGES = {
    400: "The request could not be understood. Go back, check the form and try again.",
    403: "You are not allowed to do that.",
    404: "There is nothing here. It may have been deleted, or the link may be wrong.",
    405: "That action is not available on this page.",
    413: "The upload is larger than this server accepts.",
    # Only ``tokenizers/loaded.py`` aborts with 422: a stored tokenizer the engine refuses to load, e.g. one
    # imported before the engine's limits existed, with a token of megabytes.
    422: "This tokenizer cannot be opened: it breaks this server's limits (it may have been stored "
         "before they existed). Delete it, or import it again from a file within the limits.",
    500: "Something went wrong on our side. The error has been logged; please try again.",
}
CSRF_MESSAGE = "This form has expired or did not come from this site. Reload the page and try again."


def wants_json() -> bool:
    """Whether this request is the JSON API's, whose errors are JSON (unknown API routes too).

    ``/api`` itself is the documentation page, for people, when read (GET, HEAD); any other
    method there is a script's mistake, and gets its 405 in JSON like every other API path.
    """
    path = request.path
    return path.startswith("/api/") or (path == "/api" and request.method not in ("GET", "HEAD"))


def _api_message(status: int, error: HTTPException | None) -> str:
    """A sentence for a script: what went wrong with this method and path, and what to do."""
    where = f"{request.method} {request.path[:200]}"
    if status == 404:
        return f"There is no API endpoint {where}; GET /api lists the endpoints."
    if status == 405:
        valid = getattr(error, "valid_methods", None) or []
        allowed = " or ".join(sorted(m for m in valid if m not in ("HEAD", "OPTIONS")))
        return f"{where} is not allowed; use {allowed or 'another method'} on this endpoint."
    if status == 413:
        return _too_large_message() + " Send less at a time."
    if status == 400 and error is not None and error.description:
        return f"The request could not be understood: {error.description}"
    return MESSAGES.get(status, MESSAGES[400] if status < 500 else MESSAGES[500])


def _too_large_message() -> str:
    """A body cut off at this request's limit (``requests.limit_body``), as a sentence."""
    limit = request.max_content_length
    return f"The request is larger than the {size_text(limit)} it may carry." if limit else MESSAGES[413]


def _page(status: int, message: str) -> tuple[str, int] | Response:
    if wants_json():
        response = jsonify({"error": message})
        response.status_code = status
        return response
    template = "errors/_message.html" if is_htmx() else "errors/error.html"
    return render_template(template, status=status, message=message), status


def _with_headers(answer: tuple[str, int] | Response, error: HTTPException) -> tuple[str, int] | Response:
    """Keep the headers an HTTP error carries (405's ``Allow``, 429's ``Retry-After``)."""
    headers = [(k, v) for k, v in error.get_headers() if k.lower() != "content-type"]
    if not headers:
        return answer
    if isinstance(answer, Response):
        answer.headers.extend(headers)
        return answer
    body, status = answer
    response = Response(body, status, mimetype="text/html")
    response.headers.extend(headers)
    return response


def init_app(app: Flask) -> None:
    """Register the handlers on ``app``."""

    @app.errorhandler(CSRFError)
    def csrf_error(error: CSRFError) -> tuple[str, int] | Response:
        return _page(400, CSRF_MESSAGE)

    @app.errorhandler(RequestEntityTooLarge)
    def too_large(error: RequestEntityTooLarge) -> tuple[str, int] | Response:
        if error.description and error.description != RequestEntityTooLarge.description:
            return _page(413, error.description)  # raised with its own sentence (requests.py's limits)
        if wants_json():
            return _page(413, _api_message(413, error))
        message = _too_large_message()
        if request.endpoint == "corpora.upload":
            message += f" Each corpus file may be at most {size_text(int(current_app.config['MAX_UPLOAD_BYTES']))}."
        return _page(413, message)

    @app.errorhandler(HTTPException)
    def http_error(error: HTTPException) -> tuple[str, int] | Response:
        status = error.code or 500
        if wants_json():
            message = _api_message(status, error)
        else:
            message = MESSAGES.get(status, MESSAGES[400] if status < 500 else MESSAGES[500])
        if status == 403 and error.description and error.description != Forbidden.description:
            message = error.description  # raised with its own sentence (auth.PRESET_READ_ONLY)
        return _with_headers(_page(status, message), error)

    @app.errorhandler(Exception)
    def unexpected(error: Exception) -> tuple[str, int] | Response:
        current_app.logger.exception("unhandled error")
        return _page(500, MESSAGES[500])
