"""Time ``tokenforge train --model bpe`` counting on a Dask ``LocalCluster`` against the local two-process path.

Issue 14's target: on this machine, a ``LocalCluster`` of 2 worker processes (1 thread each)
counts and trains BPE (vocab 32000) on a 1 GB corpus (``en_big.txt`` repeated) in at most 1.15x
the time of ``tokenforge train --num-workers 2``. Both are the whole ``tokenforge train``
process, alternated (Dask, then local) so each pair's ratio is taken on the same machine state;
the cluster itself is started once beforehand, as a real one would already run. Each pair's
``tokenizer.json`` files are compared byte for byte. The corpus is written once to ``--corpus``
(default ``/tmp/tokenforge-1G.txt``), never into the repository.

    python benchmarks/dask_bench.py --source /tmp/corpora/en_big.txt --copies 8 --repeat 3

``--scaling FILE...`` instead measures, in this one process, the figures ``docs/scaling.md``
predicts from: the counting rate of one core (one 64 MB range of the first file, GPT-2's split),
the cost of one node of the reduce tree per pre-token (unpickle, add, pickle), and the BPE merge
time (vocab ``--vocab-size``) on the distinct pre-tokens of all the files together.
"""

from __future__ import annotations

import argparse
import pickle
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


def scaling(files: list[Path], vocab_size: int) -> None:
    """Print the counting rate per core, the reduce cost per pre-token and the merge time."""
    from engine.trainers.base import Reporter
    from engine.trainers.bpe import BpeOptions, learn
    from engine.trainers.byte_ranges import count_range, plan_ranges
    from engine.trainers.counting import add_counts, count_pretokens

    specials = ("<|endoftext|>",)
    part = plan_ranges(files[:1], specials, safe_cuts=True, step=64 << 20)[0]
    started = time.perf_counter()
    table = count_range(part, ("gpt2", specials, None), safe_cuts=True, max_chunk_chars=1 << 20)
    seconds = time.perf_counter() - started
    print(f"counting, one core: {part.size / 1e6:.0f} MB in {seconds:.2f} s = {part.size / 1e6 / seconds:.1f} MB/s "
          f"({len(table):,} distinct pre-tokens)", flush=True)
    halves = plan_ranges(files[:1], specials, safe_cuts=True, step=files[0].stat().st_size // 2 + 1)
    tables = [pickle.dumps(count_range(h, ("gpt2", specials, None), safe_cuts=True, max_chunk_chars=1 << 20))
              for h in halves[:2]]
    started = time.perf_counter()
    merged = add_counts(*(pickle.loads(t) for t in tables))
    packed = pickle.dumps(merged, protocol=pickle.HIGHEST_PROTOCOL)
    seconds = time.perf_counter() - started
    entries = sum(len(pickle.loads(t)) for t in tables)
    print(f"reduce node: {entries:,} pre-tokens in ({len(merged):,} out, {len(packed) / 1e6:.0f} MB pickled) "
          f"in {seconds:.2f} s = {entries / seconds / 1e6:.2f} M pre-tokens/s", flush=True)
    counts = count_pretokens(files, special_tokens=specials, num_workers=2)
    started = time.perf_counter()
    learn(counts, BpeOptions(vocab_size=vocab_size), reporter=Reporter())
    print(f"BPE merges to vocab {vocab_size}: {len(counts):,} distinct pre-tokens in "
          f"{time.perf_counter() - started:.1f} s", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, default=Path("/tmp/corpora/en_big.txt"))
    parser.add_argument("--copies", type=int, default=8, help="how many times the source is repeated (8: 1.06 GB)")
    parser.add_argument("--corpus", type=Path, default=Path("/tmp/tokenforge-1G.txt"))
    parser.add_argument("--vocab-size", type=int, default=32000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--scaling", type=Path, nargs="+", metavar="FILE", help="measure for docs/scaling.md instead")
    args = parser.parse_args()
    if args.scaling:
        scaling(args.scaling, args.vocab_size)
        return
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
