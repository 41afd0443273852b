"""Fixtures for the web app tests: flaskr-style ``app`` and ``client`` on a ``tmp_path`` database.

``app``/``client`` use SQLite. ``db_app`` (and ``database_url``) are parametrized over SQLite
and PostgreSQL; the PostgreSQL case runs only when ``TOKENFORGE_TEST_POSTGRES_URL`` points at a
server (a fresh database is created and dropped per test) and is skipped otherwise.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from webapp import create_app, db
from webapp.config import normalize_database_url

POSTGRES_ENV = "TOKENFORGE_TEST_POSTGRES_URL"


def _postgres_database(server_url: str) -> Iterator[str]:
    """Create an empty database on the server for one test, and drop it afterwards."""
    server = make_url(normalize_database_url(server_url))
    name = f"tokenforge_test_{uuid.uuid4().hex[:12]}"
    admin = create_engine(server.set(database="postgres"), isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
        yield server.set(database=name).render_as_string(hide_password=False)
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    finally:
        admin.dispose()


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """An empty database: a SQLite file in ``tmp_path``, or a fresh PostgreSQL database."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'test.sqlite3'}"
        return
    server_url = os.environ.get(POSTGRES_ENV)
    if not server_url:
        pytest.skip(f"set {POSTGRES_ENV} to run the database tests against PostgreSQL")
    yield from _postgres_database(server_url)


def make_app(tmp_path: Path, database_url: str, **overrides: Any) -> Flask:
    """A migrated app whose files all live under ``tmp_path``."""
    config = {
        "TESTING": True,
        "DATA_DIR": str(tmp_path / "data"),
        "DATABASE_URL": database_url,
        "SECRET_KEY": "test-secret",
        "WTF_CSRF_ENABLED": False,
        "STALE_SECONDS": 30,
        "HEARTBEAT_SECONDS": 0.2,
        "CANCEL_GRACE_SECONDS": 5,
        "WORKER_NICE": 0,
        **overrides,
    }
    app = create_app(config)
    db.upgrade(app.config["DATABASE_URL"])
    return app


@pytest.fixture
def app(tmp_path: Path) -> Iterator[Flask]:
    """The app on a SQLite file in ``tmp_path``."""
    app = make_app(tmp_path, f"sqlite:///{tmp_path / 'app.sqlite3'}")
    yield app
    db.get_engine(app).dispose()


@pytest.fixture
def db_app(tmp_path: Path, database_url: str) -> Iterator[Flask]:
    """The app on each database backend (see ``database_url``)."""
    app = make_app(tmp_path, database_url)
    yield app
    db.get_engine(app).dispose()


@pytest.fixture
def client(app: Flask) -> FlaskClient:
    return app.test_client()
