"""GPT-2's reversible mapping between bytes and printable unicode characters.

Byte-level vocabularies (GPT-2's ``vocab.json``/``merges.txt``, Hugging Face's ByteLevel model)
store tokens as strings in which each byte is one printable character: printable Latin-1 bytes
stand for themselves and the other 68 bytes are shifted to U+0100 and up (so a space is ``Ġ``).
This module only converts; it knows nothing of tokens.

Internal: not part of the engine's API (``engine.PUBLIC_MODULES``).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from functools import cache
from itertools import accumulate
from typing import Any, AnyStr


def _build_byte_to_unicode() -> dict[int, str]:
    # The 188 printable bytes keep their own code point; the rest get 256, 257, ... in byte order.
    printable = (
        list(range(ord("!"), ord("~") + 1))
        + list(range(ord("¡"), ord("¬") + 1))
        + list(range(ord("®"), ord("ÿ") + 1))
    )
    mapping: dict[int, str] = {}
    shifted = 0
    for byte in range(256):
        if byte in printable:
            mapping[byte] = chr(byte)
        else:
            mapping[byte] = chr(256 + shifted)
            shifted += 1
    return mapping


BYTE_TO_UNICODE: dict[int, str] = _build_byte_to_unicode()
UNICODE_TO_BYTE: dict[str, int] = {char: byte for byte, char in BYTE_TO_UNICODE.items()}
# ``str.translate`` table from the Latin-1 character of each byte to its symbol: a whole token
# in C (~0.26 us against ~0.58 us for a lookup per byte; 127,000 of them to write a 32k BPE's files).
_ENCODE_TABLE = {byte: BYTE_TO_UNICODE[byte] for byte in range(256)}
# ``str.translate`` table from symbols to the Latin-1 character of their byte, so that
# ``.translate(_DECODE_TABLE).encode("latin-1")`` decodes a whole string in C. The characters
# below 256 that are not symbols (space, controls) become U+0100, which Latin-1 cannot encode;
# characters above U+0143 are left as they are and cannot be encoded either.
_DECODE_TABLE = {code: "\u0100" for code in range(256)} | {
    ord(char): chr(byte) for char, byte in UNICODE_TO_BYTE.items()
}


def bytes_to_symbols(data: bytes) -> str:
    """Return ``data`` written in the byte-level alphabet (``b" the"`` → ``"Ġthe"``)."""
    return data.decode("latin-1").translate(_ENCODE_TABLE)


def many_bytes_to_symbols(tokens: Collection[bytes]) -> list[str]:
    """:func:`bytes_to_symbols` of each token, translated together and cut apart (a 32k
    vocabulary and its merges' halves, 96,000 tokens: ~0.02 s against ~0.06 s one by one)."""
    return _cut(b"".join(tokens).decode("latin-1").translate(_ENCODE_TABLE), map(len, tokens))


def _cut(whole: AnyStr, lengths: Iterable[int]) -> list[AnyStr]:
    """``whole`` cut into consecutive pieces of ``lengths``: the way back from a joined conversion."""
    ends = list(accumulate(lengths))
    return [whole[start:stop] for start, stop in zip([0, *ends], ends)]


def symbols_to_bytes(symbols: str) -> bytes:
    """Invert :func:`bytes_to_symbols`; raise ``KeyError`` on a character outside the alphabet."""
    try:
        return symbols.translate(_DECODE_TABLE).encode("latin-1")
    except UnicodeEncodeError as exc:
        raise KeyError(symbols[exc.start]) from None


def many_symbols_to_bytes(strings: Collection[str]) -> list[bytes] | None:
    """:func:`symbols_to_bytes` of each string, or None if any has a character outside the alphabet.

    One numpy lookup over all their code points, then one slice per string: a 200k vocabulary
    in ~30 ms, where a call per string took ~250 ms.
    """
    values = _byte_values(strings)
    if len(values) and int(values.min()) < 0:
        return None
    return _cut(values.astype("uint8").tobytes(), map(len, strings))


def outside_alphabet(strings: Collection[str]) -> list[bool]:
    """For each non-empty string, whether it has a character outside the alphabet (one numpy pass)."""
    import numpy as np

    bad = _byte_values(strings) < 0
    if not len(bad):
        return [False] * len(strings)
    lengths = np.fromiter(map(len, strings), np.int64, len(strings))
    return np.logical_or.reduceat(bad, np.cumsum(lengths) - lengths).tolist()


def _byte_values(strings: Collection[str]) -> Any:
    """The byte of every character of ``strings`` in turn, -1 for one outside the alphabet (numpy)."""
    import numpy as np  # here: the alphabet itself is needed by commands that never load numpy

    points = np.frombuffer("".join(strings).encode("utf-32-le"), np.uint32)
    lookup = _byte_lookup()
    return np.where(points < len(lookup), lookup[np.minimum(points, len(lookup) - 1)], -1)


# code point -> its byte, -1 for a character that is not a symbol (the alphabet ends at U+0143)
_BYTE_OF_POINT = [UNICODE_TO_BYTE.get(chr(code), -1) for code in range(max(map(ord, UNICODE_TO_BYTE)) + 1)]


@cache
def _byte_lookup() -> Any:
    """:data:`_BYTE_OF_POINT` as a numpy array (built once, on first use)."""
    import numpy as np

    return np.array(_BYTE_OF_POINT, np.int16)
