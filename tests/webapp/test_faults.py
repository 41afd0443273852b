"""Fault tests: real processes are killed mid-work, and nothing may be lost or left half-done.

- A ``tokenforge worker`` SIGKILLed mid-training: a new worker process notices the silent
  heartbeat by itself, re-queues the job and finishes it (``test_worker.py`` already covers the
  re-queue-then-fail path and the orphaned trainer; its helpers are reused here).
- ``tokenforge serve`` SIGKILLed while a large upload streams in, and while it is being stored:
  after a restart there is no corpus row, no stored object, and no temp file.
- The whole app (serve, job worker, trainer) crashed with one job running and one queued: after
  a restart both finish, the running one on its second attempt. ``serve`` killed alone takes
  its job worker with it (no unsupervised worker survives).
- A job worker SIGKILLed under ``serve``: serve's supervisor re-queues its job at once (the
  heartbeat timeout is set to an hour, so nothing else could) and starts a new worker, which
  finishes the job; a worker that keeps dying is restarted after a growing back-off.
- SIGTERM of ``serve`` in the middle of a Unigram training leaves no process at all: not the
  trainer's counting pool or forks either (every process of the app carries a tag in its
  environment, so orphans are found wherever they went).
- Many clients uploading, renaming and queueing jobs at once against SQLite, while the job
  worker writes heartbeats: every answer is a 2xx/3xx or a 4xx with a message, never a 5xx.

Every test asserts database rows and files, not pages alone, and no timings.
"""

from __future__ import annotations

import datetime as dt
import fcntl
import gzip
import logging
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from flask import Flask

from tests.live import (
    Client,
    LiveApp,
    children,
    group_alive,
    multipart,
    process_commands,
    train_fields,
    unread_bytes,
    wait_for,
)
from tests.webapp.jobs_support import (
    LONG_VOCAB,
    add_long_job,
    job_row,
    kill_worker_mid_job,
    long_corpus,
    needs_two_cpus,
    session_for,
    start_worker_process,
    unigram_corpus,
)
from webapp.corpora.storage import CorpusStore
from webapp.jobs import supervisor
from webapp.store.models import Job, Tokenizer, utcnow

pytestmark = pytest.mark.slow
FINISHED = ("succeeded", "failed", "cancelled")


def _corpus_text(lines: int, tag: str = "") -> bytes:
    return "".join(f"the quick brown fox {tag}{i} jumps over the lazy dog {i % 7}\n"
                   for i in range(lines)).encode()


# --- a worker killed mid-training ------------------------------------------------------------


def test_a_new_worker_recovers_a_killed_workers_job_and_finishes_it(
        db_app: Flask, algorithm: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOKENFORGE_STALE_SECONDS", "1")  # read by the worker processes below
    monkeypatch.setenv("TOKENFORGE_HEARTBEAT_SECONDS", "0.2")
    job_id = add_long_job(db_app, algorithm)
    log = tmp_path / "worker.log"
    kill_worker_mid_job(db_app, job_id, 1, log)
    assert (job_row(db_app, job_id).status, job_row(db_app, job_id).attempts) == ("running", 1)
    wait_for(lambda: utcnow() - job_row(db_app, job_id).heartbeat_at > dt.timedelta(seconds=1.5),
             "the killed worker's heartbeat to go stale", limit=30)

    process = start_worker_process(db_app, log)  # no test code re-queues: the worker does
    try:
        wait_for(lambda: job_row(db_app, job_id).status in FINISHED, "the job to finish", limit=60)
    finally:
        process.terminate()
        process.wait(timeout=30)
    job = job_row(db_app, job_id)
    assert (job.status, job.attempts) == ("succeeded", 2), log.read_text()
    with session_for(db_app) as session:
        assert session.query(Tokenizer).filter_by(job_id=job_id).count() == 1
        assert session.query(Job).filter(Job.status.in_(("running", "queued"))).count() == 0


# --- the web process killed mid-upload --------------------------------------------------------


def _start_upload(app: LiveApp, client: Client, data: bytes,
                  filename: str = "big.txt") -> tuple[socket.socket, bytes]:
    """Open a raw connection and send the request head of a multipart upload of ``data``."""
    body, content_type = multipart({"csrf_token": client.token()}, filename, data)
    sock = socket.create_connection(("127.0.0.1", app.port), timeout=30)
    sock.sendall((f"POST /corpora/ HTTP/1.1\r\nHost: 127.0.0.1:{app.port}\r\n"
                  f"Cookie: {client.cookie_header()}\r\nContent-Type: {content_type}\r\n"
                  f"Content-Length: {len(body)}\r\n\r\n").encode())
    return sock, body


def _assert_nothing_stored(app: LiveApp) -> None:
    assert app.rows("SELECT id, name FROM corpora") == []
    assert app.stored_objects() == []


@pytest.fixture
def live(tmp_path: Path) -> Iterator[tuple[LiveApp, Client]]:
    """A serve without a job worker, and a client signed up as its admin."""
    app = LiveApp(tmp_path / "data", job_worker=False)
    app.start()
    client = Client(app.url)
    client.signup()
    yield app, client
    app.crash()


def test_web_process_killed_while_an_upload_streams_in_stores_nothing(
        live: tuple[LiveApp, Client]) -> None:
    live, client = live
    sock, body = _start_upload(live, client, _corpus_text(60_000))  # about 3.6 MB
    half = len(body) // 2
    for start in range(0, half, 64 * 1024):  # slowly, as over a poor connection
        sock.sendall(body[start:min(start + 64 * 1024, half)])
        time.sleep(0.005)
    wait_for(lambda: unread_bytes(sock) == 0, "the server to read the first half", limit=60)
    live.crash()
    sock.close()
    _assert_nothing_stored(live)
    assert live.tmp_files() == []  # werkzeug's spool files have no name to leave behind

    live.start()
    _assert_nothing_stored(live)
    answer = client.upload("big.txt", _corpus_text(2_000))  # the same session still works
    assert answer.status == 200 and "/corpora/" in answer.url
    assert len(live.rows("SELECT id FROM corpora")) == 1
    assert len(live.stored_objects()) == 1


def test_web_process_killed_while_storing_an_upload_leaves_a_temp_file_that_start_up_removes(
        live: tuple[LiveApp, Client]) -> None:
    live, client = live
    # Storing runs at disk speed, so a plain file of a few MB is stored before we can look; a
    # small .gz that expands to ~180 MB keeps the server writing its temp file for a while.
    data = gzip.compress(b"the quick brown fox jumps over the lazy dog again\n" * 3_500_000, 9)
    sock, body = _start_upload(live, client, data, "big.txt.gz")
    sock.sendall(body)  # all of it: the server parses the form, then stores the file
    wait_for(lambda: any(p.suffix == ".part" for p in live.tmp_files()), "the upload to be stored",
             limit=60)
    live.crash()
    sock.close()
    _assert_nothing_stored(live)
    assert [p.suffix for p in live.tmp_files()] == [".part"]  # the crash left it behind

    live.start()
    _assert_nothing_stored(live)
    assert live.tmp_files() == []
    assert "Removed 1 unfinished upload file left by a previous run." in live.log.read_text()


def test_clean_tmp_keeps_files_a_live_process_is_writing(tmp_path: Path) -> None:
    store = CorpusStore(tmp_path / "store")
    store.tmp_dir.mkdir(parents=True)
    dead = store.tmp_dir / "dead.part"
    dead.write_bytes(b"half an upload")
    busy = store.tmp_dir / "busy.part"
    spool = store.tmp_dir / "tmpabc123"  # not ours (werkzeug's), never touched
    spool.write_bytes(b"")
    with busy.open("wb") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)  # as ingest holds it while writing
        assert store.clean_tmp() == 1
        assert sorted(p.name for p in store.tmp_dir.iterdir()) == ["busy.part", "tmpabc123"]
    assert store.clean_tmp() == 1  # its writer is gone now
    assert [p.name for p in store.tmp_dir.iterdir()] == ["tmpabc123"]


# --- the whole app restarted ------------------------------------------------------------------


def _hold_writes(app: LiveApp) -> Callable[[], None]:
    """Take SQLite's write lock so the app cannot record anything; return the release."""
    import sqlite3

    conn = sqlite3.connect(app.database, isolation_level=None, timeout=30)
    conn.execute("BEGIN IMMEDIATE")
    return lambda: (conn.rollback(), conn.close())  # type: ignore[func-returns-value]


def test_crashed_app_restarts_with_the_queued_job_run_and_the_running_one_resumed(tmp_path: Path) -> None:
    app = LiveApp(tmp_path / "data", env={"TOKENFORGE_STALE_SECONDS": "1", "TOKENFORGE_MAX_ATTEMPTS": "2"})
    app.start()
    try:
        client = Client(app.url)
        client.signup()
        answer = client.upload("long.txt", long_corpus().encode())
        corpus_id = answer.url.rstrip("/").rsplit("/", 1)[-1]
        fields = {**train_fields(client, LONG_VOCAB), "corpus_ids": corpus_id}
        assert client.post("train", {**fields, "name": "first"}).status == 200
        assert client.post("train", {**fields, "name": "second"}).status == 200
        jobs = dict(app.rows("SELECT name, id FROM jobs"))
        status = lambda name: app.rows("SELECT status, attempts FROM jobs WHERE id = ?", jobs[name])[0]  # noqa: E731
        wait_for(lambda: status("first")[0] == "running", "the first job to start")
        release = _hold_writes(app)  # the first job cannot finish before the crash
        app.crash()
        release()
        assert (status("first"), status("second")) == (("running", 1), ("queued", 0))
        assert app.rows("SELECT id FROM tokenizers") == []

        app.start()
        wait_for(lambda: all(status(n)[0] in FINISHED for n in jobs), "both jobs to finish", limit=90)
        assert (status("first"), status("second")) == (("succeeded", 2), ("succeeded", 1)), \
            app.rows("SELECT name, error FROM jobs")
        trained = app.rows("SELECT job_id, COUNT(*) FROM tokenizers GROUP BY job_id ORDER BY job_id")
        assert trained == [(jobs["first"], 1), (jobs["second"], 1)]
        assert app.stop() == 0
    finally:
        app.crash()


def worker_commands(pgid: int) -> list[list[str]]:
    """The arguments of the ``tokenforge worker`` processes in a process group."""
    return sorted(argv[4:] for argv in process_commands(pgid).values()
                  if argv[1:4] == ["-m", "webapp.cli", "worker"])


def test_killing_serve_alone_stops_its_job_workers_too(tmp_path: Path) -> None:
    app = LiveApp(tmp_path / "data")
    app.start()
    try:
        assert app.process is not None
        serve = app.process.pid
        # a worker for every kind of job, and the lane that keeps analyses from waiting behind training
        wait_for(lambda: len(worker_commands(serve)) == 2, "serve's two job workers", limit=30)
        assert worker_commands(serve) == [[], ["--only", "analyse"]]
        os.kill(serve, signal.SIGKILL)  # not the group: gunicorn and the job worker must notice
        app.process.wait()
        wait_for(lambda: not group_alive(serve), "serve's gunicorn workers and job workers to exit",
                 limit=30)
    finally:
        app.crash()


# --- serve supervises its job workers -----------------------------------------------------------


def _worker_pid(app: LiveApp, lane: list[str]) -> int | None:
    """The pid of serve's job worker for ``lane`` ([] for every kind of job), if one runs."""
    assert app.process is not None
    for pid, argv in process_commands(app.process.pid).items():
        if argv[1:4] == ["-m", "webapp.cli", "worker"] and argv[4:] == lane:
            return pid
    return None


def test_serve_restarts_a_killed_job_worker_and_its_job_finishes(tmp_path: Path) -> None:
    # Heartbeats would go stale only after an hour: the job can come back in time only because
    # serve saw its worker die.
    app = LiveApp(tmp_path / "data", env={"TOKENFORGE_STALE_SECONDS": "3600", "TOKENFORGE_MAX_ATTEMPTS": "2"})
    app.start()
    try:
        client = Client(app.url)
        client.signup()
        corpus_id = client.upload("long.txt", long_corpus().encode()).url.rstrip("/").rsplit("/", 1)[-1]
        assert client.post("train", {**train_fields(client, LONG_VOCAB), "corpus_ids": corpus_id}).status == 200
        [(job_id,)] = app.rows("SELECT id FROM jobs WHERE kind = 'train'")
        status = lambda: app.rows("SELECT status, attempts FROM jobs WHERE id = ?", job_id)[0]  # noqa: E731
        wait_for(lambda: status()[0] == "running", "the job to start")
        killed = _worker_pid(app, [])
        assert killed is not None
        release = _hold_writes(app)  # the job cannot finish before the kill
        os.kill(killed, signal.SIGKILL)
        wait_for(lambda: killed not in process_commands(app.process.pid), "the worker to die")  # type: ignore[union-attr]
        release()

        wait_for(lambda: _worker_pid(app, []) not in (None, killed), "serve to start a new worker", limit=30)
        wait_for(lambda: status()[0] in FINISHED, "the job to finish", limit=90)
        assert status() == ("succeeded", 2)
        assert app.rows("SELECT COUNT(*) FROM tokenizers WHERE job_id = ?", job_id) == [(1,)]
        log = app.log.read_text()
        assert (f"the job worker for every kind of job (pid {killed}) was killed by SIGKILL after " in log
                and " s; restarting it in 1 s" in log), log
        assert f"jobs of the dead worker {killed}: {{'cancelled': [], 'failed': [], 'requeued': [{job_id}]}}" in log
        assert _worker_pid(app, ["--only", "analyse"]) is not None  # the other lane was left alone
        assert app.stop() == 0
    finally:
        app.crash()


def test_a_worker_that_keeps_dying_is_restarted_ever_more_slowly(
        db_app: Flask, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(supervisor, "MIN_BACKOFF_SECONDS", 0.05)
    monkeypatch.setattr(supervisor, "MAX_BACKOFF_SECONDS", 0.2)
    caplog.set_level(logging.WARNING, "tokenforge.supervisor")
    crashing = supervisor.Supervisor(dict(db_app.config), lanes=[()],
                                     command=[sys.executable, "-c", "raise SystemExit(3)"])
    thread = threading.Thread(target=crashing.run)
    thread.start()
    try:
        wait_for(lambda: crashing.lanes[0].restarts >= 5, "five deaths", limit=60)
    finally:
        crashing.stop()
        thread.join(timeout=60)
    deaths = [r.getMessage() for r in caplog.records if "restarting it in" in r.getMessage()]
    assert [m.rsplit(" ", 2)[-2] for m in deaths[:5]] == ["0.05", "0.1", "0.2", "0.2", "0.2"]
    assert all(" exited with code 3 after 0 s; " in m for m in deaths)


def test_a_worker_that_ran_for_a_while_is_restarted_after_the_shortest_back_off() -> None:
    lanes = supervisor.Supervisor({}, lanes=[()])
    lane = lanes.lanes[0]
    for lived, backoff in [(0.0, 1.0), (0.5, 2.0), (3.0, 4.0), (supervisor.STABLE_SECONDS, 1.0), (1.0, 2.0)]:
        lanes._schedule(lane, lived=lived)
        assert lane.backoff == backoff
    for _ in range(10):
        lanes._schedule(lane, lived=0.0)
    assert lane.backoff == supervisor.MAX_BACKOFF_SECONDS


@needs_two_cpus
def test_sigterm_of_serve_mid_training_leaves_no_process(tmp_path: Path) -> None:
    app = LiveApp(tmp_path / "data")
    app.start()
    try:
        client = Client(app.url)
        client.signup()
        answer = client.upload("big.txt", unigram_corpus().encode())
        corpus_id = answer.url.rstrip("/").rsplit("/", 1)[-1]
        fields = {**train_fields(client, 2000, "unigram"), "corpus_ids": corpus_id}
        assert client.post("train", fields).status == 200
        [(job_id,)] = app.rows("SELECT id FROM jobs WHERE kind = 'train'")
        worker = _worker_pid(app, [])
        assert worker is not None
        # The training child has processes of its own (the counting pool, then forks and shards).
        wait_for(lambda: any(children(c) for c in children(worker)), "the trainer's own processes to start")
        assert app.stop() == 0
        wait_for(lambda: app.processes() == [], "every process of the app to exit", limit=30)
        assert app.rows("SELECT status, attempts FROM jobs WHERE id = ?", job_id) == [("queued", 0)]
    finally:
        app.crash()
        for pid in app.processes():  # orphans a failure left behind
            os.kill(pid, signal.SIGKILL)


# --- concurrent writes against SQLite ---------------------------------------------------------


def test_concurrent_uploads_renames_and_jobs_never_reach_users_as_errors(tmp_path: Path) -> None:
    threads, rounds = 12, 3
    # every training waits behind the others: let the team queue them all, and the member upload
    # from every thread at once (the cap and the upload budgets are tested alone)
    app = LiveApp(tmp_path / "data", workers=2, threads=4, env={
        "TOKENFORGE_MAX_QUEUED_JOBS": str(threads * rounds), "TOKENFORGE_UPLOADS_PER_MEMBER": str(threads),
        "TOKENFORGE_UPLOADS_PER_IP": str(threads)})
    app.start()
    answers: list[tuple[str, int, str]] = []
    uploaded: dict[str, str] = {}  # corpus id -> its final name
    queued: list[str] = []
    try:
        client = Client(app.url)
        client.signup()
        token = client.token()
        fields = train_fields(client, 260)
        start = threading.Barrier(threads)

        def user(n: int) -> None:
            start.wait()
            for r in range(rounds):
                answer = client.upload(f"u{n}-{r}.txt", _corpus_text(300, f"u{n}r{r}-"), token=token)
                answers.append(("upload", answer.status, answer.body))
                if answer.status != 200 or "/corpora/" not in answer.url:
                    continue
                corpus_id = answer.url.rstrip("/").rsplit("/", 1)[-1]
                name = f"renamed {n}-{r}"
                answer = client.post(f"corpora/{corpus_id}/rename", {"name": name}, token=token)
                answers.append(("rename", answer.status, answer.body))
                uploaded[corpus_id] = name if answer.status == 200 else f"u{n}-{r}.txt"
                answer = client.post("train", {**fields, "corpus_ids": corpus_id, "name": f"job {n}-{r}"},
                                     token=token)
                answers.append(("train", answer.status, answer.body))
                if answer.status == 200 and "/jobs/" in answer.url:
                    queued.append(answer.url.rstrip("/").rsplit("/", 1)[-1])

        workers = [threading.Thread(target=user, args=(n,)) for n in range(threads)]
        for thread in workers:
            thread.start()
        for thread in workers:
            thread.join(timeout=120)
        assert not any(t.is_alive() for t in workers)

        failures = [(what, status, body[:300]) for what, status, body in answers
                    if status >= 500 or "database is locked" in body.lower()]
        assert failures == []
        assert all(status == 200 for _, status, _ in answers), [(w, s) for w, s, _ in answers if s != 200]
        assert len(answers) == threads * rounds * 3
        rows = dict(app.rows("SELECT CAST(id AS TEXT), name FROM corpora"))
        assert rows == uploaded
        shas = [sha for (sha,) in app.rows("SELECT sha256 FROM corpora")]
        assert sorted(p.stem for p in app.stored_objects()) == sorted(shas)
        assert sorted(queued) == sorted(str(i) for (i,) in app.rows("SELECT id FROM jobs WHERE kind = 'train'"))
        analysed = app.rows("SELECT CAST(c.id AS TEXT) FROM corpora c JOIN jobs j ON j.id = c.analysis_job_id "
                            "WHERE j.kind = 'analyse'")
        assert sorted(i for (i,) in analysed) == sorted(uploaded)  # every upload queued its analysis
        assert app.stop() == 0
        # SIGTERM put the job that was training back in the queue: none is left "running".
        assert app.rows("SELECT id FROM jobs WHERE status = 'running'") == []
    finally:
        app.crash()
