"""The job worker end to end: real training in a child process, cancel, and crash recovery.

These tests run the engine's real trainer on tiny corpora. The crash tests kill real
processes: the training child (the job must fail at once) and a whole ``tokenforge worker``
process with SIGKILL (its job must be re-queued, then failed after two attempts).

The last tests run a Unigram training on a corpus large enough for the trainer to start
processes of its own (the counting pool, forks, shards), and check that a cancel, the time
limit or a SIGKILLed worker leaves none of them behind: every process the job started carries
a tag in its environment (``live.tagged_processes``), so even orphans are found.
"""

from __future__ import annotations

import datetime as dt
import os
import signal
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from flask import Flask
from sqlalchemy import select, text

from tests.live import children, tagged_processes, wait_for
from tests.webapp.conftest import login_as
from tests.webapp.jobs_support import (
    add_job,
    add_long_job,
    hold_job_row,
    job_row,
    kill_worker_mid_job,
    needs_two_cpus,
    session_for,
    small_options,
    start_worker_process,
    unigram_corpus,
)
from webapp.jobs import queue as jobs
from webapp.jobs.worker import Worker
from webapp.store.models import Tokenizer, utcnow


@pytest.fixture
def worker(db_app: Flask) -> Iterator[Worker]:
    worker = Worker(dict(db_app.config), worker_id="test-worker")
    yield worker
    worker.engine.dispose()


def test_worker_trains_and_stores_the_tokenizer(db_app: Flask, worker: Worker, algorithm: str) -> None:
    job_id = add_job(db_app, algorithm)
    worker.run(once=True)
    job = job_row(db_app, job_id)
    assert (job.status, job.error, job.attempts) == ("succeeded", None, 1)
    with session_for(db_app) as session:
        tokenizer = session.scalars(select(Tokenizer).where(Tokenizer.job_id == job_id)).one()
    assert tokenizer.vocab_size == small_options(algorithm)["vocab_size"]
    assert tokenizer.algorithm == algorithm
    # The trainer's own clock, stored as it reported it, and inside the job's run.
    assert tokenizer.training_seconds == tokenizer.stats["seconds"]
    assert 0 < tokenizer.training_seconds <= (job.finished_at - job.started_at).total_seconds()
    assert tokenizer.config["options"]["vocab_size"] == tokenizer.vocab_size
    assert '"model"' in tokenizer.tokenizer_json
    client = login_as(db_app.test_client(), 1)
    page = client.get(f"/tokenizers/{tokenizer.id}").get_data(as_text=True)
    assert f'<dd data-testid="vocab-size">{tokenizer.vocab_size:,}</dd>' in page
    assert 'data-testid="training-time"' in page
    fragment = client.get(f"/jobs/{job_id}", headers={"HX-Request": "true"}).get_data(as_text=True)
    assert fragment.lstrip().startswith(f'<section id="job-{job_id}"')
    assert "hx-trigger" not in fragment  # finished: the component stops polling


def test_cancel_reaches_the_training_child(db_app: Flask, worker: Worker, algorithm: str) -> None:
    job_id = add_job(db_app, algorithm)
    with session_for(db_app) as session:
        assert jobs.claim(session, worker.worker_id) == job_id
        jobs.request_cancel(session, job_id)
    assert worker.run_job(job_id) == "cancelled"
    job = job_row(db_app, job_id)
    assert (job.status, job.finished_at is not None) == ("cancelled", True)


def test_killed_child_fails_the_job_at_once(db_app: Flask, worker: Worker, algorithm: str) -> None:
    job_id = add_job(db_app, algorithm)
    with session_for(db_app) as session:
        jobs.claim(session, worker.worker_id)
    outcome: list[str] = []
    thread = threading.Thread(target=lambda: outcome.append(worker.run_job(job_id)))
    thread.start()
    wait_for(lambda: worker.child_pid is not None, "the training child to start")
    os.kill(worker.child_pid, signal.SIGKILL)  # type: ignore[arg-type]
    thread.join()
    job = job_row(db_app, job_id)
    assert outcome == ["failed"]
    assert job.status == "failed"
    assert job.error == ("The training process was killed by signal 9 (SIGKILL: often the system "
                         "running out of memory). Nothing was saved.")


def test_a_deleted_corpus_fails_the_job_with_the_reason(db_app: Flask, worker: Worker, algorithm: str) -> None:
    job_id = add_job(db_app, algorithm)
    with session_for(db_app) as session:
        session.execute(text("DELETE FROM corpora"))
        session.commit()
    worker.run(once=True)
    job = job_row(db_app, job_id)
    assert (job.status, job.error) == ("failed", "Corpus #1 was deleted before training started.")


def test_sigkilled_worker_is_requeued_then_failed(db_app: Flask, algorithm: str, tmp_path: Path) -> None:
    job_id = add_long_job(db_app, algorithm)
    log = tmp_path / "worker.log"
    later = lambda: utcnow() + dt.timedelta(minutes=5)  # noqa: E731 - a heartbeat gone stale

    kill_worker_mid_job(db_app, job_id, 1, log)
    job = job_row(db_app, job_id)
    assert (job.status, job.attempts) == ("running", 1)
    with session_for(db_app) as session:
        assert jobs.recover_stale(session, stale_seconds=30, max_attempts=2, now=later())[
            "requeued"] == [job_id]
    assert job_row(db_app, job_id).status == "queued"

    kill_worker_mid_job(db_app, job_id, 2, log)
    with session_for(db_app) as session:
        assert jobs.recover_stale(session, stale_seconds=30, max_attempts=2, now=later())[
            "failed"] == [job_id]
    job = job_row(db_app, job_id)
    assert (job.status, job.attempts) == ("failed", 2)
    assert job.error == (
        "Training failed after 2 attempts: each time, its worker stopped sending heartbeats for "
        "more than 30 seconds (the worker process was killed or its machine stopped).")


def test_sigterm_puts_the_running_job_back(db_app: Flask, algorithm: str, tmp_path: Path) -> None:
    job_id = add_long_job(db_app, algorithm)
    process = start_worker_process(db_app, tmp_path / "worker.log")
    wait_for(lambda: job_row(db_app, job_id).status == "running", "the job to start")
    release = hold_job_row(db_app, job_id)
    process.send_signal(signal.SIGTERM)
    release()
    assert process.wait(timeout=60) == 0
    job = job_row(db_app, job_id)
    assert (job.status, job.attempts, job.worker_id) == ("queued", 0, None)


# --- no process of a job outlives it ---------------------------------------------------------

def _run_in_thread(worker: Worker, job_id: int) -> tuple[threading.Thread, list[str]]:
    outcome: list[str] = []
    thread = threading.Thread(target=lambda: outcome.append(worker.run_job(job_id)))
    thread.start()
    return thread, outcome


def _trainer_with_processes(worker: Worker) -> int:
    """Wait until the training child has started processes of its own; return the child's pid."""
    wait_for(lambda: worker.child_pid is not None and children(worker.child_pid) != [],
             "the trainer's own processes to start")
    assert worker.child_pid is not None
    return worker.child_pid


@needs_two_cpus
@pytest.mark.slow
@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_a_cancelled_unigram_job_leaves_no_process(db_app: Flask, tag: str) -> None:
    worker = Worker({**db_app.config, "CANCEL_GRACE_SECONDS": 0.5}, worker_id="test-worker")
    job_id = add_job(db_app, "unigram", unigram_corpus(), {"vocab_size": 2000})
    with session_for(db_app) as session:
        assert jobs.claim(session, worker.worker_id) == job_id
    thread, outcome = _run_in_thread(worker, job_id)
    child = _trainer_with_processes(worker)
    assert len(tagged_processes(tag)) >= 2  # the child and at least one counting process
    # A trainer deep in a step that does not poll for cancels (a seed half, an E-step): only
    # the kill after the grace period stops it, and that kill must reach its processes too.
    os.kill(child, signal.SIGSTOP)
    with session_for(db_app) as session:
        assert jobs.request_cancel(session, job_id) == "running"
    thread.join(timeout=60)
    worker.engine.dispose()
    assert outcome == ["cancelled"]
    assert job_row(db_app, job_id).status == "cancelled"
    wait_for(lambda: tagged_processes(tag) == [], "every process of the cancelled job to exit", limit=10)


@needs_two_cpus
@pytest.mark.slow
@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_the_time_limit_fails_a_job_and_leaves_no_process(db_app: Flask, tag: str) -> None:
    worker = Worker({**db_app.config, "JOB_TIME_LIMIT": 1.0, "CANCEL_GRACE_SECONDS": 0.5}, worker_id="test-worker")
    job_id = add_job(db_app, "unigram", unigram_corpus(), {"vocab_size": 2000})
    with session_for(db_app) as session:
        assert jobs.claim(session, worker.worker_id) == job_id
    assert worker.run_job(job_id) == "failed"
    worker.engine.dispose()
    job = job_row(db_app, job_id)
    assert (job.status, job.error) == ("failed", (
        "The training ran longer than the time limit of 1 second and was stopped. Nothing was saved. "
        "Train on less text or a smaller vocabulary, or ask the administrator to raise the setting "
        "TOKENFORGE_JOB_TIME_LIMIT (now 1 second)."))
    with session_for(db_app) as session:
        assert session.query(Tokenizer).count() == 0
    wait_for(lambda: tagged_processes(tag) == [], "every process of the stopped job to exit", limit=10)


@needs_two_cpus
@pytest.mark.slow
@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_a_sigkilled_worker_takes_every_process_of_its_job_along(db_app: Flask, tag: str, tmp_path: Path) -> None:
    job_id = add_job(db_app, "unigram", unigram_corpus(), {"vocab_size": 2000})
    process = start_worker_process(db_app, tmp_path / "worker.log")
    try:
        wait_for(lambda: job_row(db_app, job_id).status == "running", "the job to start")
        wait_for(lambda: any(children(c) for c in children(process.pid)), "the trainer's own processes to start")
        assert len(tagged_processes(tag)) >= 3  # the worker, the training child, its processes
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait()
    wait_for(lambda: tagged_processes(tag) == [], "every process of the job to die with its worker", limit=10)
