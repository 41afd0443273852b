"""Helpers for the job-worker tests (``test_worker.py``, ``test_faults.py``): queue a training
on a tiny corpus, read its row, and run or kill a real worker process.

Left out: fixtures (``conftest.py``: ``algorithm``, ``db_app``), and the live server and
``wait_for`` (``tests/live.py``).
"""

from __future__ import annotations

import functools
import io
import os
import random
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from sqlalchemy import text
from sqlalchemy.orm import Session, sessionmaker

from engine.trainers.limits import max_workers
from tests.live import REPO, children, wait_for
from webapp.corpora.storage import CorpusStore
from webapp.jobs import queue as jobs
from webapp.store import db
from webapp.store.models import Corpus, Job

CORPUS = "".join(f"the quick brown fox {i} jumps over the lazy dog {i % 7}\n" for i in range(300))


def small_options(algorithm: str) -> dict[str, Any]:
    """Options that train in well under a second on :data:`CORPUS`."""
    return {"vocab_size": 300} if algorithm == "bpe" else {"vocab_size": 80}


def session_for(app: Flask) -> Session:
    """A session of its own on the app's database, outside any request."""
    return sessionmaker(db.get_engine(app), expire_on_commit=False)()


def add_job(app: Flask, algorithm: str, corpus_text: str = CORPUS, options: dict[str, Any] | None = None) -> int:
    """Store ``corpus_text`` as team 1's corpus and queue a training on it; return the job id."""
    stored = CorpusStore(app.config["CORPUS_DIR"]).ingest(
        io.BytesIO(corpus_text.encode()), "tiny.txt", max_bytes=10**8)
    with session_for(app) as session:
        corpus = Corpus(team_id=1, name="tiny.txt", sha256=stored.sha256, format="txt",
                        size_bytes=stored.size_bytes, stats=stored.stats)
        session.add(corpus)
        session.commit()
        return jobs.enqueue(session, team_id=1, name="tiny", algorithm=algorithm,
                            options=options or small_options(algorithm), corpus_ids=[corpus.id]).id


#: A vocabulary size that keeps a training of :func:`long_corpus` busy for about a second.
LONG_VOCAB = 20_000


def long_corpus() -> str:
    """1 MB of 60,000 made-up words: with :data:`LONG_VOCAB` a training runs for about a second.

    A training of :data:`CORPUS` ends about 0.14 s after its claim, so a test that must catch a
    job running (to kill or stop its worker) would race that window with its polling.
    """
    return unigram_corpus(1)


def add_long_job(app: Flask, algorithm: str) -> int:
    """Queue a training of :func:`long_corpus` that runs long enough to be seen running."""
    return add_job(app, algorithm, corpus_text=long_corpus(), options={"vocab_size": LONG_VOCAB})


def job_row(app: Flask, job_id: int) -> Job:
    """The job as the database has it now."""
    with session_for(app) as session:
        job = session.get(Job, job_id)
        assert job is not None
        return job


def start_worker_process(app: Flask, log: Path) -> subprocess.Popen[bytes]:
    """A real ``tokenforge worker`` process on the app's database, logging to ``log``."""
    env = {**os.environ, "TOKENFORGE_DATA_DIR": app.config["DATA_DIR"],
           "DATABASE_URL": app.config["DATABASE_URL"], "SECRET_KEY": "test",
           "TOKENFORGE_WORKER_NICE": "0", "PYTHONPATH": str(REPO)}
    with log.open("ab") as out:
        return subprocess.Popen([sys.executable, "-m", "webapp.cli", "worker"], cwd=REPO, env=env,
                                stdout=out, stderr=subprocess.STDOUT)


def hold_job_row(app: Flask, job_id: int) -> Callable[[], None]:
    """Block the worker's next write to the job (so it cannot finish first); return a release."""
    url = app.config["DATABASE_URL"]
    if url.startswith("sqlite"):
        conn = sqlite3.connect(url.removeprefix("sqlite:///"), isolation_level=None)
        conn.execute("BEGIN IMMEDIATE")
        return lambda: (conn.rollback(), conn.close())  # type: ignore[func-returns-value]
    connection = db.get_engine(app).connect()
    connection.execute(text("SELECT id FROM jobs WHERE id = :id FOR UPDATE"), {"id": job_id})
    return lambda: (connection.rollback(), connection.close())  # type: ignore[func-returns-value]


def _state(job: Job) -> tuple[str, int]:
    return job.status, job.attempts


def kill_worker_mid_job(app: Flask, job_id: int, attempt: int, log: Path) -> None:
    """SIGKILL a worker process while it runs attempt ``attempt`` of the job, and wait for its child to go.

    The job must run long enough to be seen running: queue it with :func:`add_long_job`.
    """
    process = start_worker_process(app, log)
    try:
        try:
            wait_for(lambda: _state(job_row(app, job_id)) == ("running", attempt), f"attempt {attempt} to start")
        except AssertionError as exc:  # say what happened instead: the job ended first, or the worker died
            job = job_row(app, job_id)
            raise AssertionError(f"{exc}: the job is {job.status} after {job.attempts} attempts "
                                 f"(error: {job.error}); the worker's log:\n{log.read_text(errors='replace')}"
                                 ) from None
        release = hold_job_row(app, job_id)
        orphans = children(process.pid)
        process.send_signal(signal.SIGKILL)
        process.wait()
        release()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    # The training child dies with its worker (PR_SET_PDEATHSIG), leaving no orphan.
    wait_for(lambda: not any(Path(f"/proc/{c}").exists() and "Z" not in
                             Path(f"/proc/{c}/stat").read_text().split()[2] for c in orphans),
             "the orphaned training child to exit", limit=30)


needs_two_cpus = pytest.mark.skipif(max_workers() < 2, reason="the trainer starts no processes of its own on one CPU")


@functools.cache
def unigram_corpus(megabytes: float = 5) -> str:
    """Over 4 MB (so words are counted on a process pool) of 60,000 made-up words (so the E-step
    runs in forked shards too): a Unigram training that keeps processes of its own for a while."""
    rng = random.Random(11)
    letters = "abcdefghijklmnopqrstuvwxyz"
    vocabulary = ["".join(rng.choices(letters, k=rng.randint(3, 10))) for _ in range(60_000)]
    lines, size = [], 0
    while size < megabytes * 1_000_000:
        line = " ".join(rng.choices(vocabulary, k=12))
        lines.append(line)
        size += len(line) + 1
    return "\n".join(lines) + "\n"
