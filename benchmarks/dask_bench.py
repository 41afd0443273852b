"""Time ``tokenforge train --model bpe`` counting on a Dask ``LocalCluster`` against the local two-process path.

Issue 14's target: on this machine, a ``LocalCluster`` of 2 worker processes (1 thread each)
counts and trains BPE (vocab 32000) on a 1 GB corpus (``en_big.txt`` repeated) in at most 1.15x
the time of ``tokenforge train --num-workers 2``. Both are the whole ``tokenforge train``
process, alternated (Dask, then local) so each pair's ratio is taken on the same machine state;
the cluster itself is started once beforehand, as a real one would already run. Each pair's
``tokenizer.json`` files are compared byte for byte. The corpus is written once to ``--corpus``
(default ``/tmp/tokenforge-1G.txt``), never into the repository.

    python benchmarks/dask_bench.py --source /tmp/corpora/en_big.txt --copies 8 --repeat 3
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.engine.dask_cluster import local_cluster  # noqa: E402 - the issue's LocalCluster, in a child


def make_corpus(source: Path, copies: int, target: Path) -> Path:
    """``source`` repeated ``copies`` times into ``target`` (kept between runs if the size matches)."""
    size = source.stat().st_size * copies
    if not target.exists() or target.stat().st_size != size:
        with target.open("wb") as out:
            for _ in range(copies):
                with source.open("rb") as src:
                    while block := src.read(16 << 20):
                        out.write(block)
    return target


def run(command: list[str]) -> float:
    """Wall seconds of one whole command."""
    started = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command[:4])} failed: {done.stderr.decode()[-2000:]}")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, default=Path("/tmp/corpora/en_big.txt"))
    parser.add_argument("--copies", type=int, default=8, help="how many times the source is repeated (8: 1.06 GB)")
    parser.add_argument("--corpus", type=Path, default=Path("/tmp/tokenforge-1G.txt"))
    parser.add_argument("--vocab-size", type=int, default=32000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    corpus = make_corpus(args.source, args.copies, args.corpus)
    tokenforge = str(Path(sys.executable).with_name("tokenforge"))
    dask_t, local_t, ratios = [], [], []
    with tempfile.TemporaryDirectory() as tmp, local_cluster() as scheduler:
        base = [tokenforge, "train", "--model", "bpe", "--vocab-size", str(args.vocab_size), str(corpus)]
        dask_cmd = [*base, "-o", f"{tmp}/dask", "--dask-scheduler", scheduler]
        local_cmd = [*base, "-o", f"{tmp}/local", "--num-workers", "2"]
        for i in range(args.repeat):
            dask_t.append(run(dask_cmd))
            local_t.append(run(local_cmd))
            ratios.append(dask_t[-1] / local_t[-1])
            same = Path(f"{tmp}/dask/tokenizer.json").read_bytes() == Path(f"{tmp}/local/tokenizer.json").read_bytes()
            print(f"run {i + 1}: dask {dask_t[-1]:.1f} s | local {local_t[-1]:.1f} s | ratio {ratios[-1]:.3f} | "
                  f"tokenizer.json {'identical' if same else 'DIFFERENT'}", flush=True)
            if not same:
                raise SystemExit("the Dask run wrote a different tokenizer.json")
    print(f"{corpus.name} ({corpus.stat().st_size / 1e9:.2f} GB), BPE vocab {args.vocab_size}: median dask "
          f"{statistics.median(dask_t):.1f} s, local {statistics.median(local_t):.1f} s, "
          f"ratio {statistics.median(ratios):.3f} (target <= 1.15)")


if __name__ == "__main__":
    main()
