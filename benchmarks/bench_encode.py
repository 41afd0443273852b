"""Encoding speed: ours vs tiktoken vs Hugging Face tokenizers, MB/s on one corpus, one process.

All three encode with GPT-2's vocabulary (CS336's gpt2_vocab.json + gpt2_merges.txt, imported by
us; tiktoken's Encoding built from the same ranks; HF loading our tokenizer.json export), so they
must give identical ids, which is checked. Ours is timed cold (a fresh pre-token cache each run,
the honest figure for a new text) and warm (the cache filled by the previous run). tiktoken
encodes single-threaded (``encode_ordinary``); HF runs with RAYON_NUM_THREADS=1.

    python benchmarks/bench_encode.py /work/corpora/en_5M.txt --runs 5
"""

from __future__ import annotations

import argparse
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


def timed(function, runs: int) -> tuple[list[float], object]:  # type: ignore[no-untyped-def]
    times, result = [], None
    for _ in range(runs):
        started = time.perf_counter()
        result = function()
        times.append(time.perf_counter() - started)
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

    def cold() -> list[int]:
        ours._reset_cache()
        return ours.encode_ordinary(text)

    results: dict[str, list[float]] = {}
    results["ours (cold cache)"], ids = timed(cold, args.runs)
    results["ours (warm cache)"], _ = timed(lambda: ours.encode_ordinary(text), args.runs)
    results["tiktoken"], tik_ids = timed(lambda: tik.encode_ordinary(text), args.runs)
    results["HF tokenizers"], hf_out = timed(lambda: hf.encode(text, add_special_tokens=False), max(1, args.runs // 2))
    same = ids == tik_ids == hf_out.ids  # type: ignore[union-attr]

    print(f"{args.corpus.name}: {megabytes:.2f} MB, {len(ids)} tokens, ids identical across all three: {same}")
    tik_speed = megabytes / statistics.median(results["tiktoken"])
    for name, times in results.items():
        speed = megabytes / statistics.median(times)
        runs = ", ".join(f"{megabytes / t:.2f}" for t in times)
        print(f"  {name:<18} median {speed:5.2f} MB/s  ({speed / tik_speed:.2f}x tiktoken)  runs: {runs}")


if __name__ == "__main__":
    main()
