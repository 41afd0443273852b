"""The job queue's state changes, on SQLite and (when configured) PostgreSQL."""

from __future__ import annotations

import datetime as dt
import threading

import pytest
from flask import Flask
from sqlalchemy import select, text
from sqlalchemy.orm import Session, sessionmaker

from tests.webapp.conftest import add_user
from webapp.corpora.job_kinds import enqueue_analysis
from webapp.jobs import queue as jobs
from webapp.store import db
from webapp.store.models import Corpus, Job, Tokenizer, utcnow
from webapp.training import job_kinds as training_jobs


def new_session(app: Flask) -> Session:
    return sessionmaker(db.get_engine(app), expire_on_commit=False)()


def add_jobs(session: Session, count: int) -> list[int]:
    return [
        jobs.enqueue(session, team_id=1, name=f"job {i}", algorithm="bpe", options={"vocab_size": 300},
                     corpus_ids=[1]).id
        for i in range(count)
    ]


def test_claim_takes_the_oldest_queued_job_once(db_app: Flask) -> None:
    with new_session(db_app) as session:
        first, second = add_jobs(session, 2)
        assert jobs.claim(session, "w1") == first
        assert jobs.claim(session, "w2") == second
        assert jobs.claim(session, "w3") is None
        job = session.get(Job, first)
        session.refresh(job)
        assert (job.status, job.worker_id, job.attempts) == ("running", "w1", 1)
        assert job.heartbeat_at is not None and job.started_at is not None


def _train_job(session: Session, team_id: int, name: str) -> int:
    return jobs.enqueue(session, team_id=team_id, name=name, algorithm="bpe", options={"vocab_size": 300},
                        corpus_ids=[1]).id


def _analysis(session: Session, team_id: int, name: str) -> int:
    corpus = Corpus(team_id=team_id, name=name, sha256=name.encode().hex().ljust(64, "0")[:64], format="txt",
                    size_bytes=1, stats={})
    session.add(corpus)
    session.flush()
    return enqueue_analysis(session, corpus).id


def test_no_teams_job_waits_behind_another_teams_second_job(db_app: Flask) -> None:
    _, other = add_user(db_app, "bob@example.com")
    with new_session(db_app) as session:
        a1, a2, a3 = (_train_job(session, 1, f"a{i}") for i in (1, 2, 3))
        b1, b2 = _train_job(session, other, "b1"), _train_job(session, other, "b2")
        assert jobs.claim(session, "w1") == a1  # nobody runs anything: the oldest
        assert jobs.claim(session, "w2") == b1  # team 1 runs one: team 2's job goes before a2
        assert jobs.claim(session, "w3") == a2  # one each: team 1's latest start is the older
        assert jobs.finish(session, a1, "w1", "failed", error="done with")
        assert jobs.claim(session, "w4") == b2  # one each again: now team 2's start is the older
        assert jobs.claim(session, "w5") == a3
        assert jobs.claim(session, "w6") is None


def test_a_busy_teams_analysis_waits_for_an_idle_teams_training(db_app: Flask) -> None:
    _, other = add_user(db_app, "bob@example.com")
    with new_session(db_app) as session:
        running = _train_job(session, 1, "long training")
        assert jobs.claim(session, "w1") == running
        own_training = _train_job(session, 1, "second training")
        own_analysis = _analysis(session, 1, "upload")
        their_training = _train_job(session, other, "their first job")
        their_analysis = _analysis(session, other, "their upload")
        # Team 2 runs nothing: its job first, though team 1's analysis is older (analysis first).
        assert jobs.claim(session, "w2") == their_analysis
        # One running each: analyses first, so team 1's upload; then team 2, which runs fewer.
        assert jobs.claim(session, "w3") == own_analysis
        assert jobs.claim(session, "w4") == their_training
        assert jobs.claim(session, "w5") == own_training


def test_the_analysis_lane_is_fair_too(db_app: Flask) -> None:
    _, other = add_user(db_app, "bob@example.com")
    with new_session(db_app) as session:
        first = _analysis(session, 1, "first upload")
        second = _analysis(session, 1, "second upload")
        theirs = _analysis(session, other, "their upload")
        assert [jobs.claim(session, "lane", kinds=["analyse"]) for _ in range(3)] == [first, theirs, second]


def test_concurrent_claimers_never_share_a_job(db_app: Flask) -> None:
    with new_session(db_app) as session:
        ids = add_jobs(session, 12)
    claimed: list[int] = []
    lock = threading.Lock()

    def claimer(name: str) -> None:
        with new_session(db_app) as session:
            while (job_id := jobs.claim(session, name)) is not None:
                with lock:
                    claimed.append(job_id)

    threads = [threading.Thread(target=claimer, args=(f"w{i}",)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(claimed) == ids


@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
def test_postgres_claim_skips_rows_locked_by_another_claimer(db_app: Flask) -> None:
    with new_session(db_app) as session:
        first, second = add_jobs(session, 2)
    with db.get_engine(db_app).connect() as locker:
        locker.execute(text("SELECT id FROM jobs WHERE id = :id FOR UPDATE"), {"id": first})
        with new_session(db_app) as session:
            assert jobs.claim(session, "w") == second  # does not wait for the lock
        locker.rollback()


def test_heartbeat_and_finish_only_touch_an_owned_job(db_app: Flask) -> None:
    with new_session(db_app) as session:
        [job_id] = add_jobs(session, 1)
        jobs.claim(session, "owner")
        assert jobs.heartbeat(session, job_id, "intruder", stage="x") == (False, False)
        assert jobs.heartbeat(session, job_id, "owner", stage="counting words", current=3,
                              total=10, eta_seconds=7.0) == (True, False)
        job = session.get(Job, job_id)
        session.refresh(job)
        assert (job.progress_stage, job.progress_current, job.progress_total, job.eta_seconds) == (
            "counting words", 3, 10, 7.0)
        assert not jobs.finish(session, job_id, "intruder", "failed", error="no")
        assert jobs.finish(session, job_id, "owner", "failed", error="The corpus was empty.")
        session.refresh(job)
        assert (job.status, job.error) == ("failed", "The corpus was empty.")
        assert job.finished


def test_cancel_queued_is_immediate_and_running_is_a_request(db_app: Flask) -> None:
    with new_session(db_app) as session:
        running, queued = add_jobs(session, 2)
        jobs.claim(session, "w")
        assert jobs.request_cancel(session, queued) == "cancelled"
        assert jobs.request_cancel(session, running) == "running"
        assert jobs.heartbeat(session, running, "w") == (True, True)
        assert jobs.claim(session, "w2") is None  # the cancelled job is not claimable


def test_complete_stores_the_tokenizer_with_the_job(db_app: Flask) -> None:
    with new_session(db_app) as session:
        [job_id] = add_jobs(session, 1)
        jobs.claim(session, "w")
        stats = {"seconds": 1.5, "vocab_size": 300, "merges": [["a", "b", 9]],
                 "options": {"vocab_size": 300}}
        assert training_jobs.complete(session, job_id, "other", tokenizer_json="{}", stats=stats) is None
        tokenizer = training_jobs.complete(session, job_id, "w", tokenizer_json='{"version": "1.0"}', stats=stats)
        assert tokenizer is not None
        session.expire_all()
        stored = session.scalars(select(Tokenizer)).one()
        assert (stored.job_id, stored.vocab_size, stored.training_seconds, stored.source) == (
            job_id, 300, 1.5, "trained")
        assert stored.stats["merges"] == [["a", "b", 9]]
        assert stored.tokenizer_json == '{"version": "1.0"}'
        assert session.get(Job, job_id).status == "succeeded"


def test_recover_stale_requeues_then_gives_up_after_max_attempts(db_app: Flask) -> None:
    with new_session(db_app) as session:
        [job_id] = add_jobs(session, 1)
        later = utcnow() + dt.timedelta(seconds=60)
        jobs.claim(session, "w1")
        assert jobs.recover_stale(session, stale_seconds=30, max_attempts=2, now=utcnow()) == {
            "cancelled": [], "failed": [], "requeued": []}  # fresh heartbeat: left alone
        assert jobs.recover_stale(session, stale_seconds=30, max_attempts=2, now=later)["requeued"] == [job_id]
        job = session.get(Job, job_id)
        session.refresh(job)
        assert (job.status, job.worker_id, job.attempts) == ("queued", None, 1)
        assert job.error == ("Re-queued because its worker stopped sending heartbeats for more "
                             "than 30 seconds.")
        assert jobs.claim(session, "w2") == job_id
        assert jobs.recover_stale(session, stale_seconds=30, max_attempts=2, now=later)["failed"] == [job_id]
        session.refresh(job)
        assert (job.status, job.attempts) == ("failed", 2)
        assert job.error is not None and job.error.startswith("Training failed after 2 attempts")


def test_recover_stale_finishes_a_cancel_in_progress(db_app: Flask) -> None:
    with new_session(db_app) as session:
        [job_id] = add_jobs(session, 1)
        jobs.claim(session, "w1")
        jobs.request_cancel(session, job_id)
        later = utcnow() + dt.timedelta(seconds=60)
        assert jobs.recover_stale(session, stale_seconds=30, max_attempts=2, now=later)["cancelled"] == [job_id]
        assert session.scalar(select(Job.status).where(Job.id == job_id)) == "cancelled"


def test_release_returns_the_job_without_spending_an_attempt(db_app: Flask) -> None:
    with new_session(db_app) as session:
        [job_id] = add_jobs(session, 1)
        jobs.claim(session, "w1")
        assert jobs.release(session, job_id, "w1")
        job = session.get(Job, job_id)
        session.refresh(job)
        assert (job.status, job.attempts, job.worker_id) == ("queued", 0, None)


def test_recover_worker_requeues_a_dead_workers_job_at_once(db_app: Flask) -> None:
    with new_session(db_app) as session:
        mine, theirs, cancelling, spent = add_jobs(session, 4)
        for job_id, worker in ((mine, "host:1"), (theirs, "host:2"), (cancelling, "host:1"), (spent, "host:1")):
            assert jobs.claim(session, worker) == job_id
        jobs.request_cancel(session, cancelling)
        session.execute(text("UPDATE jobs SET attempts = 2 WHERE id = :id"), {"id": spent})
        session.commit()
        why = "its worker process (pid 1) was killed by SIGKILL"
        assert jobs.recover_worker(session, "host:1", max_attempts=2, why=why) == {
            "cancelled": [cancelling], "failed": [spent], "requeued": [mine]}
        rows = {job.id: job for job in session.scalars(select(Job)).all()}
        for job in rows.values():
            session.refresh(job)
        assert (rows[mine].status, rows[mine].worker_id, rows[mine].attempts) == ("queued", None, 1)
        assert rows[mine].error == "Re-queued because its worker process (pid 1) was killed by SIGKILL."
        assert rows[theirs].status == "running"  # another worker's job, heartbeat fresh or not
        assert rows[cancelling].status == "cancelled"
        assert (rows[spent].status, rows[spent].error) == (
            "failed", "Training failed after 2 attempts: each time, its worker process (pid 1) was killed by SIGKILL.")
