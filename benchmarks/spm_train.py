"""The anchor for Unigram training: sentencepiece with the settings our trainer defaults to.

    python benchmarks/spm_train.py CORPUS --vocab-size 32000 -o OUTDIR

Unigram, identity normalization, no whitespace collapsing, character coverage 0.9995, byte
fallback, every sentence (no sampling), 2 threads. Time it as a whole process against
``tokenforge train --model unigram --vocab-size 32000 -o OUTDIR CORPUS``. Writes OUTDIR/sp.model
and OUTDIR/sp.vocab only.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import sentencepiece as spm


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", type=Path)
    parser.add_argument("--vocab-size", type=int, default=32000)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("-o", "--outdir", type=Path, required=True)
    args = parser.parse_args()
    args.outdir.mkdir(parents=True, exist_ok=True)
    spm.SentencePieceTrainer.train(
        input=str(args.corpus), model_prefix=str(args.outdir / "sp"), model_type="unigram",
        vocab_size=args.vocab_size, character_coverage=0.9995, normalization_rule_name="identity",
        remove_extra_whitespaces=False, byte_fallback=True, num_threads=args.threads, input_sentence_size=0,
        max_sentence_length=1 << 16, minloglevel=2,
    )


if __name__ == "__main__":
    main()
