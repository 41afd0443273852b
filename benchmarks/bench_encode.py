"""Encoding speed: ours vs tiktoken vs Hugging Face tokenizers, MB/s on one corpus, one process.

All three encode with GPT-2's vocabulary (CS336's gpt2_vocab.json + gpt2_merges.txt, imported by
us; tiktoken's Encoding built from the same ranks; HF loading our tokenizer.json export), so they
must give identical ids, which is checked. Ours is timed cold (a fresh pre-token cache each run,
the honest figure for a new text) and warm (the cache filled by the previous run). tiktoken
encodes single-threaded (``encode_ordinary``); HF runs with RAYON_NUM_THREADS=1. The report adds
the same medians by this process's CPU time (which a loaded machine inflates less than wall
time), the time the garbage collector took during our cold runs, and the 1-minute load average.

    python benchmarks/bench_encode.py /work/corpora/en_5M.txt --runs 5
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("RAYON_NUM_THREADS", "1")  # before tokenizers is imported
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.byte_unicode import symbols_to_bytes  # noqa: E402
from engine.formats.gpt2 import load_gpt2  # noqa: E402
from engine.pretokenizers import GPT2_PATTERN  # noqa: E402

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "cs336"


class GCTimer:
    """Seconds spent in garbage collections while ``active`` (a ``gc.callbacks`` hook)."""

    def __init__(self) -> None:
        self.active = False
        self.seconds = 0.0
        self.collections = 0
        self._started = 0.0
        gc.callbacks.append(self._callback)

    def _callback(self, phase: str, info: dict[str, int]) -> None:
        if not self.active:
            return
        if phase == "start":
            self._started = time.perf_counter()
        else:
            self.seconds += time.perf_counter() - self._started
            self.collections += 1


CPU_TIMES: dict[str, list[float]] = {}  # this process's CPU seconds per run, by timed() label


def timed(function, runs: int, label: str = "") -> tuple[list[float], object]:  # type: ignore[no-untyped-def]
    """Wall-clock seconds of each run (and, under ``label``, CPU seconds into CPU_TIMES)."""
    times, result = [], None
    for _ in range(runs):
        started, cpu_started = time.perf_counter(), time.process_time()
        result = function()
        times.append(time.perf_counter() - started)
        CPU_TIMES.setdefault(label, []).append(time.process_time() - cpu_started)
    return times, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", type=Path)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--vocab", type=Path, default=DATA / "gpt2_vocab.json")
    parser.add_argument("--merges", type=Path, default=DATA / "gpt2_merges.txt")
    args = parser.parse_args()

    import tiktoken
    import tokenizers

    text = args.corpus.read_text(encoding="utf-8")
    megabytes = len(text.encode("utf-8")) / 1e6
    ours = load_gpt2(args.vocab, args.merges, pretokenizer="gpt2")
    vocab = json.loads(args.vocab.read_text(encoding="utf-8"))
    ranks = {symbols_to_bytes(t): i for t, i in vocab.items() if t != "<|endoftext|>"}
    tik = tiktoken.Encoding("gpt2-local", pat_str=GPT2_PATTERN, mergeable_ranks=ranks, special_tokens={})
    hf = tokenizers.Tokenizer.from_str(ours.to_json())

    gc_timer = GCTimer()

    def cold() -> list[int]:
        ours._reset_cache()
        gc_timer.active = True
        try:
            return ours.encode_ordinary(text)
        finally:
            gc_timer.active = False

    results: dict[str, list[float]] = {}
    results["ours (cold cache)"], ids = timed(cold, args.runs, "ours (cold cache)")
    results["ours (warm cache)"], _ = timed(lambda: ours.encode_ordinary(text), args.runs, "ours (warm cache)")
    results["tiktoken"], tik_ids = timed(lambda: tik.encode_ordinary(text), args.runs, "tiktoken")
    results["HF tokenizers"], hf_out = timed(lambda: hf.encode(text, add_special_tokens=False), max(1, args.runs // 2))
    same = ids == tik_ids == hf_out.ids  # type: ignore[union-attr]

    print(f"{args.corpus.name}: {megabytes:.2f} MB, {len(ids)} tokens, ids identical across all three: {same}")
    tik_speed = megabytes / statistics.median(results["tiktoken"])
    for name, times in results.items():
        speed = megabytes / statistics.median(times)
        runs = ", ".join(f"{megabytes / t:.2f}" for t in times)
        print(f"  {name:<18} median {speed:5.2f} MB/s  ({speed / tik_speed:.2f}x tiktoken)  runs: {runs}")
    # CPU time is what a loaded machine inflates least (it still shares caches with neighbours).
    tik_cpu = megabytes / statistics.median(CPU_TIMES["tiktoken"])
    for name in ("ours (cold cache)", "ours (warm cache)", "tiktoken"):
        speed = megabytes / statistics.median(CPU_TIMES[name])
        print(f"  {name:<18} by CPU time {speed:5.2f} MB/s  ({speed / tik_cpu:.2f}x tiktoken)")
    cold_total = sum(results["ours (cold cache)"])
    print(
        f"  garbage collection during our cold runs: {gc_timer.seconds:.3f} s of {cold_total:.2f} s "
        f"({gc_timer.collections} collections); load average {os.getloadavg()[0]:.2f}"
    )


if __name__ == "__main__":
    main()
