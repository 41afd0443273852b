"""Readers and writers of tokenizer file formats other than ``tokenizer.json``.

``read_utf8`` is the one way the format modules and the CLI read a whole file as text, so a file
that is not UTF-8 gets the same message naming the byte offset everywhere, and a file larger than
``engine.limits.MAX_FILE_BYTES`` is refused before it is read whole.
"""

from __future__ import annotations

from pathlib import Path

from engine.errors import FormatError
from engine.limits import MAX_FILE_BYTES, read_bytes

__all__ = ["read_utf8"]


def read_utf8(path: str | Path, *, source: str | None = None, limit: int = MAX_FILE_BYTES) -> str:
    """The file's text; invalid UTF-8 raises FormatError naming ``source`` (default: the file name),
    and a file over ``limit`` bytes is refused unread."""
    path = Path(path)
    data = read_bytes(path, source=source or path.name, limit=limit)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FormatError(
            f"The file is not UTF-8 text (bad byte at offset {exc.start}).", source=source or path.name
        ) from None
