"""The lookups every request makes, made cheaply and still answering as before.

A login session's user is read with their teams in one statement (``auth._load_user``), and a
tokenizer's scope and the pickers' lists through statements built once per shape
(``auth.scoped_by_id``, ``auth.scoped_list``). Nothing is kept between requests, so a change made
elsewhere (another web process, an admin) is seen by the very next request: joining or leaving a
team, ending the sessions, a share link.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import fields

import pytest
from flask import Flask, g
from flask.testing import FlaskClient
from flask_login import login_user
from sqlalchemy import delete, select, update
from sqlalchemy.orm import Session

from tests.webapp.conftest import add_user, login_as, statements
from tests.webapp.playground_samples import byte_bpe, store
from webapp.access import auth
from webapp.store import db
from webapp.store.models import ApiKey, Membership, ShareLink, Tokenizer, User, utcnow
from webapp.store.records import TokenizerRecord
from webapp.tokenizers.loaded import all_rows, rows_query

HTMX = {"HX-Request": "true"}


def change(app: Flask, apply: Callable[[Session], object]) -> None:
    """Change the database outside any request, as another web process would."""
    with app.app_context():
        session = db.get_session()
        apply(session)
        session.commit()


def answers(client: FlaskClient, tokenizer_id: int) -> tuple[int, int, int]:
    """The status of the encode page, an htmx encode and an API encode of ``tokenizer_id``."""
    page = client.get(f"/tokenizers/{tokenizer_id}/play").status_code
    encode = client.post(f"/tokenizers/{tokenizer_id}/encode", data={"text": "hi"}, headers=HTMX).status_code
    api = client.post("/api/v1/encode", json={"tokenizer": tokenizer_id, "text": "hi"}).status_code
    return page, encode, api


def test_an_htmx_encode_asks_the_database_two_questions(app: Flask, client: FlaskClient) -> None:
    """The user with their teams, then the tokenizer's row (its parse is cached)."""
    mine = store(app, byte_bpe("alice-bpe"))
    assert client.post(f"/tokenizers/{mine}/encode", data={"text": "hi"}, headers=HTMX).status_code == 200
    with statements(app) as seen:
        assert client.post(f"/tokenizers/{mine}/encode", data={"text": "hi"}, headers=HTMX).status_code == 200
    assert len(seen) == 2, seen
    assert "FROM users LEFT OUTER JOIN memberships" in seen[0] and "FROM tokenizers" in seen[1]


def test_joining_and_leaving_a_team_is_seen_by_the_next_request(app: Flask, client: FlaskClient) -> None:
    """Another team's member gets 404 until they join it, and 404 again once they leave."""
    _bob, bobs_team = add_user(app, "bob@example.com", "Bob")
    theirs = store(app, byte_bpe("bob-bpe"), team_id=bobs_team)
    assert answers(client, theirs) == (404, 404, 404)
    change(app, lambda s: s.add(Membership(team_id=bobs_team, user_id=1, role="member")))
    assert answers(client, theirs) == (200, 200, 200)
    assert "Bob&#39;s team" in client.get("/tokenizers").get_data(as_text=True)  # the header's switcher
    change(app, lambda s: s.execute(delete(Membership).where(Membership.team_id == bobs_team,
                                                             Membership.user_id == 1)))
    assert answers(client, theirs) == (404, 404, 404)
    assert "Bob&#39;s team" not in client.get("/tokenizers").get_data(as_text=True)


def test_a_user_in_no_team_reads_no_preset(app: Flask) -> None:
    """Presets are read by members of some team; an account left in none reads nothing."""
    def add_preset(session: Session) -> None:
        session.add(Tokenizer(team_id=None, preset="tiny_bytes", source="preset", name="Tiny bytes", algorithm="bpe",
                              tokenizer_json=byte_bpe("Tiny bytes").to_json(), vocab_size=260, stats={}, config={}))

    change(app, add_preset)
    preset = 1
    carol, carols_team = add_user(app, "carol@example.com", "Carol")
    client = login_as(app.test_client(), carol)
    assert answers(client, preset) == (200, 200, 200)
    change(app, lambda s: s.execute(delete(Membership).where(Membership.team_id == carols_team)))
    assert answers(client, preset) == (404, 404, 404)


def test_ending_the_sessions_elsewhere_ends_this_one_at_once(app: Flask, client: FlaskClient) -> None:
    mine = store(app, byte_bpe("alice-bpe"))
    assert answers(client, mine) == (200, 200, 200)
    change(app, lambda s: s.execute(update(User).where(User.id == 1)
                                    .values(session_generation=User.session_generation + 1)))
    page, encode, api = answers(client, mine)
    assert (page, encode) == (303, 303) and api == 401


def test_a_view_that_changes_the_teams_reads_them_again(app: Flask) -> None:
    """The teams loaded with the user are dropped when the request writes a membership or a team,
    so the view reads them after its change, as it did when it was the first to ask."""
    bob, _ = add_user(app, "bob@example.com", "Bob", team_id=1, role="member")  # owns no team
    client = login_as(app.test_client(), bob)
    answer = client.post("/teams", data={"name": "Bob's own"}, follow_redirects=True)
    assert answer.status_code == 200
    page = answer.get_data(as_text=True)
    assert "You started" in page and "no longer to" not in page


@pytest.mark.parametrize("who", ["member", "member-with-a-link", "visitor-with-a-link", "in-no-team"])
def test_the_list_statement_built_once_lists_what_the_scoped_query_does(app: Flask, who: str) -> None:
    """``all_rows`` (a statement built once per shape, records) against ``rows_query`` built anew
    (ORM rows), with limits and offsets: the same rows in the same order for every kind of visitor."""
    def add_preset(session: Session) -> None:
        session.add(Tokenizer(team_id=None, preset="tiny_bytes", source="preset", name="Tiny bytes", algorithm="bpe",
                              tokenizer_json=byte_bpe("Tiny bytes").to_json(), vocab_size=260, stats={}, config={}))

    change(app, add_preset)
    _bob, bobs_team = add_user(app, "bob@example.com", "Bob")
    carol, carols_team = add_user(app, "carol@example.com", "Carol")
    change(app, lambda s: s.execute(delete(Membership).where(Membership.team_id == carols_team)))
    mine = [store(app, byte_bpe(f"alice-{i}")) for i in range(3)]
    theirs = [store(app, byte_bpe(f"bob-{i}"), team_id=bobs_team) for i in range(2)]
    with app.test_request_context():
        if who != "visitor-with-a-link":
            login_user(db.get_session().get(User, carol if who == "in-no-team" else 1))
        if "link" in who:
            g.shares_by_tokenizer = {theirs[1]: "token"}  # what visitors.py reads from the session
        seen = set()
        for limit, offset in [(None, 0), (2, 0), (2, 1), (10, 3), (1, 5), (None, 2)]:
            expected = db.get_session().scalars(rows_query().offset(offset or None).limit(limit)).all()
            listed = all_rows(limit=limit, offset=offset)
            assert listed == [TokenizerRecord(**{f.name: getattr(r, f.name) for f in fields(TokenizerRecord)})
                              for r in expected], (limit, offset)
            seen.update(r.id for r in listed)
    assert seen == {"member": {1, *mine}, "member-with-a-link": {1, *mine, theirs[1]},
                    "visitor-with-a-link": {theirs[1]}, "in-no-team": set()}[who]


def test_a_revoked_share_link_stops_the_next_encode(app: Flask, client: FlaskClient) -> None:
    """A visitor encoding through a link (member or not) is refused on the next request after
    the link is revoked elsewhere; a member of another team who had the link too."""
    mine = store(app, byte_bpe("alice-bpe"))
    assert client.post(f"/tokenizers/{mine}/share", data={"days": ""}).status_code == 303
    with app.app_context():
        token = db.get_session().scalar(select(ShareLink.token))
    _bob, _ = add_user(app, "bob@example.com", "Bob")
    visitors = [app.test_client(), login_as(app.test_client(), 2)]
    for visitor in visitors:
        assert visitor.get(f"/s/{token}").status_code == 200
        assert visitor.post(f"/tokenizers/{mine}/encode", data={"text": "hi"}, headers=HTMX).status_code == 200
    change(app, lambda s: s.execute(update(ShareLink).values(revoked_at=utcnow())))
    assert visitors[0].post(f"/tokenizers/{mine}/encode", data={"text": "hi"}, headers=HTMX).status_code == 303
    assert visitors[1].post(f"/tokenizers/{mine}/encode", data={"text": "hi"}, headers=HTMX).status_code == 404


def test_a_deleted_api_key_or_a_removed_member_is_refused_by_the_next_api_call(app: Flask) -> None:
    mine = store(app, byte_bpe("alice-bpe"))
    bob, _ = add_user(app, "bob@example.com", "Bob", team_id=1, role="member")
    with app.app_context():
        session = db.get_session()
        rows = [auth.new_api_key(session.get(User, user), "test") for user in (1, bob)]
        session.add_all(row for row, _ in rows)
        session.commit()
    api = app.test_client()

    def encode(secret: str) -> int:
        return api.post("/api/v1/encode", json={"tokenizer": mine, "text": "hi"},
                        headers={"Authorization": f"Bearer {secret}"}).status_code

    alices, bobs = (secret for _, secret in rows)
    assert (encode(alices), encode(bobs)) == (200, 200)
    change(app, lambda s: s.execute(delete(Membership).where(Membership.user_id == bob)))
    assert (encode(alices), encode(bobs)) == (200, 404)
    change(app, lambda s: s.execute(delete(ApiKey).where(ApiKey.user_id == 1)))
    assert encode(alices) == 401


def test_a_picker_keeps_a_chosen_tokenizer_beyond_its_bound(app: Flask, client: FlaskClient,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """The chosen tokenizers a bounded list leaves out come first (``rows_with_ids``), as records
    of what this visitor may read: never another team's."""
    from webapp.playground import encode_page

    monkeypatch.setattr(encode_page, "PICKER_ROWS", 2)
    _bob, bobs_team = add_user(app, "bob@example.com", "Bob")
    mine = [store(app, byte_bpe(f"alice-{i}")) for i in range(4)]
    theirs = store(app, byte_bpe("bob"), team_id=bobs_team)
    with app.test_request_context():
        login_user(db.get_session().get(User, 1))
        rows = encode_page.picker_rows([mine[0], theirs])
    assert [r.id for r in rows] == [mine[0], mine[3], mine[2]] and isinstance(rows[0], TokenizerRecord)
    assert rows[0].name == "alice-0"
