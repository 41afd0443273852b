"""The queue is fair across teams (issue #22, finding 2), on SQLite and (when configured) PostgreSQL.

A claim is round-robin by team: among the teams with a queued job, those running the fewest jobs,
then the team whose latest job started longest ago (a team that never ran one first), then that
team's oldest job. A team's cap on waiting jobs holds when many requests enqueue at once.
The tests call ``jobs.claim`` directly and end each claimed job by hand: no training runs.
"""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Callable

import pytest
from flask import Flask
from sqlalchemy import func, select, update
from sqlalchemy.orm import Session, sessionmaker

from tests.webapp.conftest import add_user
from webapp.corpora.job_kinds import enqueue_analysis
from webapp.jobs import queue as jobs
from webapp.leaderboards.job_kinds import enqueue_leaderboard
from webapp.store import db
from webapp.store.models import Corpus, Job, Leaderboard, utcnow


def new_session(app: Flask) -> Session:
    return sessionmaker(db.get_engine(app), expire_on_commit=False)()


def queue(session: Session, team_id: int, count: int, prefix: str) -> list[int]:
    """Queue ``count`` trainings of ``team_id``, named ``prefix1``, ``prefix2``, ...; their ids."""
    return [jobs.enqueue(session, team_id=team_id, name=f"{prefix}{i}", algorithm="bpe",
                         options={"vocab_size": 300}, corpus_ids=[1]).id for i in range(1, count + 1)]


def run_next(session: Session, worker: str = "the worker") -> int | None:
    """What one worker does: claim the next job and (here, at once) end it; the job's id."""
    job_id = jobs.claim(session, worker)
    if job_id is not None:
        assert jobs.finish(session, job_id, worker, "failed", error="ended by the test")
    return job_id


def test_one_worker_takes_the_other_teams_job_before_the_rest_of_twenty(db_app: Flask) -> None:
    _, team_b = add_user(db_app, "bob@example.com")
    with new_session(db_app) as session:
        a = queue(session, 1, 20, "a")
        [b] = queue(session, team_b, 1, "b")
        assert run_next(session) == a[0]  # neither team has run anything: the oldest job
        assert run_next(session) == b  # team A just had its turn
        assert [run_next(session) for _ in range(20)] == [*a[1:], None]  # then A's, oldest first


def test_teams_take_turns(db_app: Flask) -> None:
    _, team_b = add_user(db_app, "bob@example.com")
    _, team_c = add_user(db_app, "carol@example.com")
    with new_session(db_app) as session:
        a = queue(session, 1, 3, "a")
        b = queue(session, team_b, 2, "b")
        [c] = queue(session, team_c, 1, "c")
        order = [run_next(session) for _ in range(7)]
    assert order == [a[0], b[0], c, a[1], b[1], a[2], None]


def test_a_team_that_never_ran_a_job_goes_before_one_that_did(db_app: Flask) -> None:
    _, team_b = add_user(db_app, "bob@example.com")
    with new_session(db_app) as session:
        [old] = queue(session, 1, 1, "yesterday's")
        job = session.get(Job, old)
        job.status, job.started_at = "succeeded", utcnow() - dt.timedelta(days=1)
        session.commit()
        [a] = queue(session, 1, 1, "a")
        [b] = queue(session, team_b, 1, "b")  # newer than team A's job
        assert [run_next(session) for _ in range(3)] == [b, a, None]


def test_a_team_running_a_job_gets_no_second_one_while_another_team_waits(db_app: Flask) -> None:
    _, team_b = add_user(db_app, "bob@example.com")
    with new_session(db_app) as session:
        a = queue(session, 1, 5, "a")
        assert jobs.claim(session, "long training") == a[0]  # runs for hours
        [b] = queue(session, team_b, 1, "b")
        assert jobs.claim(session, "lane 2") == b
        # Both teams run one job: the team whose job started longer ago (A) has the next turn.
        assert jobs.claim(session, "lane 3") == a[1]
        # A runs two, B one: B would go first, but has nothing queued.
        assert jobs.claim(session, "lane 4") == a[2]


def test_a_teams_analysis_goes_before_its_training_but_not_before_another_teams_turn(db_app: Flask) -> None:
    _, team_b = add_user(db_app, "bob@example.com")
    with new_session(db_app) as session:
        [a1] = queue(session, 1, 1, "a")
        [b1] = queue(session, team_b, 1, "b")
        assert run_next(session) == a1
        corpus = Corpus(team_id=1, name="upload", sha256="ab" * 32, format="txt", size_bytes=1, stats={})
        session.add(corpus)
        session.flush()
        analysis = enqueue_analysis(session, corpus).id
        [a2] = queue(session, 1, 1, "a")
        assert [run_next(session) for _ in range(4)] == [b1, analysis, a2, None]


def _enqueue_at_once(app: Flask, count: int, cap: int, enqueue: Callable[[Session, int], object]) -> list[str]:
    """Run ``enqueue(session, cap)`` in ``count`` threads released together; each one's outcome."""
    start = threading.Barrier(count)
    outcomes: list[str] = []
    lock = threading.Lock()

    def post() -> None:
        with new_session(app) as session:
            start.wait()
            try:
                enqueue(session, cap)
                outcome = "queued"
            except jobs.QueueFull as full:
                outcome = str(full)
        with lock:
            outcomes.append(outcome)

    threads = [threading.Thread(target=post) for _ in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return outcomes


def _waiting(app: Flask, team_id: int = 1) -> int:
    with new_session(app) as session:
        return int(session.scalar(select(func.count()).select_from(Job).where(
            Job.team_id == team_id, Job.status == "queued")))


def test_forty_enqueues_at_once_fill_the_cap_exactly(db_app: Flask) -> None:
    def train(session: Session, cap: int) -> None:
        jobs.enqueue(session, team_id=1, name="t", algorithm="bpe", options={}, corpus_ids=[1], max_queued=cap)

    outcomes = _enqueue_at_once(db_app, 40, 20, train)
    assert outcomes.count("queued") == 20
    assert set(outcomes) == {"queued", "Your team already has 20 training jobs waiting; cancel one, or wait "
                                        "until one starts, then try again."}
    assert _waiting(db_app) == 20


def test_leaderboards_share_the_cap_atomically_and_a_refused_one_leaves_nothing(db_app: Flask) -> None:
    _, team_b = add_user(db_app, "bob@example.com")
    with new_session(db_app) as session:
        queue(session, 1, 2, "a")
        queue(session, team_b, 3, "b")  # another team's jobs do not count

    def board(session: Session, cap: int) -> None:
        new = Leaderboard(team_id=1, name="board", tokenizers=[], corpora=[{"id": 1, "name": "c"}],
                          max_bytes=1024, results={})
        enqueue_leaderboard(session, new, options={"max_bytes": 1024, "pair_seconds": 1.0}, max_queued=cap)

    outcomes = _enqueue_at_once(db_app, 12, 5, board)
    assert outcomes.count("queued") == 3
    assert set(outcomes) - {"queued"} == {"Your team already has 5 jobs (trainings and leaderboards) waiting; "
                                          "cancel one, or wait until one starts, then try again."}
    assert _waiting(db_app) == 5
    with new_session(db_app) as session:
        boards = session.scalars(select(Leaderboard)).all()
        assert len(boards) == 3 and all(row.job_id is not None for row in boards)


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_the_refusal_names_the_kinds_that_wait_as_their_kinds_say(db_app: Flask) -> None:
    """The queue names no kind itself: each capped kind says how the sentence names its jobs
    (``JobKind.capped``, ``Words.many``), the longest-waiting kind first; an analysis never counts."""
    from webapp.jobs import kinds

    assert kinds.capped() == ["leaderboard", "train"]

    def board(session: Session, name: str) -> None:
        new = Leaderboard(team_id=1, name=name, tokenizers=[], corpora=[{"id": 1, "name": "c"}],
                          max_bytes=1024, results={})
        enqueue_leaderboard(session, new, options={"max_bytes": 1024, "pair_seconds": 1.0}, max_queued=2)

    with new_session(db_app) as session:
        corpus = Corpus(team_id=1, name="c", sha256="0" * 64, format="txt", upload_bytes=1, size_bytes=1, stats={})
        session.add(corpus)
        session.flush()
        enqueue_analysis(session, corpus)  # not capped: the team may still queue two more
        board(session, "first")
        board(session, "second")
        with pytest.raises(jobs.QueueFull, match="Your team already has 2 leaderboard jobs waiting;"):
            board(session, "third")
        session.execute(update(Job).where(Job.name == "second").values(kind="train", algorithm="bpe"))
        session.commit()
        with pytest.raises(jobs.QueueFull, match=r"has 2 jobs \(leaderboards and trainings\) waiting;"):
            jobs.enqueue(session, team_id=1, name="a training", algorithm="bpe", options={}, corpus_ids=[1],
                         max_queued=2)


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_a_full_queue_refuses_without_leaving_a_row(db_app: Flask) -> None:
    with new_session(db_app) as session:
        queue(session, 1, 2, "a")
        with pytest.raises(jobs.QueueFull, match="Your team already has 2 training jobs waiting"):
            jobs.enqueue(session, team_id=1, name="one more", algorithm="bpe", options={}, corpus_ids=[1],
                         max_queued=2)
        assert session.scalars(select(Job.name).order_by(Job.id)).all() == ["a1", "a2"]
        # The session is usable afterwards: another team's job goes in.
        _, team_b = add_user(db_app, "bob@example.com")
        assert jobs.enqueue(session, team_id=team_b, name="b", algorithm="bpe", options={}, corpus_ids=[1],
                            max_queued=2).id is not None
