"""The job worker: claims queued jobs and runs each one in a child process.

``tokenforge worker`` (and ``tokenforge serve``, which starts one, plus a lane that only takes
analyses so that they never wait behind a long training) runs :meth:`Worker.run`.
Per job the worker spawns the child its kind names (``kinds.py``: ``training/train_child.run``
for a "train" job, ``corpora/analyse_child.run`` for an "analyse" one, ...) with the arguments the
kind gives, at lower CPU priority; hands the child's other messages to the kind (a leaderboard's
pairs, stored as they come); and every ``HEARTBEAT_SECONDS`` writes a heartbeat and the latest
progress (with an ETA) to the job row and checks for a cancel request. Outcomes:

- the child reports a result: its kind stores it (a tokenizer, a corpus's statistics) and the
  job succeeds, in one transaction;
- the child dies without a result (killed, out of memory): the job fails at once, saying so;
- a cancel is requested: the child is told to stop, and killed if it has not within
  ``CANCEL_GRACE_SECONDS``;
- the job runs longer than ``JOB_TIME_LIMIT``: it is stopped like a cancel, and fails with a
  sentence naming the limit and its setting;
- the worker itself is killed: the child dies with it (the parent-death signal), ``serve``'s
  supervisor re-queues the job at once (``supervisor.py``), and failing that any worker's
  :func:`queue.recover_stale` does once the heartbeats are stale (or fails it after ``MAX_ATTEMPTS``);
- the worker is asked to stop (SIGTERM): the child is killed and the job goes back to the queue.

However a job ends, the worker then kills the child's whole process group (the child leads
one, ``job_child.py``), so no counting pool, fork or shard the trainer started outlives it.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import socket
import threading
import time
from collections.abc import Collection, Mapping
from multiprocessing.connection import wait
from typing import Any

from sqlalchemy.orm import sessionmaker

from engine.processes import kill_group
from webapp.jobs import queue
from webapp.jobs.eta import Progress
from webapp.jobs.kinds import JobKind, for_job, words
from webapp.store.db import make_engine
from webapp.store.models import Job

log = logging.getLogger("tokenforge.worker")
RECOVER_EVERY_SECONDS = 5.0
EXIT_WAIT_SECONDS = 5.0  # how long a child that reported its outcome may take to exit by itself


def worker_id_for(pid: int) -> str:
    """The id a worker process with ``pid`` on this machine claims jobs under."""
    return f"{socket.gethostname()}:{pid}"


class Worker:
    """One job-worker process's loop; holds its own database engine."""

    def __init__(
        self, settings: Mapping[str, Any], *, worker_id: str | None = None, kinds: Collection[str] | None = None,
    ) -> None:
        self.settings = settings
        self.kinds = kinds  # None: every kind of job; ("analyse",): the short-job lane
        self.engine = make_engine(settings["DATABASE_URL"])
        self.sessions = sessionmaker(self.engine, expire_on_commit=False)
        self.worker_id = worker_id or worker_id_for(os.getpid())
        self.stopping = threading.Event()
        self.child_pid: int | None = None  # the running trainer, for tests and logs

    def stop(self) -> None:
        """Ask the loop to finish (safe from a signal handler)."""
        self.stopping.set()

    def run(self, *, poll_seconds: float = 1.0, once: bool = False) -> None:
        """Claim and run jobs until stopped (or, with ``once``, until the queue is empty)."""
        next_recover = 0.0
        while not self.stopping.is_set():
            if time.monotonic() >= next_recover:
                self.recover()
                next_recover = time.monotonic() + RECOVER_EVERY_SECONDS
            with self.sessions() as session:
                job_id = queue.claim(session, self.worker_id, kinds=self.kinds)
            if job_id is not None:
                self.run_job(job_id)
            elif once:
                return
            else:
                self.stopping.wait(poll_seconds)

    def recover(self) -> dict[str, list[int]]:
        """Re-queue or fail jobs abandoned by dead workers."""
        with self.sessions() as session:
            result = queue.recover_stale(
                session,
                stale_seconds=float(self.settings["STALE_SECONDS"]),
                max_attempts=int(self.settings["MAX_ATTEMPTS"]),
            )
        if any(result.values()):
            log.warning("recovered stale jobs: %s", result)
        return result

    def run_job(self, job_id: int) -> str:
        """Run one claimed job to an end state; return the job's final status."""
        with self.sessions() as session:
            job = session.get(Job, job_id)
            if job is None:
                return "missing"
            name, algorithm = job.kind, job.algorithm or ""
            kind = for_job(name, algorithm)
            if kind is None:  # queued by a newer release, or this process never imported webapp.job_kinds
                queue.finish(session, job_id, self.worker_id, "failed",
                             error=f"This worker cannot run jobs of the kind {name!r}: no area registers it.")
                return "failed"
            args = kind.child_args(session, job, self.settings)  # the sentence of a job that cannot start
            if isinstance(args, str):
                queue.finish(session, job_id, self.worker_id, "failed", error=args)
                return "failed"
        ctx = multiprocessing.get_context("spawn")
        parent_conn, child_conn = ctx.Pipe()
        child = ctx.Process(
            target=kind.child,
            args=(child_conn, os.getpid(), *args),
            name=f"tokenforge-{name}-{job_id}",
            # Not a daemon: the engine's trainers count words on a process pool, and daemonic
            # processes may not have children. The child still dies with this worker (prctl
            # PDEATHSIG in job_child), and it and its own children are killed in ``finally``.
            daemon=False,
        )
        child.start()
        child_conn.close()
        self.child_pid = child.pid
        job_process = _JobProcess(child)
        try:
            return self._supervise(job_id, kind, job_process, parent_conn, algorithm)
        finally:
            self.child_pid = None
            parent_conn.close()
            job_process.exited(EXIT_WAIT_SECONDS)  # a child that reported may exit by itself
            job_process.end()  # whatever is left of the job, grandchildren included, is killed
            child.close()

    def _supervise(self, job_id: int, kind: JobKind, child: _JobProcess, conn: Any, algorithm: str = "") -> str:
        """Relay progress and heartbeats until the child ends; record the outcome."""
        interval = float(self.settings["HEARTBEAT_SECONDS"])
        grace = float(self.settings["CANCEL_GRACE_SECONDS"])
        time_limit = float(self.settings["JOB_TIME_LIMIT"])
        started = time.monotonic()
        progress = Progress(plans=kind.stages, algorithm=algorithm or None)  # its kind's stage shares: one ETA
        outcome: tuple[Any, ...] | None = None
        stop_sent_at: float | None = None  # when "cancel" went to the child (a cancel or the time limit)
        timed_out = False
        next_beat = time.monotonic()
        while outcome is None:
            wait([conn, child.process.sentinel], timeout=max(0.0, next_beat - time.monotonic()))
            try:
                while conn.poll():
                    message = conn.recv()
                    if message[0] == "progress":
                        progress.update(*message[1:])
                    elif message[0] in kind.handle:  # e.g. a leaderboard's pair, stored at once
                        with self.sessions() as session:
                            kind.handle[message[0]](session, job_id, self.worker_id, message)
                    else:
                        outcome = message
                        break
            except (EOFError, OSError):
                pass  # the child is gone; its exit code says how
            if outcome is None and child.exited():
                outcome = ("died", child.end())
                break
            if outcome is None and self.stopping.is_set():  # a result that came in is still stored
                child.end()
                with self.sessions() as session:
                    queue.release(session, job_id, self.worker_id)
                return "queued"
            if outcome is not None or time.monotonic() < next_beat:
                continue
            next_beat = time.monotonic() + interval
            with self.sessions() as session:
                ours, cancel = queue.heartbeat(session, job_id, self.worker_id, **progress.row())
            if not ours:  # re-queued by a recoverer, or deleted: someone else owns it now
                child.end()
                return "lost"
            if not timed_out and time.monotonic() - started > time_limit:
                timed_out = True
                log.warning("job %s ran longer than the time limit of %g s; stopping it", job_id, time_limit)
            if (cancel or timed_out) and stop_sent_at is None:
                try:
                    conn.send("cancel")
                except OSError:
                    pass  # the child has just exited: the next pass reads how
                stop_sent_at = time.monotonic()
            elif stop_sent_at is not None and time.monotonic() - stop_sent_at > grace:
                child.end()
                outcome = ("cancelled",)
        if timed_out and outcome[0] != "done":
            outcome = ("timeout", time_limit)
        return self._record(job_id, kind, outcome)

    def _record(self, job_id: int, kind: JobKind, outcome: tuple[Any, ...]) -> str:
        with self.sessions() as session:
            if outcome[0] == "done":  # the kind stores the result as it marks the job succeeded
                return "succeeded" if kind.complete(session, job_id, self.worker_id, outcome) else "lost"
            if outcome[0] == "cancelled":
                queue.finish(session, job_id, self.worker_id, "cancelled")
                return "cancelled"
            if outcome[0] == "error":
                error = outcome[1]
            elif outcome[0] == "timeout":
                error = _time_limit_reason(outcome[1], kind.name)
            else:
                error = _death_reason(outcome[1], kind.name)
            queue.finish(session, job_id, self.worker_id, "failed", error=error)
            return "failed"


class _JobProcess:
    """A job child and the process group it leads; :meth:`end` kills both, once.

    The child is never reaped before its group is signalled: until it is, its pid (the group's
    id) cannot be given to another process, so the group signal reaches only the job's own
    processes. That is why exit is watched on the sentinel, not with ``is_alive`` (which reaps).
    """

    def __init__(self, process: Any) -> None:
        self.process = process
        self.ended = False

    def exited(self, timeout: float = 0.0) -> bool:
        """Whether the child has exited (waiting up to ``timeout`` seconds), without reaping it."""
        return self.ended or bool(wait([self.process.sentinel], timeout=timeout))

    def end(self) -> int | None:
        """Kill the child (if still running) and every process in its group; reap it; its exit code."""
        if not self.ended:
            self.ended = True
            self.process.kill()  # only signals: a no-op once it has exited, and it does not reap
            kill_group(self.process.pid)
            self.process.join()
        return self.process.exitcode


def _duration(seconds: float) -> str:
    """``21600`` -> "6 hours", ``90`` -> "90 seconds", for messages."""
    for unit, size in (("hour", 3600), ("minute", 60)):
        if seconds >= size and seconds % size == 0:
            count = int(seconds // size)
            return f"{count} {unit}{'s' if count != 1 else ''}"
    return f"{seconds:g} second{'s' if seconds != 1 else ''}"


def _time_limit_reason(limit: float, kind: str) -> str:
    """A sentence for a job stopped by the time limit: the limit, and the setting that sets it."""
    named = words(kind)
    return (f"The {named.what} ran longer than the time limit of {_duration(limit)} and was stopped. "
            f"{named.saved}{named.advice}{' ask' if named.advice else ' Ask'} the administrator to raise the "
            f"setting TOKENFORGE_JOB_TIME_LIMIT (now {limit:g} second{'s' if limit != 1 else ''}).")


def _death_reason(exitcode: int | None, kind: str) -> str:
    """A sentence for a child that ended without reporting a result."""
    named = words(kind)
    if exitcode is not None and exitcode < 0:
        signum = -exitcode
        why = " (SIGKILL: often the system running out of memory)" if signum == 9 else ""
        return f"The {named.what} process was killed by signal {signum}{why}. {named.saved}"
    return f"The {named.what} process exited unexpectedly with code {exitcode}. {named.saved}"
