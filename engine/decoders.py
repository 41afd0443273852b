"""Decoders: turn the per-token byte strings of a model back into text bytes, as HF's decoders do.

A decoder takes each token's bytes as the model gives them and returns the text's bytes.
Byte-level models give raw bytes, so their decoder only concatenates. A model with byte pieces
(``<0xC3>``) gives a piece's byte as a :class:`FallbackByte`, which remembers the piece: Hugging
Face's decoders work on token *strings*, where that token is the six characters ``<0xC3>``
until a ``ByteFallback`` step turns runs of them into text, so each step here reads a
FallbackByte as its piece, and one that no step turned into text is printed as the piece.

Every Hugging Face decoder is a step from a list of tokens to a list of tokens
(``decode_chain``); ``decode`` joins the last list. The steps, with their meaning on bytes:
``Replace`` (a string or a regex, per token), ``ByteFallback`` (a run of byte pieces becomes its
text if it is valid UTF-8, else one U+FFFD per byte), ``Fuse`` (join), ``Strip`` (per token, up to
``start`` leading and ``stop`` trailing ``content`` characters), ``Metaspace`` (per token ``▁`` to
a space; the first token loses every ``▁`` unless ``prepend_scheme`` is ``never``), ``ByteLevel``
(join, and invalid UTF-8 becomes U+FFFD), ``WordPiece``, ``BPEDecoder`` and ``Sequence``. A step
read from a file writes back exactly what was read (``to_hf``).

Left out: ``CTC``, and a ``ByteLevel`` step after other steps (it would have to see the byte-level
alphabet, ``Ġ``, where our byte-level model gives raw bytes): both are refused with a FormatError.
``ByteLevelDecoder`` assumes its tokens are raw bytes, so it belongs over a byte-level model; which
decoder goes with which model is ``tokenizer_json.py``'s choice.

Internal: not part of the engine's API (``engine.PUBLIC_MODULES``).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any, Protocol

import regex

from engine.errors import ConfigError, FormatError
from engine.limits import run_budgeted, shown
from engine.onig import from_onig, onig_spans


class Decoder(Protocol):
    def decode(self, tokens: list[bytes]) -> bytes: ...

    def to_hf(self) -> dict[str, Any]: ...


class FallbackByte(bytes):
    """The byte of a byte piece (``b"\\xc3"`` for ``<0xC3>``), marked with the piece it came from."""

    piece: str

    def __new__(cls, value: int, piece: str) -> FallbackByte:
        token = super().__new__(cls, (value,))
        token.piece = piece
        return token

    def __reduce__(self) -> tuple[Any, ...]:
        return FallbackByte, (self[0], self.piece)


def byte_piece_value(token: str) -> int | None:
    """The byte a ``<0xNN>`` token stands for, read as HF's ByteFallback reads it; None otherwise."""
    if len(token) != 6 or not token.startswith("<0x") or token[5] != ">":
        return None
    digits = token[3:5]
    if digits[0] == "+":  # Rust's u8::from_str_radix accepts a sign: "<0x+A>" is 10
        digits = digits[1:]
    if not digits or any(c not in "0123456789abcdefABCDEF" for c in digits):
        return None
    return int(digits, 16)


def _text(token: bytes) -> bytes:
    """A token as HF's string would print it: a byte piece as its piece."""
    return token.piece.encode("utf-8") if isinstance(token, FallbackByte) else token


def _per_token(tokens: list[bytes], change: Callable[[int, str], str]) -> list[bytes]:
    """Apply ``change(index, text)`` to each token's text; a byte piece whose piece it leaves as it
    is stays a byte piece (HF's later ByteFallback would still read it), one it changes is text."""
    out: list[bytes] = []
    for index, token in enumerate(tokens):
        if isinstance(token, FallbackByte):
            new = change(index, token.piece)
            out.append(token if new == token.piece else new.encode("utf-8"))
        else:
            out.append(change(index, token.decode("utf-8", "surrogateescape")).encode("utf-8", "surrogateescape"))
    return out


class _Step:
    """A decoder as HF defines it: ``decode_chain`` maps tokens to tokens, ``decode`` joins them."""

    _hf: dict[str, Any] | None = None  # the object read from a file, written back as it was

    def decode_chain(self, tokens: list[bytes]) -> list[bytes]:
        raise NotImplementedError

    def decode(self, tokens: list[bytes]) -> bytes:
        return b"".join(map(_text, self.decode_chain(list(tokens))))

    def _default_hf(self) -> dict[str, Any]:
        raise NotImplementedError

    def to_hf(self) -> dict[str, Any]:
        return copy.deepcopy(self._hf) if self._hf is not None else self._default_hf()


class ByteLevelDecoder(_Step):
    """Concatenate raw bytes (byte-level BPE and the byte baseline).

    ``decode`` returns the bytes as they are (the tokenizer's final UTF-8 decode replaces what is
    invalid, as HF's ``from_utf8_lossy`` does); as a step in a chain it makes that replacement
    itself, since the steps after it see text."""

    def __init__(self, *, add_prefix_space: bool = True, trim_offsets: bool = True, use_regex: bool = True) -> None:
        self.options = {"add_prefix_space": add_prefix_space, "trim_offsets": trim_offsets, "use_regex": use_regex}

    def decode(self, tokens: list[bytes]) -> bytes:
        return b"".join(map(_text, tokens))

    def decode_chain(self, tokens: list[bytes]) -> list[bytes]:
        return [self.decode(tokens).decode("utf-8", "replace").encode("utf-8")]

    def _default_hf(self) -> dict[str, Any]:
        return {"type": "ByteLevel", **self.options}


class ConcatDecoder(_Step):
    """Concatenate pieces unchanged (HF's ``Fuse``; the character and maximum-matching baselines)."""

    def decode_chain(self, tokens: list[bytes]) -> list[bytes]:
        return [b"".join(map(_text, tokens))]

    def _default_hf(self) -> dict[str, Any]:
        return {"type": "Fuse"}


Fuse = ConcatDecoder


class BPESuffixDecoder(_Step):
    """Character-level BPE: the end-of-word suffix becomes a space, the last token's becomes nothing.

    Hugging Face's ``BPEDecoder``. Whitespace other than one space between words is not restored:
    the classic algorithm splits on whitespace, so decoding gives words joined by single spaces.
    """

    def __init__(self, suffix: str = "</w>") -> None:
        self.suffix = suffix

    def decode_chain(self, tokens: list[bytes]) -> list[bytes]:
        last = len(tokens) - 1
        return _per_token(tokens, lambda i, text: text.replace(self.suffix, "" if i == last else " "))

    def _default_hf(self) -> dict[str, Any]:
        return {"type": "BPEDecoder", "suffix": self.suffix}


_TIDY_SPACING = (
    (" .", "."), (" ?", "?"), (" !", "!"), (" ,", ","), (" ' ", "'"), (" n't", "n't"),
    (" 'm", "'m"), (" do not", " don't"), (" 's", "'s"), (" 've", "'ve"), (" 're", "'re"),
)


def _tidy(token: str) -> str:
    """BERT's clean-up of the spacing around punctuation and English contractions, in its order."""
    for before, after in _TIDY_SPACING:
        token = token.replace(before, after)
    return token


class WordPieceDecoder(_Step):
    """Join pieces with spaces, gluing ``##`` continuations; optionally tidy punctuation spacing."""

    def __init__(self, prefix: str = "##", *, cleanup: bool = True) -> None:
        self.prefix = prefix
        self.cleanup = cleanup

    def decode_chain(self, tokens: list[bytes]) -> list[bytes]:
        """Hugging Face's rule, token by token: every token but the first loses its prefix or
        gains a space (a first ``##x`` stays as it is), and the tidying applies to each token on
        its own, so ``' s`` stays spaced as in ``transformers``."""

        def change(index: int, token: str) -> str:
            if index > 0:
                token = token[len(self.prefix):] if token.startswith(self.prefix) else " " + token
            return _tidy(token) if self.cleanup else token

        return _per_token(tokens, change)

    def _default_hf(self) -> dict[str, Any]:
        return {"type": "WordPiece", "prefix": self.prefix, "cleanup": self.cleanup}


class MetaspaceDecoder(_Step):
    """Turn ``▁`` back into spaces and drop the leading one that the dummy prefix added.

    This is the decoder our trainers attach. Over a byte-fallback model (unknown characters
    spelled as ``<0xC3>``-style byte pieces) our decoding is the same, since the model already
    gives a byte piece's byte; only the Hugging Face form differs (:meth:`to_hf_byte_fallback`).
    :class:`Metaspace` is HF's own decoder, token by token, for files.
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

    def decode_chain(self, tokens: list[bytes]) -> list[bytes]:
        return [self.decode(tokens)]

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

    def _default_hf(self) -> dict[str, Any]:
        return {
            "type": "Metaspace",
            "replacement": self.replacement,
            "prepend_scheme": "always" if self.add_dummy_prefix else "never",
            "split": True,
        }


class Metaspace(MetaspaceDecoder):
    """HF's ``Metaspace`` decoder: per token, ``▁`` becomes a space, except that the first token
    loses every ``▁`` when ``prepend_scheme`` is ``first`` or ``always``."""

    def __init__(self, replacement: str = "▁", *, prepend_scheme: str = "always", split: bool = True) -> None:
        super().__init__(replacement, add_dummy_prefix=prepend_scheme != "never")
        self.prepend_scheme = prepend_scheme
        self.split = split

    def decode(self, tokens: list[bytes]) -> bytes:
        return _Step.decode(self, tokens)

    def decode_chain(self, tokens: list[bytes]) -> list[bytes]:
        strip_first = self.prepend_scheme != "never"
        mark = self.replacement
        return _per_token(tokens, lambda i, text: text.replace(mark, "" if i == 0 and strip_first else " "))

    def _default_hf(self) -> dict[str, Any]:
        return {"type": "Metaspace", "replacement": self.replacement, "prepend_scheme": self.prepend_scheme,
                "split": self.split}


class ByteFallback(_Step):
    """A run of byte pieces becomes its text when it is valid UTF-8, else one U+FFFD per piece.

    A byte piece is a model's fallback byte, or any token spelled ``<0xNN>``: Hugging Face reads
    token strings, so a vocabulary's own ``<0x2C>`` (a WordLevel or Unigram model's) is the byte too."""

    def decode_chain(self, tokens: list[bytes]) -> list[bytes]:
        out: list[bytes] = []
        run: list[bytes] = []
        for token in [*tokens, None]:
            if isinstance(token, FallbackByte):
                run.append(token)
                continue
            if token is not None and len(token) == 6 and token.startswith(b"<0x") and \
                    (value := byte_piece_value(token.decode("ascii", "replace"))) is not None:
                run.append(bytes((value,)))
                continue
            if run:
                data = b"".join(run)
                try:
                    data.decode("utf-8")
                    out.append(data)
                except UnicodeDecodeError:
                    out += ["\ufffd".encode("utf-8")] * len(run)
                run = []
            if token is not None:
                out.append(token)
        return out

    def _default_hf(self) -> dict[str, Any]:
        return {"type": "ByteFallback"}


class Strip(_Step):
    """Per token: up to ``start`` leading and ``stop`` trailing ``content`` characters removed.

    The trailing cut never crosses the leading one (HF panics there: ``Strip(" ", 1, 1)`` on the
    token ``" "``), so such a token becomes empty."""

    def __init__(self, content: str = " ", start: int = 0, stop: int = 0) -> None:
        self.content, self.start, self.stop = content, start, stop

    def _strip(self, _index: int, token: str) -> str:
        begin = 0
        while begin < min(self.start, len(token)) and token[begin] == self.content:
            begin += 1
        end = len(token)
        while len(token) - end < min(self.stop, len(token) - begin) and token[end - 1] == self.content:
            end -= 1
        return token[begin:end]

    def decode_chain(self, tokens: list[bytes]) -> list[bytes]:
        return _per_token(tokens, self._strip)

    def _default_hf(self) -> dict[str, Any]:
        return {"type": "Strip", "content": self.content, "start": self.start, "stop": self.stop}


class Replace(_Step):
    """Per token, every match of ``pattern`` (a literal string, or a regex) becomes ``content``."""

    def __init__(self, pattern: str, content: str, *, is_regex: bool = False) -> None:
        self.pattern, self.content, self.is_regex = pattern, content, is_regex
        self._regex: Any = None
        if is_regex:  # a tokenizer.json's regex: Onig's meaning (engine/onig.py)
            self._regex = regex.compile(from_onig(pattern, "decoder's Replace pattern"))

    def _replace(self, _index: int, token: str) -> str:
        if self._regex is None:
            return token.replace(self.pattern, self.content)
        spans = run_budgeted(lambda timeout: onig_spans(self._regex, token, timeout),
                             "The decoder's Replace pattern", "use a simpler Replace pattern in the decoder.")
        out, done = [], 0
        for start, end in spans:  # the matches as Onig finds them, empty ones included
            out += [token[done:start], self.content]
            done = end
        return "".join(out) + token[done:]

    def decode_chain(self, tokens: list[bytes]) -> list[bytes]:
        return _per_token(tokens, self._replace)

    def _default_hf(self) -> dict[str, Any]:
        return {"type": "Replace", "pattern": {"Regex" if self.is_regex else "String": self.pattern},
                "content": self.content}


class Sequence(_Step):
    """Each step's tokens go to the next; the last list is joined."""

    def __init__(self, steps: list[_Step]) -> None:
        self.steps = steps

    def decode_chain(self, tokens: list[bytes]) -> list[bytes]:
        for step in self.steps:
            tokens = step.decode_chain(tokens)
        return tokens

    def _default_hf(self) -> dict[str, Any]:
        return {"type": "Sequence", "decoders": [step.to_hf() for step in self.steps]}


# ----------------------------------------------------------------- reading tokenizer.json

def _field(data: Mapping[str, Any], name: str, kind: type, default: Any, path: str) -> Any:
    """``data[name]`` if it is a ``kind`` (``default`` when absent); FormatError naming it otherwise."""
    if name not in data:
        return default
    value = data[name]
    if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
        raise FormatError(f"The decoder field {path}.{name} must be a {kind.__name__}, not {shown(value)}.")
    return value


def _count(data: Mapping[str, Any], name: str, path: str) -> int:
    value = _field(data, name, int, 0, path)
    if value < 0:
        raise FormatError(f"The decoder field {path}.{name} must be a count of at least 0, not {value}.")
    return int(value)


def _char(data: Mapping[str, Any], name: str, default: str, path: str) -> str:
    value = _field(data, name, str, default, path)
    if len(value) != 1:
        raise FormatError(f"The decoder field {path}.{name} must be one character, not {shown(value)}.")
    return str(value)


def _replace_from_hf(data: Mapping[str, Any], path: str) -> Replace:
    pattern, content = data.get("pattern"), data.get("content")
    if not isinstance(content, str):
        raise FormatError(f"The decoder field {path}.content must be a string, not {shown(content)}.")
    if not isinstance(pattern, dict) or len(pattern) != 1 or not {"String", "Regex"} >= pattern.keys():
        raise FormatError(f"The decoder field {path}.pattern must be {{\"String\": ...}} or {{\"Regex\": ...}}, "
                          f"not {shown(pattern)}.")
    (kind, value), = pattern.items()
    if not isinstance(value, str) or not value:
        raise FormatError(f"The decoder field {path}.pattern.{kind} must be a non-empty string, not {shown(value)}.")
    try:
        return Replace(value, content, is_regex=kind == "Regex")
    except (ConfigError, regex.error) as exc:
        raise FormatError(f"The decoder field {path}.pattern.Regex cannot be used: {exc}") from None


def _step_from_hf(data: Any, path: str, *, top: bool) -> _Step:
    """One decoder object at ``path`` (``decoder``, ``decoder.decoders[2]``)."""
    if not isinstance(data, dict):
        raise FormatError(f"The decoder at {path} must be an object, not {shown(data)}.")
    kind = data.get("type")
    step: _Step
    if kind == "ByteLevel":
        step = ByteLevelDecoder(**{name: _field(data, name, bool, True, path)
                                   for name in ("add_prefix_space", "trim_offsets", "use_regex")})
    elif kind == "WordPiece":
        step = WordPieceDecoder(_field(data, "prefix", str, "##", path),
                                cleanup=_field(data, "cleanup", bool, True, path))
    elif kind == "Metaspace":
        replacement = _char(data, "replacement", "▁", path)
        scheme = _field(data, "prepend_scheme", str, "always", path)
        if scheme not in ("first", "always", "never"):
            raise FormatError(f"The decoder field {path}.prepend_scheme must be first, always or never, "
                              f"not {shown(scheme)}.")
        if _field(data, "add_prefix_space", bool, True, path) is False and scheme != "never":
            # HF refuses this pair too ("add_prefix_space does not match declared prepend_scheme").
            raise FormatError(f"The decoder at {path} has add_prefix_space false but prepend_scheme {scheme!r}.")
        step = Metaspace(replacement, prepend_scheme=scheme, split=_field(data, "split", bool, True, path))
    elif kind == "BPEDecoder":
        step = BPESuffixDecoder(_field(data, "suffix", str, "</w>", path))
    elif kind == "Fuse":
        step = ConcatDecoder()
    elif kind == "ByteFallback":
        step = ByteFallback()
    elif kind == "Strip":
        step = Strip(_char(data, "content", " ", path), _count(data, "start", path), _count(data, "stop", path))
    elif kind == "Replace":
        step = _replace_from_hf(data, path)
    elif kind == "Sequence":
        if not top:
            raise FormatError(f"The decoder at {path} is a Sequence inside a Sequence, which is not supported.")
        steps = data.get("decoders")
        if not isinstance(steps, list):
            raise FormatError(f"The decoder field {path}.decoders must be a list, not {shown(steps)}.")
        chain = [_step_from_hf(d, f"{path}.decoders[{i}]", top=False) for i, d in enumerate(steps)]
        late = next((i for i, s in enumerate(chain) if isinstance(s, ByteLevelDecoder) and i > 0), None)
        if late is not None:
            raise FormatError(f"The decoder at {path}.decoders[{late}] is a ByteLevel step after other steps, which "
                              "is not supported (those steps would see the byte-level alphabet).")
        step = Sequence(chain)
    else:
        raise FormatError(f"The decoder type {shown(kind)} at {path}.type is not supported; supported: BPEDecoder, "
                          "ByteFallback, ByteLevel, Fuse, Metaspace, Replace, Sequence, Strip, WordPiece.")
    step._hf = copy.deepcopy(data)
    return step


def decoder_from_hf(data: dict[str, Any] | None, default: Decoder, *, path: str = "decoder") -> Decoder:
    """Read a Hugging Face ``decoder`` object; ``default`` serves when it is absent.

    A FormatError names the field at fault by its path in the file (``decoder.decoders[2].type``).
    """
    if data is None:
        return default
    return _step_from_hf(data, path, top=True)
