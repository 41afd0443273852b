"""The content-addressed corpus store, and streaming uploads into it.

:meth:`CorpusStore.ingest` reads an uploaded stream chunk by chunk (gunzipping, checking UTF-8,
extracting a JSONL field), writes the normalised UTF-8 text to a temp file while hashing it, and
renames it to ``objects/<sha[:2]>/<sha>.txt`` only when everything succeeded, so a failure at
any point leaves nothing behind. Identical content maps to the same object, which is how
duplicates are recognised. Errors are :class:`UploadError` with a plain-sentence message.
Database rows are the caller's business (``corpora.py``).

A process killed while ingesting (SIGKILL, power loss) cannot remove its temp file, so every
temp file is ``flock``-ed by its writer for as long as it is being written; :meth:`clean_tmp`,
which ``tokenforge serve`` runs at start-up, deletes the ones nobody holds a lock on. Locks die
with their process, so this needs no guess about how old "stale" is, and it is safe while other
web hosts sharing the store are uploading.
"""

from __future__ import annotations

import codecs
import fcntl
import hashlib
import json
import os
import stat
import tempfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from webapp.corpus_stats import DOCUMENT_SEPARATOR, StatsAccumulator

CHUNK_BYTES = 1 << 20


class UploadError(ValueError):
    """An upload we refuse; ``kind`` lets the page offer the right fix (e.g. "utf8")."""

    def __init__(self, message: str, *, kind: str, offset: int | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.offset = offset


@dataclass
class StoredCorpus:
    """What ingesting one upload produced."""

    sha256: str
    format: str
    upload_bytes: int
    size_bytes: int
    stats: dict[str, Any] = field(default_factory=dict)


def detect_format(filename: str) -> tuple[str, bool]:
    """Return ("txt" | "jsonl", gzipped) from the file name, or raise UploadError."""
    name = filename.lower()
    gzipped = name.endswith(".gz")
    if gzipped:
        name = name[:-3]
    for ext in ("txt", "jsonl"):
        if name.endswith("." + ext):
            return ext, gzipped
    raise UploadError(
        f"{filename!r} has an unknown format. Upload a .txt or .jsonl file, or a .gz of either.",
        kind="format",
    )


def _human(n: int) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:,} {unit}" if unit == "bytes" else f"{n:.1f} {unit}".replace(".0 ", " ")
        n /= 1024  # type: ignore[assignment]
    raise AssertionError("unreachable")


class CorpusStore:
    """Corpus files on disk, named by the sha256 of their stored UTF-8 text."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)

    def path(self, sha256: str) -> Path:
        """Where the object with this hash lives (whether or not it exists)."""
        if len(sha256) != 64 or not all(c in "0123456789abcdef" for c in sha256):
            raise ValueError(f"not a sha256 hex digest: {sha256!r}")
        return self.root / "objects" / sha256[:2] / f"{sha256}.txt"

    def delete(self, sha256: str) -> None:
        """Remove an object; missing objects are fine (deleting is idempotent)."""
        self.path(sha256).unlink(missing_ok=True)

    def ingest(
        self,
        stream: IO[bytes],
        filename: str,
        *,
        max_bytes: int,
        text_field: str = "text",
        replace_errors: bool = False,
    ) -> StoredCorpus:
        """Stream an upload into the store; raise UploadError and keep nothing if it is bad."""
        fmt, gzipped = detect_format(filename)
        fd, tmp = self._locked_tmp()
        reader = _RawReader(stream, filename, max_bytes)
        try:
            digest = hashlib.sha256()
            stats = StatsAccumulator()
            size = 0
            # closefd=False: the lock (on ``fd``) must last until the file has its final name.
            with os.fdopen(fd, "wb", closefd=False) as out:
                raw: Iterator[bytes] = iter(reader)
                if gzipped:
                    raw = _gunzip(raw, filename, max_bytes)
                text = _decode(raw, filename, replace_errors)
                if fmt == "jsonl":
                    text = _jsonl_documents(text, filename, text_field)
                for chunk in text:
                    data = chunk.encode("utf-8")
                    out.write(data)
                    digest.update(data)
                    size += len(data)
                    stats.feed(chunk)
                out.flush()
                os.fsync(out.fileno())
            if size == 0:
                raise UploadError(
                    f"{filename!r} is empty"
                    + (f"; no line has a {text_field!r} field with text." if fmt == "jsonl" else ".")
                    + " Upload a file that contains some text.",
                    kind="empty",
                )
            sha = digest.hexdigest()
            final = self.path(sha)
            final.parent.mkdir(parents=True, exist_ok=True)
            os.replace(tmp, final)  # atomic: readers see the whole object or none
            return StoredCorpus(sha, fmt, reader.count, size, stats.finish())
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        finally:
            os.close(fd)

    @property
    def tmp_dir(self) -> Path:
        """Where uploads are written before they are complete (and where werkzeug spools them)."""
        return self.root / "tmp"

    def _locked_tmp(self) -> tuple[int, Path]:
        """A new temp file, ``flock``-ed so :meth:`clean_tmp` knows a live process owns it."""
        self.tmp_dir.mkdir(parents=True, exist_ok=True)
        while True:
            fd, name = tempfile.mkstemp(dir=self.tmp_dir, suffix=".part")
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                # A cleaner may have unlinked the file between mkstemp and flock; then the
                # name no longer leads to our file and we start over with a new one.
                if os.stat(name).st_ino == os.fstat(fd).st_ino:
                    return fd, Path(name)
            except FileNotFoundError:
                pass
            os.close(fd)

    def clean_tmp(self) -> int:
        """Delete ``.part`` files that no live process is writing; return how many were deleted.

        Only ingest's ``.part`` files: werkzeug's spool files in the same folder are unlinked
        by their creator as soon as they are made, and that must not race with us.
        """
        removed = 0
        if not self.tmp_dir.is_dir():
            return 0
        for path in self.tmp_dir.glob("*.part"):
            try:
                fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
            except OSError:  # gone already, or not a regular file we may open
                continue
            try:
                if not stat.S_ISREG(os.fstat(fd).st_mode):
                    os.close(fd)
                    continue
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)  # its writer is alive
                continue
            try:
                path.unlink(missing_ok=True)
                removed += 1
            finally:
                os.close(fd)
        return removed


class _RawReader:
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
                    f"The upload of {self.filename!r} was interrupted ({exc}). Nothing was stored; "
                    "please upload it again.",
                    kind="interrupted",
                ) from None
            if not chunk:
                return
            self.count += len(chunk)
            if self.count > self.max_bytes:
                raise UploadError(
                    f"{self.filename!r} is larger than the upload limit of {_human(self.max_bytes)}.",
                    kind="too_large",
                )
            yield chunk


def _gunzip(raw: Iterator[bytes], filename: str, max_bytes: int) -> Iterator[bytes]:
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
                        f"{filename!r} expands to more than the limit of {_human(max_bytes)} when "
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
            f"{filename!r} is not a valid gzip file. Upload the plain .txt or .jsonl, or "
            "re-compress it with gzip.",
            kind="format",
        ) from None
    if member_fed > 0:
        raise UploadError(
            f"{filename!r} is a truncated gzip file; the upload may have been interrupted. "
            "Nothing was stored; please upload it again.",
            kind="interrupted",
        )


def _decode(raw: Iterator[bytes], filename: str, replace_errors: bool) -> Iterator[str]:
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
            f"{filename!r} is not valid UTF-8: the byte 0x{exc.object[exc.start]:02x} at byte "
            f"offset {offset:,} cannot be decoded. Save the file as UTF-8, or tick "
            "\"Decode with replacement\" to replace invalid bytes with \N{REPLACEMENT CHARACTER}.",
            kind="utf8",
            offset=offset,
        ) from None


def _jsonl_documents(text: Iterator[str], filename: str, field_name: str) -> Iterator[str]:
    """Turn JSON lines into the text of ``field_name``, documents joined by the separator."""
    line_no = 0
    first = True

    def document(line: str) -> str | None:
        if not line.strip():
            return None
        try:
            record = json.loads(line)
        except ValueError:
            raise UploadError(
                f"{filename!r}, line {line_no:,} is not valid JSON. Each line of a .jsonl file "
                "must be one JSON object.",
                kind="json",
            ) from None
        value = record.get(field_name) if isinstance(record, dict) else None
        if not isinstance(value, str):
            keys = ", ".join(repr(k) for k in record) if isinstance(record, dict) else "none"
            raise UploadError(
                f"{filename!r}, line {line_no:,} has no text field {field_name!r} (its fields: "
                f"{keys}). Choose the field that holds the text.",
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
