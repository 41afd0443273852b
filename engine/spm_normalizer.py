"""sentencepiece's normalizer, exactly: the precompiled charsmap and its whitespace rules.

A ``.model`` carries its normalization as a ``precompiled_charsmap``: a little-endian uint32
trie size, a Darts-clone double-array trie over UTF-8 byte strings, then NUL-terminated
replacement strings. At each position the longest byte prefix the trie holds (among its first
``MAX_TRIE_RESULTS`` matches, as ``normalizer.cc``) is replaced; where none matches, one UTF-8
character is kept (a malformed byte becomes U+FFFD). Around that, :class:`SpmNormalizer` applies
``remove_extra_whitespaces`` (leading, trailing and repeated spaces), the dummy prefix ``▁``
(a suffix with ``treat_whitespace_as_suffix``) and ``escape_whitespaces`` (space → ``▁``), and
leaves USER_DEFINED pieces untouched, as sentencepiece's prefix matcher does. The output equals
``SentencePieceProcessor.normalize``; ``normalize_aligned`` also gives, per output character
boundary, the input character it came from (``norm_to_orig``, in characters).

:class:`Precompiled` is the charsmap alone: Hugging Face's ``Precompiled`` normalizer type, as
Hugging Face applies it, which differs on some strings (it maps grapheme by grapheme:
``Ⓩ\\u0307`` is ``Ż`` in sentencepiece, ``Z`` in HF). A ``.model`` is normalized the
sentencepiece way, a ``tokenizer.json`` the Hugging Face way. Left out: the denormalizer.

Internal: not part of the engine's API (``engine.PUBLIC_MODULES``).
"""

from __future__ import annotations

import base64
import binascii
import struct
from bisect import bisect_right
from collections.abc import Iterable, Mapping
from typing import Any

import regex

from engine.errors import FormatError

MAX_TRIE_RESULTS = 32  # Normalizer::kMaxTrieResultsSize: only the first 32 prefixes count
SPACE = "▁"
_SPACE = SPACE.encode("utf-8")
_REPLACEMENT = "\ufffd".encode("utf-8")
_GRAPHEME = regex.compile(r"\X", regex.DOTALL)


class CharsMap:
    """A parsed ``precompiled_charsmap``: longest-prefix lookups of UTF-8 bytes."""

    def __init__(self, blob: bytes) -> None:
        if len(blob) <= 4:
            raise FormatError("The precompiled_charsmap is shorter than its 4-byte trie size.")
        (size,) = struct.unpack_from("<I", blob)
        if size >= len(blob) or size % 4:
            raise FormatError(f"The precompiled_charsmap's trie size {size:,} does not fit its {len(blob):,} bytes.")
        self.blob = blob
        self._units = struct.unpack_from(f"<{size // 4}I", blob, 4)
        self._strings = blob[4 + size:]
        self._cache: dict[int, bytes] = {}

    def longest(self, data: bytes, pos: int) -> tuple[int, bytes]:
        """(length, replacement) of the longest rule matching ``data[pos:]``; length 0 if none
        (sentencepiece's rule: the longest of the first ``MAX_TRIE_RESULTS`` prefixes)."""
        found = self._prefixes(data, pos, MAX_TRIE_RESULTS)
        if not found:
            return 0, b""
        length, value = found[-1]
        return length, self._string(value)

    def alone_before_ascii(self, byte: int) -> bool:
        """Whether the ASCII ``byte`` followed by ASCII (or nothing) is left as it is: no rule is
        the byte itself, and none starts with it and an ASCII byte (letters start rules for the
        accented letters they compose with, but only before a combining mark)."""
        return not self._prefixes(bytes([byte]), 0, 1) and not any(self._path(bytes([byte, after]))
                                                                   for after in range(0x80))

    def _path(self, key: bytes) -> bool:
        """Whether the trie has the path ``key`` from its root (a rule may continue it)."""
        units = self._units
        count = len(units)
        if not count:
            return False
        node = _offset(units[0])
        for byte in key:
            node ^= byte
            if node >= count or units[node] & 0x800000FF != byte:
                return False
            node ^= _offset(units[node])
        return True

    def shortest(self, chunk: bytes) -> bytes | None:
        """The replacement of the shortest rule that is a prefix of ``chunk`` (up to a NUL), or
        None: Hugging Face's ``transform``, which puts it in place of the whole chunk."""
        found = self._prefixes(chunk[:chunk.find(b"\0")] if b"\0" in chunk else chunk, 0, 1)
        return self._string(found[0][1]) if found else None

    def _prefixes(self, data: bytes, pos: int, limit: int) -> list[tuple[int, int]]:
        """(length, replacement offset) of the first ``limit`` rules that are prefixes of
        ``data[pos:]``, shortest first."""
        units = self._units
        count = len(units)
        found: list[tuple[int, int]] = []
        if not count:
            return found
        node = _offset(units[0])
        for i in range(pos, len(data)):
            byte = data[i]
            node ^= byte
            if node >= count:
                break
            unit = units[node]
            if unit & 0x800000FF != byte:  # the label must be this byte
                break
            node ^= _offset(unit)
            if unit >> 8 & 1:  # a leaf below: a rule ends here
                if node >= count:
                    break
                found.append((i + 1 - pos, units[node] & 0x7FFFFFFF))
                if len(found) == limit:
                    break
        return found

    def _string(self, value: int) -> bytes:
        cached = self._cache.get(value)
        if cached is None:
            end = self._strings.find(b"\0", value)
            if value >= len(self._strings) or end < 0:
                raise FormatError(f"The precompiled_charsmap's rule at {value:,} has no NUL-terminated replacement.")
            cached = self._cache[value] = self._strings[value:end]
        return cached


def _offset(unit: int) -> int:
    return (unit >> 10) << ((unit & (1 << 9)) >> 6)


def _valid_utf8(text: str) -> bool:
    """Whether ``text`` is valid UTF-8 when encoded (no lone surrogate, which normalizes to U+FFFD)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _char_len(data: bytes, pos: int) -> int:
    """The byte length of the valid UTF-8 character at ``pos``, or 0 if it is malformed."""
    for size in (1, 2, 3, 4):
        try:
            data[pos:pos + size].decode("utf-8")
            return size
        except UnicodeDecodeError:
            continue
    return 0


class SpmNormalizer:
    """sentencepiece's whole normalization (``NormalizerSpec`` plus the trainer's whitespace flag)."""

    def __init__(self, charsmap: bytes = b"", *, add_dummy_prefix: bool = True, remove_extra_whitespaces: bool = True,
                 escape_whitespaces: bool = True, treat_whitespace_as_suffix: bool = False,
                 user_defined: Iterable[str] = (), name: str = "") -> None:
        self.charsmap = CharsMap(charsmap) if charsmap else None
        self.add_dummy_prefix = add_dummy_prefix
        self.remove_extra_whitespaces = remove_extra_whitespaces
        self.escape_whitespaces = escape_whitespaces
        self.treat_whitespace_as_suffix = treat_whitespace_as_suffix
        self.user_defined = frozenset(p.encode("utf-8") for p in user_defined if p)
        self._user_lengths = sorted({len(p) for p in self.user_defined}, reverse=True)
        self.name = f"spm:{name}" if name else "spm"
        # ASCII bytes that are a unit of their own, as they are, before ASCII: no rule and no
        # user-defined piece starts there, and not a space. A run of them is copied whole
        # (English text through nmt_nfkc: ~10 times faster than a trie walk per byte).
        plain = bytes(b for b in range(0x21, 0x80)
                      if (self.charsmap is None or self.charsmap.alone_before_ascii(b))
                      and not any(p[0] == b for p in self.user_defined))
        # The run's last byte must be followed by ASCII or the end: before a combining mark a
        # letter may start a rule.
        self._plain_run = regex.compile(b"(?:[" + b"".join(b"\\x%02x" % b for b in plain)
                                        + b"](?![\\x80-\\xff]))+") if plain else None
        # Identity with nothing removed (our trained Unigram's and spm BPE's, Llama 2's): every
        # character stays itself but the spaces, so the text needs no walk byte by byte (a trained
        # Unigram's 2 KB encode: 0.26 against 1.0 ms).
        self._only_spaces = (self.charsmap is None and not self.user_defined and not remove_extra_whitespaces
                             and not treat_whitespace_as_suffix)

    def _prefix(self, data: bytes, pos: int) -> tuple[bytes, int]:
        """``NormalizePrefix``: the normalized bytes of the next unit and how many input bytes it takes."""
        for size in self._user_lengths:  # USER_DEFINED pieces pass through whole
            if data[pos:pos + size] in self.user_defined:
                return data[pos:pos + size], size
        if self.charsmap is not None:
            length, replacement = self.charsmap.longest(data, pos)
            if length:
                return replacement, length
        size = _char_len(data, pos)
        return (data[pos:pos + size], size) if size else (_REPLACEMENT, 1)

    def normalize_bytes(self, data: bytes) -> tuple[bytes, list[int]]:
        """The normalized bytes and, per output byte plus one, the input byte it came from."""
        out = bytearray()
        orig: list[int] = []
        pos, end = 0, len(data)
        if self.remove_extra_whitespaces:
            while pos < end:
                piece, size = self._prefix(data, pos)
                if piece != b" ":
                    break
                pos += size
        if pos == end:
            return b"", [pos]
        space = _SPACE if self.escape_whitespaces else b" "
        if self.add_dummy_prefix and not self.treat_whitespace_as_suffix:
            out += space
            orig += [pos] * len(space)
        prev_space = self.remove_extra_whitespaces
        plain = self._plain_run
        while pos < end:
            if plain is not None and (run := plain.match(data, pos)) is not None:
                out += run.group()
                orig += range(pos, run.end())
                pos, prev_space = run.end(), False
                continue
            piece, size = self._prefix(data, pos)
            if prev_space:
                piece = piece.lstrip(b" ")
            if piece:
                escaped = piece.replace(b" ", space) if self.escape_whitespaces else piece
                out += escaped
                orig += [pos] * len(escaped)
                prev_space = piece.endswith(b" ")
            pos += size
            if not self.remove_extra_whitespaces:
                prev_space = False
        consumed = pos
        if self.remove_extra_whitespaces:
            while out.endswith(space):
                consumed = orig[len(out) - len(space)]
                del out[len(out) - len(space):], orig[len(orig) - len(space):]
        if self.add_dummy_prefix and self.treat_whitespace_as_suffix:
            out += space
            orig += [consumed] * len(space)
        orig.append(consumed)
        return bytes(out), orig

    def normalize(self, text: str) -> str:
        if self._only_spaces and text and _valid_utf8(text):
            return self._spaces_only(text)
        return self.normalize_bytes(text.encode("utf-8", "surrogatepass"))[0].decode("utf-8", "replace")

    def _spaces_only(self, text: str) -> str:
        """:meth:`normalize` where only the spaces and the dummy change (``_only_spaces``)."""
        space = SPACE if self.escape_whitespaces else " "
        body = text.replace(" ", space) if self.escape_whitespaces else text
        return space + body if self.add_dummy_prefix else body

    def aligned(self, text: str) -> tuple[str, list[int]]:
        """The name ``engine.normalizers.normalize_aligned`` looks for."""
        return self.normalize_aligned(text)

    def normalize_aligned(self, text: str) -> tuple[str, list[int]]:
        """The normalized text and ``len(out) + 1`` input character positions, one per output boundary."""
        if self._only_spaces and text and _valid_utf8(text):  # one character for one, the dummy at 0
            return self._spaces_only(text), [0] * self.add_dummy_prefix + list(range(len(text) + 1))
        data = text.encode("utf-8", "surrogatepass")
        out, orig = self.normalize_bytes(data)
        starts = [0]  # input byte offset of each input character
        for char in text:
            starts.append(starts[-1] + len(char.encode("utf-8", "surrogatepass")))
        normalized = out.decode("utf-8", "replace")
        positions: list[int] = []
        at = 0
        for char in normalized:
            positions.append(bisect_right(starts, orig[at]) - 1)
            at += len(char.encode("utf-8"))
        positions.append(bisect_right(starts, orig[-1]) - 1)
        return normalized, positions

    def to_hf(self) -> dict[str, Any]:
        """The HF normalizer chain: Precompiled, then the whitespace rules as Replace/Prepend steps."""
        steps: list[dict[str, Any]] = []
        if self.charsmap is not None:
            steps.append(Precompiled(self.charsmap.blob).to_hf())
        if self.remove_extra_whitespaces:
            # The text's ends, not each line's: ^ and $ hold at every line in Onig (engine/onig.py).
            steps.append({"type": "Replace", "pattern": {"Regex": "\\A +| +\\z"}, "content": ""})
            steps.append({"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "})
        if self.escape_whitespaces:
            steps.append({"type": "Replace", "pattern": {"String": " "}, "content": SPACE})
        if self.add_dummy_prefix:
            dummy = SPACE if self.escape_whitespaces else " "
            # Hugging Face has no Append: a Replace of the empty match at the very end (Onig's
            # \z, which no empty text has) appends the suffix of treat_whitespace_as_suffix.
            steps.append({"type": "Replace", "pattern": {"Regex": "\\z"}, "content": dummy}
                         if self.treat_whitespace_as_suffix else {"type": "Prepend", "prepend": dummy})
        return {"type": "Sequence", "normalizers": steps}


class Precompiled:
    """The charsmap alone, as Hugging Face's ``Precompiled`` normalizer applies it (a tokenizer.json's).

    Hugging Face reads the text grapheme by grapheme (``normalizers/precompiled.rs``): a grapheme
    shorter than 6 bytes whose start some rule matches is replaced whole by the *shortest* such
    rule's output; any other grapheme character by character, each replaced by the shortest rule
    it starts, or kept. So ``Ⓩ\\u0307`` becomes ``Z`` (sentencepiece: ``Ż``) and ``"\\r\\n"`` one
    space (sentencepiece: two); a ``.model`` keeps sentencepiece's way (:class:`SpmNormalizer`).
    Graphemes are ``regex``'s ``\\X``. Each distinct grapheme's output is memoised (bounded).
    """

    name = "precompiled"
    MEMO_ENTRIES = 1 << 16

    def __init__(self, charsmap: bytes) -> None:
        self.charsmap = CharsMap(charsmap) if charsmap else None
        self._memo: dict[str, str] = {}

    def _grapheme(self, grapheme: str) -> str:
        charsmap = self.charsmap
        if charsmap is None:
            return grapheme
        data = grapheme.encode("utf-8", "surrogatepass")
        whole = charsmap.shortest(data) if len(data) < 6 else None
        if whole is not None:
            return whole.decode("utf-8", "replace")
        out = []
        for char in grapheme:
            found = charsmap.shortest(char.encode("utf-8", "surrogatepass"))
            out.append(char if found is None else found.decode("utf-8", "replace"))
        return "".join(out)

    def _normalized(self, grapheme: str) -> str:
        found = self._memo.get(grapheme)
        if found is None:
            found = self._grapheme(grapheme)
            if len(self._memo) < self.MEMO_ENTRIES and len(grapheme) < 8:
                self._memo[grapheme] = found
        return found

    def normalize(self, text: str) -> str:
        return "".join(map(self._normalized, _GRAPHEME.findall(text)))

    def aligned(self, text: str) -> tuple[str, list[int]]:
        """The name ``engine.normalizers.normalize_aligned`` looks for."""
        return self.normalize_aligned(text)

    def normalize_aligned(self, text: str) -> tuple[str, list[int]]:
        """The text and, per output boundary, the input character it came from: a replaced
        grapheme's output all points at the grapheme's start."""
        out: list[str] = []
        positions: list[int] = []
        for match in _GRAPHEME.finditer(text):
            grapheme, start = match.group(), match.start()
            whole = self._normalized(grapheme)
            if whole == grapheme:
                positions.extend(range(start, start + len(grapheme)))
            else:
                positions.extend([start] * len(whole))
            out.append(whole)
        positions.append(len(text))
        return "".join(out), positions

    def to_hf(self) -> dict[str, Any]:
        blob = self.charsmap.blob if self.charsmap is not None else b""
        return {"type": "Precompiled", "precompiled_charsmap": base64.b64encode(blob).decode("ascii")}

    @classmethod
    def from_hf(cls, data: Mapping[str, Any]) -> Precompiled:
        """Read ``{"type": "Precompiled", "precompiled_charsmap": base64}`` from a tokenizer.json."""
        raw = data.get("precompiled_charsmap")
        if not isinstance(raw, str):
            raise FormatError('The Precompiled normalizer needs "precompiled_charsmap": a base64 string.')
        from engine.formats.spm_proto import MAX_CHARSMAP_BYTES

        if len(raw) > MAX_CHARSMAP_BYTES * 4 // 3 + 4:
            raise FormatError(f"The precompiled_charsmap is over {MAX_CHARSMAP_BYTES:,} bytes "
                              "(engine.formats.spm_proto.MAX_CHARSMAP_BYTES).")
        try:
            blob = base64.b64decode(raw, validate=True)
        except (binascii.Error, ValueError):
            raise FormatError("The Precompiled normalizer's precompiled_charsmap is not valid base64.") from None
        return cls(blob)
