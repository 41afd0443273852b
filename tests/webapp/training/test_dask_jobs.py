"""Trainings of the job queue counted on a Dask cluster (issue 14): ``TOKENFORGE_DASK_SCHEDULER``.

The worker passes the setting to each training child, which counts on the cluster
(``engine.trainers.cluster``). A job must succeed with the local ``tokenizer.json``; a cancel
must leave no task on the cluster; an unreachable scheduler fails the job at once; and with
the extra missing, ``tokenforge worker`` stops at start-up with one sentence.
"""

from __future__ import annotations

import socket
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from sqlalchemy import select

from engine.trainers import train
from tests.engine.dask_cluster import local_cluster
from tests.live import wait_for
from tests.webapp.jobs_support import CORPUS, add_job, job_row, session_for, unigram_corpus
from webapp.jobs import queue as jobs
from webapp.jobs.worker import Worker
from webapp.store.models import Tokenizer
from webapp.web.config import SettingsError, load_settings

pytestmark = pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)


@pytest.fixture(scope="module")
def scheduler() -> Iterator[str]:
    pytest.importorskip("distributed")
    with local_cluster() as address:
        yield address


def _on_scheduler(scheduler: str, function: Any) -> Any:
    import distributed

    with distributed.Client(scheduler, set_as_default=False) as client:
        return client.run_on_scheduler(function)


def _count_tasks_run(dask_scheduler: Any) -> int:
    """How many range-counting tasks the scheduler has ever been given."""
    return sum(1 for prefix in dask_scheduler.task_prefixes if "count_task" in prefix)


def _tasks_held(dask_scheduler: Any) -> int:
    return len(dask_scheduler.tasks) + sum(len(ws.processing) for ws in dask_scheduler.workers.values())


def test_a_job_counts_on_the_cluster_and_stores_the_local_tokenizer(db_app: Flask, scheduler: str,
                                                                    tmp_path: Path) -> None:
    assert load_settings({"TOKENFORGE_DASK_SCHEDULER": scheduler})["DASK_SCHEDULER"] == scheduler
    job_id = add_job(db_app, "bpe", CORPUS, {"vocab_size": 300})
    Worker({**db_app.config, "DASK_SCHEDULER": scheduler}, worker_id="dask-worker").run(once=True)
    job = job_row(db_app, job_id)
    assert (job.status, job.error) == ("succeeded", None)
    assert _on_scheduler(scheduler, _count_tasks_run) == 1
    local = tmp_path / "tiny.txt"
    local.write_text(CORPUS, encoding="utf-8")
    with session_for(db_app) as session:
        stored = session.scalars(select(Tokenizer).where(Tokenizer.job_id == job_id)).one()
    assert stored.tokenizer_json == train("bpe", [local], {"vocab_size": 300}).tokenizer.to_json()


def _set_workers_paused(scheduler: str, paused: bool) -> None:
    """Pause (or resume) every Dask worker: a paused worker starts no task, so the scheduler holds them.

    While paused, a worker's memory monitor is told not to pause or resume it: it resumes any
    paused worker whose memory is below its pause fraction, which once let the whole count run
    before the cancel (CI, session 47)."""
    import distributed
    from distributed.core import Status

    def set_status(dask_worker: Any) -> None:
        manager = dask_worker.memory_manager
        if paused:
            dask_worker.tokenforge_pause_fraction = manager.memory_pause_fraction
            manager.memory_pause_fraction = False
        else:
            manager.memory_pause_fraction = getattr(dask_worker, "tokenforge_pause_fraction",
                                                    manager.memory_pause_fraction)
        dask_worker.status = Status.paused if paused else Status.running

    with distributed.Client(scheduler, set_as_default=False) as client:
        client.run(set_status)


def test_a_cancelled_job_leaves_no_task_on_the_cluster(db_app: Flask, scheduler: str) -> None:
    worker = Worker({**db_app.config, "DASK_SCHEDULER": scheduler, "HEARTBEAT_SECONDS": 0.05},
                    worker_id="dask-worker")
    job_id = add_job(db_app, "bpe", unigram_corpus(12), {"vocab_size": 1000})
    with session_for(db_app) as session:
        assert jobs.claim(session, worker.worker_id) == job_id
    outcome: list[str] = []
    # With the workers paused, the job's ranges wait on the scheduler for as long as the test
    # needs: the cancel lands mid-count however fast the machine (a race with the counting
    # itself once let a whole 12 MB count finish first).
    _set_workers_paused(scheduler, True)
    thread = threading.Thread(target=lambda: outcome.append(worker.run_job(job_id)))
    try:
        thread.start()
        wait_for(lambda: _on_scheduler(scheduler, _tasks_held) > 0, "the job's ranges on the scheduler", limit=120)
        wait_for(lambda: job_row(db_app, job_id).progress_stage == "count", "the counting stage", limit=120)
        with session_for(db_app) as session:
            assert jobs.request_cancel(session, job_id) == "running"
        thread.join(timeout=120)
        job = job_row(db_app, job_id)
        assert outcome == ["cancelled"] and job.status == "cancelled"
        assert job.progress_stage == "count" and 0 == job.progress_current < job.progress_total  # stopped mid-count
        # The scheduler forgets the cancelled client's tasks asynchronously.
        wait_for(lambda: _on_scheduler(scheduler, _tasks_held) == 0, "the scheduler to drop the job's tasks",
                 limit=10)
    finally:
        _set_workers_paused(scheduler, False)
        thread.join(timeout=120)
        worker.engine.dispose()


def test_an_unreachable_scheduler_fails_the_job_at_once(db_app: Flask) -> None:
    pytest.importorskip("distributed")
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        address = f"tcp://127.0.0.1:{probe.getsockname()[1]}"
    job_id = add_job(db_app, "bpe", CORPUS, {"vocab_size": 300})
    Worker({**db_app.config, "DASK_SCHEDULER": address}, worker_id="dask-worker").run(once=True)
    job = job_row(db_app, job_id)
    assert job.status == "failed"
    assert job.error.startswith(f"Cannot reach the Dask scheduler at {address} (")
    assert job.error.endswith("); start it (dask scheduler) or fix the address.")
    assert (job.progress_stage, job.progress_current) == ("starting", 0)  # nothing ran, not even the counting
    with session_for(db_app) as session:
        assert session.scalars(select(Tokenizer)).all() == []


def test_without_the_extra_the_worker_stops_at_start_up(db_app: Flask, monkeypatch: pytest.MonkeyPatch,
                                                        tmp_path: Path) -> None:
    from webapp.cli import main

    monkeypatch.setitem(sys.modules, "distributed", None)  # "import distributed" now fails
    monkeypatch.delitem(sys.modules, "engine.trainers.distributed", raising=False)
    monkeypatch.setenv("TOKENFORGE_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("TOKENFORGE_DASK_SCHEDULER", "tcp://127.0.0.1:8786")
    message = ("TOKENFORGE_DASK_SCHEDULER: Counting on a Dask cluster needs the dask extra, which is not "
               "installed: pip install 'tokenforge[dask]'.")
    with pytest.raises(SettingsError) as caught:
        load_settings()
    assert str(caught.value) == message
    with pytest.raises(SystemExit) as stopped:
        main(["worker", "--once"])
    assert str(stopped.value) == f"tokenforge: {message}"
    monkeypatch.delenv("TOKENFORGE_DASK_SCHEDULER")
    assert load_settings()["DASK_SCHEDULER"] is None  # everything else works without it


@pytest.mark.parametrize("value", ["localhost:8786", "tcp://host", "http://host:8786"])
def test_a_bad_scheduler_setting_stops_the_start_up(db_app: Flask, value: str) -> None:
    with pytest.raises(SettingsError, match="^TOKENFORGE_DASK_SCHEDULER: The Dask scheduler address .* must look like"):
        load_settings({"TOKENFORGE_DASK_SCHEDULER": value})
