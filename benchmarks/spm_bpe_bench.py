"""sentencepiece-style BPE training against sentencepiece itself: whole processes, and held-out tokens.

    python benchmarks/spm_bpe_bench.py CORPUS --vocab-size 8000 --runs 3 \\
        --held-out HELD_OUT_FILE [--held-out-offset BYTES] [--held-out-bytes BYTES]

Times the whole ``tokenforge train --model bpe --level spm --vocab-size N -o OUT CORPUS``
process against a whole Python process running ``sentencepiece.SentencePieceTrainer.train``
(the pip package has no ``spm_train`` binary) with the same settings: BPE, identity
normalization, a dummy prefix, spaces kept (``remove_extra_whitespaces=false``), character
coverage 0.9995, byte fallback, split digits, every sentence, lines up to 64 KiB. The two run
alternately (``--runs`` pairs after one warm-up pair); the time ratio is the median of the
per-pair ratios (ours / theirs). Then both ``.model`` files encode the held-out text line by
line in sentencepiece, and the token counts are compared (ours / theirs); on a sample of lines
our own tokenizer must give the ids sentencepiece gives for our ``.model``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import sentencepiece as spm

ANCHOR = """
import sys, sentencepiece as spm
spm.SentencePieceTrainer.train(
    input=sys.argv[1], model_prefix=sys.argv[2], model_type="bpe", vocab_size=int(sys.argv[3]),
    character_coverage=0.9995, byte_fallback=True, split_digits=True, normalization_rule_name="identity",
    add_dummy_prefix=True, remove_extra_whitespaces=False, input_sentence_size=0, max_sentence_length=1 << 16,
    num_threads=int(sys.argv[4]), minloglevel=2)
"""


def ours_command(corpus: Path, out: Path, vocab_size: int) -> list[str]:
    exe = shutil.which("tokenforge") or str(Path(sys.executable).with_name("tokenforge"))
    return [exe, "train", "--model", "bpe", "--level", "spm", "--vocab-size", str(vocab_size), "-o", str(out),
            str(corpus)]


def anchor_command(corpus: Path, prefix: Path, vocab_size: int, threads: int) -> list[str]:
    return [sys.executable, "-c", ANCHOR, str(corpus), str(prefix), str(vocab_size), str(threads)]


def timed(command: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - started


def held_out_lines(path: Path, offset: int, size: int) -> list[str]:
    with open(path, "rb") as stream:
        stream.seek(offset)
        data = stream.read(size)
    lines = data.decode("utf-8", errors="ignore").split("\n")[1:-1]  # whole lines only
    return [line for line in lines if line]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", type=Path)
    parser.add_argument("--vocab-size", type=int, default=8000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1, help="sentencepiece's num_threads")
    parser.add_argument("--held-out", type=Path, required=True)
    parser.add_argument("--held-out-offset", type=int, default=0)
    parser.add_argument("--held-out-bytes", type=int, default=1_000_000)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="spm-bpe-bench-"))
    ours = ours_command(args.corpus, work / "ours", args.vocab_size)
    theirs = anchor_command(args.corpus, work / "sp", args.vocab_size, args.threads)

    # 1. Whole processes, alternated: one warm-up pair, then --runs pairs.
    timed(ours), timed(theirs)
    pairs = [(timed(ours), timed(theirs)) for _ in range(args.runs)]
    ratio = statistics.median(a / b for a, b in pairs)
    print(f"ours   {statistics.median(a for a, _ in pairs):.2f} s  (runs: {', '.join(f'{a:.2f}' for a, _ in pairs)})")
    print(f"theirs {statistics.median(b for _, b in pairs):.2f} s  (runs: {', '.join(f'{b:.2f}' for _, b in pairs)})")
    print(f"time ratio (median of pairs) {ratio:.3f}x")

    # 2. Held-out tokens, both models in sentencepiece; our tokenizer agrees with our .model.
    lines = held_out_lines(args.held_out, args.held_out_offset, args.held_out_bytes)
    mine = spm.SentencePieceProcessor(model_file=str(work / "ours" / "tokenizer.model"))
    anchor = spm.SentencePieceProcessor(model_file=str(work / "sp.model"))
    n_ours = sum(map(len, mine.encode(lines)))
    n_theirs = sum(map(len, anchor.encode(lines)))
    from engine.formats.spm_model import load_spm_model

    tokenizer = load_spm_model((work / "ours" / "tokenizer.model").read_bytes())
    sample = lines[:: max(1, len(lines) // 500)]
    agree = sum(tokenizer.encode_ordinary(line) == mine.encode(line) for line in sample)
    print(f"held-out: {len(lines):,} lines, {sum(len(line.encode()) for line in lines):,} bytes")
    print(f"tokens ours {n_ours:,}  theirs {n_theirs:,}  ratio {n_ours / n_theirs:.4f}")
    print(f"our tokenizer = sentencepiece on our .model: {agree} of {len(sample)} sampled lines")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
