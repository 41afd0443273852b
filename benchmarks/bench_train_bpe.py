"""Time our byte-level BPE trainer against Hugging Face ``tokenizers``' BpeTrainer, in one run.

Both train on the same file with the same vocabulary size, GPT-2's pre-tokenizer pattern (HF:
``ByteLevel``) and ``<|endoftext|>`` as the special token; HF runs with 2 threads
(``RAYON_NUM_THREADS=2``). Each trainer runs in a fresh child process so that peak memory is
its own; for ours the peak is the largest of the main process and its counting workers.

    python benchmarks/bench_train_bpe.py /work/corpora/en_25M.txt --vocab-size 32000 --repeat 3

Prints one line per run and the medians. Timings belong here, never in the tests.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

OURS = """
import json, resource, sys, time
from engine.trainers import train
t = time.perf_counter()
result = train("bpe", [sys.argv[1]], {"vocab_size": int(sys.argv[2]), "min_frequency": 2})
seconds = time.perf_counter() - t
rss = max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
print(json.dumps({"seconds": seconds, "rss_mib": rss / 1024, "vocab": result.tokenizer.vocab_size,
                  "merges": len(result.stats["merges"])}))
"""

HF = """
import json, resource, sys, time
from tokenizers import Tokenizer, models, pre_tokenizers, trainers
tok = Tokenizer(models.BPE())
tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
trainer = trainers.BpeTrainer(vocab_size=int(sys.argv[2]), min_frequency=2, show_progress=False,
                              special_tokens=["<|endoftext|>"], initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
t = time.perf_counter()
tok.train([sys.argv[1]], trainer)
seconds = time.perf_counter() - t
print(json.dumps({"seconds": seconds, "rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "vocab": tok.get_vocab_size()}))
"""


def run(code: str, corpus: str, vocab_size: int) -> dict:
    env = dict(os.environ, RAYON_NUM_THREADS="2", PYTHONPATH=str(ROOT))
    out = subprocess.run(
        [sys.executable, "-c", code, corpus, str(vocab_size)],
        env=env, cwd=ROOT, check=True, capture_output=True, text=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus")
    parser.add_argument("--vocab-size", type=int, default=32000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--ours-only", action="store_true", help="skip the Hugging Face anchor")
    args = parser.parse_args()
    ours_t, hf_t, ratios, rss = [], [], [], []
    for i in range(args.repeat):
        ours = run(OURS, args.corpus, args.vocab_size)
        ours_t.append(ours["seconds"])
        rss.append(ours["rss_mib"])
        line = f"run {i + 1}: ours {ours['seconds']:.2f} s (peak RSS {ours['rss_mib']:.0f} MiB, vocab {ours['vocab']})"
        if not args.ours_only:
            hf = run(HF, args.corpus, args.vocab_size)
            hf_t.append(hf["seconds"])
            ratios.append(ours["seconds"] / hf["seconds"])
            line += f" | HF {hf['seconds']:.2f} s (peak RSS {hf['rss_mib']:.0f} MiB) | ratio {ratios[-1]:.2f}"
        print(line, flush=True)
    summary = f"median: ours {statistics.median(ours_t):.2f} s, peak RSS {max(rss):.0f} MiB"
    if hf_t:
        summary += (f"; HF {statistics.median(hf_t):.2f} s; ratio ours/HF {statistics.median(ratios):.2f}"
                    f" (target <= 1.0)")
    print(f"{Path(args.corpus).name}, vocab {args.vocab_size}: {summary}")


if __name__ == "__main__":
    main()
