"""GPT-2's reversible mapping between bytes and printable unicode characters.

Byte-level vocabularies (GPT-2's ``vocab.json``/``merges.txt``, Hugging Face's ByteLevel model)
store tokens as strings in which each byte is one printable character: printable Latin-1 bytes
stand for themselves and the other 68 bytes are shifted to U+0100 and up (so a space is ``Ġ``).
This module only converts; it knows nothing of tokens.
"""

from __future__ import annotations


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
_ENCODE_TABLE = [BYTE_TO_UNICODE[b] for b in range(256)]


def bytes_to_symbols(data: bytes) -> str:
    """Return ``data`` written in the byte-level alphabet (``b" the"`` → ``"Ġthe"``)."""
    return "".join([_ENCODE_TABLE[b] for b in data])


def symbols_to_bytes(symbols: str) -> bytes:
    """Invert :func:`bytes_to_symbols`; raise ``KeyError`` on a character outside the alphabet."""
    return bytes([UNICODE_TO_BYTE[char] for char in symbols])
