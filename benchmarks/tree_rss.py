"""Peak memory of a command and all its child processes together (the Unigram target's measure).

    python benchmarks/tree_rss.py -- tokenforge train --model unigram --vocab-size 32000 -o OUT en_100M.txt

Polls /proc every 50 ms and sums the resident memory of the command's process tree; prints the
peak in GiB and the wall seconds, and exits with the command's status. Linux only. A child that
lives shorter than one poll can be missed, so the figure is a lower bound.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path


def tree_rss(root: int) -> int:
    """Bytes resident in ``root`` and its descendants now."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            pages = int((entry / "statm").read_text().split()[1])
        except (OSError, IndexError, ValueError):
            continue  # the process ended meanwhile
        children.setdefault(int(fields[1]), []).append(int(entry.name))
        rss[int(entry.name)] = pages * os.sysconf("SC_PAGE_SIZE")
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        total += rss.get(pid, 0)
        todo.extend(children.get(pid, ()))
    return total


def main() -> int:
    argv = sys.argv[1:]
    if argv[:1] == ["--"]:
        argv = argv[1:]
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    started = time.perf_counter()
    proc = subprocess.Popen(argv)
    peak = 0
    while proc.poll() is None:
        peak = max(peak, tree_rss(proc.pid))
        time.sleep(0.05)
    print(f"peak RSS of the process tree {peak / 2**30:.2f} GiB; {time.perf_counter() - started:.1f} s; "
          f"exit {proc.returncode}")
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
