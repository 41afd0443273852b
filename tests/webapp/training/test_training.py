"""The training form, job pages and error pages."""

from __future__ import annotations

import re
from pathlib import Path

from flask import Flask
from flask.testing import FlaskClient
from markupsafe import escape
from sqlalchemy import select

from engine.trainers import option_specs
from tests.webapp.conftest import add_small_corpus, default_form, login_as, make_app
from webapp.store import db
from webapp.store.models import Job


def test_form_offers_every_engine_option_with_help(client: FlaskClient, algorithm: str) -> None:
    page = client.get(f"/train?algorithm={algorithm}").get_data(as_text=True)
    for spec in option_specs(algorithm):
        assert f'name="opt-{spec.name}"' in page
        assert str(escape(spec.help)) in page  # as Jinja escapes it


def test_changing_the_algorithm_swaps_only_the_options(client: FlaskClient, algorithm: str) -> None:
    fragment = client.get(f"/train?algorithm={algorithm}", headers={"HX-Request": "true"})
    html = fragment.get_data(as_text=True)
    assert html.lstrip().startswith('<fieldset id="options">')
    assert "<html" not in html


def test_missing_corpus_and_bad_vocab_are_inline_errors(client: FlaskClient, app: Flask, algorithm: str) -> None:
    response = client.post("/train", data={"algorithm": algorithm, "opt-vocab_size": "2"})
    html = response.get_data(as_text=True)
    assert response.status_code == 422
    assert "Choose at least one corpus to train on." in html
    vocab_error = re.search(r'<div class="field invalid">.*?name="opt-vocab_size".*?'
                            r'<p class="field-error" role="alert">(.*?)</p>', html, re.S)
    assert vocab_error is not None and "vocab" in vocab_error.group(1).lower()
    assert 'value="2"' in html  # what the user typed is kept
    with app.app_context():
        assert db.get_session().scalars(select(Job)).all() == []


def test_a_valid_form_queues_a_job(client: FlaskClient, app: Flask, algorithm: str) -> None:
    add_small_corpus(client)
    response = client.post("/train", data=default_form(algorithm, vocab_size="300"))
    assert (response.status_code, response.headers["Location"]) == (303, "/jobs/2")  # 1: the corpus's analysis
    with app.app_context():
        job = db.get_session().scalars(select(Job).where(Job.kind == "train")).one()
        assert (job.id, job.status, job.algorithm, job.corpus_ids) == (2, "queued", algorithm, [1])
        assert job.options["vocab_size"] == 300
        assert job.name == f"{algorithm}-300 on c.txt"
    fragment = client.get("/jobs/2", headers={"HX-Request": "true"}).get_data(as_text=True)
    assert 'hx-trigger="every 1s"' in fragment  # polls while not finished
    cancelled = client.post("/jobs/2/cancel", headers={"HX-Request": "true"}).get_data(as_text=True)
    assert 'data-status="cancelled"' in cancelled
    assert "hx-trigger" not in cancelled


def test_unknown_pages_get_a_friendly_404(client: FlaskClient) -> None:
    response = client.get("/jobs/999")
    html = response.get_data(as_text=True)
    assert response.status_code == 404
    assert "There is nothing here." in html


def test_unexpected_errors_show_no_traceback(tmp_path: Path) -> None:
    app = make_app(tmp_path, f"sqlite:///{tmp_path / 'e.sqlite3'}", TESTING=False)
    app.view_functions["training.job_list"] = lambda: 1 / 0
    response = login_as(app.test_client(), 1).get("/jobs")
    html = response.get_data(as_text=True)
    db.get_engine(app).dispose()
    assert response.status_code == 500
    assert "Something went wrong on our side." in html
    assert "ZeroDivisionError" not in html and "Traceback" not in html


def test_csrf_is_enforced_and_htmx_sends_the_token_header(tmp_path: Path) -> None:
    app = make_app(tmp_path, f"sqlite:///{tmp_path / 'c.sqlite3'}", WTF_CSRF_ENABLED=True)
    client = login_as(app.test_client(), 1)
    refused = client.post("/jobs/1/cancel")
    assert refused.status_code == 400
    assert "This form has expired or did not come from this site." in refused.get_data(as_text=True)
    page = client.get("/jobs").get_data(as_text=True)
    token = re.search(r"<body hx-headers='\{\"X-CSRFToken\": \"([^\"]+)\"\}'", page)
    assert token is not None
    allowed = client.post("/jobs/1/cancel", headers={"X-CSRFToken": token.group(1)})
    db.get_engine(app).dispose()
    assert allowed.status_code == 404  # past CSRF; there is simply no job 1
