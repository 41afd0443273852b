"""Token text as every page shows it: escaped, and cut to a bounded length.

Any stored tokenizer must give a page of bounded size, and an imported token may be megabytes,
so pages show a token's bytes up to ``SHOW_BYTES`` and its vocabulary string up to
``SHOW_CHARS`` (:func:`shown_text`, :func:`shown_string`), with controls and invisible
characters escaped (:func:`escape_text`). Used by the inspector, the vocabulary browser, the
tokenizer summary and the held-out examples alike. Byte counts read as sizes (:func:`human_size`).
"""

from __future__ import annotations

import unicodedata

# Real vocabularies' longest tokens are about 100 bytes (GPT-2: 128); an imported token may be
# megabytes, and escaping or drawing all of it would make a page of that size (times four for
# ``\xNN`` escapes), once per place it appears.
SHOW_BYTES = 256
SHOW_CHARS = 256
ELLIPSIS = "…"


def escape_text(data: bytes) -> str:
    """Bytes as readable text: invalid UTF-8 as ``\\xNN``, controls and invisibles as escapes."""
    text = data.decode("utf-8", errors="backslashreplace")
    out = []
    for char in text:
        if char == "\n":
            out.append("\\n")
        elif char == "\t":
            out.append("\\t")
        elif char == "\r":
            out.append("\\r")
        elif char == " ":
            out.append("␣")
        elif unicodedata.category(char) in ("Cc", "Cf", "Zl", "Zp", "Zs", "Co", "Cs", "Cn"):
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(char)
    return "".join(out)


def _cut(data: bytes, limit: int) -> bytes:
    """The first ``limit`` bytes, backed off to a UTF-8 character boundary where one is near."""
    end = limit
    for _ in range(3):  # a UTF-8 character has at most 3 continuation bytes
        if end > 0 and end < len(data) and (data[end] & 0xC0) == 0x80:
            end -= 1
    return data[:end] if end > 0 else data[:limit]


def shown_text(data: bytes, limit: int = SHOW_BYTES) -> str:
    """:func:`escape_text` of at most ``limit`` bytes of ``data``, ending in "…" when cut."""
    if len(data) <= limit:
        return escape_text(data)
    return escape_text(_cut(data, limit)) + ELLIPSIS


def shown_string(text: str | None, limit: int = SHOW_CHARS) -> str:
    """A vocabulary string cut to ``limit`` characters, ending in "…" when cut."""
    if text is None:
        return ""
    return text if len(text) <= limit else text[:limit] + ELLIPSIS


def human_size(n: int) -> str:
    """A byte count as people read it: "512 bytes", "1.5 MiB", "20 GiB"."""
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:,} {unit}" if unit == "bytes" else f"{n:.1f} {unit}".replace(".0 ", " ")
        n /= 1024  # type: ignore[assignment]
    raise AssertionError("unreachable")
