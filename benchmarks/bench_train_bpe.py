"""Time ``tokenforge train --model bpe`` against Hugging Face ``tokenizers``, whole process against whole process.

What a user waits for: ours is the ``tokenforge train`` command (start-up, counting, merging,
writing tokenizer.json, vocab.json and merges.txt); the anchor is a fresh Python process that
trains HF's ``BpeTrainer`` (``ByteLevel`` pre-tokenizer, GPT-2's pattern, ``<|endoftext|>``,
``min_frequency`` 2, 2 threads: ``RAYON_NUM_THREADS=2``) and saves the same three files. The
two alternate, ours then HF, so the ratio of each pair is taken on the same machine state; the
medians are printed. Peak memory is the largest process of each run (``wait4``'s
``ru_maxrss``, which covers our counting workers too).

    python benchmarks/bench_train_bpe.py /tmp/corpora/en_25M.txt --vocab-size 32000 --repeat 3

``--level char`` times classic character-level BPE (HF: ``end_of_word_suffix="</w>"`` on a
``WhitespaceSplit`` pre-tokenizer). Timings belong here, never in the tests.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

HF = """
import sys
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
corpus, vocab_size, level, out = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
if level == "byte":
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=2, show_progress=False,
                                  special_tokens=["<|endoftext|>"], initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
else:
    tok = Tokenizer(models.BPE(unk_token="<unk>", end_of_word_suffix="</w>", fuse_unk=True))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.decoder = decoders.BPEDecoder(suffix="</w>")
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=2, show_progress=False,
                                  special_tokens=["<|endoftext|>", "<unk>"], end_of_word_suffix="</w>")
tok.train([corpus], trainer)
tok.save(out + "/tokenizer.json")
tok.model.save(out)
"""  # noqa: E501 - the script's text is run as it is


def run(command: list[str]) -> tuple[float, float]:
    """Wall seconds and peak RSS (MiB) of one command, its child processes included."""
    env = dict(os.environ, RAYON_NUM_THREADS="2")
    started = time.perf_counter()
    process = subprocess.Popen(command, env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise SystemExit(f"{command[:3]} failed: {process.stderr.read().decode()[-2000:] if process.stderr else ''}")
    return seconds, usage.ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus")
    parser.add_argument("--vocab-size", type=int, default=32000)
    parser.add_argument("--level", choices=("byte", "char"), default="byte")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--ours-only", action="store_true", help="skip the Hugging Face anchor")
    args = parser.parse_args()
    tokenforge = Path(sys.executable).with_name("tokenforge")
    ours_t, hf_t, ratios, rss = [], [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        ours_cmd = [str(tokenforge), "train", "--model", "bpe", "--level", args.level,
                    "--vocab-size", str(args.vocab_size), "-o", f"{tmp}/ours", args.corpus]
        hf_cmd = [sys.executable, "-c", HF, args.corpus, str(args.vocab_size), args.level, tmp]
        for i in range(args.repeat):
            seconds, peak = run(ours_cmd)
            ours_t.append(seconds)
            rss.append(peak)
            line = f"run {i + 1}: ours {seconds:.2f} s (peak RSS {peak:.0f} MiB)"
            if not args.ours_only:
                hf_seconds, hf_peak = run(hf_cmd)
                hf_t.append(hf_seconds)
                ratios.append(seconds / hf_seconds)
                line += f" | HF {hf_seconds:.2f} s (peak RSS {hf_peak:.0f} MiB) | ratio {ratios[-1]:.2f}"
            print(line, flush=True)
    summary = f"median: ours {statistics.median(ours_t):.2f} s, peak RSS {max(rss):.0f} MiB"
    if hf_t:
        summary += (f"; HF {statistics.median(hf_t):.2f} s; ratio ours/HF {statistics.median(ratios):.2f} "
                    f"(target <= 1.0)")
    print(f"{Path(args.corpus).name}, {args.level} level, vocab {args.vocab_size}: {summary}")


if __name__ == "__main__":
    main()
