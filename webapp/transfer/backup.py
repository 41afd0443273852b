"""``tokenforge backup`` and ``tokenforge restore``: the database and the corpus store in one file.

A backup is a ``.tar.gz`` holding ``manifest.json`` (format version, Alembic revision, row
counts), ``db/<table>.jsonl`` (every row of every table, as JSON, in dependency order) and
``corpora/<sha>.txt`` (every stored object). Rows are written portably rather than as a SQLite
file or a ``pg_dump``, so a backup taken from SQLite restores into PostgreSQL and back.
:func:`restore` refuses a database that already has rows (it restores into an empty instance,
whose presets it registers again afterwards), checks each corpus object's SHA-256 on the way in,
and resets PostgreSQL's id sequences. Names come back under the name rule of every other source
(``web/forms.py``: no NUL, control or bidi characters, at most ``MAX_NAME`` characters). Rows
and corpus objects stream in and out in bounded pieces, so neither command needs memory in
proportion to the data.

Every table is read in one transaction that sees a single moment of the database (see
:func:`_snapshot`), so a backup taken while people work holds no tokenizer without its job and
no row written halfway through; writers are not blocked meanwhile. Corpus files are
content-addressed and never change, so copying them after the rows is safe; one deleted in
between is listed in the manifest's ``missing_objects``.

Left out: scheduling and rotation (use cron).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import io
import json
import os
import tarfile
import tempfile
from pathlib import Path
from typing import IO, Any

from sqlalchemy import Connection, Engine, delete, func, select, text
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.types import DateTime

from webapp.corpora.storage import CorpusStore
from webapp.store import db
from webapp.store.models import Base, Corpus, UTCDateTime
from webapp.store.models import Tokenizer as TokenizerRow
from webapp.tokenizers import preset_install, preset_names, presets
from webapp.web.forms import MAX_NAME, clean_name, name_from_filename

FORMAT = 1
ROWS_AT_ONCE = 500  # rows read or inserted per batch, so no table is held in memory whole
COPY_CHUNK = 1 << 20  # bytes of a corpus object copied at a time


def _tables() -> list[Any]:
    """The tables a backup holds, in dependency order: all but transient ones (rate limits)."""
    return [t for t in Base.metadata.sorted_tables if t.info.get("backup", True)]


class BackupError(ValueError):
    """A backup that cannot be written or restored; the message says why."""


def _revision(engine: Engine) -> str | None:
    with engine.connect() as conn:
        return conn.execute(text("SELECT version_num FROM alembic_version")).scalar()


def _encode(value: Any) -> Any:
    if isinstance(value, dt.datetime):
        return value.isoformat()
    return value


def _add_member(archive: tarfile.TarFile, name: str, data: IO[bytes]) -> None:
    """Add ``data`` (a seekable file, read from where it stands to its end) as ``name``."""
    start = data.tell()
    info = tarfile.TarInfo(name)
    info.size = data.seek(0, os.SEEK_END) - start
    data.seek(start)
    info.mtime = int(dt.datetime.now().timestamp())
    archive.addfile(info, data)


def _snapshot(conn: Connection) -> Connection:
    """``conn``, set up so that all its reads see one consistent moment of the database.

    PostgreSQL: a REPEATABLE READ transaction (a snapshot taken at its first query). SQLite: an
    explicit read transaction; the Python driver would otherwise start none for SELECTs, so each
    table would be read at a different moment. In WAL mode (``store/db.py``) the reader sees the
    database as of its first read while writers go on committing.
    """
    if conn.dialect.name == "postgresql":
        return conn.execution_options(isolation_level="REPEATABLE READ")
    if conn.dialect.name == "sqlite":
        conn.exec_driver_sql("BEGIN")
    return conn


def backup(settings: dict[str, Any], out: Path) -> dict[str, int]:
    """Write a backup of the database and the corpus store to ``out``; return the row counts."""
    engine = db.make_engine(settings["DATABASE_URL"])
    store = CorpusStore(settings["CORPUS_DIR"])
    counts: dict[str, int] = {}
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(dir=out.parent, suffix=".part")
    os.close(fd)
    try:
        with tarfile.open(tmp_name, "w:gz") as archive:
            with engine.connect() as raw:
                conn = _snapshot(raw)
                shas: set[str] = set()
                for table in _tables():
                    # Rows stream through a temporary file: a table of large tokenizer documents
                    # never has to fit in memory.
                    with tempfile.TemporaryFile(dir=out.parent) as lines:
                        count = 0
                        query = select(table).order_by(*table.primary_key.columns).execution_options(
                            yield_per=ROWS_AT_ONCE)
                        for row in conn.execute(query).mappings():
                            lines.write(json.dumps({k: _encode(v) for k, v in row.items()}, ensure_ascii=False)
                                        .encode("utf-8") + b"\n")
                            count += 1
                        counts[table.name] = count
                        lines.seek(0)
                        _add_member(archive, f"db/{table.name}.jsonl", lines)
                shas.update(conn.execute(select(Corpus.sha256).distinct()).scalars())
            missing = []
            for sha in sorted(shas):
                path = store.path(sha)
                if path.is_file():
                    archive.add(str(path), arcname=f"corpora/{sha}.txt")
                else:
                    missing.append(sha)
            manifest = {"format": FORMAT, "revision": _revision(engine), "counts": counts,
                        "corpus_objects": len(shas) - len(missing), "missing_objects": missing,
                        "created_at": dt.datetime.now(dt.timezone.utc).isoformat()}
            _add_member(archive, "manifest.json", io.BytesIO(json.dumps(manifest, indent=2).encode("utf-8")))
        os.replace(tmp_name, out)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise
    finally:
        engine.dispose()
    return counts


def _decode_row(table: Any, row: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for column in table.columns:
        if column.name not in row:
            continue
        value = row[column.name]
        if value is not None and isinstance(column.type, (DateTime, UTCDateTime)):
            value = dt.datetime.fromisoformat(value)
        elif column.name in ("name", "original_filename") and isinstance(value, str):
            value = _restored_name(column.name, value)
        out[column.name] = value
    return out


def _restored_name(column: str, value: str) -> str:
    """A name from a backup under the name rule of every other source (``web/forms.py``): a
    backup of an older version, or an edited one, may carry NUL (which PostgreSQL refuses),
    control or bidi characters, or a name longer than the column."""
    if column == "original_filename":
        return name_from_filename(value, "upload") if value else ""
    return clean_name(value)[:MAX_NAME].strip() or "unnamed"


def restore(settings: dict[str, Any], source: Path) -> dict[str, int]:
    """Restore a backup into an empty database and corpus store; return the row counts.

    "Empty" allows the preset tokenizers (``tokenforge presets install`` on the new instance):
    they are set aside while the backup's rows go in, and registered again afterwards from the
    instance's own rank tables, with ids after the restored ones.
    """
    url = settings["DATABASE_URL"]
    try:
        archive = tarfile.open(source, "r:gz")
    except (OSError, tarfile.TarError) as exc:
        raise BackupError(f"{source} is not a Tokenforge backup (a .tar.gz): {exc}.") from None
    with archive:
        manifest = _read_json(archive, "manifest.json")
        if manifest.get("format") != FORMAT:
            raise BackupError(f"{source} has backup format {manifest.get('format')!r}; this version reads {FORMAT}.")
        db.upgrade(url, manifest.get("revision") or "head")
        engine = db.make_engine(url)
        try:
            with engine.connect() as conn:
                for table in _tables():
                    query = select(func.count()).select_from(table)
                    if table is TokenizerRow.__table__:
                        query = query.where(TokenizerRow.preset.is_(None))
                    if conn.execute(query).scalar():
                        raise BackupError(f"The database already has rows in {table.name!r}; restore "
                                          "into an empty instance (a new data folder or database).")
            counts = _restore_rows(engine, archive)
        finally:
            engine.dispose()
        _restore_objects(archive, CorpusStore(settings["CORPUS_DIR"]))
    db.upgrade(url)  # a backup from an older version gets the newer migrations
    _register_presets(settings)
    return counts


def _register_presets(settings: dict[str, Any]) -> None:
    """Register the instance's presets again, if it has their rank tables."""
    if not settings.get("DATA_DIR"):
        return
    folder = preset_names.installed_folder(settings["DATA_DIR"])
    if not folder.is_dir():
        return
    try:
        presets.register_at(settings["DATABASE_URL"], folder)
    except preset_install.PresetInstallError as exc:
        raise BackupError(f"The backup is restored, but the presets could not be registered again ({exc}); "
                          "run `tokenforge presets install`.") from None


def _read_json(archive: tarfile.TarFile, name: str) -> Any:
    try:
        member = archive.extractfile(name)
    except KeyError:
        member = None
    if member is None:
        raise BackupError(f"The backup has no {name}; it is incomplete or not a Tokenforge backup.")
    return json.loads(member.read().decode("utf-8"))


def _restore_rows(engine: Engine, archive: tarfile.TarFile) -> dict[str, int]:
    """Insert every table's rows, ``ROWS_AT_ONCE`` at a time, in one transaction."""
    counts: dict[str, int] = {}
    with engine.begin() as conn:
        conn.execute(delete(TokenizerRow).where(TokenizerRow.preset.is_not(None)))  # see restore()
        for table in _tables():
            try:
                member = archive.extractfile(f"db/{table.name}.jsonl")
            except KeyError:
                member = None
            count = 0
            batch: list[dict[str, Any]] = []
            try:
                for number, line in enumerate(member or (), 1):
                    if line.strip():
                        batch.append(_read_row(table, line, number))
                    if len(batch) == ROWS_AT_ONCE:
                        conn.execute(table.insert(), batch)
                        count, batch = count + len(batch), []
                if batch:
                    conn.execute(table.insert(), batch)
            except SQLAlchemyError as exc:  # the transaction rolls back: nothing is restored
                reason = str(getattr(exc, "orig", None) or exc).strip().splitlines()[0][:200]
                raise BackupError(f"The rows of {table.name!r} in the backup do not fit this database ({reason}); "
                                  "nothing was restored.") from None
            counts[table.name] = count + len(batch)
        if engine.dialect.name == "postgresql":  # ids were inserted explicitly; move sequences on
            for table in _tables():
                conn.execute(text(f"SELECT setval(pg_get_serial_sequence('{table.name}', 'id'), "
                                  f"COALESCE((SELECT MAX(id) FROM {table.name}), 0) + 1, false)"))
    return counts


def _read_row(table: Any, line: bytes, number: int) -> dict[str, Any]:
    """One row of ``db/<table>.jsonl``, or BackupError naming the file and line."""
    try:
        row = json.loads(line)
        if not isinstance(row, dict):
            raise ValueError("not a JSON object")
        return _decode_row(table, row)
    except (ValueError, TypeError) as exc:
        raise BackupError(f"db/{table.name}.jsonl, line {number}, is not a row of the table ({exc}); "
                          "the backup is damaged, and nothing was restored.") from None


def _restore_objects(archive: tarfile.TarFile, store: CorpusStore) -> None:
    for member in archive.getmembers():
        if not member.name.startswith("corpora/") or not member.isfile():
            continue
        sha = Path(member.name).stem
        try:
            target = store.path(sha)  # validates the name: 64 hex digits, nothing else (no ../)
        except ValueError:
            raise BackupError(f"The backup holds an unexpected file {member.name!r}; it was not restored.") from None
        data = archive.extractfile(member)
        if data is None:
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_suffix(".part")
        digest = hashlib.sha256()
        try:  # streamed: a corpus object may be larger than memory
            with tmp.open("wb") as out:
                while chunk := data.read(COPY_CHUNK):
                    digest.update(chunk)
                    out.write(chunk)
            if digest.hexdigest() != sha:
                raise BackupError(f"The corpus object {sha} in the backup is damaged (its SHA-256 differs).")
            os.replace(tmp, target)
        finally:
            tmp.unlink(missing_ok=True)
