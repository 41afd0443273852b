"""Decoding an uploaded corpus as a stream: size limits, gunzip, UTF-8 checks, JSONL fields.

Each step is a generator over chunks, so an upload of any size is never held whole, and each
refuses bad input with an :class:`UploadError` whose message is a plain sentence that names the
file and, where it helps, the byte offset (invalid UTF-8) or the line (bad JSONL). A gzip bomb
stops at the size limit counted after decompression. Storing the result is ``storage.py``'s job.
"""

from __future__ import annotations

import codecs
import json
import zlib
from collections.abc import Iterator
from typing import IO

from engine.trainers import DOCUMENT_SEPARATOR
from webapp.web.filters import quoted
from webapp.web.shown import human_size

CHUNK_BYTES = 1 << 20
MAX_KEYS_SHOWN = 10  # a message lists a line's first fields, not thousands


class UploadError(ValueError):
    """An upload we refuse; ``kind`` lets the page offer the right fix (e.g. "utf8")."""

    def __init__(self, message: str, *, kind: str, offset: int | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.offset = offset


#: Extensions of files that are not text (documents, archives, other compressions, media,
#: arrays, a lone JSON document): refused by name, with the formats that work, rather than by
#: their first byte that is not UTF-8.
NOT_TEXT = frozenset(
    "json zip pdf doc docx odt xls xlsx pptx parquet arrow feather bz2 xz zst lz4 tar tgz 7z rar png jpg jpeg "
    "gif webp mp3 mp4 wav exe bin pkl pickle npy npz pt safetensors".split())


def detect_format(filename: str) -> tuple[str, bool]:
    """Return ("txt" | "jsonl", gzipped) from the file name, or raise UploadError.

    ``.jsonl`` is JSON lines; any other name is plain text (``corpus.en``, ``notes.md``,
    ``README``, ``name.gz``), checked as UTF-8 as it is read, except the :data:`NOT_TEXT` kinds.
    """
    name = filename.lower()
    gzipped = name.endswith(".gz")
    if gzipped:
        name = name[:-3]
    base = name.replace("\\", "/").rsplit("/", 1)[-1]
    ext = base.rsplit(".", 1)[-1] if "." in base else ""
    if ext == "jsonl":
        return "jsonl", gzipped
    if ext in NOT_TEXT:
        raise UploadError(
            f"{quoted(filename)} is not a text file. Upload plain text (.txt, or any text file such as "
            "corpus.en) or JSON lines (.jsonl), or a .gz of either.",
            kind="format",
        )
    return "txt", gzipped


class RawReader:
    """Yields the upload's bytes, enforcing the size limit and naming interruptions."""

    def __init__(self, stream: IO[bytes], filename: str, max_bytes: int) -> None:
        self.stream, self.filename, self.max_bytes = stream, filename, max_bytes
        self.count = 0

    def __iter__(self) -> Iterator[bytes]:
        while True:
            try:
                chunk = self.stream.read(CHUNK_BYTES)
            except (OSError, EOFError, ConnectionError) as exc:
                raise UploadError(
                    f"The upload of {quoted(self.filename)} was interrupted ({exc}). Nothing was stored; "
                    "please upload it again.",
                    kind="interrupted",
                ) from None
            if not chunk:
                return
            self.count += len(chunk)
            if self.count > self.max_bytes:
                raise UploadError(
                    f"{quoted(self.filename)} is larger than the upload limit of {human_size(self.max_bytes)}.",
                    kind="too_large",
                )
            yield chunk


def gunzip_chunks(raw: Iterator[bytes], filename: str, max_bytes: int) -> Iterator[bytes]:
    """Decompress gzip (multi-member too), refusing output beyond ``max_bytes`` (gzip bombs)."""
    decomp = zlib.decompressobj(16 + zlib.MAX_WBITS)
    member_fed = 0  # bytes given to the current member; >0 at the end means it was cut off
    produced = 0
    try:
        for chunk in raw:
            data = chunk
            while data:
                member_fed += len(data)
                # max_length bounds the memory a single highly compressed chunk can expand to.
                out = decomp.decompress(data, CHUNK_BYTES)
                produced += len(out)
                if produced > max_bytes:
                    raise UploadError(
                        f"{quoted(filename)} expands to more than the limit of {human_size(max_bytes)} when "
                        "decompressed, so it was refused.",
                        kind="too_large",
                    )
                if out:
                    yield out
                if decomp.eof:  # another gzip member may follow
                    data = decomp.unused_data
                    decomp = zlib.decompressobj(16 + zlib.MAX_WBITS)
                    member_fed = 0
                else:
                    data = decomp.unconsumed_tail
                    member_fed -= len(data)  # counted again on the next round
    except zlib.error:
        raise UploadError(
            f"{quoted(filename)} is not a valid gzip file. Upload the plain .txt or .jsonl, or "
            "re-compress it with gzip.",
            kind="format",
        ) from None
    if member_fed > 0:
        raise UploadError(
            f"{quoted(filename)} is a truncated gzip file; the upload may have been interrupted. "
            "Nothing was stored; please upload it again.",
            kind="interrupted",
        )


def decode_chunks(raw: Iterator[bytes], filename: str, replace_errors: bool) -> Iterator[str]:
    """UTF-8 decode a byte stream, naming the byte offset of the first invalid sequence."""
    decoder = codecs.getincrementaldecoder("utf-8")("replace" if replace_errors else "strict")
    fed = 0
    first = True
    try:
        for chunk in raw:
            start = fed - len(decoder.getstate()[0])
            fed += len(chunk)
            text = decoder.decode(chunk)
            if first and text:
                text = text.removeprefix("\ufeff")  # a BOM is not content
                first = False
            if text:
                yield text
        start = fed - len(decoder.getstate()[0])
        tail = decoder.decode(b"", final=True)
        if tail:
            yield tail
    except UnicodeDecodeError as exc:
        offset = start + exc.start
        raise UploadError(
            f"{quoted(filename)} is not valid UTF-8: the byte 0x{exc.object[exc.start]:02x} at byte "
            f"offset {offset:,} cannot be decoded. Save the file as UTF-8, or tick "
            "\"Decode with replacement\" to replace invalid bytes with \N{REPLACEMENT CHARACTER}.",
            kind="utf8",
            offset=offset,
        ) from None


def jsonl_documents(text: Iterator[str], filename: str, field_name: str) -> Iterator[str]:
    """Turn JSON lines into the text of ``field_name``, documents joined by the separator."""
    line_no = 0
    first = True

    def document(line: str) -> str | None:
        if not line.strip():
            return None
        try:
            record = json.loads(line)
        except RecursionError:  # json's parser recurses once per level: [[[[…]]]] exhausts the stack
            raise UploadError(
                f"{quoted(filename)}, line {line_no:,} is nested too deeply to read. Each line of a .jsonl "
                "file must be one JSON object whose text field is a string.",
                kind="json",
            ) from None
        except ValueError:
            raise UploadError(
                f"{quoted(filename)}, line {line_no:,} is not valid JSON. Each line of a .jsonl file "
                "must be one JSON object.",
                kind="json",
            ) from None
        value = record.get(field_name) if isinstance(record, dict) else None
        if not isinstance(value, str):
            keys = (", ".join(repr(k)[:40] for k in list(record)[:MAX_KEYS_SHOWN]) if isinstance(record, dict)
                    else "none")
            more = ", …" if isinstance(record, dict) and len(record) > MAX_KEYS_SHOWN else ""
            raise UploadError(
                f"{quoted(filename)}, line {line_no:,} has no text field {quoted(field_name[:40])} (its fields: "
                f"{keys or 'none'}{more}). Choose the field that holds the text.",
                kind="json",
            )
        return value

    parts: list[str] = []  # pieces of the current, unfinished line
    for chunk in text:
        if "\n" not in chunk:
            parts.append(chunk)
            continue
        *lines, rest = chunk.split("\n")
        lines[0] = "".join(parts) + lines[0]
        parts = [rest]
        for line in lines:
            line_no += 1
            doc = document(line)
            if doc:
                yield doc if first else DOCUMENT_SEPARATOR + doc
                first = False
    line_no += 1
    doc = document("".join(parts))
    if doc:
        yield doc if first else DOCUMENT_SEPARATOR + doc
