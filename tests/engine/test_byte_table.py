"""``ByteTable``: byte-level BPE's count tables as UTF-8 arrays, sent by the counting workers and
added up by hash; every sum must equal adding the dicts, whatever the words and the hashes."""

from __future__ import annotations

import pickle
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.trainers import byte_table
from engine.trainers.bpe import BpeOptions, learn
from engine.trainers.byte_table import ByteTable, hashed_table
from engine.trainers.counting import count_pretokens

TRICKY = {"▁the": 3, "a": 1, "\U0001F600x": 2, "é\u0301": 4, "\x00": 5, "a\x00b": 6, " ": 7, "ab": 8}
_TABLES = st.lists(st.dictionaries(st.text(alphabet="ab\x00é😀 ", min_size=1, max_size=6),
                                   st.integers(1, 10**12), max_size=20), min_size=1, max_size=4)


def _added(tables: list[dict[str, int]]) -> dict[str, int]:
    total: Counter[str] = Counter()
    for table in tables:
        total.update(table)
    return dict(total)


def test_a_table_packs_its_words_as_utf8_and_comes_back_whole() -> None:
    table = ByteTable.of(TRICKY)  # two words hold a NUL: packed word by word
    assert table.as_dict() == TRICKY and len(table) == len(TRICKY)
    assert table.words.lengths.tolist() == [len(w.encode()) for w in TRICKY]
    assert table.words.codes.tobytes() == "".join(TRICKY).encode()
    assert table.total_bytes() == sum(len(w.encode()) * n for w, n in TRICKY.items())
    plain = {w: n for w, n in TRICKY.items() if "\x00" not in w}  # joined by NUL and encoded once
    assert ByteTable.of(plain).words.codes.tobytes() == "".join(plain).encode()
    assert ByteTable.of(plain).as_dict() == plain
    assert ByteTable.of({}).as_dict() == {} and ByteTable.summed([ByteTable.of({})]).as_dict() == {}
    sent = pickle.loads(pickle.dumps(hashed_table(TRICKY), pickle.HIGHEST_PROTOCOL))
    assert sent.as_dict() == TRICKY and np.all(np.diff(sent.hashes.astype(np.float64)) >= 0)


@settings(max_examples=150)
@given(tables=_TABLES)
def test_summed_tables_equal_the_added_dicts(tables: list[dict[str, int]]) -> None:
    summed = ByteTable.summed([ByteTable.of(t) for t in tables])
    assert summed.as_dict() == _added(tables)
    assert list(summed.as_dict()) == list(dict.fromkeys(word for table in tables for word in table))  # first come
    assert ByteTable.summed([summed, ByteTable.of(tables[0])]).as_dict() == _added(tables + tables[:1])


def test_words_are_hashed_alike_in_parts_of_any_size(monkeypatch: pytest.MonkeyPatch) -> None:
    words = ByteTable.of({"": 1, "abc": 2, "x" * 10: 3, "é": 4, "😀😀": 5, "\x00": 6, "z": 7}).words
    whole = byte_table._hashes(words)
    assert len(set(whole.tolist())) == len(whole)
    for size in (1, 2, 3, 7, 1000):
        monkeypatch.setattr(byte_table, "_HASH_BYTES", size)
        assert byte_table._hashes(words).tolist() == whole.tolist()


def test_words_that_share_a_hash_are_still_added_exactly(monkeypatch: pytest.MonkeyPatch) -> None:
    # A hash that tells only lengths apart: every check finds a collision, and the sum falls back
    # to adding word by word.
    monkeypatch.setattr(byte_table, "_hashes", lambda words: words.lengths.astype(np.uint64))
    tables = [{"ab": 1, "ba": 2, "abc": 3}, {"ba": 10, "cab": 20, "x": 5}, {"ab": 100}]
    summed = ByteTable.summed([ByteTable.of(t) for t in tables])
    assert list(summed.as_dict().items()) == [("ab", 101), ("ba", 12), ("abc", 3), ("cab", 20), ("x", 5)]
    assert ByteTable.summed([summed, ByteTable.of({"ab": 1})]).as_dict() == _added(tables + [{"ab": 1}])


def test_real_hashes_collide_on_thue_morse_words_and_the_sum_stays_exact() -> None:
    # The classic failure of polynomial hashes modulo 2**64: a Thue-Morse word and its complement
    # (here over the bytes "a"/"b", 2048 long) hash alike. Only the check notices.
    morse = [bin(i).count("1") % 2 for i in range(2048)]
    first, second = "".join("ab"[m] for m in morse), "".join("ba"[m] for m in morse)
    hashes = byte_table._hashes(ByteTable.of({first: 1, second: 1}).words)
    assert hashes[0] == hashes[1]
    tables = [{first: 1, "a": 2}, {second: 3, "a": 4}]
    assert ByteTable.summed([ByteTable.of(t) for t in tables]).as_dict() == {first: 1, second: 3, "a": 6}


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_packed_counts_equal_the_dict_counts(tmp_path: Path, workers: int) -> None:
    path = tmp_path / "corpus.txt"
    path.write_text("".join(f"the cat {i % 7} sat 😀 on\x00 the mat {i % 13}\n" for i in range(3000)), encoding="utf-8")
    counts = count_pretokens([path], special_tokens=["<|endoftext|>"], num_workers=1)
    packed = count_pretokens([path], special_tokens=["<|endoftext|>"], num_workers=workers, packed=True,
                             in_process_bytes=0)
    assert isinstance(packed, ByteTable) and packed.as_dict() == counts


def test_merges_from_three_workers_equal_those_from_one(tmp_path: Path) -> None:
    # The workers' tables reach the merge loop summed (the leader's words first, in its own order, then
    # the others' new words), the in-process count in the order words were first seen: the merges must
    # not depend on it.
    path = tmp_path / "corpus.txt"
    path.write_text("".join(f"lower newer wider {i % 11} low new 😀😀 élan {i % 5}\n" for i in range(2000)),
                    encoding="utf-8")
    options = BpeOptions(vocab_size=300, special_tokens=("<|endoftext|>",))
    one = count_pretokens([path], special_tokens=options.special_tokens, num_workers=1)
    three = count_pretokens([path], special_tokens=options.special_tokens, num_workers=3, packed=True,
                            in_process_bytes=0)
    assert three.as_dict() == one
    assert learn(three, options) == learn(one, options)
    backwards = dict(reversed(one.items()))
    assert learn(backwards, options) == learn(one, options)


def test_a_table_hashed_in_its_own_order_still_sorts_when_asked() -> None:
    # with_hashes keeps the table's order; hashed() must sort such a table, not take its hashes as sorted.
    table = ByteTable.of({f"word{i}": i + 1 for i in range(200)}).with_hashes()
    assert table.hashes is not None and not bool((table.hashes[1:] >= table.hashes[:-1]).all())
    hashed = table.hashed()
    assert bool((hashed.hashes[1:] >= hashed.hashes[:-1]).all())
    assert hashed.as_dict() == table.as_dict() and hashed.hashed() is hashed


def test_the_sum_lists_the_words_in_the_order_they_first_come() -> None:
    # The leading counter's table first, in its own order (common words first, as one process counts
    # them), then each later table's new words in that table's order: the merge loop reads this order.
    first = ByteTable.of({"the": 5, "cat": 3, "sat": 1, "on": 2}).with_hashes()
    second = hashed_table({"dog": 2, "the": 4, "ant": 1, "on": 7, "mat": 1})
    new_words = [(w, n) for w, n in second.as_dict().items() if w not in ("the", "on")]
    summed = ByteTable.summed([first, second])
    assert list(summed.as_dict().items()) == [("the", 9), ("cat", 3), ("sat", 1), ("on", 9), *new_words]
    assert summed.hashes is not None and summed.hashes.tolist() == byte_table._hashes(summed.words).tolist()
