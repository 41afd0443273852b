"""How good are the tokenizers our default options train, against the anchors' defaults?

    python benchmarks/quality.py /tmp/corpora/en_5M.txt
    python benchmarks/quality.py /tmp/corpora/en_25M.txt --algorithms wordpiece bpe

For each algorithm, ours and its anchor are trained on the same training part of the corpus at
the same vocabulary size, each with its own default options and nothing else
(``--option`` sets one of ours otherwise, to compare settings):

- ``bpe``: Hugging Face ``ByteLevelBPETokenizer().train(...)`` (min_frequency 2, no specials);
- ``wordpiece``: Hugging Face ``BertWordPieceTokenizer().train(...)`` (BERT normalizer with
  lowercase and accent stripping, min_frequency 2, limit_alphabet 1000, the five BERT specials);
- ``unigram``: ``sentencepiece`` with its defaults (nmt_nfkc normalization, character coverage
  0.9995); only ``num_threads=2`` is set, which does not change the result's quality.

The vocabulary size is the anchor's default (30000, 30000, 8000) unless ``--vocab-size`` is given.
The held-out text is every ``--holdout-every``-th line, left out of training (the split of
``bench_unigram.py``). Each held-out line is encoded on its own, without special tokens, and the
figures are tokens per whitespace word and UTF-8 bytes per token over all of them. On one text
both figures move together (their ratio to the anchor's is the token-count ratio), so the last
column, ours/anchor tokens, is the one to read: below 1 means we compress better.
Training seconds are printed for orientation only; ``bench_*.py`` are the timing benchmarks.
Writes only into a temporary directory.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_unigram import split_corpus  # noqa: E402

from engine.trainers import train  # noqa: E402

ALGORITHMS = ("bpe", "wordpiece", "unigram")
ANCHOR_VOCAB = {"bpe": 30000, "wordpiece": 30000, "unigram": 8000}
ANCHOR_NAME = {
    "bpe": "HF ByteLevelBPETokenizer",
    "wordpiece": "HF BertWordPieceTokenizer",
    "unigram": "sentencepiece unigram",
}

Counter = Callable[[list[str]], list[int]]  # held-out lines -> tokens per line


def anchor_bpe(train_path: Path, vocab_size: int, out: Path) -> Counter:
    from tokenizers import ByteLevelBPETokenizer

    tokenizer = ByteLevelBPETokenizer()
    tokenizer.train([str(train_path)], vocab_size=vocab_size, show_progress=False)
    return lambda lines: [len(e.ids) for e in tokenizer.encode_batch(lines, add_special_tokens=False)]


def anchor_wordpiece(train_path: Path, vocab_size: int, out: Path) -> Counter:
    from tokenizers import BertWordPieceTokenizer

    tokenizer = BertWordPieceTokenizer()
    tokenizer.train([str(train_path)], vocab_size=vocab_size, show_progress=False)
    return lambda lines: [len(e.ids) for e in tokenizer.encode_batch(lines, add_special_tokens=False)]


def anchor_unigram(train_path: Path, vocab_size: int, out: Path) -> Counter:
    import sentencepiece as spm

    prefix = out / "spm"
    spm.SentencePieceTrainer.train(
        input=str(train_path), model_prefix=str(prefix), vocab_size=vocab_size, num_threads=2, minloglevel=2
    )
    processor = spm.SentencePieceProcessor(model_file=f"{prefix}.model")
    return lambda lines: [len(ids) for ids in processor.encode(lines)]


ANCHORS: dict[str, Callable[[Path, int, Path], Counter]] = {
    "bpe": anchor_bpe,
    "wordpiece": anchor_wordpiece,
    "unigram": anchor_unigram,
}


def ours(algorithm: str, train_path: Path, vocab_size: int, extra: dict[str, str]) -> Counter:
    tokenizer = train(algorithm, [train_path], {**extra, "vocab_size": vocab_size}).tokenizer
    return lambda lines: [len(tokenizer.encode_ordinary(line)) for line in lines]


def figures(count: Counter, held: list[str]) -> dict[str, float]:
    """Tokens per whitespace word and bytes per token over the held-out lines."""
    tokens = sum(count(held))
    words = sum(len(line.split()) for line in held)
    n_bytes = sum(len(line.encode("utf-8")) for line in held)
    return {"tokens": tokens, "per_word": tokens / words, "bytes_per_token": n_bytes / tokens}


def timed(make: Callable[[], Counter]) -> tuple[Counter, float]:
    started = time.perf_counter()
    counter = make()
    return counter, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", type=Path)
    parser.add_argument("--algorithms", nargs="+", choices=ALGORITHMS, default=list(ALGORITHMS))
    parser.add_argument("--vocab-size", type=int, help="One size for every algorithm (default: the anchor's default).")
    parser.add_argument("--holdout-every", type=int, default=100, help="Hold out every n-th line (default 100).")
    parser.add_argument("--option", action="append", default=[], metavar="NAME=VALUE",
                        help="An option of ours away from its default, to compare settings (repeatable).")
    args = parser.parse_args()
    extra = dict(item.split("=", 1) for item in args.option)

    print(f"corpus {args.corpus}, held out every {args.holdout_every}th line; our options: {extra or 'defaults'}")
    print("| algorithm | anchor | vocab | anchor tokens/word | ours tokens/word "
          "| anchor bytes/token | ours bytes/token | ours/anchor tokens | train s (anchor, ours) |")
    print("|---|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        train_path, held = split_corpus(args.corpus, out, args.holdout_every)
        for algorithm in args.algorithms:
            vocab_size = args.vocab_size or ANCHOR_VOCAB[algorithm]
            anchor, anchor_s = timed(lambda: ANCHORS[algorithm](train_path, vocab_size, out))
            mine, ours_s = timed(lambda: ours(algorithm, train_path, vocab_size, extra))
            a, o = figures(anchor, held), figures(mine, held)
            print(
                f"| {algorithm} | {ANCHOR_NAME[algorithm]} | {vocab_size} | {a['per_word']:.4f} | {o['per_word']:.4f} "
                f"| {a['bytes_per_token']:.4f} | {o['bytes_per_token']:.4f} | {o['tokens'] / a['tokens']:.4f} "
                f"| {anchor_s:.1f}, {ours_s:.1f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
