"""Time two whole commands in turn (A B A B …) and print medians and the ratio A/B pair by pair.

    python benchmarks/alternate.py -n 3 --vs "python benchmarks/spm_train.py en_25M.txt -o /tmp/spm" \\
        -- tokenforge train --model unigram --vocab-size 32000 -o /tmp/ours en_25M.txt

Each run is one process started without a shell, its output thrown away; the operating
system's accounting of the finished process and its children gives wall, user + system CPU, and
the largest single process's peak RSS. One warm-up pair runs first and is not counted. Taking
the ratio pair by pair keeps a comparison fair when the machine's speed drifts during the runs.
"""

from __future__ import annotations

import argparse
import os
import shlex
import statistics
import subprocess
import sys
import time


def run(argv: list[str]) -> dict[str, float]:
    """One run of ``argv``: wall and CPU seconds, and the peak RSS of its largest process in MiB."""
    started = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        sys.exit(f"{shlex.join(argv)} exited with {proc.returncode}")
    return {"wall": wall, "cpu": usage.ru_utime + usage.ru_stime, "peak_mib": usage.ru_maxrss / 1024}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=3, help="counted pairs (default 3)")
    parser.add_argument("--vs", required=True, help="command B, one string split as a shell splits words")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- command A and its arguments")
    args = parser.parse_args()
    a = args.command[1:] if args.command[:1] == ["--"] else args.command
    b = shlex.split(args.vs)
    if not a:
        parser.error("give command A after --")
    run(a), run(b)  # the warm-up pair
    runs: dict[str, list[dict[str, float]]] = {"A": [], "B": []}
    for _ in range(args.n):
        runs["A"].append(run(a))
        runs["B"].append(run(b))
    for side, done in runs.items():
        print(f"{side}: " + ", ".join(f"{key} {statistics.median(r[key] for r in done):.2f}"
                                      for key in ("wall", "cpu", "peak_mib")) + f" (median of {len(done)})")
    for key in ("wall", "cpu"):
        ratios = [x[key] / y[key] for x, y in zip(runs["A"], runs["B"])]
        print(f"A/B {key}: median {statistics.median(ratios):.3f} (min {min(ratios):.3f}, max {max(ratios):.3f})")


if __name__ == "__main__":
    main()
