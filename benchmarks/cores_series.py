"""Training on 2, 4, 8 and 16 cores, ours against the anchors: the worker series of issue #25.

Made for a lent many-core machine, in one call: it unpacks the corpus it is given, then times
whole processes, ours alternated with the anchor at each worker count:

* BPE on en_100M, vocabulary 32000: ``tokenforge train --model bpe --num-workers N`` (the
  engine's CLI, without the web app's imports) against Hugging Face ``BpeTrainer`` with
  ``RAYON_NUM_THREADS=N`` (``bench_train_bpe.HF``: the same files written);
* Unigram on en_25M (the first 24,651,727 bytes of en_100M), vocabulary 32000:
  ``--model unigram --num-workers N`` against sentencepiece with ``--threads N`` (``spm_train.py``).

The first round covers every case once; later rounds repeat the key cases (every core for both,
and our 2 workers for Unigram), then the rest, while ``--budget`` seconds last, so a short lease
still gives the whole series. For each run it records wall time, CPU time of the process and its
children, and the largest process's peak RSS; each of our outputs' SHA-256 shows whether every
worker count wrote the same ``tokenizer.json``. Results go to ``OUT/series.json``, and a table is
printed last. ``--before DIR`` adds a third side: the engine of another checkout (an earlier
commit, say, from ``git worktree add``) run the same way, to time a change on the same machine.

    python benchmarks/cores_series.py --corpus-xz .bench/en_100M.txt.xz --out "$OUT" --budget 420
    python benchmarks/cores_series.py --corpus-xz … --out … --tasks unigram --sides ours,before --before .bench/old
"""

from __future__ import annotations

import argparse
import hashlib
import json
import lzma
import os
import shutil
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from bench_train_bpe import HF  # noqa: E402  (the anchor's training script, shared with that benchmark)

EN_25M_BYTES = 24_651_727  # en_25M.txt is this prefix of en_100M.txt
OURS = "import sys; from engine.cli import main; main(sys.argv[1:])"
COUNTS = (16, 2, 4, 8)  # every core first: the target's case


def unpack(corpus_xz: Path, workdir: Path) -> tuple[Path, Path]:
    """en_100M from the carried archive, and en_25M as its prefix."""
    workdir.mkdir(parents=True, exist_ok=True)
    big, small = workdir / "en_100M.txt", workdir / "en_25M.txt"
    with lzma.open(corpus_xz) as source, big.open("wb") as target:
        shutil.copyfileobj(source, target, 1 << 22)
    with big.open("rb") as source, small.open("wb") as target:
        target.write(source.read(EN_25M_BYTES))
    return big, small


def commands(big: Path, small: Path, workdir: Path, counts: list[int],
             before: Path | None) -> dict[tuple[str, str, int], tuple[list[str], dict[str, str], Path]]:
    """(task, side, workers) -> (argv, extra environment, output folder)."""
    table = {}
    ours_at = {"ours": ROOT} | ({"before": before.resolve()} if before else {})
    for n in counts:
        for side, root in ours_at.items():
            for task, corpus in (("bpe", big), ("unigram", small)):
                out = workdir / f"{task}-{side}-{n}"
                table[(task, side, n)] = ([sys.executable, "-P", "-c", OURS, "train", "--model", task,
                                           "--vocab-size", "32000", "--num-workers", str(n), "-o", str(out),
                                           str(corpus)],
                                          {"PYTHONPATH": str(root)}, out)
        out = workdir / f"bpe-hf-{n}"
        table[("bpe", "anchor", n)] = ([sys.executable, "-c", HF, str(big), "32000", "byte", str(out)],
                                       {"RAYON_NUM_THREADS": str(n)}, out)
        out = workdir / f"uni-spm-{n}"
        table[("unigram", "anchor", n)] = ([sys.executable, str(HERE / "spm_train.py"), str(small), "--vocab-size",
                                            "32000", "--threads", str(n), "-o", str(out)], {}, out)
    return table


def run_once(argv: list[str], extra: dict[str, str], out: Path) -> dict[str, object]:
    """Wall and CPU seconds, peak RSS of the largest process, and the tokenizer.json digest."""
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    env = dict(os.environ, **extra)
    started = time.perf_counter()
    pid = os.posix_spawn(argv[0], argv, env)
    _, status, usage = os.wait4(pid, 0)
    wall = time.perf_counter() - started
    code = os.waitstatus_to_exitcode(status)
    made = out / "tokenizer.json"
    digest = hashlib.sha256(made.read_bytes()).hexdigest()[:16] if made.exists() else None
    return {"wall": round(wall, 2), "cpu": round(usage.ru_utime + usage.ru_stime, 1),
            "peak_mib": round(usage.ru_maxrss / 1024), "code": code, "sha": digest}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus-xz", type=Path, required=True, help="en_100M.txt compressed with xz")
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/cores-series"))
    parser.add_argument("--out", type=Path, required=True, help="where series.json goes")
    parser.add_argument("--budget", type=float, default=420.0, help="seconds of runs before no new round starts")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tasks", default="bpe,unigram", help="comma-separated: bpe, unigram")
    parser.add_argument("--sides", default="ours,anchor", help="comma-separated: ours, anchor, before")
    parser.add_argument("--anchor-tasks", default="bpe,unigram",
                        help="the tasks whose anchor runs (sentencepiece's Unigram took 184-245 s on 16 cores)")
    parser.add_argument("--counts", default=",".join(map(str, COUNTS)), help="worker counts, in the order run")
    parser.add_argument("--before", type=Path, help="another checkout's root, run as the side 'before'")
    args = parser.parse_args()
    began = time.perf_counter()
    big, small = unpack(args.corpus_xz, args.workdir)
    print(f"cores: {len(os.sched_getaffinity(0))}, Python {sys.version.split()[0]}, "
          f"unpacked in {time.perf_counter() - began:.1f} s", flush=True)
    counts = [int(n) for n in args.counts.split(",")]
    table = {case: command for case, command in commands(big, small, args.workdir, counts, args.before).items()
             if case[0] in args.tasks.split(",") and case[1] in args.sides.split(",") and case[2] in counts
             and (case[1] != "anchor" or case[0] in args.anchor_tasks.split(","))}
    table = dict(sorted(table.items(), key=lambda item: counts.index(item[0][2])))
    key = [c for c in table if c[2] == max(counts) or (c[0], c[2]) == ("unigram", 2)]
    rest = [c for c in table if c not in key]
    results: dict[tuple[str, str, int], list[dict[str, object]]] = {c: [] for c in table}
    plan = (list(table) + [c for _ in range(args.rounds - 1) for c in key]
            + [c for _ in range(args.rounds - 1) for c in rest])
    for case in plan:
        spent = time.perf_counter() - began
        if spent > args.budget:
            print(f"budget spent after {spent:.0f} s: stopping", flush=True)
            break
        result = run_once(*table[case])
        results[case].append(result)
        print(f"{case[0]:8} {case[1]:6} {case[2]:2} workers: {result}", flush=True)
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "series.json").write_text(json.dumps(
            [{"task": t, "side": s, "workers": n, "runs": r} for (t, s, n), r in results.items()], indent=1))
    other = "before" if "before" in args.sides else "anchor"
    print(f"\ntask     workers  ours (median wall, CPU)  {other} (median wall, CPU)  ratio  runs  our outputs")
    for task in ("bpe", "unigram"):
        for n in counts:
            ours, anchor = results.get((task, "ours", n)), results.get((task, other, n))
            if not ours:
                continue
            o = statistics.median(r["wall"] for r in ours)
            oc = statistics.median(r["cpu"] for r in ours)
            shas = sorted({str(r["sha"]) for r in ours + (anchor or []) if r["sha"]})
            failed = sum(r["code"] != 0 for r in ours + (anchor or []))
            if anchor:
                a = statistics.median(r["wall"] for r in anchor)
                ac = statistics.median(r["cpu"] for r in anchor)
                theirs = f"{a:7.2f} s {ac:6.1f} s        {o / a:5.2f}×  {len(ours)}/{len(anchor)}"
            else:
                theirs = f"{'—':>25}        {'—':>5}   {len(ours)}/0"
            print(f"{task:8} {n:7}  {o:7.2f} s {oc:6.1f} s       {theirs}  {','.join(shas)}"
                  + (f"  {failed} FAILED" if failed else ""))

if __name__ == "__main__":
    main()
