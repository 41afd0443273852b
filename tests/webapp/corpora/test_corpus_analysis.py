"""The "analyse" job: uploads leave the statistics to it, the worker fills them in, and the
corpus pages show "analysing…", the figures, or why the analysis failed.

The worker runs in-process (``run_queued_jobs``; each job is still a real child process). The
tests that touch the queue run on SQLite and, when configured, PostgreSQL (``db_app``).
"""

from __future__ import annotations

import datetime as dt
import io
from pathlib import Path

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import select

from tests.webapp.conftest import login_as, run_queued_jobs
from tests.webapp.jobs_support import session_for
from webapp.corpora import stats as corpus_stats
from webapp.corpora.job_kinds import complete_analysis, enqueue_analysis
from webapp.corpora.stats import StatsAccumulator
from webapp.jobs import queue as jobs
from webapp.jobs.worker import Worker, _death_reason
from webapp.store.models import Corpus, Job, Tokenizer, utcnow
from webapp.training.form import available_algorithms

TEXT = "the cat sat\non the mat<|endoftext|>the dog\n" * 50


def upload(client: FlaskClient, body: bytes = TEXT.encode(), name: str = "pets.txt") -> int:
    response = client.post("/corpora/", data={"files": [(io.BytesIO(body), name)]},
                           content_type="multipart/form-data")
    assert response.status_code == 303, response.get_data(as_text=True)
    return int(response.headers["Location"].rsplit("/", 1)[1])


def corpus_row(app: Flask, corpus_id: int) -> Corpus:
    with session_for(app) as session:
        corpus = session.get(Corpus, corpus_id)
        assert corpus is not None
        return corpus


def analysis_job(app: Flask, corpus_id: int) -> Job:
    with session_for(app) as session:
        job = session.get(Job, corpus_row(app, corpus_id).analysis_job_id)
        assert job is not None
        return job


def fragment(client: FlaskClient, corpus_id: int) -> str:
    """What the page's polling htmx request gets: the statistics block alone."""
    html = client.get(f"/corpora/{corpus_id}", headers={"HX-Request": "true"}).get_data(as_text=True)
    assert html.lstrip().startswith('<section id="corpus-stats"')
    return html


def expected_stats(text: str) -> dict[str, object]:
    accumulator = StatsAccumulator()
    accumulator.feed(text)
    return accumulator.finish()


def test_upload_stores_cheap_facts_only_and_queues_the_analysis(
        client: FlaskClient, app: Flask, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_per_word_work(*args: object) -> None:
        raise AssertionError("the upload request must not compute the corpus statistics")

    monkeypatch.setattr(StatsAccumulator, "feed", no_per_word_work)
    corpus_id = upload(client)
    corpus = corpus_row(app, corpus_id)
    assert corpus.stats == {"chars": len(TEXT), "lines": TEXT.count("\n"),
                            "preview": TEXT[:corpus_stats.PREVIEW_CHARS]}
    job = analysis_job(app, corpus_id)
    assert (job.kind, job.status, job.corpus_ids, job.team_id) == ("analyse", "queued", [corpus_id], 1)
    page = client.get(f"/corpora/{corpus_id}").get_data(as_text=True)
    assert "Analysing… waiting for a worker" in page
    assert "You can already train on this corpus." in page
    assert "Train on this corpus" in page
    assert 'hx-trigger="every 1s"' in fragment(client, corpus_id)  # polls until analysed
    listing = client.get("/corpora/").get_data(as_text=True)
    assert "analysing…" in listing


def test_the_worker_fills_the_statistics_in(db_app: Flask) -> None:
    client = login_as(db_app.test_client(), 1)
    corpus_id = upload(client)
    run_queued_jobs(db_app)
    job = analysis_job(db_app, corpus_id)
    assert (job.status, job.error, job.attempts) == ("succeeded", None, 1)
    assert corpus_row(db_app, corpus_id).stats == expected_stats(TEXT)
    html = fragment(client, corpus_id)
    assert "hx-trigger" not in html  # analysed: the block stops polling
    assert "Analysing" not in html
    assert "<dt>Documents</dt><dd>51 " in html  # 50 separators
    assert "<dt>Distinct pre-tokens</dt><dd>8 " in html
    assert "<td>51</td>" in client.get("/corpora/").get_data(as_text=True)


def test_a_running_analysis_shows_how_far_it_got(db_app: Flask) -> None:
    client = login_as(db_app.test_client(), 1)
    corpus_id = upload(client)
    job_id = analysis_job(db_app, corpus_id).id
    with session_for(db_app) as session:
        assert jobs.claim(session, "w1") == job_id
        jobs.heartbeat(session, job_id, "w1", stage="analysing", current=50, total=200)
    html = fragment(client, corpus_id)
    assert "Analysing… 25% read" in html
    assert 'hx-trigger="every 1s"' in html


def test_a_failed_analysis_says_so_and_can_run_again(client: FlaskClient, app: Flask) -> None:
    corpus_id = upload(client)
    stored = Path(app.config["CORPUS_DIR"], "objects", corpus_row(app, corpus_id).sha256[:2],
                  f"{corpus_row(app, corpus_id).sha256}.txt")
    stored.write_bytes(b"damaged \xff after the upload")
    run_queued_jobs(app)
    job = analysis_job(app, corpus_id)
    assert job.status == "failed"
    assert job.error == ("The stored corpus file is no longer valid UTF-8 (it was damaged after the "
                         "upload). Upload it again.")
    html = fragment(client, corpus_id)
    assert "hx-trigger" not in html  # nothing to wait for
    assert "The analysis of this corpus failed: The stored corpus file is no longer valid UTF-8" in html
    assert "can still be used for training" in html
    assert "<dt>Lines</dt><dd>100</dd>" in html  # the upload's own facts stay
    assert "analysis failed" in client.get("/corpora/").get_data(as_text=True)

    stored.write_text(TEXT, encoding="utf-8")  # repaired; ask again
    again = client.post(f"/corpora/{corpus_id}/analyse", headers={"HX-Request": "true"})
    assert 'hx-trigger="every 1s"' in again.get_data(as_text=True)
    assert analysis_job(app, corpus_id).id != job.id
    client.post(f"/corpora/{corpus_id}/analyse")  # a second click while queued adds nothing
    with session_for(app) as session:
        assert len(session.scalars(select(Job).where(Job.kind == "analyse", Job.status == "queued")).all()) == 1
    run_queued_jobs(app)
    assert corpus_row(app, corpus_id).stats == expected_stats(TEXT)


def test_a_corpus_whose_analysis_crashed_still_trains(db_app: Flask) -> None:
    algorithm = next((a for a in ("bpe", "wordpiece") if a in available_algorithms()), None)
    if algorithm is None:
        pytest.skip("no trainer is installed in engine/trainers yet")
    client = login_as(db_app.test_client(), 1)
    corpus_id = upload(client)
    job_id = analysis_job(db_app, corpus_id).id
    later = utcnow() + dt.timedelta(minutes=5)
    with session_for(db_app) as session:  # its worker dies twice mid-analysis
        for _ in range(2):
            assert jobs.claim(session, "w1") == job_id
            jobs.recover_stale(session, stale_seconds=30, max_attempts=2, now=later)
    job = analysis_job(db_app, corpus_id)
    assert job.status == "failed"
    assert job.error is not None and job.error.startswith("The analysis failed after 2 attempts: each time,")
    assert "The analysis of this corpus failed: The analysis failed after 2 attempts" in fragment(client, corpus_id)
    with session_for(db_app) as session:
        vocab = 300 if algorithm == "bpe" else 80
        train_id = jobs.enqueue(session, team_id=1, name="t", algorithm=algorithm,
                                options={"vocab_size": vocab}, corpus_ids=[corpus_id]).id
    run_queued_jobs(db_app)
    with session_for(db_app) as session:
        assert session.get(Job, train_id).status == "succeeded"  # type: ignore[union-attr]
        assert session.scalars(select(Tokenizer).where(Tokenizer.job_id == train_id)).one()


def test_analyses_are_claimed_before_queued_training(db_app: Flask) -> None:
    client = login_as(db_app.test_client(), 1)
    with session_for(db_app) as session:
        train_id = jobs.enqueue(session, team_id=1, name="t", algorithm="bpe", options={}, corpus_ids=[1]).id
    corpus_id = upload(client)
    analyse_id = analysis_job(db_app, corpus_id).id
    assert analyse_id > train_id
    with session_for(db_app) as session:
        assert jobs.claim(session, "w1") == analyse_id
        assert jobs.claim(session, "w1") == train_id


def test_the_analysis_lane_does_not_wait_for_training(db_app: Flask) -> None:
    client = login_as(db_app.test_client(), 1)
    with session_for(db_app) as session:
        running = jobs.enqueue(session, team_id=1, name="long", algorithm="bpe", options={}, corpus_ids=[1]).id
        assert jobs.claim(session, "general-worker") == running  # a long training holds the general worker
        queued = jobs.enqueue(session, team_id=1, name="next", algorithm="bpe", options={}, corpus_ids=[1]).id
    corpus_id = upload(client)
    lane = Worker(dict(db_app.config), worker_id="lane", kinds=("analyse",))
    try:
        lane.run(once=True)
    finally:
        lane.engine.dispose()
    assert analysis_job(db_app, corpus_id).status == "succeeded"
    assert corpus_row(db_app, corpus_id).stats == expected_stats(TEXT)
    with session_for(db_app) as session:
        assert session.get(Job, running).status == "running"  # type: ignore[union-attr]
        assert session.get(Job, queued).status == "queued"  # type: ignore[union-attr]
        assert jobs.claim(session, "lane", kinds=("analyse",)) is None
        assert jobs.claim(session, "trainer", kinds=("train",)) == queued


def test_stats_go_only_to_a_corpus_that_still_waits_for_that_job(db_app: Flask) -> None:
    client = login_as(db_app.test_client(), 1)
    corpus_id = upload(client)
    first = analysis_job(db_app, corpus_id).id
    with session_for(db_app) as session:
        assert jobs.claim(session, "w1") == first
        assert not complete_analysis(session, first, "someone-else", stats={"documents": 1})
        corpus = session.get(Corpus, corpus_id)
        assert corpus is not None
        enqueue_analysis(session, corpus)  # queued again meanwhile
        assert complete_analysis(session, first, "w1", stats={"documents": 1})
    assert "documents" not in corpus_row(db_app, corpus_id).stats  # the newer job will write them
    assert analysis_job(db_app, corpus_id).status == "queued"


def test_deleting_a_corpus_cancels_its_analysis(client: FlaskClient, app: Flask) -> None:
    corpus_id = upload(client)
    job_id = analysis_job(app, corpus_id).id
    response = client.post(f"/corpora/{corpus_id}/delete", data={"confirmed": "yes"})
    assert (response.status_code, response.headers["Location"]) == (303, "/corpora/")
    with session_for(app) as session:
        assert session.get(Corpus, corpus_id) is None
        assert session.get(Job, job_id).status == "cancelled"  # type: ignore[union-attr]


def test_analysis_jobs_are_not_training_jobs(client: FlaskClient, app: Flask) -> None:
    corpus_id = upload(client)
    job_id = analysis_job(app, corpus_id).id
    assert client.get(f"/jobs/{job_id}").status_code == 404
    assert "Analyse pets.txt" not in client.get("/jobs").get_data(as_text=True)
    assert "0 jobs" in client.get("/teams/1").get_data(as_text=True)


def test_death_reasons_name_the_kind_of_job() -> None:
    assert _death_reason(-9, "analyse").startswith("The analysis process was killed by signal 9")
    assert _death_reason(3, "train") == "The training process exited unexpectedly with code 3. Nothing was saved."
