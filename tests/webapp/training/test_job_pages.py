"""Job pages (issue 16, item 6): a stable ETA, "train again", duration and progress in the list."""

from __future__ import annotations

import datetime as dt
import re

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import select

from tests.webapp.conftest import add_small_corpus
from tests.webapp.training.job_samples import Clock, add_job
from webapp.jobs.eta import MIN_JOB_SECONDS, Progress
from webapp.store import db
from webapp.store.models import Job
from webapp.training.stages import STAGE_SHARES
from webapp.web import filters


def run(progress: Progress, clock: Clock, stage: str, steps: list[tuple[float, int]], total: int) -> list[float | None]:
    """Feed (seconds later, current) reports; return the ETA after each."""
    etas = []
    for later, current in steps:
        clock.now += later
        progress.update(stage, current, total)
        etas.append(progress.eta())
    return etas


def test_a_steady_stage_gets_an_eta_once_stable_and_it_is_right() -> None:
    clock = Clock()
    progress = Progress(clock, plans=STAGE_SHARES, algorithm="bpe")
    etas = run(progress, clock, "merge", [(0.2, 10 * i) for i in range(1, 61)], 1000)  # 50 steps/s, 12 s in
    assert all(eta is None for eta in etas[: int(MIN_JOB_SECONDS / 0.2) - 1])
    assert etas[-1] == pytest.approx((1000 - 600) / 50)  # 8 s left at 50 steps a second


def test_slow_first_steps_never_promise_the_wrong_end() -> None:
    """BPE's first merges wait for the pair counts: 42 merges in 3 s, then 5,000 merges a second."""
    clock = Clock()
    progress = Progress(clock, plans=STAGE_SHARES, algorithm="bpe")
    total = 60_000
    steps = [(0.2, 3 * i) for i in range(1, 15)]  # 42 merges over 2.8 s
    steps += [(0.2, 42 + 1000 * i) for i in range(1, 60)]  # then 5,000 a second: the stage ends after ~12 s more
    etas = run(progress, clock, "merge", steps, total)
    end = clock.now + (total - steps[-1][1]) / 5000
    for i, eta in enumerate(etas):
        if eta is not None:
            true_left = end - (1000 + 0.2 * (i + 1))
            assert eta <= max(2 * true_left, true_left + 5), (i, eta, true_left)  # never 20 minutes


def test_no_eta_for_a_stage_that_jumps_to_its_end_or_for_under_a_second() -> None:
    clock = Clock()
    progress = Progress(clock, plans=STAGE_SHARES, algorithm="bpe")
    assert run(progress, clock, "count", [(1.0, 5), (1.0, 5), (2.0, 5), (0.5, 5)], 5) == [None] * 4
    etas = run(progress, clock, "merge", [(0.5, 100 * i) for i in range(1, 20)], 1950)  # 200 a second: 0.25 s left
    assert etas[-1] is None
    assert progress.row() == {"stage": "merge", "current": 1900, "total": 1950, "eta_seconds": None}


def test_remaining_is_in_whole_seconds_and_silent_under_one() -> None:
    assert [filters.remaining(s) for s in (None, 0.0, 0.4, 1.4, 59.6, 125.0)] == [
        "", "", "", "about 1 s left", "about 1 min 0 s left", "about 2 min 5 s left"]


@pytest.mark.parametrize("status", ["succeeded", "failed", "cancelled"])
def test_every_finished_job_offers_train_again(client: FlaskClient, app: Flask, status: str) -> None:
    job_id = add_job(app, status=status)
    html = client.get(f"/jobs/{job_id}").get_data(as_text=True)
    assert f'href="/train?again={job_id}" data-testid="train-again"' in html


def test_a_running_job_offers_no_train_again(client: FlaskClient, app: Flask) -> None:
    assert "train-again" not in client.get(f"/jobs/{add_job(app, status='running')}").get_data(as_text=True)


def test_train_again_fills_the_form_and_starts_nothing(client: FlaskClient, app: Flask) -> None:
    add_small_corpus(client)  # corpus 1 (and its analysis job)
    job_id = add_job(app, status="cancelled")
    response = client.get(f"/train?again={job_id}")
    html = response.get_data(as_text=True)
    assert response.status_code == 200
    assert re.search(r'name="corpus_ids" value="1" checked', html)
    assert 'name="name" value="bpe run"' in html
    assert re.search(r'name="opt-vocab_size" id="opt-vocab_size" value="300"', html)
    assert re.search(r'name="opt-min_frequency" id="opt-min_frequency" value="3"', html)
    assert re.search(r'<textarea name="opt-special_tokens" id="opt-special_tokens" rows="3">&lt;\|endoftext\|&gt;\n&lt;pad&gt;</textarea>', html)
    with app.app_context():
        assert len(db.get_session().scalars(select(Job).where(Job.kind == "train")).all()) == 1


def test_train_again_for_someone_elses_or_no_job_is_not_found(client: FlaskClient) -> None:
    assert client.get("/train?again=999").status_code == 404
    assert client.get("/train?again=abc").status_code == 404


def test_the_job_list_shows_progress_and_duration(client: FlaskClient, app: Flask) -> None:
    start = dt.datetime(2026, 1, 1, 12, 0, tzinfo=dt.timezone.utc)
    done = add_job(app, status="succeeded", started_at=start, finished_at=start + dt.timedelta(seconds=125))
    running = add_job(app, status="running", started_at=dt.datetime.now(dt.timezone.utc) - dt.timedelta(seconds=30),
                      progress_stage="merge", progress_current=1234, progress_total=5000)
    queued = add_job(app, status="queued")
    html = client.get("/jobs").get_data(as_text=True)

    def cells(job_id: int) -> tuple[str, str]:
        row = re.search(rf'<tr data-job="{job_id}">.*?<td data-testid="progress">(.*?)</td>\s*<td data-testid="duration">(.*?)</td>', html, re.S)
        assert row is not None
        return row.group(1), row.group(2)

    assert cells(done) == ("done", "2 min 5 s")
    progress, duration = cells(running)
    assert progress == "learned 1,234 of 5,000 merges (24.7 %)"
    assert re.fullmatch(r"3\d s", duration)
    assert cells(queued) == ("—", "—")


def test_the_job_list_polls_only_while_a_job_is_active(client: FlaskClient, app: Flask) -> None:
    add_job(app, status="succeeded")
    assert "hx-trigger" not in client.get("/jobs").get_data(as_text=True)
    add_job(app, status="queued")
    html = client.get("/jobs").get_data(as_text=True)
    assert '<div id="jobs-table" hx-get="/jobs" hx-trigger="every 2s" hx-swap="outerHTML">' in html
    fragment = client.get("/jobs", headers={"HX-Request": "true"}).get_data(as_text=True)
    assert fragment.lstrip().startswith('<div id="jobs-table"') and "<html" not in fragment
