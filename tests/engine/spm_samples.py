"""Small corpora and sentencepiece-trained models for the merge and extension tests: English words
for bases, Chinese words (with a little English, as Chinese corpora have) for donors and corpora."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

EN = "the cat sat on a mat and the dog ran to the park while birds sang in tall green trees".split()
ZH = ("人工智能 计算机 科学 心理学 哲学 学科 融合 交叉 越来越 中国 北京 大学 学习 语言 模型 数据 "
      "the cat 研究 方法 问题 发展 社会 经济 文化 历史").split()


def lines(words: list[str], count: int, seed: int, joiner: str) -> list[str]:
    """``count`` lines of 2 to 10 of ``words``, joined by ``joiner``, the same for the same seed."""
    rng = random.Random(seed)
    return [joiner.join(rng.choice(words) for _ in range(rng.randint(2, 10))) for _ in range(count)]


def english(count: int, seed: int) -> list[str]:
    return lines(EN, count, seed, " ")


def chinese(count: int, seed: int) -> list[str]:
    return lines(ZH, count, seed, "")


def train_spm(folder: Path, name: str, text: list[str], **options: Any) -> bytes:
    """A ``.model`` trained by sentencepiece itself on ``text`` (every character covered)."""
    import sentencepiece as spm

    corpus = folder / f"{name}.txt"
    corpus.write_text("\n".join(text), encoding="utf-8")
    spm.SentencePieceTrainer.train(input=str(corpus), model_prefix=str(folder / name), character_coverage=1.0,
                                   minloglevel=2, **options)
    return (folder / f"{name}.model").read_bytes()
