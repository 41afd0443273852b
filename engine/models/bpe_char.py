"""Classic character-level BPE (Sennrich et al. 2016): characters, not bytes, and ``</w>`` at word ends.

A pre-token starts as its characters, the last one carrying the end-of-word suffix (``"low"``
is ``l o w</w>``), and the learned merges are applied exactly as in byte-level BPE: the lowest
rank first, its leftmost occurrence first, one at a time (``bpe.merge_short`` and
``bpe_long.merge_long_ids``, shared with :class:`engine.models.bpe.BPE`). So a token is a
string, and the suffix tells a word's last token from the same letters inside a word.

Unknown characters: a character (or a final character with its suffix) that is not in the
vocabulary becomes the unknown token, and a run of them becomes *one* unknown token
(Hugging Face's ``fuse_unk``), as in sentencepiece. The unknown token never takes part in a
merge. This is the HF ``BPE`` model with ``end_of_word_suffix`` and ``fuse_unk`` set, so the
exported ``tokenizer.json`` gives the same ids in Hugging Face ``tokenizers``.

Decoding is :class:`engine.decoders.BPESuffixDecoder`'s (the suffix becomes a space).
``surface_bytes`` is a token without its suffix, the text it covers, for offsets. Training is
``trainers/bpe.py`` (``level="char"``). Left out: dropout and ``continuing_subword_prefix``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from engine.errors import FormatError
from engine.limits import MAX_MERGES, check_count, check_token, shown
from engine.models.base import StringVocabulary, read_string_vocab
from engine.models.bpe import LONG_PIECE_BYTES, merge_short, rank_tables
from engine.models.bpe_long import merge_long_ids

END_OF_WORD = "</w>"


class CharBPE(StringVocabulary):
    """Character-level BPE: ``vocab`` maps token strings to ids, ``merges`` are pairs in rank order."""

    kind = "bpe"
    level = "char"  # models/bpe.py is the "byte" one

    def __init__(
        self,
        vocab: Mapping[str, int],
        merges: Sequence[tuple[str, str]],
        *,
        unk_token: str,
        end_of_word_suffix: str = END_OF_WORD,
    ) -> None:
        super().__init__(vocab, unk_token=unk_token)
        if self.unk_id is None:
            raise FormatError(f"The unknown token {shown(unk_token)} is not in the character-level BPE vocabulary.")
        if not end_of_word_suffix:
            raise FormatError("Character-level BPE needs a non-empty end_of_word_suffix, such as '</w>'.")
        check_count(len(merges), MAX_MERGES, "merges", name="MAX_MERGES")
        self.suffix = end_of_word_suffix
        self.merges: list[tuple[str, str]] = list(merges)
        ranks: dict[tuple[int, int], tuple[int, int]] = {}
        for rank, (left, right) in enumerate(self.merges):
            ids = [self._ids.get(left), self._ids.get(right), self._ids.get(left + right)]
            if None in ids:
                absent = (left, right, left + right)[ids.index(None)]
                raise FormatError(f"Merge {rank + 1} ({left} {right}) uses {absent!r}, which is not in the vocabulary.",
                                  line=rank + 1)
            ranks[ids[0], ids[1]] = (rank, ids[2])  # type: ignore[index]  # listed twice: the later rank, as in HF
        self._rows, self._merged_at = rank_tables(ranks, self.vocab_size)
        # merged id -> (rank, left id, right id): the inspector's "why does this token exist".
        self.origins: dict[int, tuple[int, int, int]] = {
            merged: (rank, pair[0], pair[1]) for pair, (rank, merged) in ranks.items()
        }

    def symbols(self, piece: str) -> list[int]:
        """The ids a pre-token starts as: one per character, the last with the suffix; a run of
        unknown characters is one unknown token."""
        ids: list[int] = []
        get, unk = self._ids.get, self.unk_id
        last = len(piece) - 1
        for index, char in enumerate(piece):
            found = get(char + self.suffix if index == last else char)
            if found is None:
                if ids and ids[-1] == unk:
                    continue
                found = unk
            ids.append(found)  # type: ignore[arg-type]
        return ids

    def tokenize(self, piece: str) -> list[int]:
        ids = self.symbols(piece)
        if len(ids) > LONG_PIECE_BYTES:
            return merge_long_ids(ids, self._rows, self._merged_at)
        return merge_short(ids, self._rows, self._merged_at)

    def surface_bytes(self, token_id: int) -> bytes:
        """The text a token covers: itself without the end-of-word suffix."""
        token = self._tokens[token_id]
        return token.removesuffix(self.suffix).encode("utf-8") if token_id != self.unk_id else token.encode("utf-8")

    def to_hf(self) -> dict[str, Any]:
        return {
            "type": "BPE",
            "dropout": None,
            "unk_token": self.unk_token,
            "continuing_subword_prefix": None,
            "end_of_word_suffix": self.suffix,
            "fuse_unk": True,
            "byte_fallback": False,
            "ignore_merges": False,
            "vocab": self._sorted_vocab(),
            "merges": [[left, right] for left, right in self.merges],
        }

    @classmethod
    def from_hf(cls, data: Mapping[str, Any], *, special_tokens: Mapping[str, int]) -> CharBPE:
        """Read an HF ``BPE`` model with an ``end_of_word_suffix`` (and ``fuse_unk``, as we encode)."""
        suffix, unk = data.get("end_of_word_suffix"), data.get("unk_token")
        for name, value in (("end_of_word_suffix", suffix), ("unk_token", unk)):
            if not isinstance(value, str) or not value:
                raise FormatError(f"A character-level BPE model needs a string {name}, not {shown(value)}.")
            check_token(value)
        if not data.get("fuse_unk"):
            raise FormatError("Character-level BPE is supported with fuse_unk true only (a run of unknown "
                              "characters is one unknown token).")
        for name in ("continuing_subword_prefix", "dropout"):
            if data.get(name):
                raise FormatError(f"Character-level BPE with a {name} is not supported.")
        if data.get("byte_fallback"):
            raise FormatError("Character-level BPE with byte_fallback is not supported.")
        vocab = read_string_vocab(data, "BPE")
        if unk not in vocab and unk in special_tokens:
            vocab[unk] = special_tokens[unk]
        raw_merges = data.get("merges") or []
        if not isinstance(raw_merges, list):
            raise FormatError(f"The BPE merges must be a list, not {type(raw_merges).__name__}.")
        check_count(len(raw_merges), MAX_MERGES, "merges", name="MAX_MERGES")
        merges = [_parse_pair(entry, index + 1) for index, entry in enumerate(raw_merges)]
        return cls(vocab, merges, unk_token=unk, end_of_word_suffix=suffix)  # type: ignore[arg-type]


def _parse_pair(entry: object, line: int) -> tuple[str, str]:
    """One merge given as ``"a b"`` or ``["a", "b"]``."""
    parts = entry.split(" ") if isinstance(entry, str) else list(entry) if isinstance(entry, list | tuple) else None
    if parts is None or len(parts) != 2 or not all(isinstance(p, str) and p for p in parts):
        raise FormatError(f"A merge must have exactly two parts separated by one space: {shown(entry)}.", line=line)
    for part in parts:
        check_token(part, line=line)
    return parts[0], parts[1]
