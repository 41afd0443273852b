"""Error pages: every failure a user can meet renders a friendly page, never a traceback.

HTTP errors (404, 405, 413, a failed CSRF check, …) keep their status code and get a plain
sentence; anything unexpected is logged with its traceback and shown as a 500 page that says
what to do. For htmx requests only the message fragment is returned (``static/app.js`` shows
it, since htmx does not swap error responses). Validation errors are not handled here: views
re-render their forms with inline messages and a 4xx status.
"""

from __future__ import annotations

from flask import Flask, current_app, render_template
from flask_wtf.csrf import CSRFError
from werkzeug.exceptions import HTTPException, RequestEntityTooLarge

from webapp.htmx import is_htmx

MESSAGES = {
    400: "The request could not be understood. Go back, check the form and try again.",
    403: "You are not allowed to do that.",
    404: "There is nothing here. It may have been deleted, or the link may be wrong.",
    405: "That action is not available on this page.",
    413: "The upload is larger than this server accepts.",
    500: "Something went wrong on our side. The error has been logged; please try again.",
}


def _page(status: int, message: str) -> tuple[str, int]:
    template = "errors/_message.html" if is_htmx() else "errors/error.html"
    return render_template(template, status=status, message=message), status


def init_app(app: Flask) -> None:
    """Register the handlers on ``app``."""

    @app.errorhandler(CSRFError)
    def csrf_error(error: CSRFError) -> tuple[str, int]:
        return _page(400, "This form has expired or did not come from this site. "
                          "Reload the page and try again.")

    @app.errorhandler(RequestEntityTooLarge)
    def too_large(error: RequestEntityTooLarge) -> tuple[str, int]:
        limit = current_app.config["MAX_UPLOAD_BYTES"]
        return _page(413, f"The upload is too large. Each corpus file may be at most "
                          f"{limit / 1024**2:,.0f} MiB.")

    @app.errorhandler(HTTPException)
    def http_error(error: HTTPException) -> tuple[str, int]:
        status = error.code or 500
        return _page(status, MESSAGES.get(status, MESSAGES[400] if status < 500 else MESSAGES[500]))

    @app.errorhandler(Exception)
    def unexpected(error: Exception) -> tuple[str, int]:
        current_app.logger.exception("unhandled error")
        return _page(500, MESSAGES[500])
