"""The records every request reads (``store/records.py``) hold what the ORM rows hold.

The user with their teams, an API key's user and a tokenizer's row are read as columns into
frozen records; each is compared here with the ORM's answer to the same question, for every
kind of reader, so a column left out or a scope condition lost shows up as a difference.
"""

from __future__ import annotations

import dataclasses

import pytest
from flask import Flask, g
from flask_login import current_user, login_user
from sqlalchemy import select

from tests.webapp.conftest import add_user, login_as
from tests.webapp.playground_samples import byte_bpe, store
from webapp.access import auth
from webapp.store import db
from webapp.store.models import Membership, Team, User
from webapp.store.models import Tokenizer as TokenizerRow
from webapp.store.records import SignedIn, TeamRecord, TokenizerRecord, columns
from webapp.tokenizers import loaded


def fields_of(row: object, record: type) -> dict[str, object]:
    return {field.name: getattr(row, field.name) for field in dataclasses.fields(record)}


def test_a_record_selects_the_model_attributes_named_as_its_fields() -> None:
    assert [c.key for c in columns(TokenizerRecord, TokenizerRow)] == [f.name for f in dataclasses.fields(TokenizerRecord)]
    mapped = {c.key for c in TokenizerRow.__table__.columns} - {"tokenizer_json", "stats", "config"}
    assert {f.name for f in dataclasses.fields(TokenizerRecord)} == mapped  # every small column, no large one


def test_the_session_user_is_the_account_with_its_teams_and_roles_in_order(app: Flask) -> None:
    """``_load_user``'s record and teams against the ORM's user and ``teams.my_memberships`` order."""
    bob, bobs_team = add_user(app, "bob@example.com", "Bob", admin=True)
    add_user(app, "carol@example.com", "Aaron's helper", team_id=bobs_team, role="member")
    with app.app_context():
        session = db.get_session()
        session.add_all([Team(name="Zeta"), Team(name="Alpha")])
        session.flush()
        for team_id in (3, 4, 1):  # Zeta, Alpha, and Alice's team as a member
            session.add(Membership(team_id=team_id, user_id=bob, role="member"))
        session.commit()
    with app.test_request_context():
        user = auth._load_user(f"{bob}:0")
        orm = db.get_session().get(User, bob)
        expected = db.get_session().execute(
            select(Team, Membership.role).join(Membership, Membership.team_id == Team.id)
            .where(Membership.user_id == bob).order_by(Team.name, Team.id)).all()
        assert isinstance(user, SignedIn) and fields_of(user, SignedIn) == fields_of(orm, SignedIn)
        assert user.get_id() == orm.get_id() == f"{bob}:0" and user == orm
        assert g.memberships == [(TeamRecord(team.id, team.name), role) for team, role in expected]
        assert [role for _, role in g.memberships].count("owner") == 1 and len(g.memberships) == 4
        assert auth._load_user(f"{bob}:1") is None  # another generation
        assert auth._load_user("99:0") is None  # no such account


def test_an_account_in_no_team_has_no_teams(app: Flask) -> None:
    carol, carols_team = add_user(app, "carol@example.com", "Carol")
    with app.app_context():
        session = db.get_session()
        session.execute(Membership.__table__.delete().where(Membership.team_id == carols_team))
        session.commit()
    with app.test_request_context():
        assert auth._load_user(f"{carol}:0") is not None and g.memberships == []


def test_an_api_key_loads_its_user_and_touches_its_last_use(app: Flask) -> None:
    with app.app_context():
        session = db.get_session()
        row, secret = auth.new_api_key(session.get(User, 1), "test")
        session.add(row)
        session.commit()
    for header in (f"Bearer {secret}", f"bearer  {secret} "):
        with app.test_request_context("/api/v1/tokenizers", headers={"Authorization": header}):
            user = auth._load_user_from_key(auth.request)
            assert fields_of(user, SignedIn) == fields_of(db.get_session().get(User, 1), SignedIn)
            assert g.api_key_id == row.id
            assert db.get_session().get(type(row), row.id).last_used_at is not None
            assert auth._memberships() == [(TeamRecord(1, "Alice's team"), "owner")]
    for header, path in ((f"Bearer {secret}x", "/api/v1/tokenizers"), (f"Bearer {secret}", "/tokenizers")):
        with app.test_request_context(path, headers={"Authorization": header}):
            assert auth._load_user_from_key(auth.request) is None


@pytest.mark.parametrize("who", ["member", "member-with-a-link", "visitor-with-a-link", "in-no-team"])
def test_the_tokenizer_record_is_the_scoped_row(app: Flask, who: str) -> None:
    """``loaded.readable_row`` against the ORM's scoped query, row by row, for every reader."""
    _bob, bobs_team = add_user(app, "bob@example.com", "Bob")
    carol, carols_team = add_user(app, "carol@example.com", "Carol")
    with app.app_context():
        session = db.get_session()
        session.add(TokenizerRow(team_id=None, preset="tiny_bytes", source="preset", name="Tiny bytes",
                                 algorithm="bpe", tokenizer_json=byte_bpe("Tiny bytes").to_json(), vocab_size=260,
                                 stats={}, config={}))
        session.execute(Membership.__table__.delete().where(Membership.team_id == carols_team))
        session.commit()
    ids = [1, store(app, byte_bpe("alice")), *(store(app, byte_bpe(f"bob-{i}"), team_id=bobs_team) for i in range(2))]
    with app.test_request_context():
        if who != "visitor-with-a-link":
            login_user(db.get_session().get(User, carol if who == "in-no-team" else 1))
        if "link" in who:
            g.shares_by_tokenizer = {ids[3]: "token"}
        readable = {row.id: row for row in db.get_session().scalars(loaded.readable_rows())}
        for row_id in [*ids, 99]:
            record = loaded.readable_row(row_id)
            if row_id in readable:
                assert record == TokenizerRecord(**fields_of(readable[row_id], TokenizerRecord))
                assert record.created_at.tzinfo is not None
            else:
                assert record is None, row_id
    assert set(readable) == {"member": {ids[0], ids[1]}, "member-with-a-link": {ids[0], ids[1], ids[3]},
                             "visitor-with-a-link": {ids[3]}, "in-no-team": set()}[who]


def test_a_tokenizer_found_by_name_is_the_list_s_first(app: Flask) -> None:
    """``loaded.find`` by name: the record of the row the list shows first (the newest of a name)."""
    store(app, byte_bpe("twin"))
    newer = store(app, byte_bpe("twin"))
    with app.test_request_context():
        login_user(db.get_session().get(User, 1))
        found = loaded.find("twin")
        assert found is not None and found.row.id == newer and isinstance(found.row, TokenizerRecord)
        assert loaded.find(" twin ").row.id == newer and loaded.find("nobody") is None
        assert loaded.find(str(newer)).row == found.row


def test_the_large_columns_load_by_id_once(app: Flask) -> None:
    """``Loaded.stats`` and ``config`` come from the row's own columns; stats are read once per request."""
    ref = store(app, byte_bpe("alice"))
    with app.app_context():
        session = db.get_session()
        session.get(TokenizerRow, ref).stats = {"merges": 7}
        session.commit()
    loaded.clear_cache()
    client = login_as(app.test_client(), 1)
    assert client.get(f"/tokenizers/{ref}/play").status_code == 200
    with app.test_request_context():
        login_user(db.get_session().get(User, 1))
        assert current_user.is_authenticated
        tokenizer = loaded.load(ref)
        assert tokenizer.stats == {"merges": 7} and tokenizer.stats is tokenizer.stats
        assert tokenizer.config == (db.get_session().get(TokenizerRow, ref).config or {})
