"""What a member and a team may spend on imports (issue #22): the team's tokenizer quota, imports
an hour, and imports at once; and the quota's hold on trainings and extensions.

"Refused before reading" is asserted as bytes read from a counting body, not as time.
"""

from __future__ import annotations

import html
import io
from pathlib import Path

from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import select

from engine import byte_level_bpe
from tests.webapp.conftest import add_corpus, add_user, login_as, make_app, post_unread
from webapp.store import db
from webapp.store.models import Job, Tokenizer, stored_bytes
from webapp.web import slots

MIB = 1 << 20
DOCUMENT = byte_level_bpe({b: bytes([b]) for b in range(256)} | {256: b"th"}, [(b"t", b"h")]).to_json()


def budget_app(tmp_path: Path, **config: object) -> Flask:
    return make_app(tmp_path, f"sqlite:///{tmp_path / 'budgets.sqlite3'}", **config)


def post_import(client: FlaskClient, name: str = "t.json") -> tuple[int, str]:
    response = client.post("/import", data={"kind": "tokenizer_json",
                                            "file": (io.BytesIO(DOCUMENT.encode()), name)})
    return response.status_code, html.unescape(response.get_data(as_text=True))



def rows(app: Flask) -> list[Tokenizer]:
    with app.app_context():
        return list(db.get_session().scalars(select(Tokenizer).where(Tokenizer.team_id.is_not(None))))


def size_of_one_import(tmp_path: Path) -> int:
    app = budget_app(tmp_path / "probe")
    assert post_import(login_as(app.test_client(), 1))[0] == 303
    (row,) = rows(app)
    return row.size_bytes


def test_a_row_keeps_the_size_of_what_it_stores(app: Flask, client: FlaskClient) -> None:
    assert post_import(client)[0] == 303
    (row,) = rows(app)
    assert row.size_bytes == stored_bytes(row.tokenizer_json, row.stats, row.config) > len(DOCUMENT)
    page = html.unescape(client.get("/tokenizers").get_data(as_text=True))
    assert f"Your team's tokenizers take {row.size_bytes / 1024:.1f} KiB of its 5.0 GiB." in page


def test_an_import_past_the_quota_is_refused_and_nothing_is_stored(tmp_path: Path) -> None:
    one = size_of_one_import(tmp_path)
    app = budget_app(tmp_path, TEAM_TOKENIZER_BYTES=one + one // 2)
    client = login_as(app.test_client(), 1)
    assert post_import(client, "first.json")[0] == 303
    status, text = post_import(client, "second.json")
    assert status == 413 and len(rows(app)) == 1
    assert (f"Your team's tokenizers take {one / 1024:.1f} KiB of its quota of {(one + one // 2) / 1024:.1f} KiB, "
            f"so “second.json” ({one / 1024:.1f} KiB) was not stored. Delete tokenizers you no longer need, "
            "or ask the server's admin to raise TOKENFORGE_TEAM_TOKENIZER_BYTES.") in text


def test_a_full_team_is_refused_before_the_body_and_cannot_train_or_extend(tmp_path: Path) -> None:
    one = size_of_one_import(tmp_path)
    app = budget_app(tmp_path, TEAM_TOKENIZER_BYTES=one)
    client = login_as(app.test_client(), 1)
    assert post_import(client)[0] == 303
    status, text, body = post_unread(client, "/import", 10 * MIB)
    assert status == 413 and body.read_bytes == 0
    assert "so no tokenizer can be imported." in text
    assert "it is full" in client.get("/tokenizers").get_data(as_text=True)
    corpus = add_corpus(app, "the theme then " * 50, "c.txt")
    response = client.post("/train", data={"algorithm": "bpe", "corpus_ids": [str(corpus)], "vocab_size": "300"})
    assert response.status_code == 413
    assert "so no tokenizer can be trained." in html.unescape(response.get_data(as_text=True))
    (row,) = rows(app)
    response = client.post(f"/tokenizers/{row.id}/extend", data={"corpus_ids": [str(corpus)], "add": "10"})
    assert response.status_code == 413
    assert "so no tokenizer can be extended." in html.unescape(response.get_data(as_text=True))
    with app.app_context():
        assert db.get_session().scalars(select(Job).where(Job.kind == "train")).all() == []


def test_a_team_keeps_its_own_tokenizer_quota(tmp_path: Path) -> None:
    one = size_of_one_import(tmp_path)
    app = budget_app(tmp_path, TEAM_TOKENIZER_BYTES=one)
    bob, _ = add_user(app, "bob@example.com")
    assert post_import(login_as(app.test_client(), 1))[0] == 303
    assert post_import(login_as(app.test_client(), bob))[0] == 303
    assert post_import(login_as(app.test_client(), 1))[0] == 413


def test_imports_an_hour_are_counted_per_member(tmp_path: Path) -> None:
    app = budget_app(tmp_path, IMPORT_RATE_LIMIT="2/3600")
    client = login_as(app.test_client(), 1)
    assert post_import(client)[0] == 303
    assert post_import(client)[0] == 303
    status, text, body = post_unread(client, "/import", MIB)
    assert status == 429 and body.read_bytes == 0
    assert "Too many tokenizer imports. Wait" in text
    assert "The server allows 2 per 3600 seconds (TOKENFORGE_IMPORT_RATE_LIMIT raises it)." in text
    assert len(rows(app)) == 2


def test_a_members_third_import_at_once_gets_429_unread(app: Flask, client: FlaskClient) -> None:
    running = [slots.take(Path(app.config["DATA_DIR"]) / "slots", "import-member:1", 2) for _ in range(2)]
    assert all(running)
    status, text, body = post_unread(client, "/import", 10 * MIB)
    assert status == 429 and body.read_bytes == 0
    assert ("You already have imports in progress. The server runs at most 2 at once "
            "(TOKENFORGE_IMPORTS_PER_MEMBER raises it); wait for one to finish, then try again.") in text
    for slot in running:
        slot.release()  # type: ignore[union-attr]
    assert post_import(client)[0] == 303
