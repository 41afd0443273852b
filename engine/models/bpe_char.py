"""Character-level BPE as Hugging Face runs it: a vocabulary of strings, not bytes.

Two families use it: classic BPE (Sennrich et al. 2016, our trainer's ``level="char"``), whose
words end in ``</w>`` (``"low"`` is ``l o w</w>``), and sentencepiece-converted files (Llama 2,
Mistral, Gemma 3), whose pieces carry ``▁`` and whose unknown characters fall back to byte
pieces ``<0x00>``…``<0xFF>``. Both are HF's ``BPE`` model on a non-byte-level vocabulary:

1. A pre-token starts as its characters; every one but the first carries
   ``continuing_subword_prefix`` and the last carries ``end_of_word_suffix`` (when set).
2. A character (with those affixes) that is not in the vocabulary becomes, with
   ``byte_fallback``, one ``<0xNN>`` piece per UTF-8 byte of it, affixes included, if all of
   them exist; otherwise the unknown token, a run of them fused into one with ``fuse_unk``.
   Without an ``unk_token`` it is dropped, as HF drops it. (HF adds a pending unknown token
   only when a known character or the end comes, so byte pieces can precede it; so do we.)
3. Merges apply by rank, lowest first, leftmost first, one at a time (``bpe_merge.merge``, the
   byte-level model's loop, O(n log n): Gemma 3's pre-tokenizer leaves a whole text in one
   piece). A merge ``a b`` makes ``a`` + ``b`` without ``b``'s continuing prefix.

With ``ignore_merges`` a pre-token that is itself in the vocabulary is that one token. A byte
piece's ``token_bytes`` is its byte, as a :class:`engine.decoders.FallbackByte` so that the
decoders treat it as HF's treat the piece; ``surface_bytes`` is a token without its affixes, the
text it covers, for offsets. Training is ``trainers/bpe.py`` (``level="char"``). Left out:
dropout above 0 (HF's encode is then random; such files are refused).

Internal: not part of the engine's API (``engine.PUBLIC_MODULES``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cached_property
from itertools import repeat
from operator import itemgetter
from typing import Any

from engine.decoders import FallbackByte, byte_piece_value
from engine.errors import FormatError
from engine.limits import MAX_MERGES, check_count, check_token, shown
from engine.models.base import StringVocabulary, read_string_vocab
from engine.models.bpe import MergeIds, ModelSnapshot, check_dropout, int_array, rank_rows
from engine.models.bpe_merge import merge

END_OF_WORD = "</w>"
BYTE_PIECES = tuple(f"<0x{b:02X}>" for b in range(256))


class CharBPE(StringVocabulary):
    """Character-level BPE: ``vocab`` maps token strings to ids, ``merges`` are pairs in rank order."""

    kind = "bpe"
    level = "char"  # models/bpe.py is the "byte" one
    snapshot_level = "char"  # engine/snapshot.py's name for the class that reads the snapshot back

    def __init__(
        self,
        vocab: Mapping[str, int],
        merges: Sequence[tuple[str, str]] | MergeIds,
        *,
        unk_token: str | None,
        end_of_word_suffix: str | None = END_OF_WORD,
        continuing_subword_prefix: str | None = None,
        fuse_unk: bool = True,
        byte_fallback: bool = False,
        ignore_merges: bool = False,
        hf_options: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(vocab, unk_token=unk_token)
        if unk_token is not None and self.unk_id is None:
            raise FormatError(f"The unknown token {shown(unk_token)} is not in the character-level BPE vocabulary.")
        check_count(len(merges[0] if isinstance(merges, MergeIds) else merges), MAX_MERGES, "merges",
                    name="MAX_MERGES")
        self.suffix = end_of_word_suffix or ""
        self.prefix = continuing_subword_prefix or ""
        self.fuse_unk, self.byte_fallback, self.ignore_merges = fuse_unk, byte_fallback, ignore_merges
        # Fields kept only to be written back as read (dropout null or 0, "" affixes).
        self.hf_options: dict[str, Any] = dict(hf_options or {})
        # byte -> the id of its piece, when byte_fallback can spell every byte (else None per byte)
        self._byte_ids = [self._ids.get(piece) for piece in BYTE_PIECES]
        # The merges as ids, each list built by one C-level map (Gemma 3 has 514,906 merges). Only
        # the ids are kept: ``merges`` is spelt from them on demand (as strings they held ~100 MB).
        if not isinstance(merges, MergeIds):
            merges = self._merge_ids(merges)
        self._lefts, self._rights = int_array(merges.lefts), int_array(merges.rights)
        self._rows, self._merged_at = rank_rows(merges.lefts, merges.rights, merges.merged, self.vocab_size)
        self._surface: dict[int, bytes] = {}

    def _merge_ids(self, merges: Sequence[tuple[str, str]]) -> MergeIds:
        """The merges as ids; FormatError naming the first merge that uses a token not in the vocabulary."""
        get, cut = self._ids.get, len(self.prefix.encode("utf-8"))
        firsts, seconds = list(map(itemgetter(0), merges)), list(map(itemgetter(1), merges))
        lefts, rights = list(map(get, firsts)), list(map(get, seconds))
        tails = seconds if not cut else [_without_prefix(b, cut, rank) for rank, b in enumerate(seconds)]
        merged = list(map(get, map(str.__add__, firsts, tails)))
        if None in lefts or None in rights or None in merged:
            rank = min(ids.index(None) for ids in (lefts, rights, merged) if None in ids)
            left, right = merges[rank]
            absent = left if lefts[rank] is None else right if rights[rank] is None else left + tails[rank]
            raise FormatError(f"Merge {rank + 1} ({left} {right}) uses {absent!r}, which is not in the vocabulary "
                              f"(model.merges[{rank}]).", line=rank + 1)
        return MergeIds(lefts, rights, merged)  # type: ignore[arg-type]

    def snapshot(self) -> ModelSnapshot:
        """The model as ids and UTF-8 spellings (``engine/snapshot.py``), :meth:`from_snapshot`'s input."""
        options = {"unk_token": self.unk_token, "end_of_word_suffix": self.suffix or None,
                   "continuing_subword_prefix": self.prefix or None, "fuse_unk": self.fuse_unk,
                   "byte_fallback": self.byte_fallback, "ignore_merges": self.ignore_merges,
                   "hf_options": self.hf_options}
        return ModelSnapshot(self.snapshot_level, options, list(self._ids.values()),
                             [token.encode("utf-8") for token in self._ids],
                             MergeIds(self._lefts.tolist(), self._rights.tolist(), list(self._merged_at)))

    @classmethod
    def from_snapshot(cls, state: ModelSnapshot) -> CharBPE:
        tokens = b"\0".join(state.spellings).decode("utf-8").split("\0")  # one decode, not 262k
        if len(tokens) != len(state.ids):  # a token with a NUL in it
            tokens = [spelling.decode("utf-8") for spelling in state.spellings]
        return cls(dict(zip(tokens, state.ids)), state.merges, **state.options)

    @property
    def merges(self) -> list[tuple[str, str]]:
        """The merges as string pairs in rank order (built on each call, from the ids)."""
        tokens = self._tokens
        return [(tokens[left], tokens[right]) for left, right in zip(self._lefts, self._rights)]

    @cached_property
    def origins(self) -> dict[int, tuple[int, int, int]]:
        """merged id -> (rank, left id, right id): the inspector's "why does this token exist"."""
        rows = self._rows
        return {self._merged_at[rank]: (rank, left, right)
                for left, row in enumerate(rows) for right, rank in row.items()}

    def symbols(self, piece: str) -> list[int]:
        """The ids a pre-token starts as (steps 1 and 2 of the module docstring: HF's ``merge_word``)."""
        ids: list[int] = []
        get, prefix, suffix = self._ids.get, self.prefix, self.suffix
        unk_id, pending = self.unk_id, False  # pending: an unknown token not yet added
        last = len(piece) - 1
        plain = not prefix and not suffix
        for index, char in enumerate(piece):
            if not plain:
                char = (prefix + char if index else char) + (suffix if index == last else "")
            symbol = char
            found = get(symbol)
            if found is not None:
                if pending:
                    ids.append(unk_id)  # type: ignore[arg-type]
                    pending = False
                ids.append(found)
                continue
            if self.byte_fallback:
                pieces = [self._byte_ids[b] for b in symbol.encode("utf-8")]
                if None not in pieces:
                    ids += pieces  # type: ignore[arg-type]  # before a pending unknown token, as in HF
                    continue
            if unk_id is None:
                continue  # HF drops a character it cannot spell when there is no unknown token
            if pending and not self.fuse_unk:
                ids.append(unk_id)
            pending = True
        if pending:
            ids.append(unk_id)  # type: ignore[arg-type]
        return ids

    def tokenize(self, piece: str) -> list[int]:
        if self.ignore_merges and piece and (found := self._ids.get(piece)) is not None:
            return [found]
        return merge(self.symbols(piece), self._rows, self._merged_at)

    def token_bytes(self, token_id: int) -> bytes:
        """The token as decoders see it: a byte piece ``<0xNN>`` is its byte, marked as a byte piece."""
        token = self._tokens[token_id]
        value = byte_piece_value(token)
        return FallbackByte(value, token) if value is not None else token.encode("utf-8")

    def surface_bytes(self, token_id: int) -> bytes:
        """The text a token covers: itself without its affixes; a byte piece, its byte."""
        cached = self._surface.get(token_id)
        if cached is None:
            token = self._tokens[token_id]
            value = byte_piece_value(token) if self.byte_fallback else None
            if value is not None and self._byte_ids[value] == token_id:
                cached = bytes([value])
            else:
                cached = self._bare(token_id).encode("utf-8")
            self._surface[token_id] = cached
        return cached

    def _bare(self, token_id: int) -> str:
        """The token without its continuing prefix and end-of-word suffix (the unknown token as it is)."""
        token = self._tokens[token_id]
        if token_id == self.unk_id:
            return token
        if self.prefix and token.startswith(self.prefix):
            token = token[len(self.prefix):]
        return token.removesuffix(self.suffix) if self.suffix else token

    def to_hf(self) -> dict[str, Any]:
        model = self.hf_fields()
        model["vocab"] = self._sorted_vocab()
        model["merges"] = [[left, right] for left, right in self.merges]
        return model

    def hf_fields(self) -> dict[str, Any]:
        """The HF ``model`` object without its vocabulary and merges (a snapshot's header)."""
        model: dict[str, Any] = {
            "type": "BPE",
            "dropout": None,
            "unk_token": self.unk_token,
            "continuing_subword_prefix": self.prefix or None,
            "end_of_word_suffix": self.suffix or None,
            "fuse_unk": self.fuse_unk,
            "byte_fallback": self.byte_fallback,
            "ignore_merges": self.ignore_merges,
        }
        model.update(self.hf_options)
        return model

    @classmethod
    def from_hf(cls, data: Mapping[str, Any], *, special_tokens: Mapping[str, int]) -> CharBPE:
        """Read an HF ``BPE`` model whose vocabulary is not byte-level; FormatError names the field."""
        for name in ("fuse_unk", "byte_fallback", "ignore_merges"):
            if name in data and not isinstance(data[name], bool):
                raise FormatError(f"The BPE model's {name} (model.{name}) must be true or false, "
                                  f"not {shown(data[name])}.")
        check_dropout(data.get("dropout"))
        texts: dict[str, str | None] = {}
        for name in ("unk_token", "continuing_subword_prefix", "end_of_word_suffix"):
            value = data.get(name)
            if value is not None and not isinstance(value, str):
                raise FormatError(f"The BPE model's {name} (model.{name}) must be a string or null, "
                                  f"not {shown(value)}.")
            if value:
                check_token(value)
            texts[name] = value
        unk = texts["unk_token"]
        vocab = read_string_vocab(data, "BPE")
        if unk is not None and unk not in vocab:
            if unk not in special_tokens:
                raise FormatError(f"The BPE model's unk_token (model.unk_token) {shown(unk)} is not in its vocabulary.")
            vocab[unk] = special_tokens[unk]
        raw_merges = data.get("merges") or []
        if not isinstance(raw_merges, list):
            raise FormatError(f"The BPE merges (model.merges) must be a list, not {type(raw_merges).__name__}.")
        check_count(len(raw_merges), MAX_MERGES, "merges", name="MAX_MERGES")
        merges = _parse_pairs(raw_merges)
        kept = {name: data[name] for name in ("dropout", "continuing_subword_prefix", "end_of_word_suffix")
                if name in data}
        return cls(vocab, merges, unk_token=unk, end_of_word_suffix=texts["end_of_word_suffix"],
                   continuing_subword_prefix=texts["continuing_subword_prefix"],
                   fuse_unk=bool(data.get("fuse_unk", False)), byte_fallback=bool(data.get("byte_fallback", False)),
                   ignore_merges=bool(data.get("ignore_merges", False)), hf_options=kept)


def _without_prefix(right: str, cut: int, rank: int) -> str:
    """``right`` without its first ``cut`` bytes (HF slices the continuing prefix's length off
    the right part of a merge, whatever it starts with)."""
    if not cut:
        return right
    try:
        return right.encode("utf-8")[cut:].decode("utf-8")
    except UnicodeDecodeError:
        raise FormatError(f"Merge {rank + 1} (model.merges[{rank}]): its right part {right!r} cannot lose the "
                          "continuing_subword_prefix's length without cutting a character.", line=rank + 1) from None


def _parse_pairs(raw: list[Any]) -> list[tuple[str, str]]:
    """The merges, given as ``"a b"`` or ``["a", "b"]``; FormatError names ``model.merges[i]``.

    Parts are not length-checked here: each must be in the vocabulary, whose tokens are."""
    kinds = set(map(type, raw))
    pairs = (raw if kinds == {list} else list(map(str.split, raw, repeat(" "))) if kinds == {str}
             else [entry.split(" ") if type(entry) is str else entry if type(entry) is list else () for entry in raw])
    # Checked column by column (514,906 merges in ~0.1 s); pair by pair only to name a bad one.
    if not pairs or set(map(len, pairs)) == {2}:
        firsts, seconds = list(map(itemgetter(0), pairs)), list(map(itemgetter(1), pairs))
        if (set(map(type, firsts)) | set(map(type, seconds))) <= {str} and "" not in firsts and "" not in seconds:
            return pairs  # type: ignore[return-value]  # lists of two strings, read as pairs
    index = next(i for i, pair in enumerate(pairs)
                 if not (len(pair) == 2 and all(isinstance(p, str) and p for p in pair)))
    raise FormatError(f"A merge must have exactly two parts separated by one space: {shown(raw[index])} "
                      f"(model.merges[{index}]).", line=index + 1)
