"""Time WordPiece training against Hugging Face ``tokenizers`` and compare held-out quality.

Each run trains in a fresh child process (so peak RSS is that run's alone) with the same
pipeline on both sides: NFD + strip accents + lowercase, BERT pre-tokenization, the five BERT
special tokens, ``vocab_size`` 30000 by default. Ours runs twice per round: ``score=frequency``
(HF's algorithm and our default, with HF's ``WordPieceTrainer`` min_frequency of 0: the
like-for-like timing) and ``score=likelihood`` (min_frequency 2). Quality is measured on a
held-out slice: UNK rate and tokens per whitespace word; ``quality.py`` compares the defaults.

    python benchmarks/bench_wordpiece.py /work/corpora/en_100M.txt \
        --held-out /work/corpora/en_big.txt --held-out-offset 100000000 --runs 3

Peak RSS is the child's own ``ru_maxrss`` plus, for ours, twice the largest counting worker's
(two run at once): an upper bound of what was resident at the same time.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def held_out_text(path: Path, offset: int, size: int) -> str:
    with path.open("rb") as handle:
        handle.seek(offset)
        handle.readline()  # start on a whole line
        data = handle.read(size)
    return data[: data.rfind(b"\n") + 1].decode("utf-8")


def run_ours(corpus: Path, vocab_size: int, score: str, out: Path) -> dict[str, object]:
    sys.path.insert(0, str(ROOT))
    from engine.trainers import train

    started = time.perf_counter()
    # frequency: HF's algorithm with HF's default min_frequency; likelihood: our default min_frequency.
    options = {"vocab_size": vocab_size, "score": score} | ({"min_frequency": 0} if score == "frequency" else {})
    result = train("wordpiece", [corpus], options)
    seconds = time.perf_counter() - started
    result.tokenizer.save(out)
    return {"seconds": seconds, "vocab_size": result.tokenizer.vocab_size}


def run_hf(corpus: Path, vocab_size: int, out: Path) -> dict[str, object]:
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.Sequence([normalizers.NFD(), normalizers.StripAccents(),
                                                 normalizers.Lowercase()])
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tokenizer.decoder = decoders.WordPiece()
    trainer = trainers.WordPieceTrainer(vocab_size=vocab_size, special_tokens=SPECIALS, show_progress=False)
    started = time.perf_counter()
    tokenizer.train([str(corpus)], trainer=trainer)
    seconds = time.perf_counter() - started
    tokenizer.save(str(out))
    return {"seconds": seconds, "vocab_size": tokenizer.get_vocab_size()}


def child(args: argparse.Namespace) -> None:
    out = Path(args.out)
    if args.child == "hf":
        report = run_hf(Path(args.corpus), args.vocab_size, out)
    else:
        report = run_ours(Path(args.corpus), args.vocab_size, args.child, out)
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    workers = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    # Ours counts words in two worker processes at once, HF uses threads in one process.
    report["peak_rss_mib"] = round((own + 2 * workers) / 1024, 1)
    print(json.dumps(report))


def quality(path: Path, text: str, ours: bool) -> dict[str, float]:
    words = len(text.split())
    if ours:
        sys.path.insert(0, str(ROOT))
        from engine.metrics import evaluate
        from engine.tokenizer import Tokenizer

        report = evaluate(Tokenizer.from_file(path), text, longest=0)
        return {"unk_rate": report["unk_rate"], "tokens_per_word": report["fertility"], "tokens": report["tokens"]}
    from tokenizers import Tokenizer as HFTokenizer

    ids = HFTokenizer.from_file(str(path)).encode(text, add_special_tokens=False).ids
    unk = sum(1 for i in ids if i == 1)
    return {"unk_rate": round(unk / len(ids), 4), "tokens_per_word": round(len(ids) / words, 4), "tokens": len(ids)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("corpus")
    parser.add_argument("--vocab-size", type=int, default=30000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--held-out", help="file to take the held-out slice from (default: the corpus's tail)")
    parser.add_argument("--held-out-offset", type=int, default=None)
    parser.add_argument("--held-out-bytes", type=int, default=2_000_000)
    parser.add_argument("--kinds", default="hf,frequency,likelihood")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return

    kinds = args.kinds.split(",")
    times: dict[str, list[float]] = {k: [] for k in kinds}
    rss: dict[str, list[float]] = {k: [] for k in kinds}
    with tempfile.TemporaryDirectory() as tmp:
        outputs = {k: Path(tmp) / f"{k}.json" for k in kinds}
        for run in range(args.runs):
            for kind in kinds:
                command = [sys.executable, __file__, args.corpus, "--vocab-size", str(args.vocab_size),
                           "--child", kind, "--out", str(outputs[kind])]
                done = subprocess.run(command, check=True, capture_output=True, text=True, env=dict(os.environ))
                report = json.loads(done.stdout.strip().splitlines()[-1])
                times[kind].append(report["seconds"])
                rss[kind].append(report["peak_rss_mib"])
                print(f"run {run + 1} {kind:>10}: {report['seconds']:.1f} s, peak RSS {report['peak_rss_mib']} MiB",
                      flush=True)
        held = Path(args.held_out or args.corpus)
        offset = (args.held_out_offset if args.held_out_offset is not None
                  else max(0, held.stat().st_size - args.held_out_bytes))
        text = held_out_text(held, offset, args.held_out_bytes)
        print(f"\nheld-out: {len(text.encode()):,} bytes of {held.name} from byte {offset:,}; "
              f"{len(text.split()):,} words")
        print(f"{'':>10} | median s | vs HF | peak RSS MiB | UNK rate | tokens/word")
        hf_median = statistics.median(times["hf"]) if "hf" in times else None
        for kind in kinds:
            median = statistics.median(times[kind])
            q = quality(outputs[kind], text, ours=kind != "hf")
            ratio = f"{median / hf_median:.2f}x" if hf_median else "-"
            print(f"{kind:>10} | {median:8.1f} | {ratio:>5} | {max(rss[kind]):12.0f} | {q['unk_rate']:8.4f} | "
                  f"{q['tokens_per_word']:.4f}")


if __name__ == "__main__":
    main()
