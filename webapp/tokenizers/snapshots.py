"""Snapshots of large parsed tokenizers on disk, so that a cold process loads them in a second.

A web process parses a stored ``tokenizer.json`` on its first use (``loaded.py``); for the open
models that took 2-4 s (Gemma 3's document is 33 MB), on every process start and after every
eviction from the byte-budgeted cache. ``engine/snapshot.py`` writes what the parse produced as
arrays; this module keeps those files in ``<data dir>/snapshots``, named by the SHA-256 of the
document they came from, so a snapshot can only ever stand for the exact text it was made from
(rows are immutable; a changed or new document has another name).

- Only documents of at least :data:`MIN_DOCUMENT_CHARS` get one: smaller ones parse in a few
  hundred milliseconds, and their snapshots would only take disk.
- A snapshot is written after the parse that needed it, to a temporary file renamed into place,
  so two processes writing the same one, or a crash mid-write, never leave half a file.
- The folder is bounded by ``TOKENFORGE_SNAPSHOT_BYTES``: after each write the least recently
  used files (reading one refreshes its time) are removed until the rest fit. 0 turns
  snapshots off.
- Anything wrong with a snapshot (unreadable, another version, a full disk when writing) is
  logged and the document is parsed as if there were none: a snapshot is never needed.

``tokenforge presets install`` writes the presets' snapshots (``presets.py``), so even the first
request of a fresh server finds one. A command that names a preset (``-t gemma3``) goes through
the same folder (``preset_names.py``): :func:`cached` names a snapshot by any text that stands for
everything the tokenizer is made from, there an installed file's text, or an encoding's pinned
table hash and catalogue entry.
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from engine import SNAPSHOT_VERSION, SnapshotError, Tokenizer, load_snapshot, snapshot_of

MIN_DOCUMENT_CHARS = 2_000_000  # cl100k's 4 MB document parses in ~0.8 s; GPT-2's 2 MB in ~0.4 s
WRITING = ".writing-"  # the prefix of a snapshot being written
ABANDONED_SECONDS = 3600  # a partial file this old was left by a killed process
log = logging.getLogger(__name__)


def _settings(config: Mapping[str, Any] | None) -> Mapping[str, Any]:
    """``config``, or the app's (Flask is imported only then: a command that names a preset
    needs none of it, ``preset_names.py``)."""
    if config is not None:
        return config
    from flask import current_app

    return current_app.config


def snapshot_folder(config: Mapping[str, Any] | None = None) -> Path | None:
    """Where snapshots live (``config``: the app's, by default), or None when
    ``TOKENFORGE_SNAPSHOT_BYTES`` is 0."""
    config = _settings(config)
    if not config.get("SNAPSHOT_BYTES"):
        return None
    return Path(config["DATA_DIR"]) / "snapshots"


def _path(source: str, config: Mapping[str, Any]) -> Path | None:
    """Where the snapshot made from ``source`` lives, or None when snapshots are off."""
    folder = snapshot_folder(config)
    if folder is None:
        return None
    digest = hashlib.sha256(source.encode("utf-8", "surrogatepass")).hexdigest()
    return folder / f"{digest}.v{SNAPSHOT_VERSION}.npz"


def parse(document: str) -> Tokenizer:
    """The tokenizer of a stored document: from its snapshot when one exists, else parsed (and
    its snapshot written when the document is large). Malformed documents raise as
    ``Tokenizer.from_json`` does."""
    if len(document) < MIN_DOCUMENT_CHARS:
        return Tokenizer.from_json(document)
    return cached(document, lambda: Tokenizer.from_json(document))


def cached(source: str, make: Callable[[], Tokenizer], config: Mapping[str, Any] | None = None) -> Tokenizer:
    """The tokenizer ``make`` makes from ``source`` (a document, or the text that names everything
    a preset is built from): loaded from the snapshot named by ``source`` when one exists, else
    made, and its snapshot written."""
    config = _settings(config)
    path = _path(source, config)
    if path is None:
        return make()
    try:
        with path.open("rb") as file:
            tokenizer = load_snapshot(file)
        os.utime(path)  # recently used: pruned last
        return tokenizer
    except FileNotFoundError:
        pass
    except (SnapshotError, OSError) as exc:
        log.warning("Ignoring the tokenizer snapshot %s: %s", path.name, exc)
    tokenizer = make()
    save(tokenizer, path, int(config["SNAPSHOT_BYTES"]))
    return tokenizer


def write_for(document: str, config: Mapping[str, Any]) -> bool:
    """Parse ``document`` and write its snapshot if it should have one (a command's settings in
    ``config``); whether one now exists."""
    if len(document) < MIN_DOCUMENT_CHARS:
        return False
    path = _path(document, config)
    if path is None:
        return False
    return path.exists() or save(Tokenizer.from_json(document), path, int(config["SNAPSHOT_BYTES"]))


def save(tokenizer: Tokenizer, path: Path, budget: int) -> bool:
    """Write the tokenizer's snapshot at ``path`` atomically, then prune the folder; whether it was
    written (a model without a snapshot form, or a write error, gives False and a log line)."""
    data = snapshot_of(tokenizer)
    if data is None:
        return False
    partial: Path | None = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path.parent, prefix=WRITING, delete=False) as file:
            partial = Path(file.name)
            file.write(data)
        os.replace(partial, path)
    except OSError as exc:
        log.warning("Could not write the tokenizer snapshot %s: %s", path.name, exc)
        if partial is not None:
            partial.unlink(missing_ok=True)
        return False
    prune(path.parent, budget, keep=path)
    return True


def prune(folder: Path, budget: int, *, keep: Path | None = None) -> None:
    """Remove the least recently used snapshots until the folder holds at most ``budget`` bytes
    (``keep``, the one just written, stays even if it alone is over)."""
    entries, now = [], time.time()
    for path in folder.iterdir():
        try:
            stat = path.stat()
        except OSError:  # removed by another process meanwhile
            continue
        if path.name.startswith(WRITING):  # a write in progress, or left by a killed process
            if now - stat.st_mtime > ABANDONED_SECONDS:
                path.unlink(missing_ok=True)
            continue
        entries.append((stat.st_mtime, stat.st_size, path))
    total = sum(size for _, size, _ in entries)
    for _, size, path in sorted(entries, key=lambda entry: entry[0]):
        if total <= budget:
            break
        if path == keep:
            continue
        path.unlink(missing_ok=True)
        total -= size
