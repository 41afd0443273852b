"""``PackedStrings``: string tables as two arrays, as they travel between the Unigram trainer's
processes; every string must come back exactly, whatever its characters."""

from __future__ import annotations

import pickle

import numpy as np

from engine.trainers.packed import CountedWords, PackedStrings

TRICKY = ["▁the", "", "a", "\U0001F600x", "\ud800", "é\u0301", "\x00", "▁" * 5]


def test_strings_come_back_exactly_after_a_pickle() -> None:
    packed = pickle.loads(pickle.dumps(PackedStrings.of(TRICKY), pickle.HIGHEST_PROTOCOL))
    assert packed.strings() == TRICKY
    assert len(packed) == len(TRICKY)
    assert packed.lengths.tolist() == [len(s) for s in TRICKY]
    assert packed.starts().tolist() == np.cumsum([0] + [len(s) for s in TRICKY[:-1]]).tolist()
    assert PackedStrings.of([]).strings() == []


def test_take_and_joined_keep_the_strings_in_the_order_asked() -> None:
    packed = PackedStrings.of(TRICKY)
    index = np.array([3, 0, 1, 7, 3])
    assert packed.take(index).strings() == [TRICKY[i] for i in index]
    assert packed.take(np.array([], np.int64)).strings() == []
    assert PackedStrings.joined([packed, PackedStrings.of(["z"]), packed]).strings() == TRICKY + ["z"] + TRICKY
    assert PackedStrings.joined([]).strings() == []


def test_a_prefix_is_read_before_every_string() -> None:
    packed = PackedStrings.of(TRICKY, prefix="▁")
    assert packed.strings() == ["▁" + s for s in TRICKY]
    assert packed.lengths.tolist() == [len(s) + 1 for s in TRICKY]
    assert PackedStrings.of([], prefix="▁").strings() == []  # no string, no prefix


def test_counted_words_pack_a_table_once_and_are_reused() -> None:
    table = {word: i + 1 for i, word in enumerate(TRICKY)}
    words = CountedWords.of(table, prefix="▁")
    assert words.words == TRICKY and len(words) == len(TRICKY)
    assert words.counts.tolist() == list(table.values())
    assert words.packed.strings() == ["▁" + s for s in TRICKY]
    assert CountedWords.of(words, prefix="▁") is words  # packed already: the same object
    again = CountedWords.of(words)  # another prefix: packed again
    assert again.packed.strings() == TRICKY and again.counts.tolist() == words.counts.tolist()
