"""Byte-level BPE encoding: apply learned merges to the bytes of a pre-token.

The model is a vocabulary of byte strings and an ordered list of merges. Encoding starts from
one token per byte and repeatedly merges the adjacent pair with the lowest merge rank (the
earliest learned), its leftmost occurrence first, one merge at a time, until no adjacent pair
has a merge. This is the Hugging Face semantics (merges are pairs, so a token that two
different merges could produce is handled exactly, and so is a merge that uses a token a later
merge creates, and a pair listed twice has its later rank); on GPT-2's files it gives the same
ids as tiktoken.

``ignore_merges`` (Llama 3 and gpt-oss set it; tiktoken's rule): a pre-token whose whole byte
string is in the vocabulary is that one token, merged or not; every encode path applies it
(HF applies it only without dropout, and so does ``encode_bytes``).

``sample`` enables BPE-dropout: each candidate merge is skipped with probability ``dropout``,
which is how subword regularization is done for BPE. Caching and special tokens belong to the
tokenizer pipeline, not here.

Three merge loops give the same ids (the tests compare them with ``encode_bytes``, the slow
reference): ``merge_fast`` for one short piece, ``merge_long`` (``bpe_long.py``) for a long one,
and ``tokenize_many``'s numpy batch (``bpe_batch.py``) for the many new pieces of a cold encode.
"""

from __future__ import annotations

import random
from bisect import bisect_right
from collections.abc import Mapping, Sequence
from functools import partial
from itertools import accumulate, repeat
from typing import TYPE_CHECKING, Any

from engine.byte_unicode import bytes_to_symbols, symbols_to_bytes
from engine.errors import FormatError
from engine.limits import MAX_MERGES, MAX_VOCAB_SIZE, check_count, check_id, check_token, shown
from engine.models.bpe_long import merge_long_ids

if TYPE_CHECKING:
    from engine.models.bpe_batch import BatchMerger

# The rank of an adjacent pair that has no merge: above every real rank, and still a one-digit
# CPython int (< 2**30), so comparisons with it stay on the interpreter's fast path.
_NO_MERGE = (1 << 30) - 1
# An endless supply of it for ``map(dict.get, rows, rights, _NO_MERGE_FOREVER)``.
_NO_MERGE_FOREVER = repeat(_NO_MERGE)
# Pieces longer than this many bytes are merged by ``merge_long`` (O(n log n)) instead of
# ``merge_fast`` (quadratic: 200,000 bytes of "a" took 90 s). Measured on GPT-2's merges, the
# heap is as fast at 64 bytes of random bytes or spaces, and 1.2-2x faster on letters, digits,
# CJK and repeated bytes; below 48 bytes ``merge_fast`` wins. Real pre-tokens are shorter.
LONG_PIECE_BYTES = 64
# ``tokenize_many`` merges this many new pieces or more together in numpy (``bpe_batch``); fewer
# are merged one by one, where numpy's cost per call would outweigh what it saves (GPT-2,
# en_5M's words: 256 took 0.9 ms batched and 0.6 ms one by one, 1,024 took 1.9 and 2.7 ms).
BATCH_MIN_PIECES = 512
# At most this many bytes of pieces go into one numpy batch, which bounds its arrays (~40 bytes
# a byte at the start); en_5M's 70k distinct pre-tokens are 0.5 MB.
BATCH_MAX_BYTES = 1 << 21


class BPE:
    """A byte-level BPE model: ``vocab`` maps ids to bytes, ``merges`` are pairs in rank order."""

    kind = "bpe"
    level = "byte"  # models/bpe_char.py is the "char" one
    unk_id: int | None = None

    def __init__(
        self,
        vocab: Mapping[int, bytes],
        merges: Sequence[tuple[bytes, bytes]],
        *,
        ignore_merges: bool = False,
        hf_options: Mapping[str, Any] | None = None,
    ) -> None:
        self.ignore_merges = ignore_merges
        # The HF model fields that change nothing here (a file's unk_token, "" affixes, ...),
        # kept so that a re-export writes what was read.
        self.hf_options: dict[str, Any] = dict(hf_options or {})
        self._bytes: dict[int, bytes] = dict(vocab)
        # Tables below are indexed by id, so the ids must be bounded before they are sized.
        for edge in {min(self._bytes, default=0), max(self._bytes, default=0)} & self._bytes.keys():
            check_id(edge, bytes_to_symbols(self._bytes[edge]))
        check_count(len(merges), MAX_MERGES, "merges", name="MAX_MERGES")
        self._ids: dict[bytes, int] = {}
        for token_id, data in sorted(self._bytes.items()):
            self._ids.setdefault(data, token_id)
        missing = [b for b in range(256) if bytes([b]) not in self._ids]
        if missing:
            raise FormatError(
                f"The vocabulary lacks the single byte 0x{missing[0]:02X} "
                f"({len(missing)} single bytes are missing); byte-level BPE needs all 256."
            )
        self._byte_ids = [self._ids[bytes([b])] for b in range(256)]
        self.merges: list[tuple[bytes, bytes]] = list(merges)
        # (left id, right id) -> (rank, merged id); the hot loop looks pairs up here.
        self._ranks: dict[tuple[int, int], tuple[int, int]] = {}
        for rank, (left, right) in enumerate(self.merges):
            pair_ids = (self._ids.get(left), self._ids.get(right))
            merged = self._ids.get(left + right)
            if pair_ids[0] is None or pair_ids[1] is None or merged is None:
                absent = left if pair_ids[0] is None else right if pair_ids[1] is None else left + right
                raise FormatError(
                    f"Merge {rank + 1} ({bytes_to_symbols(left)} {bytes_to_symbols(right)}) uses "
                    f"{bytes_to_symbols(absent)!r}, which is not in the vocabulary.",
                    line=rank + 1,
                )
            self._ranks[pair_ids[0], pair_ids[1]] = (rank, merged)  # listed twice: the later rank, as in HF
        self._right_ranks, self._merged_at = rank_tables(self._ranks, self.vocab_size)
        # The ids of the single bytes as a ``bytes.translate`` table when every one is below 256
        # (GPT-2's are 0-255): a word's bytes become ids in one C call.
        self._byte_table = bytes(self._byte_ids) if max(self._byte_ids) < 256 else None
        self._batch: BatchMerger | None = None  # built on first use (``_merge_batches``)
        # merged id -> (rank, left id, right id): the inspector's "why does this token exist".
        self.origins: dict[int, tuple[int, int, int]] = {
            merged: (rank, pair[0], pair[1]) for pair, (rank, merged) in self._ranks.items()
        }

    @property
    def vocab_size(self) -> int:
        return max(self._bytes) + 1 if self._bytes else 0

    def tokenize(self, piece: str) -> list[int]:
        return self._merge_one(piece.encode("utf-8"))

    def _merge_one(self, data: bytes) -> list[int]:
        """The ids of one piece's bytes, by the merge loop that suits its length."""
        if len(data) > LONG_PIECE_BYTES:
            return self.merge_long(data)
        return self.merge_fast(data)

    def tokenize_many(self, pieces: Sequence[str]) -> list[tuple[int, ...]]:
        """The ids of each piece, as ``tokenize`` gives them; a cold encode's new pieces, merged together."""
        encoded = list(map(str.encode, pieces))
        if not self.ignore_merges:
            return self._tokenize_encoded(encoded)
        whole = list(map(self._ids.get, encoded))  # ignore_merges: pieces in the vocabulary are done
        merged_rest = iter(self._tokenize_encoded([data for data, found in zip(encoded, whole) if found is None]))
        return [(found,) if found is not None else next(merged_rest) for found in whole]

    def _tokenize_encoded(self, encoded: list[bytes]) -> list[tuple[int, ...]]:
        short = [data for data in encoded if 0 < len(data) <= LONG_PIECE_BYTES]
        if len(short) < BATCH_MIN_PIECES:
            return [tuple(self._merge_one(data)) for data in encoded]
        if len(short) == len(encoded):
            return self._merge_batches(short)
        merged = iter(self._merge_batches(short))
        return [next(merged) if 0 < len(data) <= LONG_PIECE_BYTES else tuple(self._merge_one(data)) for data in encoded]

    def _merge_batches(self, words: list[bytes]) -> list[tuple[int, ...]]:
        """``BatchMerger.merge`` over ``words`` in batches of at most ``BATCH_MAX_BYTES``."""
        # Imported here: numpy costs ~60 ms of start-up, which a CLI call that loads a
        # tokenizer to encode a line should not pay.
        from engine.models.bpe_batch import BatchMerger

        if self._batch is None:
            self._batch = BatchMerger(self._byte_ids, self._ranks)
        finish = partial(merge_short, rows=self._right_ranks, merged_at=self._merged_at)
        out: list[tuple[int, ...]] = []
        ends = list(accumulate(map(len, words)))  # no word is longer than a batch may be
        start = 0
        while start < len(words):
            stop = bisect_right(ends, ends[start] - len(words[start]) + BATCH_MAX_BYTES, lo=start + 1)
            out += self._batch.merge(words[start:stop], finish)
            start = stop
        return out

    def merge_long(self, data: bytes) -> list[int]:
        """The ids of ``data``; equal to :meth:`merge_fast`, in O(n log n) for long pieces (``bpe_long``)."""
        if self.ignore_merges and (found := self._ids.get(data)) is not None:
            return [found]
        return merge_long_ids([self._byte_ids[b] for b in data], self._right_ranks, self._merged_at)

    def merge_fast(self, data: bytes) -> list[int]:
        """``encode_bytes(data)`` without dropout, a few times faster (tests compare the two).

        Quadratic in ``len(data)`` (see :func:`merge_short`), the fastest for short pieces;
        ``tokenize`` gives pieces over ``LONG_PIECE_BYTES`` to :meth:`merge_long` instead.
        """
        if self.ignore_merges and (found := self._ids.get(data)) is not None:
            return [found]
        table = self._byte_table
        ids = list(data.translate(table)) if table is not None else list(map(self._byte_ids.__getitem__, data))
        return merge_short(ids, self._right_ranks, self._merged_at)

    def encode_bytes(self, data: bytes, *, dropout: float = 0.0, rng: random.Random | None = None) -> list[int]:
        """Merge ``data`` into ids; with ``dropout`` > 0 each merge candidate may be skipped.

        This is the slow, obviously-correct reference; ``tokenize`` uses :meth:`merge_fast`.
        Like Hugging Face, it merges one pair at a time, the lowest (rank, position) first, then
        looks again: merging every occurrence of the lowest rank at once differs when a merge
        uses a token that a later merge creates (imported vocabularies may have such merges).
        With dropout, candidates are tried in that order and each is skipped with probability
        ``dropout``; the first one kept is merged, and if all are skipped the word is done.
        """
        if self.ignore_merges and not dropout and (found := self._ids.get(data)) is not None:
            return [found]
        byte_ids = self._byte_ids
        ids = [byte_ids[b] for b in data]
        ranks = self._ranks
        while len(ids) > 1:
            candidates = sorted(
                (found[0], i, found[1])
                for i, pair in enumerate(zip(ids, ids[1:]))
                if (found := ranks.get(pair)) is not None
            )
            for _, i, merged_id in candidates:
                if dropout and rng is not None and rng.random() < dropout:
                    continue
                ids[i : i + 2] = [merged_id]
                break
            else:
                break
        return ids

    def sample(self, piece: str, *, rng: random.Random, dropout: float = 0.1) -> list[int]:
        """BPE-dropout: a random segmentation of ``piece`` for subword regularization."""
        return self.encode_bytes(piece.encode("utf-8"), dropout=dropout, rng=rng)

    def token_bytes(self, token_id: int) -> bytes:
        return self._bytes[token_id]

    def has_id(self, token_id: int) -> bool:
        return token_id in self._bytes

    def id_for_bytes(self, data: bytes) -> int | None:
        return self._ids.get(data)

    def id_to_token(self, token_id: int) -> str | None:
        data = self._bytes.get(token_id)
        return None if data is None else bytes_to_symbols(data)

    def token_to_id(self, token: str) -> int | None:
        try:
            return self._ids.get(symbols_to_bytes(token))
        except KeyError:
            return None

    def vocab(self) -> dict[str, int]:
        return {bytes_to_symbols(data): token_id for token_id, data in self._bytes.items()}

    def items(self) -> list[tuple[int, bytes]]:
        """All (id, bytes) pairs in id order."""
        return sorted(self._bytes.items())

    def to_hf(self) -> dict[str, Any]:
        merges = [f"{bytes_to_symbols(a)} {bytes_to_symbols(b)}" for a, b in self.merges]
        model = hf_byte_level_model(self.vocab(), merges)
        model.update(self.hf_options)
        model["ignore_merges"] = self.ignore_merges
        return model

    @classmethod
    def from_hf(cls, data: Mapping[str, Any], *, special_tokens: Mapping[str, int]) -> BPE:
        """Read a byte-level HF BPE model; vocabulary entries that are special tokens are skipped."""
        raw_vocab = data.get("vocab")
        if not isinstance(raw_vocab, dict):
            raise FormatError("The BPE model has no vocab object.")
        check_count(len(raw_vocab), MAX_VOCAB_SIZE, "vocabulary entries", name="MAX_VOCAB_SIZE")
        raw_merges = data.get("merges") or []
        if not isinstance(raw_merges, list):
            raise FormatError(f"The BPE merges must be a list, not {type(raw_merges).__name__}.")
        check_count(len(raw_merges), MAX_MERGES, "merges", name="MAX_MERGES")
        vocab: dict[int, bytes] = {}
        for token, token_id in raw_vocab.items():
            if token in special_tokens:
                continue
            check_token(token)  # in the byte alphabet one character is one byte
            check_id(token_id, token)
            try:
                data_bytes = symbols_to_bytes(token)
            except KeyError:
                raise FormatError(
                    f"Token {token!r} has characters outside the byte-level alphabet; "
                    "only byte-level BPE models are supported."
                ) from None
            if token_id in vocab:
                raise FormatError(f"Id {token_id} is used by two tokens ({token!r} and another).")
            vocab[token_id] = data_bytes
        merges = [parse_merge(entry, index + 1) for index, entry in enumerate(raw_merges)]
        ignore_merges, options = read_byte_level_options(data)
        return cls(vocab, merges, ignore_merges=ignore_merges, hf_options=options)


# The HF BPE fields besides vocab and merges, with the values that change nothing (or that we
# implement) on a byte-level vocabulary. With all 256 single bytes in the vocabulary (``BPE``
# requires them) no character is ever unknown, so unk_token, fuse_unk and byte_fallback never act.
_NO_OP_AFFIXES = (None, "")  # Qwen3 writes "" for both: no prefix, no suffix


def read_byte_level_options(data: Mapping[str, Any]) -> tuple[bool, dict[str, Any]]:
    """``(ignore_merges, the other fields as read)`` of a byte-level HF BPE model; FormatError
    naming the field (``model.dropout``) for a value that would change the ids."""
    for name in ("ignore_merges", "fuse_unk", "byte_fallback"):
        if name in data and not isinstance(data[name], bool):
            raise FormatError(f"The BPE model's {name} (model.{name}) must be true or false, not {shown(data[name])}.")
    check_dropout(data.get("dropout"))
    for name in ("continuing_subword_prefix", "end_of_word_suffix"):
        if data.get(name) not in _NO_OP_AFFIXES:
            raise FormatError(f"The byte-level BPE model has a {name} (model.{name}) of {shown(data.get(name))}; "
                              "only none or \"\" is supported on a byte-level vocabulary.")
    unk = data.get("unk_token")
    if unk is not None and not isinstance(unk, str):
        raise FormatError(f"The BPE model's unk_token (model.unk_token) must be a string or null, not {shown(unk)}.")
    options = {name: data[name] for name in ("dropout", "unk_token", "continuing_subword_prefix",
                                             "end_of_word_suffix", "fuse_unk", "byte_fallback") if name in data}
    return bool(data.get("ignore_merges", False)), options


def check_dropout(dropout: object) -> None:
    """Accept a file's BPE ``dropout`` of null or 0 only: HF samples a random segmentation at
    every encode when it is above 0, so no fixed ids could match it."""
    if dropout is None or (isinstance(dropout, int | float) and not isinstance(dropout, bool) and dropout == 0):
        return
    raise FormatError(f"The BPE model's dropout (model.dropout) is {shown(dropout)}; Hugging Face then encodes at "
                      "random (BPE-dropout), so only null or 0 is supported. Set \"dropout\": null to load it.")


def hf_byte_level_model(vocab: Mapping[str, int], merges: list[str]) -> dict[str, Any]:
    """The HF ``model`` object of a byte-level BPE (vocabulary in the byte alphabet, merges "a b")."""
    return {
        "type": "BPE",
        "dropout": None,
        "unk_token": None,
        "continuing_subword_prefix": None,
        "end_of_word_suffix": None,
        "fuse_unk": False,
        "byte_fallback": False,
        "ignore_merges": False,
        "vocab": dict(sorted(vocab.items(), key=lambda kv: kv[1])),
        "merges": merges,
    }


def parse_merge(entry: object, line: int) -> tuple[bytes, bytes]:
    """Read one merge given as ``"a b"`` or ``["a", "b"]`` in the byte-level alphabet."""
    if isinstance(entry, str):
        parts = entry.split(" ")
    elif isinstance(entry, list | tuple):
        parts = list(entry)
    else:
        raise FormatError(f"A merge must be a string or a pair, not {shown(entry)}.", line=line)
    if len(parts) != 2 or not all(isinstance(p, str) and p for p in parts):
        raise FormatError(f"A merge must have exactly two parts separated by one space: {shown(entry)}.", line=line)
    for part in parts:
        check_token(part, line=line)
    try:
        return symbols_to_bytes(parts[0]), symbols_to_bytes(parts[1])
    except KeyError:
        raise FormatError(f"The merge {shown(entry)} has characters outside the byte-level alphabet.", line=line) from None


def rank_tables(ranks: Mapping[tuple[int, int], tuple[int, int]], vocab_size: int) -> tuple[list[dict[int, int]], list[int]]:
    """The hot loops' view of ``{(left, right): (rank, merged)}``: ``(rows, merged_at)``.

    ``rows[left][right]`` is the rank of a pair: a row per left id makes a lookup one list index
    and one int-keyed dict get, with no tuple to build and hash per lookup. Ids that start no
    merge share one empty row, which is never written to. ``merged_at[rank]`` is the merged id.
    """
    empty: dict[int, int] = {}
    rows: list[dict[int, int]] = [empty] * vocab_size
    merged_at = [0] * (max((rank for rank, _ in ranks.values()), default=-1) + 1)  # a repeated merge leaves a gap
    for (left_id, right_id), (rank, merged) in ranks.items():
        if rows[left_id] is empty:
            rows[left_id] = {}
        rows[left_id][right_id] = rank
        merged_at[rank] = merged
    return rows, merged_at


def rank_rows(lefts: Sequence[int], rights: Sequence[int], merged: Sequence[int],
               vocab_size: int) -> tuple[list[dict[int, int]], list[int]]:
    """:func:`rank_tables` from the merges as three id lists in rank order (rank i merges
    ``lefts[i]`` and ``rights[i]`` into ``merged[i]``); a pair listed twice keeps its later rank."""
    empty: dict[int, int] = {}
    rows: list[dict[int, int]] = [empty] * vocab_size
    for rank, left, right in zip(range(len(lefts)), lefts, rights):
        row = rows[left]
        if row is empty:
            row = rows[left] = {}
        row[right] = rank
    return rows, list(merged)


def merge_short(ids: list[int], rows: Sequence[Mapping[int, int]], merged_at: Sequence[int]) -> list[int]:
    """Merge ``ids`` (a short piece's symbols) in place: lowest rank first, leftmost first.

    It keeps one rank per adjacent pair (``_NO_MERGE`` where there is none) and applies the
    lowest rank, its leftmost occurrence, one occurrence at a time (Hugging Face's order). Each
    step finds that rank by sorting a copy of the ranks (``list.sort`` compares ints without
    generic dispatch, faster than ``min`` on these short lists), then looks up only the new
    token's two neighbours. Quadratic in the length, so only for short pieces.
    """
    if len(ids) < 2:
        return ids
    no_merge = _NO_MERGE
    ranks = list(map(dict.get, map(rows.__getitem__, ids), ids[1:], _NO_MERGE_FOREVER))
    last = len(ranks) - 1
    while last:
        order = ranks.copy()
        order.sort()
        if (best := order[0]) == no_merge:
            return ids
        i = ranks.index(best)
        ids[i] = new = merged_at[best]
        del ids[i + 1], ranks[i]
        if i:
            ranks[i - 1] = rows[ids[i - 1]].get(new, no_merge)
        if i < last:
            ranks[i] = rows[new].get(ids[i + 1], no_merge)
        last -= 1
    if (best := ranks[0]) != no_merge:
        return [merged_at[best]]
    return ids
