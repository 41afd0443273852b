"""sentencepiece-style BPE's counting parts (``trainers/bpe_spm_parts.py``): cutting each process's
table into segments, then adding them up and cutting again at the characters the whole corpus's
coverage leaves out, gives what cutting the summed table with that alphabet gives."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from engine.spm_normalizer import SPACE
from engine.trainers import train
from engine.trainers.bpe import corpus_size
from engine.trainers.bpe_spm import unmarked_words
from engine.trainers.bpe_spm_parts import SpmSegmenting, by_count, piece_classes, recut
from engine.trainers.counting import count_pretokens
from engine.trainers.packed import CountedWords
from engine.trainers.unigram.seed import required_chars
from engine.trainers.unigram.segments import segment_counts

# Latin, Greek and Han letters, digits (ASCII and fullwidth), punctuation, a combining mark, the
# prolonged sound mark (a wildcard), a ▁ in the text, NUL and kUNKChar: every rule of the cut.
ALPHABET = "aabbcxyzαβ漢字1２.,!\u0301ー\u2581\x00\u2047-"


def reference(tables: list[dict[str, int]], coverage: float, split_digits: bool
              ) -> tuple[dict[str, int], dict[str, int], tuple[int, int]]:
    """The table summed first, then cut with its alphabet: what ``bpe_spm`` did before the parts."""
    total: Counter[str] = Counter()
    for table in tables:
        total.update(table)
    words = CountedWords.of(dict(total), prefix=SPACE)
    alphabet = required_chars(words, coverage)
    segments = segment_counts(words, piece_classes(alphabet, split_digits=split_digits), SPACE)
    return alphabet, dict(segments), corpus_size(words)


def summed(tables: list[dict[str, int]], coverage: float, split_digits: bool) -> tuple[
        dict[str, int], dict[str, int], tuple[int, int]]:
    segmenting = SpmSegmenting(coverage, split_digits)
    counts = segmenting.summed([segmenting.of(dict(table)) for table in tables])
    assert list(counts.segment_counts) == sorted(counts.segment_counts, reverse=True)  # most frequent first
    return counts.alphabet, dict(zip(counts.segments.strings(), counts.segment_counts.tolist())), counts.size


words_of = st.text(ALPHABET, max_size=8)
tables = st.lists(st.dictionaries(words_of, st.integers(1, 50), max_size=12), min_size=1, max_size=4)


@settings(max_examples=300, deadline=None)
@given(tables, st.sampled_from([0.5, 0.8, 0.95, 0.9995, 1.0]), st.booleans())
@example([{"abxc": 3}, {"abc": 1, "xx": 1}], 0.8, True)  # x is left out: "▁abxc" is cut into "▁ab"
@example([{"aー": 2}, {"aーa": 1, "ーz": 1}], 0.9, False)  # a wildcard: the word comes back uncut
@example([{"a\u0301b": 1}, {"ab": 5}], 0.9995, True)  # a mark
@example([{}, {"ab": 1}], 1.0, True)  # a process that counted nothing
@example([{"\x00\x00": 1}], 0.5, False)  # an alphabet of no character a piece may hold (raised a TypeError)
def test_the_parts_add_up_to_the_summed_tables_cut(parts: list[dict[str, int]], coverage: float,
                                                   split_digits: bool) -> None:
    assert summed(parts, coverage, split_digits) == reference(parts, coverage, split_digits)


def test_an_alphabet_no_piece_may_hold_trains(tmp_path: Path) -> None:
    """Digits only, split, and a coverage that leaves out the ``▁``: no character may join another,
    so no merge is learned (this raised a TypeError, a traceback on the command line)."""
    path = tmp_path / "zeros.txt"
    path.write_text("0000000000 0000\n00000\n", encoding="utf-8")
    result = train("bpe", [path], {"level": "spm", "vocab_size": 300, "character_coverage": 0.5})
    # The dummy "▁" is left out, so it is spelled in byte pieces (3 + 0xE2, 3 + 0x96, 3 + 0x81).
    assert result.stats["merges"] == [] and result.tokenizer.encode("000") == [229, 153, 132, 259, 259, 259]


def test_recut_splits_only_at_left_out_characters() -> None:
    segments = {"\u2581abxcd": 2, "\u2581ab": 1, "xy": 4, "cd": 1, "\u2581x": 7}
    assert recut(dict(segments), {"x"}) == {"\u2581ab": 3, "cd": 3}
    assert recut(dict(segments), set()) == segments
    assert recut(dict(segments), {"q"}) == segments


def test_by_count_is_most_frequent_first_ties_in_table_order() -> None:
    keys, counts = by_count({"b": 2, "a": 5, "c": 2, "d": 9})
    assert (keys.strings(), counts.tolist()) == (["d", "a", "b", "c"], [9, 5, 2, 2])


def test_workers_count_the_parts_the_one_process_counts(tmp_path: Path) -> None:
    """The same parts summed whether one process or two count (the leader and a worker)."""
    lines = [" ".join(f"w{i % 97}x{j % 13} 漢{i % 7}字 ー{i % 5} {i}" for j in range(12)) for i in range(3000)]
    path = tmp_path / "corpus.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    segmenting = SpmSegmenting(0.999, True)
    one = count_pretokens([path], split=unmarked_words, num_workers=1, safe_cuts=True, summary=segmenting)
    two = count_pretokens([path], split=unmarked_words, num_workers=2, safe_cuts=True, summary=segmenting,
                          max_chunk_chars=4096)
    assert one.alphabet == two.alphabet and one.size == two.size
    assert dict(zip(one.segments.strings(), one.segment_counts.tolist())) == \
        dict(zip(two.segments.strings(), two.segment_counts.tolist()))


@pytest.mark.parametrize("coverage", [0.98, 1.0])
def test_one_and_two_workers_train_the_same_tokenizer(tmp_path: Path, coverage: float) -> None:
    lines = [f"Zeile {i}: naïve café ñandú {i * 7} 漢字かなー {'abc'[i % 3]}{'xyz'[i % 2]}" for i in range(4000)]
    path = tmp_path / "corpus.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    options = {"level": "spm", "vocab_size": 600, "character_coverage": coverage}
    one = train("bpe", [path], {**options, "num_workers": 1})
    two = train("bpe", [path], {**options, "num_workers": 2})
    assert one.tokenizer.to_json() == two.tokenizer.to_json()
    assert one.stats["curve"] == two.stats["curve"]
