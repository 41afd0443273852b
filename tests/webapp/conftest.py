"""Fixtures for the web app tests: flaskr-style ``app`` and ``client`` on a ``tmp_path`` database.

Every app starts with one account, Alice (the admin, user 1), owner of team 1; ``client`` is
logged in as her, ``anon_client`` is a visitor. :func:`add_user` makes more accounts (each with
a team of its own) and :func:`login_as` puts a client in someone's session without the cost of
a real password check; :func:`default_form` is the training form as its page fills it.
``app``/``client`` use SQLite. ``db_app`` (and ``database_url``) are parametrized over SQLite
and PostgreSQL; the PostgreSQL case runs only when ``TOKENFORGE_TEST_POSTGRES_URL`` points at a
server (a fresh database is created and dropped per test) and is skipped otherwise.
"""

from __future__ import annotations

import html
import io
import os
import re
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import create_engine, event, text
from sqlalchemy.engine import make_url

from engine.trainers import option_specs
from webapp.access.auth import hash_password
from webapp.app import create_app
from webapp.store import db
from webapp.store.models import Membership, Team, User
from webapp.web.config import normalize_database_url

#: The header htmx sends, so a view answers with the block it swaps instead of the whole page.
HX = {"HX-Request": "true"}

POSTGRES_ENV = "TOKENFORGE_TEST_POSTGRES_URL"
PASSWORD = "correct horse battery staple"
_HASH: list[str] = []  # scrypt is deliberately slow: hash the test password once per run


def password_hash() -> str:
    if not _HASH:
        _HASH.append(hash_password(PASSWORD))
    return _HASH[0]


def shown_ids(html: str) -> list[str]:
    """The ids an encode answer shows, in order: every ids pane's plain text (compare has several),
    with the ids an htmx answer leaves for the script to draw (spans_html.py)."""
    panes = re.findall(r'data-testid="ids">([\d ]*(?:<script type="text/html" data-rest>[\d ]*</script>)*)', html)
    return [i for pane in panes for i in re.sub(r"<[^>]*>", " ", pane).split()]


def add_user(app: Flask, email: str, name: str | None = None, *, team_id: int | None = None,
             role: str = "owner", admin: bool = False) -> tuple[int, int]:
    """Create an account with the test password; return (user id, team id).

    Without ``team_id`` the user gets a new team of their own; with it, they join that team.
    """
    with app.app_context():
        session = db.get_session()
        user = User(email=email, name=name or email.split("@")[0].title(), password_hash=password_hash(),
                    is_admin=admin)
        session.add(user)
        if team_id is None:
            team = Team(name=f"{user.name}'s team")
            session.add(team)
            session.flush()
            team_id = team.id
        session.flush()
        session.add(Membership(team_id=team_id, user_id=user.id, role=role))
        session.commit()
        return user.id, team_id


def login_as(client: FlaskClient, user_id: int) -> FlaskClient:
    """Put ``client`` in a logged-in session of ``user_id`` (as flask-login stores it)."""
    with client.session_transaction() as session:
        session["_user_id"] = str(user_id)
        session["_fresh"] = True
    return client


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



def add_corpus(app: Flask, text: str, name: str, team_id: int = 1) -> int:
    """Store ``text`` as a corpus of ``team_id`` (no analysis job, as an upload would start); its id."""
    from webapp.corpora.storage import CorpusStore
    from webapp.store.models import Corpus

    stored = CorpusStore(app.config["CORPUS_DIR"]).ingest(io.BytesIO(text.encode()), name, max_bytes=10**8)
    with app.app_context():
        session = db.get_session()
        corpus = Corpus(team_id=team_id, name=name, sha256=stored.sha256, format="txt",
                        size_bytes=stored.size_bytes, stats=stored.stats)
        session.add(corpus)
        session.commit()
        return corpus.id


class CountingBody(io.RawIOBase):
    """An endless body of ``x`` bytes that records how many were read."""

    def __init__(self) -> None:
        self.read_bytes = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        size = len(buffer)
        buffer[:size] = b"x" * size
        self.read_bytes += size
        return size


def post_unread(client: FlaskClient, path: str, declared: int) -> tuple[int, str, CountingBody]:
    """POST to ``path`` a multipart body declaring ``declared`` bytes that counts what the app read
    of it: (status, the answer's text unescaped, the body). A budget refused before the body is
    read leaves ``body.read_bytes`` at 0."""
    body = CountingBody()
    response = client.open(path, method="POST", environ_overrides={
        "wsgi.input": body, "CONTENT_TYPE": "multipart/form-data; boundary=zz", "CONTENT_LENGTH": str(declared)})
    return response.status_code, html.unescape(response.get_data(as_text=True)), body

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


@contextmanager
def statements(app: Flask) -> Iterator[list[str]]:
    """The SQL statements the app runs inside the block."""
    seen: list[str] = []
    engine = db.get_engine(app)

    def record(_conn: object, _cursor: object, statement: str, *_args: object) -> None:
        seen.append(statement)

    event.listen(engine, "before_cursor_execute", record)
    try:
        yield seen
    finally:
        event.remove(engine, "before_cursor_execute", record)


def make_app(tmp_path: Path, database_url: str, *, seed: bool = True, **overrides: Any) -> Flask:
    """A migrated app whose files all live under ``tmp_path``, with Alice unless ``seed=False``."""
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
    if seed:
        add_user(app, "alice@example.com", "Alice", admin=True)
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
    """A browser logged in as Alice (user 1, owner of team 1)."""
    return login_as(app.test_client(), 1)


@pytest.fixture
def anon_client(app: Flask) -> FlaskClient:
    """A browser that has not logged in."""
    return app.test_client()


def default_form(algorithm: str, **options: str) -> dict[str, str]:
    """The training form at its defaults for corpus 1, as the page fills it, with ``options`` changed."""
    data = {"algorithm": algorithm, "corpus_ids": "1", "name": ""}
    for spec in option_specs(algorithm):
        if spec.type == "bool":
            if spec.default:
                data[f"opt-{spec.name}"] = "on"
        elif spec.type == "list":
            data[f"opt-{spec.name}"] = "\n".join(spec.default or [])
        else:
            data[f"opt-{spec.name}"] = "" if spec.default is None else str(spec.default)
    data.update({f"opt-{name}": value for name, value in options.items()})
    return data


def add_small_corpus(client: FlaskClient) -> None:
    """Upload "a b c a b" as ``c.txt``: in a fresh app, corpus 1, the one :func:`default_form` names."""
    client.post("/corpora/", data={"files": [(io.BytesIO(b"a b c a b"), "c.txt")]},
                content_type="multipart/form-data")


def invite_url(client: FlaskClient, team_id: int = 1) -> str:
    """A new invite link to ``team_id``, as its page shows it (a path, without the host)."""
    client.post(f"/teams/{team_id}/invites")
    page = client.get(f"/teams/{team_id}").get_data(as_text=True)
    return re.findall(r'data-testid="invite-url">([^<]+)<', page)[-1].replace("http://localhost", "")


def run_queued_jobs(app: Flask) -> None:
    """Run every queued job (corpus analyses, training) to its end with an in-process worker.

    The worker loop runs here; each job still runs in its real ``spawn`` child process.
    """
    from webapp.jobs.worker import Worker

    worker = Worker(dict(app.config), worker_id="test-worker")
    try:
        worker.run(once=True)
    finally:
        worker.engine.dispose()


@pytest.fixture
def algorithm() -> str:
    """The trainer the training and job tests run: BPE (WordPiece in a build without it)."""
    from webapp.training.form import available_algorithms

    for name in ("bpe", "wordpiece"):
        if name in available_algorithms():
            return name
    pytest.skip("no trainer is installed in engine/trainers yet")


def evaluate_held_out(client: FlaskClient, tokenizer_id: int, percent: str) -> Any:
    """Upload a 40-line corpus, choose it on the tokenizer's insights page, and evaluate the
    tokenizer on the last ``percent`` of it; return htmx's answer."""
    body = "".join(f"the cat number {i} sat on the mat\n" for i in range(40)).encode()
    client.post("/corpora/", data={"files": [(io.BytesIO(body), "cats.txt")]}, content_type="multipart/form-data")
    page = client.get(f"/tokenizers/{tokenizer_id}/insights").get_data(as_text=True)
    corpus_id = re.search(r'<option value="(\d+)"', page).group(1)  # type: ignore[union-attr]
    return client.post(f"/tokenizers/{tokenizer_id}/insights/evaluate", headers=HX,
                       data={"corpus_id": corpus_id, "percent": percent, "part": "last"})
