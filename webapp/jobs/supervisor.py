"""Keeps ``tokenforge serve``'s job workers running: starts them, restarts one that dies, stops them.

``serve`` runs this as a small process of its own (``cli.run_supervisor``) beside
gunicorn, rather than as a thread in gunicorn's master: that master reaps every child process it
has (ours would vanish from under us) and forks its web workers, which is only safe while no
other thread runs. The supervisor

- starts one ``tokenforge worker`` per lane (:data:`LANES`: every kind of job, and a lane for
  analyses only, so that they never wait behind a long training), each tied to the supervisor
  by the parent-death signal (SIGTERM: a worker left behind by a SIGKILLed supervisor still
  puts its job back in the queue before it exits);
- when a worker exits, re-queues the job it held at once (``queue.recover_worker``: the process
  is gone, so nothing need wait for its heartbeats to go stale; its job's processes died with
  it), logs it, and starts a new worker after a back-off: :data:`MIN_BACKOFF_SECONDS`, doubled
  each time a worker dies within :data:`STABLE_SECONDS` of its start, up to
  :data:`MAX_BACKOFF_SECONDS`, so a crash loop does not spin;
- on SIGTERM or SIGINT stops the workers (SIGTERM: each puts its running job back; SIGKILL for
  any still running after :data:`WORKER_STOP_SECONDS`, whose job is then re-queued here) and
  exits. It dies with ``serve`` the same way (the parent-death signal is SIGTERM).

Left out: the web server (``web/server.py``), the job loop (``worker.py``), and the supervision of
``tokenforge worker`` processes started by hand on other machines (their heartbeats go stale and
any worker re-queues their jobs; a service manager such as systemd restarts them).
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from engine.processes import die_with_parent, stop_processes

log = logging.getLogger("tokenforge.supervisor")

LANES: tuple[tuple[str, ...], ...] = ((), ("--only", "analyse"))
"""The workers ``serve`` runs: ``tokenforge worker`` with these arguments, one process each."""
WORKER_COMMAND = (sys.executable, "-m", "webapp.cli", "worker")
WORKER_STOP_SECONDS = 15.0  # a stopping worker kills its job and puts it back: seconds at most
MIN_BACKOFF_SECONDS = 1.0
MAX_BACKOFF_SECONDS = 60.0
STABLE_SECONDS = 60.0  # a worker that ran this long before dying restarts after the minimum back-off
POLL_SECONDS = 0.2


def stop_with_parent(parent_pid: int, signum: int = signal.SIGTERM) -> Callable[[], None]:
    """A ``preexec_fn``: Linux sends ``signum`` to the new process when ``parent_pid`` dies.

    SIGTERM, so a worker can put its running job back in the queue. The parent must be
    single-threaded when it starts the process (``preexec_fn`` is unsafe otherwise): ``serve``
    is when it starts the supervisor, and the supervisor always is.
    """

    def arrange() -> None:
        if not die_with_parent(signum, parent_pid=parent_pid):
            os._exit(0)  # the parent died before the request took effect: nobody to serve

    return arrange


def describe_exit(returncode: int) -> str:
    """How a process ended, for the log and for a re-queued job's note."""
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return f"was killed by {name}"
    return f"exited with code {returncode}"


@dataclass
class Lane:
    """One worker slot: its arguments, its current process and its restart schedule."""

    args: tuple[str, ...]
    process: subprocess.Popen[bytes] | None = None
    started_at: float = 0.0
    backoff: float = 0.0  # the delay before the next restart; 0 until a worker has died
    restart_at: float = 0.0
    restarts: int = field(default=0)

    @property
    def name(self) -> str:
        return " ".join(self.args) or "every kind of job"


class Supervisor:
    """Runs the lanes' workers until :meth:`stop`; see the module docstring."""

    def __init__(self, settings: Mapping[str, Any], lanes: Sequence[Sequence[str]] = LANES, *,
                 command: Sequence[str] = WORKER_COMMAND) -> None:
        self.settings = settings
        self.lanes = [Lane(tuple(args)) for args in lanes]
        self.command = list(command)
        self.stopping = threading.Event()
        self._engine: Any = None  # made on the first recovery: most runs never need one
        self._sessions: Any = None

    def stop(self) -> None:
        """Ask the loop to stop the workers and return (safe from a signal handler)."""
        self.stopping.set()

    def run(self) -> None:
        """Start every lane's worker, restart any that dies, until stopped; then stop them all."""
        try:
            while not self.stopping.is_set():
                now = time.monotonic()
                for lane in self.lanes:
                    if lane.process is not None and lane.process.poll() is not None:
                        self._died(lane, lane.process, now)
                    if lane.process is None and now >= lane.restart_at and not self.stopping.is_set():
                        self._start(lane)
                self.stopping.wait(POLL_SECONDS)
        finally:
            self._stop_all()
            if self._engine is not None:  # close the database connections recovering opened
                self._engine.dispose()
                self._engine = self._sessions = None

    def _start(self, lane: Lane) -> None:
        try:
            lane.process = subprocess.Popen([*self.command, *lane.args], preexec_fn=stop_with_parent(os.getpid()))
        except OSError as exc:
            self._schedule(lane, lived=0.0)
            log.error("could not start the job worker for %s (%s); trying again in %g s",
                      lane.name, exc, lane.backoff)
            return
        lane.started_at = time.monotonic()
        if lane.restarts:
            log.warning("restarted the job worker for %s (pid %d)", lane.name, lane.process.pid)

    def _schedule(self, lane: Lane, *, lived: float) -> None:
        if lived >= STABLE_SECONDS:
            lane.backoff = MIN_BACKOFF_SECONDS
        else:
            lane.backoff = min(max(2 * lane.backoff, MIN_BACKOFF_SECONDS), MAX_BACKOFF_SECONDS)
        lane.restart_at = time.monotonic() + lane.backoff
        lane.restarts += 1

    def _died(self, lane: Lane, process: subprocess.Popen[bytes], now: float) -> None:
        """A worker exited on its own: re-queue its job now, and schedule its replacement."""
        lane.process = None
        how = describe_exit(process.returncode)
        self._schedule(lane, lived=now - lane.started_at)
        log.warning("the job worker for %s (pid %d) %s after %.0f s; restarting it in %g s",
                    lane.name, process.pid, how, now - lane.started_at, lane.backoff)
        self._recover(process.pid, f"its worker process (pid {process.pid}) {how}")

    def _recover(self, pid: int, why: str) -> None:
        """Re-queue (or fail, or finish cancelling) the jobs the dead worker ``pid`` held."""
        from sqlalchemy.exc import SQLAlchemyError

        from webapp.jobs import queue
        from webapp.jobs.worker import worker_id_for

        try:
            with self._session_factory()() as session:
                result = queue.recover_worker(session, worker_id_for(pid),
                                             max_attempts=int(self.settings["MAX_ATTEMPTS"]), why=why)
        except SQLAlchemyError as exc:  # the heartbeat timeout re-queues the job later instead
            log.error("could not re-queue the jobs of the dead worker %d: %s", pid, exc)
            return
        if any(result.values()):
            log.warning("jobs of the dead worker %d: %s", pid, result)

    def _session_factory(self) -> Any:
        if self._sessions is None:
            from sqlalchemy.orm import sessionmaker

            from webapp.store.db import make_engine

            self._engine = make_engine(self.settings["DATABASE_URL"])
            self._sessions = sessionmaker(self._engine, expire_on_commit=False)
        return self._sessions

    def _stop_all(self) -> None:
        """SIGTERM every worker, SIGKILL those still running after ``WORKER_STOP_SECONDS``."""
        def killed(process: subprocess.Popen[bytes]) -> None:
            log.warning("the job worker %d did not stop within %g s; killing it", process.pid, WORKER_STOP_SECONDS)

        running = [lane.process for lane in self.lanes if lane.process is not None and lane.process.poll() is None]
        stop_processes(running, WORKER_STOP_SECONDS, on_kill=killed)
        for process in running:
            if process.returncode == -signal.SIGKILL:
                self._recover(process.pid, f"its worker process (pid {process.pid}) did not stop in time")
        for lane in self.lanes:
            lane.process = None


def main() -> int:
    """Run the supervisor until SIGTERM or SIGINT: the process ``tokenforge serve`` starts
    (``cli.run_supervisor``, which registers the job kinds first)."""
    from webapp.web.config import SettingsError, finish_settings, load_settings

    logging.basicConfig(level=logging.INFO, format="%(asctime)s supervisor %(levelname)s %(message)s")
    try:
        settings = finish_settings(load_settings())
    except SettingsError as exc:
        print(f"tokenforge: {exc}", file=sys.stderr)
        return 1
    supervisor = Supervisor(settings)
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: supervisor.stop())
    supervisor.run()
    return 0

