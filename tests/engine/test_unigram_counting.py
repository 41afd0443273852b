"""The Unigram trainer's word counts (``count_pretokens`` with :class:`MetaspaceSplit`) against a
line-by-line reference, with chunks cut small enough to cut inside lines, in and out of workers."""

from __future__ import annotations

import pickle
import re
from collections import Counter
from pathlib import Path

import pytest

from engine.normalizers import get_normalizer
from engine.trainers.base import Reporter
from engine.trainers.counting import count_pretokens
from engine.trainers.unigram import MetaspaceSplit, UnigramOptions, count_words, train_on_counts

TEXT = (
    "Hello world, this is a test.\n  two leading spaces\n\nempty above\r\nwindows line\rold mac line\n"
    "a very long line with many words that goes on and on so that the chunker has to cut it somewhere "
    "between two letters, and then once more, and again\n"
    "ﬁ ligature and café and 漢字 mixed\n<|endoftext|>\nlast line without newline"
)


def reference(path: Path, add_dummy_prefix: bool, split_by_whitespace: bool, normalization: str) -> Counter[str]:
    """One line at a time, read in Python's text mode: slow and obviously right."""
    normalizer = get_normalizer(normalization)
    counts: Counter[str] = Counter()
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            line = line.rstrip("\n")
            if normalizer is not None:
                line = normalizer.normalize(line)
            if add_dummy_prefix and line:  # sentencepiece's: a line that begins with a space too
                line = "▁" + line
            line = line.replace(" ", "▁")
            if split_by_whitespace:
                counts.update(re.findall("▁[^▁]*|[^▁]+", line))
            elif line:
                counts[line] += 1
    return counts


@pytest.mark.parametrize("workers", [1, 2], ids=["in-process", "workers"])
@pytest.mark.parametrize("chunk", [16, 40, 1 << 20], ids=["chunk16", "chunk40", "whole"])
@pytest.mark.parametrize(
    ("dummy", "by_space", "norm"),
    [(True, True, "identity"), (False, True, "identity"), (True, False, "identity"), (True, True, "nfkc")],
    ids=["default", "no-dummy-prefix", "whole-lines", "nfkc"],
)
def test_counts_equal_the_line_by_line_reference(
    tmp_path: Path, workers: int, chunk: int, dummy: bool, by_space: bool, norm: str,
) -> None:
    path = tmp_path / "corpus.txt"
    path.write_bytes((TEXT * 3).encode())
    split = MetaspaceSplit(add_dummy_prefix=dummy, split_by_whitespace=by_space)
    got = count_pretokens([path], split=split, normalizer=get_normalizer(norm), num_workers=workers,
                          max_chunk_chars=chunk, safe_cuts=by_space)
    assert got == reference(path, dummy, by_space, norm)


def test_count_words_uses_the_options(tmp_path: Path) -> None:
    path = tmp_path / "corpus.txt"
    path.write_text(TEXT, encoding="utf-8")
    options = UnigramOptions(add_dummy_prefix=False)
    assert count_words([path], None, options, Reporter()) == reference(path, False, True, "identity")


def test_the_splitter_pickles() -> None:
    split = MetaspaceSplit(add_dummy_prefix=True, split_by_whitespace=True)
    assert pickle.loads(pickle.dumps(split))("a b\nc") == ["▁a", "▁b", "▁c"]


def test_training_does_not_depend_on_the_order_of_the_counts(tmp_path: Path) -> None:
    # Counting in workers merges their tables in whatever order they finish: the same counts in
    # another dict order must give the same model.
    path = tmp_path / "corpus.txt"
    path.write_text((TEXT * 5).replace("<|endoftext|>", "the end"), encoding="utf-8")
    counts = count_words([path], None, UnigramOptions(), Reporter())
    options = UnigramOptions(vocab_size=60, seed_size=500, byte_fallback=False, special_tokens=("<unk>",))
    forward, _ = train_on_counts(dict(counts), options)
    backward, _ = train_on_counts(dict(reversed(list(counts.items()))), options)
    assert forward.pieces() == backward.pieces()
