"""A Dask ``LocalCluster`` for the tests, run in a process of its own.

The cluster is the one issue 14 names (2 worker processes, 1 thread each, 127.0.0.1 only, no
dashboard), but it is started by a child Python, not by pytest's process: a ``LocalCluster``
leaves Dask's event-loop threads behind after it closes, and the engine forks its counting
workers only while no other thread runs, so the engine tests after these would silently spawn
instead. A ``distributed.Client`` that a test opens and closes leaves no thread behind.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

_SCRIPT = """
import sys
from distributed import LocalCluster

if __name__ == "__main__":
    with LocalCluster(processes=True, n_workers=2, threads_per_worker=1, host="127.0.0.1",
                      dashboard_address=None) as cluster:
        cluster.wait_for_workers(2)
        print(cluster.scheduler_address, flush=True)
        sys.stdin.read()  # until the test closes our stdin
"""


@contextmanager
def local_cluster() -> Iterator[str]:
    """Start the cluster; yield its scheduler address; stop it and its workers."""
    process = subprocess.Popen([sys.executable, "-c", _SCRIPT], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, text=True)
    try:
        address = process.stdout.readline().strip() if process.stdout else ""
        if not address.startswith("tcp://"):
            raise RuntimeError("the Dask LocalCluster did not start")
        yield address
    finally:
        if process.stdin:
            process.stdin.close()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stdout:
            process.stdout.close()
