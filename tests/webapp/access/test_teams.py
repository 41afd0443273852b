"""Teams: invite links and their expiry, members, leaving, deleting data (files too), closing accounts."""

from __future__ import annotations

import datetime as dt
import io
from pathlib import Path

from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import func, select

from tests.webapp.conftest import PASSWORD, add_user, invite_url, login_as
from tests.webapp.playground_samples import byte_bpe, store
from webapp.store import db
from webapp.store.models import Corpus, Invite, Membership, Team, Tokenizer, User, utcnow


def members(app: Flask, team_id: int = 1) -> dict[int, str]:
    with app.app_context():
        rows = db.get_session().scalars(select(Membership).where(Membership.team_id == team_id))
        return {m.user_id: m.role for m in rows}


def test_invite_link_signs_up_then_joins_on_confirmation(app: Flask, client: FlaskClient) -> None:
    url = invite_url(client)
    visitor = app.test_client()
    assert "Invitation to Alice&#39;s team" in visitor.get(url).get_data(as_text=True)
    response = visitor.post("/signup", data={"email": "carol@example.com", "name": "Carol",
                                             "password": PASSWORD, "confirm": PASSWORD})
    assert (response.status_code, response.headers["Location"]) == (303, url)
    assert members(app) == {1: "owner"}  # signing up joined nothing
    page = visitor.get(url).get_data(as_text=True)
    assert "Join Alice&#39;s team?" in page and "Alice (alice@example.com) invited you." in page
    assert "keep going to Carol&#39;s team" in page
    assert visitor.post(url).status_code == 303
    assert members(app) == {1: "owner", 2: "member"}
    store(app, byte_bpe("team-bpe"))
    assert "team-bpe" in visitor.get("/tokenizers").get_data(as_text=True)
    assert '<option value="2" selected>Carol&#39;s team</option>' in visitor.get("/account").get_data(as_text=True)
    with app.app_context():
        assert db.get_session().scalar(select(Invite)).uses == 1
    assert "You are already in Alice&#39;s team" in visitor.get(url).get_data(as_text=True)


def test_existing_user_joins_by_link_and_expired_links_fail(app: Flask, client: FlaskClient) -> None:
    bob, _ = add_user(app, "bob@example.com")
    bob_client = login_as(app.test_client(), bob)
    url = invite_url(client)
    assert bob_client.post(url).status_code == 303
    assert members(app)[bob] == "member"
    expired = invite_url(client)
    with app.app_context():
        session = db.get_session()
        for invite in session.scalars(select(Invite)):
            invite.expires_at = utcnow() - dt.timedelta(seconds=1)
        session.commit()
    carol, _ = add_user(app, "carol@example.com")
    assert login_as(app.test_client(), carol).post(expired).status_code == 404
    assert carol not in members(app)


def test_owners_manage_members_and_a_team_always_keeps_an_owner(app: Flask, client: FlaskClient) -> None:
    bob, _ = add_user(app, "bob@example.com", team_id=1, role="member")
    bob_client = login_as(app.test_client(), bob)
    assert bob_client.post("/teams/1/invites").status_code == 403  # members cannot invite
    assert bob_client.post("/teams/1/members/1/remove").status_code == 403
    client.post("/teams/1/members/1/remove")  # the only owner cannot leave
    assert members(app) == {1: "owner", bob: "member"}
    client.post(f"/teams/1/members/{bob}/role", data={"role": "owner"})
    client.post("/teams/1/members/1/remove")  # now she can
    assert members(app) == {bob: "owner"}
    assert client.get("/teams/1").status_code == 404
    bob_client.post("/teams/1/invites")
    carol, _ = add_user(app, "carol@example.com", team_id=1, role="member")
    bob_client.post(f"/teams/1/members/{carol}/remove")
    assert members(app) == {bob: "owner"}


def test_deleting_team_data_removes_rows_and_files(app: Flask, client: FlaskClient) -> None:
    bob, bob_team = add_user(app, "bob@example.com")
    bob_client = login_as(app.test_client(), bob)
    client.post("/corpora/", data={"files": [(io.BytesIO(b"shared words"), "a.txt"),
                                             (io.BytesIO(b"only alice"), "b.txt")]})
    bob_client.post("/corpora/", data={"files": [(io.BytesIO(b"shared words"), "bob.txt")]})
    store(app, byte_bpe())
    objects = Path(app.config["CORPUS_DIR"], "objects")
    assert len(list(objects.rglob("*.txt"))) == 2
    wrong = client.post("/teams/1/delete", data={"what": "data", "confirm": "nope"})
    assert wrong.status_code == 303
    with app.app_context():
        assert db.get_session().scalar(select(func.count()).select_from(Corpus)) == 3
    client.post("/teams/1/delete", data={"what": "data", "confirm": "Alice's team"})
    with app.app_context():
        session = db.get_session()
        assert [c.name for c in session.scalars(select(Corpus))] == ["bob.txt"]
        assert session.scalar(select(func.count()).select_from(Tokenizer)) == 0
        assert session.get(Team, 1) is not None
    remaining = [p.read_bytes() for p in objects.rglob("*.txt")]
    assert remaining == [b"shared words"]  # Bob's corpus still needs it


def test_closing_an_account(app: Flask, client: FlaskClient) -> None:
    bob, _ = add_user(app, "bob@example.com", team_id=1, role="member")
    refused = client.post("/account/delete", data={"confirm": "alice@example.com"})
    assert refused.status_code == 409 and "only owner" in refused.get_data(as_text=True)
    bob_client = login_as(app.test_client(), bob)
    bob_client.post("/corpora/", data={"files": [(io.BytesIO(b"bob's own"), "own.txt")]})  # into team 1
    assert bob_client.post("/account/delete", data={"confirm": "wrong"}).status_code == 422
    assert bob_client.post("/account/delete", data={"confirm": "bob@example.com"}).status_code == 303
    with app.app_context():
        session = db.get_session()
        assert session.get(User, bob) is None
        assert [c.name for c in session.scalars(select(Corpus))] == ["own.txt"]  # the team's data stays
    assert bob_client.get("/corpora/").status_code == 303
