"""``tokenforge backup`` and ``restore``: everything comes back in an empty instance, nothing is
restored over existing data, damaged backups are refused, and a backup taken during writes is
one consistent moment (SQLite and, when configured, PostgreSQL)."""

from __future__ import annotations

import datetime as dt
import io
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import IO

import pytest
from alembic.script import ScriptDirectory
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from tests.live import REPO
from tests.webapp.conftest import PASSWORD, make_app
from tests.webapp.playground_samples import byte_bpe, store
from webapp.store import db
from webapp.store.models import ApiKey, Corpus, ShareLink, Tokenizer, User
from webapp.transfer import backup as backup_module
from webapp.transfer.backup import BackupError, backup, restore


def fill(app: Flask, client: FlaskClient) -> dict[str, object]:
    client.post("/corpora/", data={"files": [(io.BytesIO("naïve café\n".encode()), "a.txt"),
                                             (io.BytesIO(b"second corpus"), "b.txt")]})
    tokenizer_id = store(app, byte_bpe("kept-bpe"))
    client.post(f"/tokenizers/{tokenizer_id}/share", data={})
    client.post("/account/keys", data={"name": "CI"})
    with app.app_context():
        session = db.get_session()
        link = session.scalar(select(ShareLink))
        return {"link": link.token, "tokenizer_id": tokenizer_id,
                "shas": sorted(c.sha256 for c in session.scalars(select(Corpus))),
                "created": [c.created_at for c in session.scalars(select(Corpus).order_by(Corpus.id))]}


def test_backup_then_restore_into_an_empty_instance(app: Flask, client: FlaskClient, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(backup_module, "ROWS_AT_ONCE", 1)  # every row and corpus byte goes in pieces
    monkeypatch.setattr(backup_module, "COPY_CHUNK", 3)
    facts = fill(app, client)
    archive = tmp_path / "out" / "backup.tar.gz"
    counts = backup(dict(app.config), archive)
    assert (counts["corpora"], counts["tokenizers"], counts["users"], counts["share_links"]) == (2, 1, 1, 1)

    empty = make_app(tmp_path / "second", f"sqlite:///{tmp_path / 'second.sqlite3'}", seed=False)
    restore(dict(empty.config), archive)
    with empty.app_context():
        session = db.get_session()
        assert [c.name for c in session.scalars(select(Corpus).order_by(Corpus.id))] == ["a.txt", "b.txt"]
        assert session.scalar(select(User)).email == "alice@example.com"
        assert session.scalar(select(Tokenizer)).name == "kept-bpe"
        assert session.scalar(select(ApiKey)).name == "CI"
        created = [c.created_at for c in session.scalars(select(Corpus).order_by(Corpus.id))]
        assert created == facts["created"]  # the same instants, not the time of the restore
        assert all(when.utcoffset() == dt.timedelta(0) for when in created)
    for sha in facts["shas"]:
        assert Path(empty.config["CORPUS_DIR"], "objects", sha[:2], f"{sha}.txt").is_file()
    visitor = empty.test_client()
    assert visitor.post("/login", data={"email": "alice@example.com", "password": PASSWORD}).status_code == 303
    assert "naïve café" in visitor.get("/corpora/1").get_data(as_text=True)
    anon = empty.test_client()
    assert anon.get(f"/s/{facts['link']}").status_code == 200  # share links survive too
    encoded = anon.post(f"/tokenizers/{facts['tokenizer_id']}/encode", data={"text": "the"})
    assert encoded.status_code == 200
    with pytest.raises(BackupError, match="already has rows"):
        restore(dict(empty.config), archive)
    db.get_engine(empty).dispose()


def test_damaged_backups_are_refused(app: Flask, client: FlaskClient, tmp_path: Path) -> None:
    fill(app, client)
    good = tmp_path / "good.tar.gz"
    backup(dict(app.config), good)
    bad = tmp_path / "bad.tar.gz"
    with tarfile.open(good) as src, tarfile.open(bad, "w:gz") as dst:
        for member in src.getmembers():
            data = src.extractfile(member).read()
            if member.name.startswith("corpora/"):
                data = b"tampered"
            member.size = len(data)
            dst.addfile(member, io.BytesIO(data))
    target = make_app(tmp_path / "t", f"sqlite:///{tmp_path / 't.sqlite3'}", seed=False)
    with pytest.raises(BackupError, match="damaged"):
        restore(dict(target.config), bad)
    for name, change, message in [
        ("db/users.jsonl", lambda data: b"{not json\n", r"db/users\.jsonl, line 1, is not a row"),
        ("db/corpora.jsonl", lambda data: b"[1, 2]\n", r"db/corpora\.jsonl, line 1, is not a row"),
        ("db/teams.jsonl", lambda data: data + data, r"The rows of 'teams' in the backup do not fit"),
    ]:
        damaged = tmp_path / f"{name.replace('/', '-')}.tar.gz"
        with tarfile.open(good) as src, tarfile.open(damaged, "w:gz") as dst:
            for member in src.getmembers():
                data = src.extractfile(member).read()
                data = change(data) if member.name == name else data
                member.size = len(data)
                dst.addfile(member, io.BytesIO(data))
        fresh = make_app(tmp_path / name, f"sqlite:///{tmp_path / (name.replace('/', '-') + '.sqlite3')}", seed=False)
        with pytest.raises(BackupError, match=message):
            restore(dict(fresh.config), damaged)
        with fresh.app_context():  # nothing was restored
            assert db.get_session().scalar(select(func.count()).select_from(User)) == 0
        db.get_engine(fresh).dispose()
    not_tar = tmp_path / "x.tar.gz"
    not_tar.write_bytes(b"hello")
    with pytest.raises(BackupError, match="not a Tokenforge backup"):
        restore(dict(target.config), not_tar)
    db.get_engine(target).dispose()


def test_the_commands(app: Flask, client: FlaskClient, tmp_path: Path) -> None:
    fill(app, client)
    archive = tmp_path / "cli.tar.gz"
    env = {**os.environ, "TOKENFORGE_DATA_DIR": app.config["DATA_DIR"], "DATABASE_URL": app.config["DATABASE_URL"],
           "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-m", "webapp.cli", "backup", str(archive)], env=env,
                          capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "Backed up 2 corpora, 1 tokenizers" in done.stdout
    manifest = json.loads(tarfile.open(archive).extractfile("manifest.json").read())
    assert manifest["revision"] == ScriptDirectory(str(REPO / "migrations")).get_current_head()
    assert manifest["corpus_objects"] == 2
    env2 = {**env, "TOKENFORGE_DATA_DIR": str(tmp_path / "restored")}
    env2.pop("DATABASE_URL")
    done = subprocess.run([sys.executable, "-m", "webapp.cli", "restore", str(archive)], env=env2,
                          capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert done.returncode == 0, done.stderr
    again = subprocess.run([sys.executable, "-m", "webapp.cli", "restore", str(archive)], env=env2,
                           capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert again.returncode == 1 and "restore into an empty instance" in again.stderr


def test_a_backup_is_one_moment_of_the_database(db_app: Flask, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A row committed while the backup is half-way through its tables is in none of them."""
    writer = db.make_engine(db_app.config["DATABASE_URL"])
    add_member = backup_module._add_member
    late = Corpus(team_id=1, name="late.txt", sha256="0" * 64, format="txt", size_bytes=1, stats={})

    def add_then_write(archive: tarfile.TarFile, name: str, data: IO[bytes]) -> None:
        add_member(archive, name, data)
        if name == "db/teams.jsonl":  # the first table is read; corpora is still to come
            with Session(writer) as session:
                session.add(late)
                session.commit()  # writers are not blocked by the backup's snapshot

    monkeypatch.setattr(backup_module, "_add_member", add_then_write)
    archive = tmp_path / "during-writes.tar.gz"
    try:
        counts = backup(dict(db_app.config), archive)
        with Session(writer) as session:
            assert session.scalar(select(func.count()).select_from(Corpus)) == 1  # the write went through
    finally:
        writer.dispose()
    assert (counts["teams"], counts["corpora"]) == (1, 0)
    manifest = json.loads(tarfile.open(archive).extractfile("manifest.json").read())  # type: ignore[union-attr]
    assert manifest["missing_objects"] == [] and manifest["counts"]["corpora"] == 0
