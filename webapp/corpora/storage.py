"""The content-addressed corpus store, and streaming uploads into it.

:meth:`CorpusStore.ingest` reads an uploaded stream chunk by chunk (gunzipping, checking UTF-8,
extracting a JSONL field), writes the normalised UTF-8 text to a temp file while hashing it, and
renames it to ``objects/<sha[:2]>/<sha>.txt`` only when everything succeeded, so a failure at
any point leaves nothing behind. Identical content maps to the same object, which is how
duplicates are recognised. Only the cheap facts (characters, lines, preview) are counted on the
way; the per-word statistics would slow the upload down several times over, so they are left
to the "analyse" job (``analyse_child.py``). A team's :class:`Quota` is checked as the text is
written, so an upload (a gzip bomb too) stops where the team's stored bytes would pass it.
Errors are :class:`UploadError` with a plain-sentence message; the decoding steps
themselves (gzip, UTF-8, JSONL, size limits) are in ``upload_decoding.py``.
Database rows are the caller's business (``views.py``).

A process killed while ingesting (SIGKILL, power loss) cannot remove its temp file, so every
temp file is ``flock``-ed by its writer for as long as it is being written; :meth:`clean_tmp`,
which ``tokenforge serve`` runs at start-up, deletes the ones nobody holds a lock on. Locks die
with their process, so this needs no guess about how old "stale" is, and it is safe while other
web hosts sharing the store are uploading.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import stat
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from webapp.corpora.stats import TextFacts
from webapp.corpora.upload_decoding import (
    RawReader,
    UploadError,
    decode_chunks,
    detect_format,
    gunzip_chunks,
    jsonl_documents,
)
from webapp.web.filters import quoted
from webapp.web.shown import human_size


@dataclass
class StoredCorpus:
    """What ingesting one upload produced."""

    sha256: str
    format: str
    upload_bytes: int
    size_bytes: int
    stats: dict[str, Any] = field(default_factory=dict)  # corpus_stats.TextFacts: chars, lines, preview


@dataclass
class Quota:
    """A team's stored-corpus bytes: its quota (``TEAM_CORPUS_BYTES``) and what it uses."""

    total: int
    used: int

    @property
    def left(self) -> int:
        return max(0, self.total - self.used)

    def refusal(self, filename: str) -> UploadError:
        """The error for ``filename``, which would take the team past its quota."""
        return UploadError(
            f"{quoted(filename)} would take your team's corpora past its quota of {human_size(self.total)} "
            f"({human_size(self.used)} are in use; TOKENFORGE_TEAM_CORPUS_BYTES raises it). Nothing was stored "
            "for it; delete corpora you no longer need, or ask the server's admin for more room.",
            kind="quota",
        )


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
        quota: Quota | None = None,
    ) -> StoredCorpus:
        """Stream an upload into the store; raise UploadError and keep nothing if it is bad or
        would pass ``quota`` (counted on the stored, decompressed text)."""
        fmt, gzipped = detect_format(filename)
        fd, tmp = self._locked_tmp()
        reader = RawReader(stream, filename, max_bytes)
        try:
            digest = hashlib.sha256()
            facts = TextFacts()  # the expensive statistics are the "analyse" job's
            size = 0
            # closefd=False: the lock (on ``fd``) must last until the file has its final name.
            with os.fdopen(fd, "wb", closefd=False) as out:
                raw: Iterator[bytes] = iter(reader)
                if gzipped:
                    raw = gunzip_chunks(raw, filename, max_bytes)
                text = decode_chunks(raw, filename, replace_errors)
                if fmt == "jsonl":
                    text = jsonl_documents(text, filename, text_field)
                for chunk in text:
                    data = chunk.encode("utf-8")
                    if quota is not None and size + len(data) > quota.left:
                        raise quota.refusal(filename)
                    out.write(data)
                    digest.update(data)
                    size += len(data)
                    facts.feed(chunk)
                out.flush()
                os.fsync(out.fileno())
            if size == 0:
                raise UploadError(
                    f"{quoted(filename)} is empty"
                    + (f"; no line has a {quoted(text_field)} field with text." if fmt == "jsonl" else ".")
                    + " Upload a file that contains some text.",
                    kind="empty",
                )
            sha = digest.hexdigest()
            final = self.path(sha)
            final.parent.mkdir(parents=True, exist_ok=True)
            os.replace(tmp, final)  # atomic: readers see the whole object or none
            return StoredCorpus(sha, fmt, reader.count, size, facts.finish())
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
