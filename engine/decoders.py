"""Decoders: turn the per-token byte strings of a model back into text bytes.

Byte-level models already produce raw bytes, so their decoder only concatenates. WordPiece
glues ``##`` continuations to the previous piece and puts spaces between words; character-level
BPE turns its ``</w>`` word ends into spaces; Metaspace turns
``▁`` back into spaces and drops the dummy prefix. Decoders work on bytes so that a token that
splits a multi-byte character is handled by the final UTF-8 decode (``errors="replace"``).
"""

from __future__ import annotations

from typing import Any, Protocol

from engine.errors import FormatError


class Decoder(Protocol):
    def decode(self, tokens: list[bytes]) -> bytes: ...

    def to_hf(self) -> dict[str, Any]: ...


class ByteLevelDecoder:
    """Concatenate raw bytes (byte-level BPE and the byte baseline)."""

    def decode(self, tokens: list[bytes]) -> bytes:
        return b"".join(tokens)

    def to_hf(self) -> dict[str, Any]:
        return {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True}


class ConcatDecoder:
    """Concatenate pieces unchanged (character and maximum-matching baselines)."""

    def decode(self, tokens: list[bytes]) -> bytes:
        return b"".join(tokens)

    def to_hf(self) -> dict[str, Any]:
        return {"type": "Fuse"}


class BPESuffixDecoder:
    """Character-level BPE: the end-of-word suffix becomes a space, the last token's becomes nothing.

    Hugging Face's ``BPEDecoder``. Whitespace other than one space between words is not restored:
    the classic algorithm splits on whitespace, so decoding gives words joined by single spaces.
    """

    def __init__(self, suffix: str = "</w>") -> None:
        self.suffix = suffix
        self._suffix = suffix.encode("utf-8")

    def decode(self, tokens: list[bytes]) -> bytes:
        last = len(tokens) - 1
        return b"".join(token.replace(self._suffix, b"" if i == last else b" ") for i, token in enumerate(tokens))

    def to_hf(self) -> dict[str, Any]:
        return {"type": "BPEDecoder", "suffix": self.suffix}


_TIDY_SPACING = (
    (b" .", b"."), (b" ?", b"?"), (b" !", b"!"), (b" ,", b","), (b" ' ", b"'"), (b" n't", b"n't"),
    (b" 'm", b"'m"), (b" do not", b" don't"), (b" 's", b"'s"), (b" 've", b"'ve"), (b" 're", b"'re"),
)


def _tidy(token: bytes) -> bytes:
    """BERT's clean-up of the spacing around punctuation and English contractions, in its order."""
    for before, after in _TIDY_SPACING:
        token = token.replace(before, after)
    return token


class WordPieceDecoder:
    """Join pieces with spaces, gluing ``##`` continuations; optionally tidy punctuation spacing."""

    def __init__(self, prefix: str = "##", *, cleanup: bool = True) -> None:
        self.prefix = prefix
        self._prefix = prefix.encode("utf-8")
        self.cleanup = cleanup

    def decode(self, tokens: list[bytes]) -> bytes:
        """Hugging Face's rule, token by token: every token but the first loses its prefix or
        gains a space (a first ``##x`` stays as it is), and the tidying applies to each token on
        its own, so ``' s`` stays spaced as in ``transformers``."""
        parts: list[bytes] = []
        for index, token in enumerate(tokens):
            if index > 0:
                token = token[len(self._prefix):] if token.startswith(self._prefix) else b" " + token
            parts.append(_tidy(token) if self.cleanup else token)
        return b"".join(parts)

    def to_hf(self) -> dict[str, Any]:
        return {"type": "WordPiece", "prefix": self.prefix, "cleanup": self.cleanup}


class MetaspaceDecoder:
    """Turn ``▁`` back into spaces and drop the leading one that the dummy prefix added.

    Over a byte-fallback model (unknown characters spelled as ``<0xC3>``-style byte pieces) our
    decoding is the same, since the model already gives a byte piece's byte; only the Hugging Face
    form differs (:meth:`to_hf_byte_fallback`).
    """

    def __init__(self, replacement: str = "▁", *, add_dummy_prefix: bool = True) -> None:
        self.replacement = replacement
        self._replacement = replacement.encode("utf-8")
        self.add_dummy_prefix = add_dummy_prefix

    def decode(self, tokens: list[bytes]) -> bytes:
        text = b"".join(tokens).replace(self._replacement, b" ")
        if self.add_dummy_prefix and text.startswith(b" "):
            text = text[1:]
        return text

    def to_hf_byte_fallback(self) -> dict[str, Any]:
        """This decoder over a byte-fallback model, as HF needs it. HF's ``Metaspace`` decoder
        would print byte pieces as written ("caf<0xC3><0xA9>"), so it is written as
        sentencepiece-style chains are (Llama's, Gemma's): replace ``▁``, turn byte pieces into
        bytes, fuse, strip the dummy prefix's space."""
        chain: list[dict[str, Any]] = [
            {"type": "Replace", "pattern": {"String": self.replacement}, "content": " "},
            {"type": "ByteFallback"},
            {"type": "Fuse"},
        ]
        if self.add_dummy_prefix:
            chain.append({"type": "Strip", "content": " ", "start": 1, "stop": 0})
        return {"type": "Sequence", "decoders": chain}

    def to_hf(self) -> dict[str, Any]:
        return {
            "type": "Metaspace",
            "replacement": self.replacement,
            "prepend_scheme": "always" if self.add_dummy_prefix else "never",
            "split": True,
        }


def decoder_from_hf(data: dict[str, Any] | None, default: Decoder) -> Decoder:
    """Read a Hugging Face ``decoder`` object; ``default`` serves when it is absent."""
    if data is None:
        return default
    kind = data.get("type")
    if kind == "ByteLevel":
        return ByteLevelDecoder()
    if kind == "WordPiece":
        return WordPieceDecoder(data.get("prefix", "##"), cleanup=bool(data.get("cleanup", True)))
    if kind == "Metaspace":
        scheme = data.get("prepend_scheme", "always" if data.get("add_prefix_space", True) else "never")
        return MetaspaceDecoder(data.get("replacement", "▁"), add_dummy_prefix=scheme != "never")
    if kind == "BPEDecoder":
        suffix = data.get("suffix", "</w>")
        if not isinstance(suffix, str) or not suffix:
            raise FormatError(f"The BPEDecoder suffix must be a non-empty string, not {suffix!r}.")
        return BPESuffixDecoder(suffix)
    if kind == "Fuse":
        return ConcatDecoder()
    if kind == "Sequence":
        # sentencepiece-style chains (Replace ▁, ByteFallback, Fuse, Strip) decode like Metaspace.
        chain = [d for d in data.get("decoders", []) if isinstance(d, dict)]
        kinds = [d.get("type") for d in chain]
        if "ByteFallback" in kinds or "Replace" in kinds:
            strip = any(d.get("type") == "Strip" and d.get("start", 0) for d in chain)
            pattern = next((d.get("pattern") for d in chain if d.get("type") == "Replace"), None)
            replacement = pattern.get("String") if isinstance(pattern, dict) else None
            return MetaspaceDecoder(replacement if isinstance(replacement, str) and replacement else "▁",
                                    add_dummy_prefix=strip)
    raise FormatError(f"The decoder type {kind!r} is not supported.")
