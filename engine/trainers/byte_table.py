"""A pre-token count table as UTF-8 bytes in numpy arrays: how byte-level BPE's counts travel
from the counting workers, are added up, and reach the merge loop.

Why: with a table of Python strings, the process that leads a training spent its time on work
no worker could share. On en_100M with 2 workers it unpickled two tables of ~290,000 words
(0.2 s), added them key by key (0.13 s) and re-encoded all 442,000 words one by one for the
merge loop (0.08 s): ~0.4 s of every run, and twice that in the serial part of issue #25
(S = 2 t(2) - t(1)). Here a worker sends three arrays (a table's bytes travel as one buffer)
with each word's hash, sorted by it, so the leader's sum (its own table joins unsorted) is a sort
of mostly presorted runs and a few gathers, and the merge loop reads the bytes as they are.

Adding tables: words are grouped by a 64-bit polynomial hash of their bytes, and a group is one
word only after every member is checked, length and bytes, against its first: the hash only
finds candidates. Where a check fails (a collision: polynomial hashes modulo 2**64 do collide on
crafted text, e.g. Thue-Morse strings) the tables are added exactly, word by word, in a dict.

Left out: counting (``counting.py``), and what the words mean (``bpe_merge.py``).

Internal: not part of the engine's API (``engine.PUBLIC_MODULES``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from engine.trainers.packed import PackedStrings

__all__ = ["ByteTable", "hashed_table"]

_MULTIPLIER = np.uint64(0x9E3779B97F4A7C15)  # odd, so every power is a distinct odd number modulo 2**64
_INVERSE = np.uint64(pow(int(_MULTIPLIER), -1, 1 << 64))  # M * _INVERSE == 1 modulo 2**64
_LENGTH_MIX = np.uint64(0xBF58476D1CE4E5B9)
_HASH_BYTES = 1 << 16  # bytes hashed at a time (see _hashes)


def _packed_bytes(words: Sequence[bytes]) -> PackedStrings:
    return PackedStrings(np.frombuffer(b"".join(words), np.uint8),
                         np.fromiter(map(len, words), np.int64, len(words)))


def _word_bytes(words: PackedStrings) -> list[bytes]:
    """Each packed word's bytes: the way back to Python objects, word by word."""
    text = words.codes.tobytes()
    ends = np.cumsum(words.lengths).tolist()
    return [text[a:b] for a, b in zip([0, *ends[:-1]], ends)]


def _hashes(words: PackedStrings) -> np.ndarray:
    """Each word's hash: the sum of (byte + 1) * M**(place + 1) modulo 2**64, mixed with its length.

    Computed 64 KiB at a time, without a place per byte: in a part of the table a byte at offset
    ``r`` from the part's start adds (byte + 1) * M**(r + 1), and a word's sum of those times
    M**-start (M is odd, so it has an inverse modulo 2**64) is its hash. So a part costs one
    multiply by a slice of powers and one sum per word (en_100M's 2.3 MB tables: half the time of
    reading a place and a power for every byte), and the powers, 16 bytes a byte of the part, are
    made once for all parts. Small parts keep them in the cache: a worker's first (cold) hashing
    of a 287,202-word table took 0.055 s in parts of 64 KiB against 0.13 s in parts of 4 MiB,
    whose 64 MB of powers were fresh pages."""
    lengths = words.lengths
    hashes = np.zeros(len(lengths), np.uint64)
    if len(words.codes):
        ends = np.cumsum(lengths)
        starts = ends - lengths
        span = min(len(words.codes), max(_HASH_BYTES, int(lengths.max())))  # the longest part
        powers = np.cumprod(np.full(span, _MULTIPLIER, np.uint64))  # M**1 .. M**span; wraps, as meant
        inverses = np.cumprod(np.full(span, _INVERSE, np.uint64))  # M**-1 .. M**-span
        inverses = np.concatenate(([np.uint64(1)], inverses[:-1]))  # M**0 .. M**-(span - 1)
        first = 0
        while first < len(lengths):  # words first .. last - 1: at least one, at most ~_HASH_BYTES bytes
            last = max(first + 1, int(np.searchsorted(ends, starts[first] + _HASH_BYTES, side="right")))
            lo, hi = int(starts[first]), int(ends[last - 1])
            terms = words.codes[lo:hi].astype(np.uint64)
            terms += np.uint64(1)
            terms *= powers[:hi - lo]
            offsets = starts[first:last] - lo
            filled = lengths[first:last] > 0  # an empty word adds no term (and reduceat needs no empty run)
            sums = np.add.reduceat(terms, offsets[filled]) if hi > lo else np.zeros(0, np.uint64)
            hashes[first:last][filled] = sums * inverses[offsets[filled]]
            first = last
    return hashes ^ (lengths.astype(np.uint64) * _LENGTH_MIX)


@dataclass(frozen=True)
class ByteTable:
    """Distinct pre-tokens as their UTF-8 bytes (``words``, uint8 codes) with their ``counts``
    (int64), and their ``hashes`` (uint64) once computed."""

    words: PackedStrings
    counts: np.ndarray
    hashes: np.ndarray | None = None
    """Each word's hash once computed: in ascending order after :meth:`hashed`, in the table's own
    order after :meth:`with_hashes`."""

    @classmethod
    def of(cls, table: Mapping[str, int]) -> ByteTable:
        """``table`` packed: its words joined by NUL and encoded once (one C call, where encoding
        each word cost ~0.2 us a word), unless a word holds a NUL itself."""
        keys = list(table)
        counts = np.fromiter(table.values(), np.int64, len(keys))
        if not keys:
            return cls(_packed_bytes([]), counts)
        raw = np.frombuffer("\0".join(keys).encode("utf-8"), np.uint8)
        cuts = np.flatnonzero(raw == 0)
        if len(cuts) != len(keys) - 1:  # a word holds a NUL: encode word by word
            return cls(_packed_bytes([key.encode("utf-8") for key in keys]), counts)
        lengths = np.diff(np.concatenate(([-1], cuts, [len(raw)]))) - 1
        return cls(PackedStrings(np.delete(raw, cuts), lengths), counts)

    def __len__(self) -> int:
        return len(self.counts)

    def total_bytes(self) -> int:
        """The UTF-8 bytes of the text the table counts."""
        return int(self.counts @ self.words.lengths)

    def as_dict(self) -> dict[str, int]:
        """The table as ``{pre_token: count}``."""
        return {word.decode("utf-8"): n for word, n in zip(_word_bytes(self.words), self.counts.tolist())}

    def hashed(self) -> ByteTable:
        """The table sorted by its words' hashes (as a worker sends it: the sum then merges
        sorted runs); itself if it is already (a table from :meth:`with_hashes` may not be)."""
        hashes = self.with_hashes().hashes
        if self.hashes is not None and bool(np.all(hashes[1:] >= hashes[:-1])):
            return self
        order = np.argsort(hashes, kind="stable")
        return ByteTable(self.words.take(order), self.counts[order], hashes[order])

    def with_hashes(self) -> ByteTable:
        """The table with its words' hashes, in its own order: all :meth:`summed` needs of a part.
        The leading counter's own table goes in so, hashed while the workers' tables come: sorting
        it too put a sort and a reordering of its ~290,000 words (~50 ms) into the serial tail of
        every en_100M count, and its own order leads the sum's (:meth:`summed`)."""
        return self if self.hashes is not None else ByteTable(self.words, self.counts, _hashes(self.words))

    @classmethod
    def summed(cls, tables: Sequence[ByteTable]) -> ByteTable:
        """One table with each word once, its count the sum of its counts in ``tables`` (one or
        more), in the order the words first come in the tables one after the other (one part is
        returned as it is). Exact whatever the hashes do (see the module docstring).

        Why that order: the leading counter's own table comes first, in the order its text showed
        the words, so the common words lead and the rare ones trail, as when one process counts;
        the merge loop then reads the common pairs' places closer together than in hash order
        (en_100M, the loop alone: 1.457 against 1.494 s in hash order, 9 rounds)."""
        parts = [table.with_hashes() for table in tables if len(table)] or [table.with_hashes() for table in tables[:1]]
        if len(parts) == 1:
            return parts[0]
        words = PackedStrings.joined([part.words for part in parts])
        counts = np.concatenate([part.counts for part in parts])
        hashes = np.concatenate([part.hashes for part in parts])  # type: ignore[misc]  # hashed above
        order = np.argsort(hashes, kind="stable")  # a merge of runs: each worker sends its table sorted
        hashes = hashes[order]
        heads = np.flatnonzero(np.concatenate(([True], hashes[1:] != hashes[:-1])))
        firsts = order[heads]
        if len(heads) < len(order):  # words in several tables (or collisions): check each against its first
            others = np.ones(len(order), bool)
            others[heads] = False
            first_of = np.repeat(firsts, np.diff(np.append(heads, len(order))))[others]
            if not _same_words(words, first_of, order[others]):
                return cls._added_exactly(words, counts)
        # Each word's group, read at its first place in the tables, in the order of those places.
        group = np.full(len(order), -1, np.int64)
        group[firsts] = np.arange(len(heads))
        group = group[group >= 0]
        return cls(words.take(firsts[group]), np.add.reduceat(counts[order], heads)[group], hashes[heads][group])

    @classmethod
    def _added_exactly(cls, words: PackedStrings, counts: np.ndarray) -> ByteTable:
        """The sum word by word, in a dict: only when two different words share a hash."""
        added: dict[bytes, int] = {}
        for word, n in zip(_word_bytes(words), counts.tolist()):
            added[word] = added.get(word, 0) + n
        keys = list(added)  # in the order they first come, as the sum lists them
        return cls(_packed_bytes(keys), np.fromiter(added.values(), np.int64, len(keys))).with_hashes()


def _same_words(words: PackedStrings, a: np.ndarray, b: np.ndarray) -> bool:
    """Whether word ``a[i]`` equals word ``b[i]`` for every ``i``."""
    return bool(np.array_equal(words.lengths[a], words.lengths[b])
                and np.array_equal(words.take(a).codes, words.take(b).codes))


def hashed_table(table: Mapping[str, int]) -> ByteTable:
    """``table`` packed and sorted by hash: what a counting worker sends (picklable by name)."""
    return ByteTable.of(table).hashed()
