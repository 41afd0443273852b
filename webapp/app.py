"""Tokenforge's web app: the Flask application factory.

``create_app`` loads settings from the environment (``web/config.py``), applies ``test_config``
on top, and wires the database, CSRF protection, the blueprints and the error pages. It never
runs migrations: ``tokenforge serve`` does that once, before gunicorn forks its workers.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from flask import Flask, redirect, url_for
from flask_login import current_user
from flask_wtf.csrf import CSRFProtect
from werkzeug.wrappers import Response

import webapp.job_kinds  # noqa: F401  every area's job kinds, registered with the queue (jobs/kinds.py)
from webapp.access import accounts, auth, teams
from webapp.api import views as api
from webapp.assets import asset_dir
from webapp.chat import views as chat_views
from webapp.corpora import views as corpora
from webapp.leaderboards import views as leaderboard_views
from webapp.playground import compare_views, spans_html, text_links, vocab_views
from webapp.playground import views as playground
from webapp.sharing import views as sharing
from webapp.store import db
from webapp.tokenizers import diff_views as vocab_diff_views
from webapp.tokenizers import extend_views, merge_views
from webapp.tokenizers import views as tokenizers
from webapp.training import views as training
from webapp.transfer import imports
from webapp.transfer import views as transfer
from webapp.web import converters, errors, filters, json_answers, requests, security, slots, time_budget, urls
from webapp.web.config import finish_settings, load_settings
from webapp.web.forms import MAX_NAME
from webapp.web.signatures import RememberingSessionInterface

csrf = CSRFProtect()


def create_app(test_config: dict[str, Any] | None = None) -> Flask:
    """Build the app from environment settings, overridden by ``test_config`` in tests."""
    app = Flask(
        __name__,
        template_folder=str(asset_dir("templates")),
        static_folder=str(asset_dir("static")),
    )
    app.config.from_mapping(load_settings())
    if test_config:
        app.config.from_mapping(test_config)
    finish_settings(app.config)  # type: ignore[arg-type]
    # Each request's body limit is set per view by requests.limit_body; the per-file limit
    # applies after decompression in storage.py. One multipart text field stays under 1 MiB.
    app.config["MAX_FORM_MEMORY_SIZE"] = (test_config or {}).get("MAX_FORM_MEMORY_SIZE", 1 << 20)
    app.config.update(SESSION_COOKIE_HTTPONLY=True, SESSION_COOKIE_SAMESITE="Lax")
    app.session_interface = RememberingSessionInterface()  # a cookie's signature checked once per value
    app.config.setdefault("UPLOAD_TMP_DIR", str(Path(app.config["CORPUS_DIR"]) / "tmp"))
    Path(app.config["UPLOAD_TMP_DIR"]).mkdir(parents=True, exist_ok=True)

    converters.init_app(app)  # before any route: ids beyond 64 bits are a 404, not a 500
    json_answers.init_app(app)  # the same JSON, without json's check for cycles
    db.init_app(app)
    # Body limits before CSRF, whose check parses the form; the login gate's open views get more.
    requests.init_app(app, open_endpoints=auth.PUBLIC_ENDPOINTS | auth.SHAREABLE_ENDPOINTS)
    slots.init_app(app)  # concurrency budgets (uploads, chat renders) end with their request
    csrf.init_app(app)
    errors.init_app(app)
    filters.init_app(app)
    urls.init_app(app)  # the templates' url_for remembers the paths it built
    auth.init_app(app)  # login sessions, API keys, and the gate in front of every view
    security.init_app(app)  # CSP and security headers, API rate limits, busy-database answers
    time_budget.init_app(app)  # ENCODE_TIMEOUT seconds of pattern matching per request, then a 422

    add_template_globals(app)
    # Every blueprint, registered here and nowhere else.
    for blueprint in (accounts.bp, teams.bp, sharing.bp, corpora.bp,
                      tokenizers.bp,  # the tokenizer list, a tokenizer's page, deleting one
                      vocab_diff_views.bp,  # the vocabulary diff of two tokenizers
                      merge_views.bp,  # merge two vocabularies, merge_tokenizers.py's way
                      extend_views.bp,  # extend a tokenizer with a corpus (a training job)
                      training.bp,  # the training form and the training jobs' pages
                      leaderboard_views.bp,
                      playground.bp,  # encode, decode, the token inspector
                      compare_views.bp, vocab_views.bp,  # compare; vocabulary and insights
                      transfer.bp,  # downloads and imports
                      api.bp,  # the JSON API
                      chat_views.bp):  # the chat page (counting messages in a chat template)
        app.register_blueprint(blueprint)
    api.exempt_from_csrf(app)

    @app.get("/")
    def index() -> Response:
        """The home page is the tokenizer list (the gate sends visitors to the login page)."""
        return redirect(url_for("tokenizers.index" if current_user.is_authenticated else "accounts.login"))

    @app.get("/healthz")
    def healthz() -> dict[str, str]:
        """A cheap liveness probe for load balancers and the serve command."""
        return {"status": "ok"}

    return app


def add_template_globals(app: Flask) -> None:
    """The HTML builders and URL helpers that the playground's templates call, and the names' bound."""
    app.add_template_global(spans_html.spans_markup, "spans_markup")
    app.add_template_global(spans_html.ids_markup, "ids_markup")
    app.add_template_global(spans_html.hover_lines, "hover_lines")
    for helper in (text_links.play_url, text_links.page_url, text_links.compare_url, text_links.visitor_token,
                   text_links.url_text, text_links.offers_compare):
        app.add_template_global(helper, helper.__name__)
    app.jinja_env.globals["url_text_limit"] = text_links.URL_TEXT_LIMIT  # for the page script (base.html)
    app.jinja_env.globals["max_name"] = MAX_NAME  # the name fields' maxlength (web/forms.py's rule)
    # An imported tokenizer's page names its format and pattern as the import form does.
    app.jinja_env.globals.update(import_kinds=imports.KINDS, import_patterns=imports.PATTERN_CHOICES)
