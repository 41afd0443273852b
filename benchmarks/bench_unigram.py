"""Time our Unigram trainer against sentencepiece's in one run, and compare held-out token counts.

    python benchmarks/bench_unigram.py /work/corpora/en_5M.txt --vocab-size 32000

The corpus is cut into a training part and a held-out part (every ``--holdout-every``-th line).
Both trainers see the same training file with the same settings (identity normalization, byte fallback, no
whitespace collapsing, character coverage 0.9995, 2 threads for sentencepiece); the held-out
lines are then encoded one by one with each tokenizer and the tokens counted.
Writes only into a temporary directory.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.trainers import train  # noqa: E402


def split_corpus(path: Path, out: Path, every: int) -> tuple[Path, list[str]]:
    train_path = out / "train.txt"
    held: list[str] = []
    with open(path, encoding="utf-8") as src, open(train_path, "w", encoding="utf-8") as dst:
        for number, line in enumerate(src):
            if number % every == every - 1:
                if line.strip():
                    held.append(line.rstrip("\n"))
            else:
                dst.write(line)
    return train_path, held


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", type=Path)
    parser.add_argument("--vocab-size", type=int, default=32000)
    parser.add_argument("--holdout-every", type=int, default=100)
    parser.add_argument("--skip-ours", action="store_true")
    parser.add_argument("--skip-sentencepiece", action="store_true", help="Only ours (e.g. for a memory figure).")
    parser.add_argument("--stages", action="store_true", help="Also print our wall seconds per training stage.")
    args = parser.parse_args()
    stage_seconds = time_stages() if args.stages else {}

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        train_path, held = split_corpus(args.corpus, out, args.holdout_every)
        sp_seconds, sp_tokens = (sentencepiece_run(train_path, out, held, args.vocab_size)
                                 if not args.skip_sentencepiece else (0.0, 0))
        if args.skip_ours:
            return
        load = os.getloadavg()[0]
        started = time.perf_counter()
        result = train("unigram", [train_path], {"vocab_size": args.vocab_size})
        ours_seconds = time.perf_counter() - started
        tokenizer = result.tokenizer
        ours_tokens = sum(len(tokenizer.encode_ordinary(line)) for line in held)
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
        # Worker processes (the word counting's): the largest child's peak. sentencepiece runs in
        # threads, so every child is ours.
        child = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 2**20
        print(f"tokenforge:    {ours_seconds:.1f} s, held-out tokens {ours_tokens}, peak RSS {rss:.2f} GiB"
              f" (largest worker {child:.2f} GiB); load average {load:.1f} -> {os.getloadavg()[0]:.1f}")
        if sp_seconds:
            print(f"time ratio {ours_seconds / sp_seconds:.2f}x; token ratio {ours_tokens / sp_tokens:.4f}")
        print(f"rounds [size, loglik]: {result.stats['rounds']}")
        for stage, seconds in stage_seconds.items():
            print(f"  {stage}: {sum(seconds):.1f} s {[round(x, 2) for x in seconds]}")


def time_stages() -> dict[str, list[float]]:
    """Wrap the Unigram trainer's stage functions so that each call's wall time is recorded.

    The trainer calls them by module-level name, so replacing the names is enough; the numbers
    are wall seconds of the parent, which waits for the workers in each stage.
    """
    from engine.trainers import unigram
    from engine.trainers.unigram import parallel

    seconds: dict[str, list[float]] = {}

    def timed(name: str, function: Any) -> Any:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                seconds.setdefault(name, []).append(time.perf_counter() - started)
        return wrapper

    for name in ("count_words", "required_chars", "seed_pieces", "m_step", "prune_pieces"):
        setattr(unigram, name, timed(name, getattr(unigram, name)))
    unigram.Shards = timed("lattice workers start", unigram.Shards)  # type: ignore[attr-defined]
    parallel.Shards.build = timed("lattice build", parallel.Shards.build)  # type: ignore[method-assign]
    for name in ("e_step", "viterbi_counts", "alternative_paths"):  # the workers' passes, as the leader waits
        setattr(parallel.Shards, name, timed(name, getattr(parallel.Shards, name)))
    return seconds


def sentencepiece_run(train_path: Path, out: Path, held: list[str], vocab_size: int) -> tuple[float, int]:
    """Train sentencepiece with the settings ours defaults to; its seconds and held-out token count."""
    import sentencepiece as spm

    load = os.getloadavg()[0]
    started = time.perf_counter()
    spm.SentencePieceTrainer.train(
        input=str(train_path), model_prefix=str(out / "sp"), model_type="unigram",
        vocab_size=vocab_size, character_coverage=0.9995, normalization_rule_name="identity",
        remove_extra_whitespaces=False, byte_fallback=True, num_threads=2, input_sentence_size=0,
        max_sentence_length=1 << 16, minloglevel=2,
    )
    sp_seconds = time.perf_counter() - started
    sp = spm.SentencePieceProcessor(model_file=str(out / "sp.model"))
    sp_tokens = sum(len(sp.encode(line)) for line in held)
    print(f"sentencepiece: {sp_seconds:.1f} s, held-out tokens {sp_tokens}; "
          f"load average {load:.1f} -> {os.getloadavg()[0]:.1f}")
    return sp_seconds, sp_tokens


if __name__ == "__main__":
    main()
