"""Issue #11, finding 4, from the web form: training options that would cost processes, memory or
time are refused with a 422 and the engine's sentence, and no job is queued.

``opt-num_workers=48`` once took a 2-CPU server from 7 to 56 processes. The bounds live in the
engine (``engine/trainers/limits.py``, tested in ``tests/engine/test_trainer_limits.py``); these
tests check that the form really goes through them. The job-side bounds (time limit, fair
queue, no orphans) are in ``test_worker.py``, ``test_jobs.py`` and ``test_faults.py``.
"""

from __future__ import annotations

import html
import re

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import select

from engine.trainers.limits import MAX_PIECE_LENGTH, MAX_SUB_ITERATIONS, cpu_count, max_workers
from tests.webapp.conftest import add_small_corpus, default_form
from webapp.store import db
from webapp.store.models import Job


@pytest.fixture
def corpus(client: FlaskClient) -> None:
    add_small_corpus(client)


def _field_error(page: str, name: str) -> str | None:
    found = re.search(rf'<div class="field invalid">.*?name="opt-{name}".*?'
                      r'<p class="field-error" role="alert">(.*?)</p>', page, re.S)
    return html.unescape(found.group(1)) if found else None


def _train_jobs(app: Flask) -> list[Job]:
    with app.app_context():
        return list(db.get_session().scalars(select(Job).where(Job.kind == "train")))


@pytest.mark.usefixtures("corpus")
def test_num_workers_48_is_refused_with_the_cpu_limit(client: FlaskClient, app: Flask) -> None:
    if cpu_count() >= 48:
        pytest.skip("this machine has 48 CPUs or more")
    response = client.post("/train", data=default_form("bpe", vocab_size="300", num_workers="48"))
    assert response.status_code == 422
    plural = "s" if cpu_count() != 1 else ""
    assert _field_error(response.get_data(as_text=True), "num_workers") == (
        f"num_workers=48 must be between 1 and {max_workers()} (this machine has {cpu_count()} CPU{plural}); "
        "pass a smaller num_workers, or leave it empty for one per CPU.")
    assert _train_jobs(app) == []


@pytest.mark.usefixtures("corpus")
@pytest.mark.parametrize(
    ("algorithm", "options", "field", "message"),
    [
        pytest.param("unigram", {"max_piece_length": "100000"}, "max_piece_length",
                     f"Max piece length can be at most {MAX_PIECE_LENGTH}, not 100,000. Enter a smaller number.", id="piece-length"),
        pytest.param("unigram", {"n_sub_iterations": "1000000"}, "n_sub_iterations",
                     f"N sub iterations can be at most {MAX_SUB_ITERATIONS}, not 1,000,000. Enter a smaller number.", id="em-iterations"),
        pytest.param("unigram", {"seed_size": "99999999999"}, "seed_size",
                     "Seed size can be at most 10,000,000, not 99,999,999,999. Enter a smaller number.", id="seed-size"),
        pytest.param("unigram", {"shrinking_factor": "0.99999"}, "shrinking_factor",
                     "shrinking_factor must be above 0 and at most 0.95, not 0.99999", id="shrinking"),
        pytest.param("wordpiece", {"vocab_size": "9" * 30}, "vocab_size",
                     "Vocab size can be at most 1,000,000, not 999999999999… (30 digits). Enter a smaller number.", id="wordpiece-vocab"),
        pytest.param("bpe", {"vocab_size": "300", "special_tokens": "\n".join(f"<s{i}>" for i in range(9000))},
                     "special_tokens", "special_tokens lists 9,000 tokens, above the limit of 8,192", id="specials"),
    ],
)
def test_costly_options_are_refused_inline(client: FlaskClient, app: Flask, algorithm: str,
                                           options: dict[str, str], field: str, message: str) -> None:
    response = client.post("/train", data=default_form(algorithm, **options))
    assert response.status_code == 422
    error = _field_error(response.get_data(as_text=True), field)
    assert error is not None and error.startswith(message), error
    assert _train_jobs(app) == []


@pytest.mark.usefixtures("corpus")
def test_the_most_workers_the_machine_allows_are_accepted(client: FlaskClient, app: Flask) -> None:
    response = client.post("/train", data=default_form("bpe", vocab_size="300", num_workers=str(max_workers())))
    assert response.status_code == 303
    [job] = _train_jobs(app)
    assert job.options["num_workers"] == max_workers()


@pytest.mark.usefixtures("corpus")
def test_a_team_may_queue_only_so_many_trainings(client: FlaskClient, app: Flask) -> None:
    app.config["MAX_QUEUED_JOBS"] = 3
    for _ in range(3):
        assert client.post("/train", data=default_form("bpe", vocab_size="300")).status_code == 303
    refused = client.post("/train", data=default_form("bpe", vocab_size="300"))
    assert refused.status_code == 429
    assert ("Your team already has 3 training jobs waiting; cancel one, or wait until one starts, then try again."
            in html.unescape(refused.get_data(as_text=True)))
    assert len(_train_jobs(app)) == 3
    with app.app_context():  # one starts running: a place in the queue is free again
        session = db.get_session()
        session.scalars(select(Job).where(Job.kind == "train")).first().status = "running"
        session.commit()
    assert client.post("/train", data=default_form("bpe", vocab_size="300")).status_code == 303
