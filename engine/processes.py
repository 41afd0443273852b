"""Processes that cannot outlive what started them: the parent-death signal and process groups.

Training starts processes of its own (the counting pool; the Unigram seed's forks and lattice
workers, ``trainers/unigram/parallel.py``), and the web app runs each job in a child of a worker.
Two mechanisms keep any of them from being left behind, each covering what the other cannot:

- :func:`die_with_parent` asks Linux (``prctl(PR_SET_PDEATHSIG)``) to signal a process when its
  parent dies, even by SIGKILL, when nobody is left to clean up. Every process we start calls
  it first, so a killed worker takes its job child along, and the job child its own children.
- :func:`lead_group` makes a process the leader of a new process group, which
  its children and their children join; :func:`kill_group` then stops the whole tree at once,
  the way the job worker ends a job that is cancelled, timed out or abandoned.

Both are no-ops where the system lacks them (not Linux, no ``killpg``), which leaves the old
behaviour: processes that notice a dead parent only at their next poll. The entry points also
call :func:`one_blas_thread` before anything imports numpy, and :func:`frozen_for_exit` once their
command is done. Left out: starting processes
(callers use ``multiprocessing`` or ``subprocess``) and deciding when to kill.
"""

from __future__ import annotations

import ctypes
import gc
import os
import signal
import subprocess
import time
from collections.abc import Callable, Sequence

__all__ = ["die_with_parent", "frozen_for_exit", "kill_group", "lead_group", "one_blas_thread", "stop_processes"]

PR_SET_PDEATHSIG = 1  # from <linux/prctl.h>


def one_blas_thread() -> None:
    """Ask numpy's BLAS (OpenBLAS in numpy's wheels) for one thread in this process and the ones
    it starts, unless the user chose otherwise; call it before numpy is first imported.

    Why: the engine makes no BLAS call (its ``@`` products are of integers), yet OpenBLAS starts a
    pool of one thread per core in every process that imports numpy. That made ``import numpy``
    0.16 s instead of 0.11 s here, 7% of a whole ``train --level spm`` on en_5M (0.89 against
    0.83 s, 9 alternated pairs), and on a 16-core server it is 15 idle threads in each of 16
    training workers.
    """
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def frozen_for_exit() -> None:
    """Move every object to the collector's permanent generation: for a command that has done its
    work and whose process is about to exit, never for one that goes on (frozen cycles are never
    collected).

    Why: the interpreter's exit runs full collections over every object still alive (the
    modules' functions, types and tables: ~28,000 objects after a training), ~12 ms each here.
    Frozen, those are skipped, and the objects are still freed as the modules are torn down:
    ``train --level spm`` on en_5M ends ~0.03 s after its last line instead of ~0.07 s (of a
    0.85 s run; medians of seven)."""
    gc.freeze()


def die_with_parent(signum: int = signal.SIGKILL, *, parent_pid: int | None = None) -> bool:
    """Have Linux send ``signum`` to this process when its parent dies; return whether the
    parent is still alive.

    ``parent_pid`` is the parent as the caller knew it before starting this process: if the
    parent died before the request took effect, this process has already been re-parented and
    no signal will ever come, so the answer is False and the caller should exit. The signal is
    tied to the parent *thread* that started this process, so start children from a thread that
    outlives them.
    """
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, int(signum), 0, 0, 0)
    except (OSError, AttributeError):
        pass  # not Linux: callers' own checks of the parent take over
    return parent_pid is None or os.getppid() == parent_pid


def lead_group() -> None:
    """Make this process the leader of a new process group, in its parent's session.

    Everything it starts afterwards (forks, spawned interpreters) joins the group, so
    :func:`kill_group` with this process's pid reaches all of it, grandchildren included. It
    also leaves the terminal's foreground group: Ctrl-C reaches the parent, which decides.

    Not a new *session* (``setsid``): Linux schedules each session as one group
    (``sched_autogroup``) and shares the CPU fairly between groups, whatever their nice values,
    so a training in a session of its own took half of a 2-core machine from the web server
    despite its nice 10. In the parent's session, nice applies against the web processes.
    """
    try:
        os.setpgid(0, 0)
    except (OSError, AttributeError):
        pass  # already a group leader, or no process groups on this system


def kill_group(pgid: int, signum: int = signal.SIGKILL) -> bool:
    """Send ``signum`` to every process in the group ``pgid``; return whether any got it.

    Call it while the group's leader is still unreaped (alive or a zombie), or while other
    members remain: as long as either holds the id, the kernel cannot give it to a new group.
    """
    if pgid <= 1:  # 0 and -1 mean "my own group" and "everyone" to killpg: never what we want
        raise ValueError(f"kill_group needs a process group id above 1, not {pgid}")
    try:
        os.killpg(pgid, signum)
    except (ProcessLookupError, PermissionError):
        return False
    except AttributeError:  # no process groups on this system
        return False
    return True


def stop_processes(processes: Sequence[subprocess.Popen[bytes]], grace: float,
                   on_kill: Callable[[subprocess.Popen[bytes]], None] | None = None) -> None:
    """SIGTERM every process still running, then SIGKILL (and reap) those not gone in ``grace`` s.

    One deadline serves them all, so stopping ten processes takes ``grace`` at most, not ten
    times it. ``on_kill`` hears of each process that had to be killed (to log it).
    """
    running = [process for process in processes if process.poll() is None]
    for process in running:
        process.terminate()
    deadline = time.monotonic() + grace
    for process in running:
        try:
            process.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            if on_kill is not None:
                on_kill(process)
            process.kill()
            process.wait()
