"""Fetching the presets' rank tables: one pinned npm tarball, checked by hash, unpacked atomically.

OpenAI's rank files are not ours to ship, and the app never downloads at request time, so an
administrator fetches them once (``tokenforge presets install``). They come from the npm package
``js-tiktoken`` at a pinned version. Both the tarball and every table taken from it must match a
SHA-256 written here: a registry, mirror or proxy that serves other bytes is refused, and so is a
table edited after installation (it is checked again each time it is read). The download is
bounded in size and time. The tables are written to a temporary folder beside the destination
and renamed into place, so an interrupted or refused install leaves the previous one (or none)
untouched, never half of one.

The open models' files (``open_install.py``) use the same download and hash check, and move into
the same folder in the same rename (:func:`write_tables`).

Left out: turning tables into tokenizers and database rows, and the order of a whole install
(``presets.py``), the table format (``engine/formats/js_tiktoken.py``).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import tarfile
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import BinaryIO

from engine import FormatError
from engine.formats.js_tiktoken import RankTable, parse_rank_table

PACKAGE = "js-tiktoken"
VERSION = "1.0.21"
TARBALL_URL = f"https://registry.npmjs.org/{PACKAGE}/-/{PACKAGE}-{VERSION}.tgz"
TARBALL_SHA256 = "3b1f24b185565ca9a8d8f51466dfc4f99d67f1f05bc009258710ddb7a8d810fa"
#: encoding name -> SHA-256 of ``package/dist/ranks/<name>.js`` in that tarball
TABLE_SHA256 = {
    "r50k_base": "1895031f2ae2257e4e0c7df144cf381b8643001e9957794e4905dba93dec0969",
    "p50k_base": "197f696fd9bac22cc36abd75a1a4b4dc9c30c687d1865d82cce40371f8f42185",
    "cl100k_base": "0e301a9c7f82e2353bc484be0149b2fb8a6db85d516620a34d06e587efe090bd",
    "o200k_base": "a9e8a0c1f332c58f1a9cef2f8d7be59b31bb4b42531a3a0a64d9ad3b3d19033b",
}
MAX_DOWNLOAD_BYTES = 32 * 1024**2  # the pinned tarball has 10.2 MB
MAX_TABLE_BYTES = 8 * 1024**2  # the largest table (o200k) has 2.3 MB
DOWNLOAD_SECONDS = 300.0  # the whole download, however slowly the bytes trickle in
SOCKET_SECONDS = 30.0  # one read that gets no byte
CHUNK = 64 * 1024
SOURCE_FILE = "SOURCE.json"  # where the tables came from, for people reading the folder
OPEN_FOLDER = "open"  # the open models' files: <folder>/open/<name>/tokenizer.json (open_install.py)


class PresetInstallError(Exception):
    """The tables could not be fetched, or are not the pinned bytes; nothing was installed."""


def table_path(folder: Path, name: str) -> Path:
    """Where the table of the encoding ``name`` lives in an installed folder."""
    return folder / f"{name}.js"


def check_hash(data: bytes, expected: str, what: str) -> None:
    """Refuse ``data`` unless its SHA-256 is ``expected``."""
    check_digest(hashlib.sha256(data).hexdigest(), expected, what)


def check_digest(actual: str, expected: str, what: str, *, kind: str = "SHA-256") -> None:
    """Refuse a file whose digest ``actual`` is not the pinned ``expected``, naming both."""
    if actual != expected:
        raise PresetInstallError(
            f"{what} has {kind} {actual}, not the pinned {expected}; it is refused (a changed or "
            "corrupted file, or a registry serving other bytes). Nothing was installed.")


def stream(url: str, sink: BinaryIO, *, max_bytes: int, seconds: float = DOWNLOAD_SECONDS) -> int:
    """Copy the body at ``url`` into ``sink`` in chunks, bounded in size and time; the bytes copied."""
    deadline = time.monotonic() + seconds
    size = 0
    try:
        with urllib.request.urlopen(url, timeout=SOCKET_SECONDS) as response:  # noqa: S310 (a pinned https URL)
            declared = response.headers.get("Content-Length")
            if declared and declared.isdigit() and int(declared) > max_bytes:
                raise PresetInstallError(f"{url} is {int(declared):,} bytes, over the {max_bytes:,} accepted.")
            while chunk := response.read(CHUNK):
                size += len(chunk)
                if size > max_bytes:
                    raise PresetInstallError(f"{url} sent more than the {max_bytes:,} bytes accepted.")
                if time.monotonic() > deadline:
                    raise PresetInstallError(f"Downloading {url} took more than {seconds:g} seconds; "
                                             "try again, or fetch the files elsewhere and use --from.")
                sink.write(chunk)
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", None) or exc
        raise PresetInstallError(f"Could not download {url}: {reason}. Check this machine's access to "
                                 "registry.npmjs.org, or fetch the files elsewhere and use --from.") from None
    return size


def download(url: str = TARBALL_URL, *, expected_sha256: str = TARBALL_SHA256,
             max_bytes: int = MAX_DOWNLOAD_BYTES, seconds: float = DOWNLOAD_SECONDS) -> bytes:
    """The tarball's bytes, checked against ``expected_sha256``; bounded in size and time."""
    buffer = io.BytesIO()
    stream(url, buffer, max_bytes=max_bytes, seconds=seconds)
    data = buffer.getvalue()
    check_hash(data, expected_sha256, f"The download of {url}")
    return data


def tables_from_tarball(data: bytes, hashes: dict[str, str] | None = None) -> dict[str, bytes]:
    """Each pinned table's bytes, taken from a tarball (already checked by hash) and checked."""
    hashes = TABLE_SHA256 if hashes is None else hashes
    tables: dict[str, bytes] = {}
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as archive:
            for name, expected in hashes.items():
                member_name = f"package/dist/ranks/{name}.js"
                try:
                    member = archive.getmember(member_name)
                except KeyError:
                    raise PresetInstallError(f"The package has no {member_name}.") from None
                if not member.isfile() or member.size > MAX_TABLE_BYTES:
                    raise PresetInstallError(f"{member_name} is not a regular file of at most "
                                             f"{MAX_TABLE_BYTES:,} bytes.")
                handle = archive.extractfile(member)
                table = handle.read(MAX_TABLE_BYTES + 1) if handle is not None else b""
                check_hash(table, expected, member_name)
                tables[name] = table
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise PresetInstallError(f"The package is not a readable .tgz ({exc}).") from None
    return tables


def read_tables(folder: Path, hashes: dict[str, str] | None = None) -> dict[str, bytes]:
    """Each pinned table's bytes from an installed folder, checked by hash."""
    hashes = TABLE_SHA256 if hashes is None else hashes
    tables: dict[str, bytes] = {}
    for name, expected in hashes.items():
        tables[name] = read_pinned(table_path(folder, name), expected, limit=MAX_TABLE_BYTES,
                                   if_missing="write the tables with `tokenforge presets install --dir FOLDER` first")
    return tables


def read_pinned(path: Path, expected_sha256: str, *, limit: int, if_missing: str) -> bytes:
    """An installed file's bytes, at most ``limit`` of them and checked by hash; a missing,
    oversized, unreadable or changed file raises PresetInstallError (``if_missing`` is the advice)."""
    try:
        if path.stat().st_size > limit:
            raise PresetInstallError(f"{path} is larger than {limit:,} bytes.")
        data = path.read_bytes()
    except FileNotFoundError:
        raise PresetInstallError(f"{path} is missing; {if_missing}.") from None
    except OSError as exc:
        raise PresetInstallError(f"Could not read {path}: {exc.strerror or exc}.") from None
    check_hash(data, expected_sha256, str(path))
    return data


def read_table(folder: Path, name: str) -> RankTable:
    """The parsed table of one encoding from an installed folder, checked by hash first."""
    if name not in TABLE_SHA256:
        raise PresetInstallError(f"There is no preset {name!r}; the presets are {', '.join(TABLE_SHA256)}.")
    data = read_tables(folder, {name: TABLE_SHA256[name]})[name]
    try:
        return parse_rank_table(data.decode("utf-8"), source=table_path(folder, name).name)
    except (UnicodeDecodeError, FormatError) as exc:  # cannot happen with the pinned bytes; kept honest
        raise PresetInstallError(f"{table_path(folder, name)} is unreadable: {exc}") from None


def write_tables(tables: dict[str, bytes], folder: Path, *, open_models: Path | None = None) -> Path:
    """Put ``tables`` in ``folder`` all at once: a sibling temp folder renamed into place.

    ``open_models``, a verified folder staged beside ``folder`` (``open_install.stage``), moves in
    with them as ``folder/open``, so the tables and the open models' files are replaced together.
    """
    folder = folder.resolve()
    folder.parent.mkdir(parents=True, exist_ok=True)
    temp = Path(tempfile.mkdtemp(prefix=f".{folder.name}.new-", dir=folder.parent))
    old: Path | None = None
    try:
        for name, data in tables.items():
            table_path(temp, name).write_bytes(data)
        source = {"package": PACKAGE, "version": VERSION, "tarball": TARBALL_URL, "tarball_sha256": TARBALL_SHA256,
                  "tables_sha256": {name: TABLE_SHA256.get(name) for name in tables}}
        (temp / SOURCE_FILE).write_text(json.dumps(source, indent=2) + "\n", encoding="utf-8")
        if open_models is not None:
            os.rename(open_models, temp / OPEN_FOLDER)
        os.chmod(temp, 0o755)
        if folder.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{folder.name}.old-", dir=folder.parent))
            os.rename(folder, old / folder.name)
        os.rename(temp, folder)
    except OSError as exc:
        if old is not None and not folder.exists():
            os.rename(old / folder.name, folder)  # put the previous install back
        raise PresetInstallError(f"Could not write the tables to {folder}: {exc.strerror or exc}.") from None
    finally:
        shutil.rmtree(temp, ignore_errors=True)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    return folder
