"""The tokenizer pipeline and its tiktoken-style API.

A :class:`Tokenizer` chains special-token splitting → normalizer → pre-tokenizer → model →
post-processor on the way in, and model bytes → decoder on the way out. The API follows
tiktoken: ``encode`` refuses special tokens that the caller did not allow (naming the token and
the argument that allows it), ``encode_ordinary`` treats them as text, ``decode`` replaces
invalid UTF-8 by default. Pre-tokens are cached (pre-token → ids, the least recently used
evicted first; see ``pretoken_cache.py``), which is what makes encoding fast on real text: most
words repeat. The pre-tokens a call meets for the first time go to the model together
(``tokenize_many`` where the model has it: byte-level BPE merges them in numpy).

Offsets for highlighting are computed in ``encode_span_columns`` (``encode_with_offsets`` gives
them as one tuple per token) with the helpers of ``offsets.py``; file formats and training live
elsewhere. Inside an ``engine.limits.time_budget`` the pre-tokenizer's and the special tokens'
patterns are charged to the budget and stop when it is spent; the model's merging is not charged.

Internal: not part of the engine's API (``engine.PUBLIC_MODULES``).
"""

from __future__ import annotations

import functools
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from itertools import accumulate
from pathlib import Path
from typing import Any

import regex

from engine.ascii_split import fastest_split
from engine.decoders import ByteLevelDecoder, Decoder
from engine.errors import UnknownTokenIdError
from engine.limits import read_bytes
from engine.models.base import Model
from engine.normalizers import Normalizer, normalize_aligned
from engine.offsets import SpanColumns, TokenSpan, char_byte_offsets, token_char_bounds, unknown_lengths
from engine.post_processors import TemplateProcessing
from engine.pretoken_cache import PreTokenCache
from engine.pretokenizers import Piece, PreTokenizer, RegexSplit
from engine.special_tokens import AllowedSpecial, SpecialTokens
from engine.tokenizer_json import dumps, pipeline_from_json

# Pre-token → ids cache size. en_5M has ~70k distinct pre-tokens: at 1 << 16 an LRU thrashed (a second
# pass still missed 48k times, 0.8 s instead of 0.3 s). Worst case ~250 bytes an entry, ~32 MB.
CACHE_SIZE = 1 << 17
# A safe place to cut streamed text: after a newline that sits between two non-space
# characters, the second not "/". None of the supported patterns joins such a newline to what
# follows (o200k's punctuation rule does take "/" after a newline: "{\n//" is one piece), so
# text on either side pre-tokenizes the same as it would in one piece. Searched from the end.
_SAFE_CUT = regex.compile(r"(?r)(?<=\S\n)(?=[^\s/])")


class SurfaceBytes(dict[int, bytes]):
    """Token id → the bytes it stands for in the text, memoised: offsets need them per token."""

    __slots__ = ("_surface",)

    def __init__(self, surface: Callable[[int], bytes]) -> None:
        super().__init__()
        self._surface = surface

    def __missing__(self, token_id: int) -> bytes:
        data = self[token_id] = self._surface(token_id)
        return data


class Tokenizer:
    """A complete tokenizer: a model wrapped in the pipeline stages around it."""

    def __init__(
        self,
        model: Model,
        *,
        normalizer: Normalizer | None = None,
        pre_tokenizer: PreTokenizer | None = None,
        special_tokens: Mapping[str, int] | None = None,
        post_processor: TemplateProcessing | None = None,
        decoder: Decoder | None = None,
        name: str = "",
        added_tokens: Mapping[str, int] | None = None,
        added_token_strip: Mapping[str, tuple[bool, bool]] | None = None,
        normalized_tokens: Collection[str] = (),
        single_word_tokens: Collection[str] = (),
    ) -> None:
        self.model = model
        self.normalizer = normalizer
        self.pre_tokenizer = pre_tokenizer
        # Hugging Face's non-special added tokens are matched like special tokens, but always
        # (see SpecialTokens); ``added_token_strip`` gives (lstrip, rstrip) per token,
        # ``normalized_tokens`` those matched on the normalized text, and ``single_word_tokens``
        # those matched only as a word of their own.
        self.specials = SpecialTokens(special_tokens, added=added_tokens, strip=added_token_strip,
                                      normalized=normalized_tokens, single_word=single_word_tokens)
        # Text after a special token does not start the input: a Metaspace with prepend_scheme
        # "first" gives it no prefix there (``Metaspace.later``).
        later = getattr(pre_tokenizer, "later", None)
        self._later_pre: PreTokenizer | None = later() if later is not None else pre_tokenizer
        # Nor does text whose first characters the normalizer removed (a Strip): Hugging Face
        # prepends only where a piece's original offset is 0, so the first stretch of text
        # then needs the normalizer's alignment to tell.
        self._first_is_aligned = normalizer is not None and self._later_pre is not pre_tokenizer
        self.post_processor = post_processor
        self.decoder: Decoder = decoder or ByteLevelDecoder()
        self.name = name
        self._reset_cache()

    def _reset_cache(self) -> None:
        self._cache = PreTokenCache(
            self.model.tokenize, CACHE_SIZE, tokenize_many=getattr(self.model, "tokenize_many", None)
        )
        self._surfaces = SurfaceBytes(getattr(self.model, "surface_bytes", self.model.token_bytes))

    # Pickling drops the caches, so tokenizers can be sent to worker processes.
    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        del state["_cache"], state["_surfaces"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._reset_cache()

    # ----------------------------------------------------------------- vocabulary
    @property
    def special_tokens(self) -> dict[str, int]:
        return dict(self.specials.ids)

    @property
    def added_tokens(self) -> dict[str, int]:
        """The non-special added tokens (always matched whole; see SpecialTokens)."""
        return dict(self.specials.added)

    @property
    def vocab_size(self) -> int:
        top = max(self.specials.by_id, default=-1) + 1
        return max(self.model.vocab_size, top)

    def id_to_token(self, token_id: int) -> str | None:
        """The vocabulary string of ``token_id`` (special tokens as themselves)."""
        special = self.specials.by_id.get(token_id)
        return special if special is not None else self.model.id_to_token(token_id)

    def token_to_id(self, token: str) -> int | None:
        special = self.specials.ids.get(token, self.specials.added.get(token))
        return special if special is not None else self.model.token_to_id(token)

    def token_bytes(self, token_id: int) -> bytes:
        """The bytes one id decodes to on its own; raises UnknownTokenIdError for unknown ids."""
        special = self.specials.by_id.get(token_id)
        if special is not None:
            return special.encode("utf-8")
        try:
            return self.model.token_bytes(token_id)
        except (KeyError, IndexError):
            raise UnknownTokenIdError(
                f"Token id {token_id} is not in this tokenizer's vocabulary (ids run from 0 to {self.vocab_size - 1})."
            ) from None

    def is_special(self, token_id: int) -> bool:
        token = self.specials.by_id.get(token_id)
        return token is not None and token in self.specials.ids

    # ----------------------------------------------------------------- encoding
    def _pieces(self, text: str, *, later: bool = False) -> list[str]:
        """The pre-tokens of ``text``; ``later``: it follows a special token in the input."""
        text, later = self._normalized(text, later)
        return self._pre_tokens(text, later=later)

    def _normalized(self, text: str, later: bool) -> tuple[str, bool]:
        """``text`` normalized, and whether it no longer starts at the input's start."""
        if self.normalizer is None:
            return text, later
        if later or not self._first_is_aligned:
            return self.normalizer.normalize(text), later
        normalized, align = normalize_aligned(self.normalizer, text)
        return normalized, self._start_removed(normalized, align)

    def _start_removed(self, normalized: str, align: list[int]) -> bool:
        """Whether the normalizer removed the first characters of text that starts the input, so
        that no piece keeps offset 0 (where a Metaspace "first" prepends its space)."""
        return self._first_is_aligned and bool(normalized) and align[0] > 0

    def _pre_tokens(self, text: str, *, later: bool = False) -> list[str]:
        """The pre-tokens of ``text`` already normalized."""
        pre = self._later_pre if later else self.pre_tokenizer
        if pre is None:
            return [text] if text else []
        return fastest_split(pre)(text)

    def _encode_segment(self, text: str, *, later: bool = False, allowed: frozenset[str] = frozenset()) -> list[int]:
        try:
            return self._encode_text(text, later, allowed)
        except UnicodeEncodeError:
            return self._encode_text(replace_surrogates(text), later, allowed)

    def _encode_text(self, text: str, later: bool, allowed: frozenset[str]) -> list[int]:
        """A stretch between tokens matched on the text as typed; then, if some are matched on
        normalized text, those are split out of the normalized stretch (``SpecialTokens``)."""
        if not self.specials.on_normalized:
            return self._cache.encode(self._pieces(text, later=later))
        normalized, later = self._normalized(text, later)
        ids: list[int] = []
        for start, end, token_id in self.specials.split(normalized, allowed, normalized=True):
            if token_id is not None:
                ids.append(token_id)
            else:
                ids.extend(self._cache.encode(self._pre_tokens(normalized[start:end], later=later or start > 0)))
        return ids

    def encode_ordinary(self, text: str) -> list[int]:
        """Encode ``text`` with special tokens treated as plain text (added tokens stay whole)."""
        if not self.specials.added:
            return self._encode_segment(text)
        return self.encode(text, disallowed_special=(), add_special_tokens=False)

    def encode(
        self,
        text: str,
        *,
        allowed_special: AllowedSpecial = frozenset(),
        disallowed_special: AllowedSpecial = "all",
        add_special_tokens: bool = True,
    ) -> list[int]:
        """Encode ``text``; special tokens must be allowed, or disallowed checks raise.

        ``add_special_tokens`` applies the post-processor template (e.g. ``[CLS] $A [SEP]``).
        """
        allowed, disallowed = self.specials.resolve(allowed_special, disallowed_special)
        if disallowed:
            self.specials.check_disallowed(text, disallowed)
        if not allowed and not self.specials.added:
            ids = self._encode_segment(text)
        else:
            ids = []
            for start, end, special_id in self.specials.split(text, allowed):
                if special_id is not None:
                    ids.append(special_id)
                else:
                    ids.extend(self._encode_segment(text[start:end], later=start > 0, allowed=allowed))
        if add_special_tokens and self.post_processor is not None:
            ids = self.post_processor.process(ids)
        return ids

    def encode_with_offsets(
        self,
        text: str,
        *,
        allowed_special: AllowedSpecial = frozenset(),
        disallowed_special: AllowedSpecial = "all",
        add_special_tokens: bool = True,
    ) -> list[TokenSpan]:
        """Encode ``text`` and give each token its byte and character span in ``text``."""
        return self.encode_span_columns(text, allowed_special=allowed_special, disallowed_special=disallowed_special,
                                        add_special_tokens=add_special_tokens).rows()

    def encode_span_columns(
        self,
        text: str,
        *,
        allowed_special: AllowedSpecial = frozenset(),
        disallowed_special: AllowedSpecial = "all",
        add_special_tokens: bool = True,
    ) -> SpanColumns:
        """:meth:`encode_with_offsets` as columns (ids, byte and character starts and ends, special
        flags), without a :class:`TokenSpan` per token; see ``offsets.SpanColumns``."""
        allowed, disallowed = self.specials.resolve(allowed_special, disallowed_special)
        if disallowed:
            self.specials.check_disallowed(text, disallowed)
        try:
            byte_at = char_byte_offsets(text)
        except UnicodeEncodeError:
            text = replace_surrogates(text)
            byte_at = char_byte_offsets(text)
        columns = SpanColumns.empty()
        for start, end, special_id in self.specials.split(text, allowed):
            if special_id is not None:
                columns.append(TokenSpan(special_id, byte_at[start], byte_at[end], start, end,
                                         self.is_special(special_id)))
            else:
                columns.extend(self._segment_columns(text, start, end, byte_at, later=start > 0, allowed=allowed))
        if add_special_tokens and self.post_processor is not None:
            before, after = self.post_processor.added
            end_char, end_byte = len(text), byte_at[-1]
            added = SpanColumns.of(TokenSpan(i, 0, 0, 0, 0, True) for i in before)
            added.extend(columns)
            for token_id in after:
                added.append(TokenSpan(token_id, end_byte, end_byte, end_char, end_char, True))
            columns = added
        return columns

    def _split_with_offsets(self, text: str, *, aligned: bool, later: bool = False) -> list[Piece]:
        """Pre-tokenize ``text`` into pieces with their spans.

        With a plain regex split whose pieces cover the text (the named patterns do), the spans
        are running sums of the piece lengths, so the fast split of ``_pieces`` serves; a regex
        that skips text (whitespace splitting) or a rewriting pre-tokenizer gives its own spans.
        """
        pre = self._later_pre if later else self.pre_tokenizer
        if pre is None:
            return [Piece(text, 0, len(text))]
        if not aligned and type(pre) is RegexSplit:
            texts = self._pieces(text)
            if sum(map(len, texts)) == len(text):  # in order, no overlap, no gap: contiguous
                return [Piece(t, p, p + len(t)) for t, p in zip(texts, accumulate(map(len, texts), initial=0))]
        return pre.split(text)

    def _tiled_columns(self, segment: str, start: int, byte_at: Sequence[int]) -> SpanColumns | None:
        """All spans of a segment at once, or None where this shortcut does not apply.

        When the tokens' surface bytes, joined, are the segment's UTF-8 bytes (byte-level BPE on
        any text; not where a token stands for other text, such as ``[UNK]``), each token's byte
        span is where its bytes lie, a running sum of their lengths, and its character span
        follows from the text's character byte offsets ``byte_at`` (a token that ends inside a
        character gets the whole character, as in ``token_char_bounds``). This replaces a
        Python loop per pre-token with a few C-level passes over the tokens, and the playground
        runs it on every keystroke.
        """
        texts = self._pieces(segment)
        if sum(map(len, texts)) != len(segment):  # the split drops text (whitespace): nothing can tile it
            return None
        ids = self._cache.encode(texts)
        surfaces = list(map(self._surfaces.__getitem__, ids))
        data = segment.encode("utf-8")
        if not all(surfaces) or b"".join(surfaces) != data:
            return None
        bounds = list(accumulate(map(len, surfaces), initial=byte_at[start]))
        byte_starts, byte_ends = bounds[:-1], bounds[1:]
        if len(data) == len(segment):  # ASCII: a character is a byte, so the two spans differ by one shift
            shift = start - byte_at[start]
            if shift:
                char_starts, char_ends = [b + shift for b in byte_starts], [b + shift for b in byte_ends]
            else:
                char_starts, char_ends = byte_starts[:], byte_ends[:]
        else:
            char_starts = [bisect_right(byte_at, b) - 1 for b in byte_starts]
            char_ends = [bisect_left(byte_at, b) for b in byte_ends]
        return SpanColumns(ids, byte_starts, byte_ends, char_starts, char_ends, [False] * len(ids))

    def _segment_columns(
        self, text: str, start: int, end: int, byte_at: Sequence[int], *, later: bool = False,
        allowed: frozenset[str] = frozenset(),
    ) -> SpanColumns:
        """The spans of ``text[start:end]``, a stretch between special tokens matched on the input."""
        if self.normalizer is None and type(self.pre_tokenizer) is RegexSplit and not self.specials.on_normalized:
            columns = self._tiled_columns(text[start:end], start, byte_at)
            if columns is not None:
                return columns
        return SpanColumns.of(self._segment_spans(text, start, end, byte_at, later=later, allowed=allowed))

    def _segment_spans(
        self, text: str, start: int, end: int, byte_at: Sequence[int], *, later: bool = False,
        allowed: frozenset[str] = frozenset(),
    ) -> Iterator[TokenSpan]:
        """The spans of ``text[start:end]`` piece by piece: any normalizer, pre-tokenizer and model."""
        segment = text[start:end]
        if self.normalizer is not None:
            normalized, align = normalize_aligned(self.normalizer, segment)
            later = later or self._start_removed(normalized, align)
        else:
            normalized, align = segment, None
        if not self.specials.on_normalized:
            yield from self._stretch_spans(segment, normalized, align, start, byte_at, later, 0, len(normalized))
            return
        for lo, hi, token_id in self.specials.split(normalized, allowed, normalized=True):
            if token_id is None:
                yield from self._stretch_spans(segment, normalized, align, start, byte_at, later or lo > 0, lo, hi)
                continue
            a, b = (lo, hi) if align is None else (align[lo], align[hi])
            yield TokenSpan(token_id, byte_at[start + a], byte_at[start + b], start + a, start + b,
                            self.is_special(token_id))

    def _stretch_spans(self, segment: str, normalized: str, align: list[int] | None, start: int, byte_at: Sequence[int],
                       later: bool, first: int, last: int) -> Iterator[TokenSpan]:
        """The spans of the tokens of ``normalized[first:last]`` (all of it, but where tokens
        matched on normalized text were split out) in the input, where ``segment`` starts at ``start``."""
        pieces = self._split_with_offsets(normalized[first:last], aligned=align is not None, later=later)
        if first:
            pieces = [Piece(p.text, p.start + first, p.end + first, None if p.offsets is None else
                            tuple(o + first for o in p.offsets)) for p in pieces]
        surface = self._surfaces.__getitem__
        unaligned = align is None
        unk_id = getattr(self.model, "unk_id", None)
        for piece in pieces:
            ids = self._cache.lookup(piece.text)
            lengths = [len(surface(i)) for i in ids]
            if unk_id is not None and unk_id in ids:  # an unknown token's bytes are not the text it covers
                found = unknown_lengths(piece.text, list(map(surface, ids)), [i == unk_id for i in ids])
                lengths = found if found is not None else lengths
            if piece.offsets is None and piece.text.isascii() and sum(lengths) == len(piece.text):
                # The common case, kept cheap: the piece came from as many ASCII input characters
                # (normalized one for one, if at all), so one byte per character inside it.
                lo, hi = (piece.start, piece.end) if unaligned else (align[piece.start], align[piece.end])  # type: ignore[index]
                if unaligned or (hi - lo == len(piece.text) and segment[lo:hi].isascii()):
                    char_pos = start + lo
                    byte_pos = byte_at[char_pos]
                    for token_id, length in zip(ids, lengths):
                        yield TokenSpan(token_id, byte_pos, byte_pos + length, char_pos, char_pos + length)
                        char_pos += length
                        byte_pos += length
                    continue
            bounds = token_char_bounds(piece.text, lengths)
            # Where the piece's text is the input's own text, a token's bytes are the input's and
            # may end inside a character; otherwise (Metaspace's "▁" for " ", a normalizer)
            # byte spans follow from the character spans.
            exact_bytes = unaligned and piece.offsets is None and piece.text == segment[piece.start : piece.end]
            piece_bytes = char_byte_offsets(piece.text) if exact_bytes else None
            position = 0
            for index, token_id in enumerate(ids):
                a, b = bounds[index] if bounds is not None else (0, len(piece.text))
                lo, hi = piece.boundary(a), piece.boundary(b)
                if align is not None:
                    lo, hi = align[lo], align[hi]
                lo, hi = start + lo, start + max(hi, lo)
                if piece_bytes is not None and bounds is not None:
                    base = byte_at[start + piece.start]
                    length = lengths[index]
                    yield TokenSpan(token_id, base + position, base + position + length, lo, hi)
                    position += length
                else:
                    yield TokenSpan(token_id, byte_at[lo], byte_at[hi], lo, hi)

    def encode_iterable(self, chunks: Iterable[str], **kwargs: Any) -> Iterator[int]:
        """Encode a stream of text chunks without holding the whole text.

        Text is cut only at a newline between two non-space characters (see ``_SAFE_CUT``), so
        the ids equal ``encode("".join(chunks))``. A single line longer than the whole stream
        is held until a cut appears. Special tokens that contain a newline may be missed.
        """
        kwargs.setdefault("add_special_tokens", False)
        pending = ""
        for chunk in chunks:
            pending += chunk
            match = _SAFE_CUT.search(pending)
            if match is None:
                continue
            cut = match.start()
            yield from self.encode(pending[:cut], **kwargs)
            pending = pending[cut:]
        if pending:
            yield from self.encode(pending, **kwargs)

    def encode_batch(self, texts: list[str], *, num_workers: int | None = None, **kwargs: Any) -> list[list[int]]:
        """Encode many texts, across processes when there are enough of them to pay off."""
        if num_workers == 1 or len(texts) < 64:
            return [self.encode(text, **kwargs) for text in texts]
        from concurrent.futures import ProcessPoolExecutor  # here: ~12 ms of every import of the engine

        with ProcessPoolExecutor(max_workers=num_workers, initializer=_init_worker, initargs=(self,)) as pool:
            chunk = max(1, len(texts) // ((num_workers or 2) * 4))
            return list(pool.map(functools.partial(_encode_in_worker, **kwargs), texts, chunksize=chunk))

    # ----------------------------------------------------------------- decoding
    def decode_tokens_bytes(self, ids: Iterable[int]) -> list[bytes]:
        """The bytes of each id, as the model holds them (before the decoder joins them)."""
        return [self.token_bytes(i) for i in ids]

    def decode_bytes(self, ids: Iterable[int], *, skip_special_tokens: bool = False) -> bytes:
        """The bytes ``ids`` spell; ``skip_special_tokens`` leaves out the special tokens only, as
        Hugging Face does: the other added tokens (Gemma's runs of spaces, its newline) are text."""
        if skip_special_tokens:
            special = self.specials.special_ids
            ids = [i for i in ids if i not in special]
        return self.decoder.decode(self.decode_tokens_bytes(ids))

    def decode(self, ids: Iterable[int], errors: str = "replace", *, skip_special_tokens: bool = False) -> str:
        """Decode ids to text; invalid UTF-8 is replaced with U+FFFD unless ``errors`` says otherwise."""
        return self.decode_bytes(ids, skip_special_tokens=skip_special_tokens).decode("utf-8", errors=errors)

    # ----------------------------------------------------------------- files
    def to_json(self) -> str:
        """This tokenizer as ``tokenizer.json`` text (deterministic; ``tokenizer_json.py``)."""
        return dumps(self)

    @classmethod
    def from_json(cls, data: str | bytes) -> Tokenizer:
        """Load ``tokenizer.json`` text; malformed input raises FormatError."""
        return cls(**pipeline_from_json(data))

    def save(self, path: str | Path) -> None:
        Path(path).write_text(self.to_json(), encoding="utf-8")

    @classmethod
    def from_file(cls, path: str | Path) -> Tokenizer:
        """Load a ``tokenizer.json``; a file over ``engine.limits.MAX_FILE_BYTES`` is refused unread."""
        return cls.from_json(read_bytes(path))


def replace_surrogates(text: str) -> str:
    """Replace lone surrogates (which UTF-8 cannot encode) with U+FFFD, as tiktoken does."""
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


_worker_tokenizer: Tokenizer | None = None


def _init_worker(tokenizer: Tokenizer) -> None:
    global _worker_tokenizer
    _worker_tokenizer = tokenizer


def _encode_in_worker(text: str, **kwargs: Any) -> list[int]:
    if _worker_tokenizer is None:  # pragma: no cover - the pool initializer always runs first
        raise RuntimeError("worker tokenizer not initialised")
    return _worker_tokenizer.encode(text, **kwargs)
