"""The schema: migrations match the models (both ways), SQLite pragmas, UTC timestamps."""

from __future__ import annotations

import base64
import datetime as dt
import json
from pathlib import Path

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from flask import Flask
from sqlalchemy import inspect, text

from webapp.corpora.job_kinds import enqueue_analysis
from webapp.jobs import queue as jobs
from webapp.store import db
from webapp.store.models import Base, Corpus, stored_bytes


def test_upgrade_head_leaves_nothing_for_autogenerate(db_app: Flask) -> None:
    with db.get_engine(db_app).connect() as conn:
        context = MigrationContext.configure(conn, opts={"compare_type": True})
        assert compare_metadata(context, Base.metadata) == []


def test_downgrade_base_removes_every_table(db_app: Flask) -> None:
    url = db_app.config["DATABASE_URL"]
    engine = db.get_engine(db_app)
    assert {"corpora", "jobs", "tokenizers"} <= set(inspect(engine).get_table_names())
    engine.dispose()
    db.downgrade(url, "base")
    assert set(inspect(engine).get_table_names()) == {"alembic_version"}
    engine.dispose()
    db.upgrade(url)  # and back up again, cleanly
    assert {"corpora", "jobs", "tokenizers"} <= set(inspect(engine).get_table_names())


def test_sqlite_connections_use_wal_busy_timeout_and_foreign_keys(app: Flask) -> None:
    with db.get_engine(app).connect() as conn:
        assert conn.execute(text("PRAGMA journal_mode")).scalar() == "wal"
        assert conn.execute(text("PRAGMA foreign_keys")).scalar() == 1
        assert conn.execute(text("PRAGMA busy_timeout")).scalar() == db.SQLITE_BUSY_TIMEOUT_MS


def test_timestamps_come_back_utc_aware(db_app: Flask) -> None:
    with db_app.app_context():
        session = db.get_session()
        corpus = Corpus(team_id=1, name="c", sha256="0" * 64, format="txt", stats={"chars": 1})
        session.add(corpus)
        session.commit()
        session.expire_all()
        loaded = session.get(Corpus, corpus.id)
        assert loaded is not None
        assert loaded.created_at.tzinfo is not None
        assert loaded.created_at.utcoffset() == dt.timedelta(0)
        assert loaded.stats == {"chars": 1}


def test_downgrading_0003_drops_analysis_jobs_and_keeps_training_jobs(db_app: Flask) -> None:
    url = db_app.config["DATABASE_URL"]
    with db_app.app_context():
        session = db.get_session()
        corpus = Corpus(team_id=1, name="c", sha256="0" * 64, format="txt", stats={"chars": 1})
        session.add(corpus)
        session.flush()
        enqueue_analysis(session, corpus)
        jobs.enqueue(session, team_id=1, name="t", algorithm="bpe", options={}, corpus_ids=[corpus.id])
    db.get_engine(db_app).dispose()
    db.downgrade(url, "0002")
    engine = db.make_engine(url)
    try:
        with engine.connect() as conn:
            assert conn.execute(text("SELECT name FROM jobs")).scalars().all() == ["t"]
            assert "analysis_job_id" not in {c["name"] for c in inspect(conn).get_columns("corpora")}
    finally:
        engine.dispose()
    db.upgrade(url)
    with db.get_engine(db_app).connect() as conn:
        assert conn.execute(text("SELECT kind FROM jobs")).scalars().all() == ["train"]


def test_upgrading_keeps_share_links_and_references_to_jobs(db_app: Flask) -> None:
    """Batch migrations copy a table and drop the old one; with SQLite's foreign keys on, that drop
    cascaded to every share link and cleared each tokenizer's job (migrations/env.py)."""
    url = db_app.config["DATABASE_URL"]
    db.get_engine(db_app).dispose()
    db.downgrade(url, "0001")
    _execute(url, "INSERT INTO jobs (id, name, status, algorithm, options, corpus_ids, attempts, progress_current, "
                  "progress_total, cancel_requested, created_at) "
                  "VALUES (7, 'j', 'succeeded', 'bpe', '{}', '[]', 1, 0, 0, false, '2026-11-01')",
             "INSERT INTO tokenizers (id, name, algorithm, source, tokenizer_json, config, stats, vocab_size, job_id, "
             "created_at) VALUES (5, 't', 'bpe', 'trained', '{}', '{}', '{}', 300, 7, '2026-11-01')")
    db.upgrade(url, "0002")  # the first team, and share links
    _execute(url, "INSERT INTO share_links (id, tokenizer_id, token, created_at) VALUES (3, 5, 'tok', '2026-11-02')")
    db.upgrade(url)  # 0005 and 0007 copy the tokenizers table, 0003 the jobs table
    with db.get_engine(db_app).connect() as conn:
        assert conn.execute(text("SELECT tokenizer_id FROM share_links")).scalars().all() == [5]
        assert conn.execute(text("SELECT job_id FROM tokenizers")).scalars().all() == [7]
        if conn.dialect.name == "sqlite":
            assert conn.execute(text("PRAGMA foreign_keys")).scalar() == 1


def test_sqlite_keeps_the_large_tokenizer_columns_last(db_app: Flask) -> None:
    """A column after a multi-megabyte value costs a walk over its overflow pages (migration 0007)."""
    engine = db.get_engine(db_app)
    if engine.dialect.name != "sqlite":
        return  # PostgreSQL stores large values out of line
    columns = [column["name"] for column in inspect(engine).get_columns("tokenizers")]
    assert columns[-3:] == ["size_bytes", "tokenizer_json", "stats"]  # 0008 adds its column before them


def _execute(url: str, *statements: str) -> None:
    """Run ``statements`` in one transaction on a connection of their own (between migrations)."""
    engine = db.make_engine(url)
    try:
        with engine.begin() as conn:
            for statement in statements:
                conn.execute(text(statement))
    finally:
        engine.dispose()


def test_upgrading_gives_each_tokenizer_its_stored_size(db_app: Flask) -> None:
    """Migration 0008 fills ``size_bytes`` of the rows it finds with what a new row would get."""
    url = db_app.config["DATABASE_URL"]
    db.get_engine(db_app).dispose()
    db.downgrade(url, "0007")
    document, stats, config = '{"model": "é"}', {"merges": [[1, 2, 3]]}, {"import": {"kind": "tokenizer_json"}}
    _execute(url, "INSERT INTO tokenizers (id, team_id, name, algorithm, source, tokenizer_json, config, stats, "
                  f"vocab_size, created_at) VALUES (5, 1, 't', 'bpe', 'imported', '{document}', "
                  f"'{json.dumps(config)}', '{json.dumps(stats)}', 300, '2026-11-01')")
    db.upgrade(url)
    with db.get_engine(db_app).connect() as conn:
        assert conn.execute(text("SELECT size_bytes FROM tokenizers")).scalars().all() == [
            stored_bytes(document, stats, config)]


def test_upgrading_keeps_the_pieces_of_stored_split_patterns(db_app: Flask) -> None:
    """Migration 0009: a document stored with the GPT-4 pattern as the engine wrote it before
    (tiktoken's spelling, which Onig reads as any run of digits) is rewritten so that it still
    splits "1234" in three and one; a pattern both read alike is left alone, byte for byte."""
    from engine import Tokenizer
    from engine.onig import to_onig
    from engine.pretokenizers import GPT4_PATTERN
    from tests.engine.tiny_bpe import tiny

    url = db_app.config["DATABASE_URL"]
    db.get_engine(db_app).dispose()
    db.downgrade(url, "0008")
    written = tiny("gpt4").to_json()
    old = written.replace(json.dumps(to_onig(GPT4_PATTERN), ensure_ascii=False)[1:-1],
                          json.dumps(GPT4_PATTERN, ensure_ascii=False)[1:-1])
    assert old != written
    other = tiny("o200k").to_json()  # o200k's pattern means the same to both
    engine = db.make_engine(url)
    with engine.begin() as conn:
        for row_id, document in ((7, old), (8, other)):
            conn.execute(text("INSERT INTO tokenizers (id, team_id, name, algorithm, source, tokenizer_json, config, "
                              "stats, vocab_size, created_at, size_bytes) VALUES (:id, 1, 't', 'bpe', 'trained', :doc, "
                              "'{}', '{}', 300, '2026-11-01', :size)"),
                         {"id": row_id, "doc": document, "size": 1000 + len(document.encode())})
    engine.dispose()
    db.upgrade(url)
    with db.get_engine(db_app).connect() as conn:
        rows = dict(conn.execute(text("SELECT id, tokenizer_json FROM tokenizers WHERE id IN (7, 8)")).all())
        sizes = dict(conn.execute(text("SELECT id, size_bytes FROM tokenizers WHERE id IN (7, 8)")).all())
    assert rows == {7: written, 8: other} and sizes == {7: 1000 + len(written.encode()), 8: 1000 + len(other.encode())}
    assert Tokenizer.from_json(rows[7]).encode("x = 1234;") == tiny("gpt4").encode("x = 1234;")


def test_upgrading_gives_sentencepiece_bpe_rows_their_model(db_app: Flask, tmp_path: Path) -> None:
    """Migration 0010: a sentencepiece-style BPE stored before the row kept its .model gets the
    very .model its training writes; a byte-level BPE and a row that has one are left alone."""
    from engine.formats.spm_model import dump_spm_model
    from engine.trainers import train

    corpus = tmp_path / "corpus.txt"
    corpus.write_text("the cat sat on the mat 2024\nÜnïcödé naïve café 日本語\n" * 50, encoding="utf-8")
    result = train("bpe", [corpus], {"level": "spm", "vocab_size": 330})
    options = result.stats["options"]  # as the job stores them
    assert options["level"] == "spm"
    document = result.tokenizer.to_json()
    byte_level = train("bpe", [corpus], {"vocab_size": 300})
    url = db_app.config["DATABASE_URL"]
    db.get_engine(db_app).dispose()
    db.downgrade(url, "0009")
    rows = {4: (document, {"algorithm": "bpe", "options": options, "corpus_ids": [1]}),
            5: (byte_level.tokenizer.to_json(), {"algorithm": "bpe", "options": byte_level.stats["options"]}),
            6: (document, {"algorithm": "bpe", "options": options, "spm_model": "a2VwdA=="})}
    engine = db.make_engine(url)
    with engine.begin() as conn:
        for row_id, (doc, config) in rows.items():
            conn.execute(text("INSERT INTO tokenizers (id, team_id, name, algorithm, source, tokenizer_json, config, "
                              "stats, vocab_size, created_at, size_bytes) VALUES (:id, 1, 't', 'bpe', 'trained', "
                              ":doc, :config, '{}', 300, '2026-11-01', 1000)"),
                         {"id": row_id, "doc": doc, "config": json.dumps(config)})
    engine.dispose()
    db.upgrade(url)
    with db.get_engine(db_app).connect() as conn:
        found = {row_id: (json.loads(config) if isinstance(config, str) else config, size) for row_id, config, size
                 in conn.execute(text("SELECT id, config, size_bytes FROM tokenizers WHERE id IN (4, 5, 6)")).all()}
    model = base64.b64encode(dump_spm_model(result.tokenizer)).decode("ascii")
    assert found[4][0] == {**rows[4][1], "spm_model": model}
    assert found[4][1] == 1000 + len(json.dumps(found[4][0])) - len(json.dumps(rows[4][1]))
    assert (found[5][0], found[5][1]) == (rows[5][1], 1000)
    assert (found[6][0], found[6][1]) == (rows[6][1], 1000)
