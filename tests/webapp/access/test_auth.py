"""Accounts and object-level authorization: sign-up, login, the gate, API keys, and 404s for
every route that takes an id of another team's row."""

from __future__ import annotations

import re
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import select

from tests.webapp.conftest import PASSWORD, add_user, login_as, make_app
from tests.webapp.playground_samples import byte_bpe, store
from webapp.access.auth import safe_next
from webapp.jobs import queue as jobs
from webapp.store import db
from webapp.store.models import ApiKey, Corpus, Invite, Leaderboard, Membership, ShareLink, Team, User, utcnow


def signup(client: FlaskClient, email: str, password: str = PASSWORD, **extra: str) -> Any:
    return client.post("/signup", data={"email": email, "name": email.split("@")[0], "password": password,
                                        "confirm": extra.pop("confirm", password), **extra})


def test_first_user_is_admin_and_owns_data_from_before_teams(tmp_path: Any) -> None:
    app = make_app(tmp_path, f"sqlite:///{tmp_path / 'fresh.sqlite3'}", seed=False)
    with app.app_context():  # a team with no members: what migration 0002 makes of older rows
        session = db.get_session()
        session.add(Team(name="Existing data"))
        session.commit()
    client = app.test_client()
    response = signup(client, "Ada@Example.com")
    assert (response.status_code, response.headers["Location"]) == (303, "/")
    with app.app_context():
        ada = db.get_session().scalar(select(User))
        assert (ada.email, ada.is_admin) == ("ada@example.com", True)
        assert ada.password_hash.startswith("scrypt:") and PASSWORD not in ada.password_hash
        roles = {(m.team_id, m.role) for m in db.get_session().scalars(select(Membership))}
        assert roles == {(1, "owner"), (2, "owner")}  # "Existing data" and Ada's own team
    # the second visitor finds sign-up closed without an invite
    other = app.test_client()
    closed = signup(other, "eve@example.com")
    assert closed.status_code == 403
    assert "needs an invite link" in closed.get_data(as_text=True)
    db.get_engine(app).dispose()


@pytest.mark.parametrize(("fields", "message"), [
    ({"email": "not-an-address"}, "Enter an e-mail address"),
    ({"password": "short", "confirm": "short"}, "at least 10 characters"),
    ({"confirm": "something else entirely"}, "The two passwords differ"),
    ({"email": "alice@example.com"}, "already exists"),
], ids=["bad-email", "short-password", "mismatch", "taken"])
def test_signup_validation(app: Flask, fields: dict[str, str], message: str) -> None:
    app.config["OPEN_SIGNUP"] = True
    data = {"email": "new@example.com", "name": "New", "password": PASSWORD, "confirm": PASSWORD, **fields}
    response = app.test_client().post("/signup", data=data)
    assert response.status_code == 422
    assert message in response.get_data(as_text=True)


def test_login_logout_and_the_gate(anon_client: FlaskClient) -> None:
    page = anon_client.get("/corpora/")
    assert (page.status_code, page.headers["Location"]) == (303, "/login?next=/corpora/")
    wrong = anon_client.post("/login", data={"email": "alice@example.com", "password": "nope"})
    assert wrong.status_code == 401
    assert "The e-mail address or the password is wrong." in wrong.get_data(as_text=True)
    ok = anon_client.post("/login", data={"email": "ALICE@example.com ", "password": PASSWORD,
                                          "next": "/corpora/"})
    assert (ok.status_code, ok.headers["Location"]) == (303, "/corpora/")
    assert anon_client.get("/corpora/").status_code == 200
    anon_client.post("/logout")
    assert anon_client.get("/corpora/").status_code == 303


@pytest.mark.parametrize("target", ["https://evil.example/", "//evil.example/x", "/\\evil.example",
                                    "javascript:alert(1)", "", "/x\r\nLocation: //evil", "/\t/evil.example",
                                    "/a//evil.example", "corpora/", "/\u2028"],
                         ids=["absolute", "scheme-relative", "backslash", "javascript", "empty", "crlf",
                              "tab", "inner-double-slash", "relative", "line-separator"])
def test_login_never_redirects_off_site(app: Flask, target: str) -> None:
    with app.test_request_context():
        assert safe_next(target) == "/"


def test_session_cookie_flags(app: Flask) -> None:
    client = app.test_client()
    response = client.post("/login", data={"email": "alice@example.com", "password": PASSWORD})
    cookie = response.headers["Set-Cookie"]
    assert "HttpOnly" in cookie and "SameSite=Lax" in cookie and "Secure" not in cookie
    app.config["SESSION_COOKIE_SECURE"] = True
    secure = app.test_client().post("/login", data={"email": "alice@example.com", "password": PASSWORD})
    assert "Secure" in secure.headers["Set-Cookie"]


def test_the_session_cookie_is_written_only_when_the_session_changes(app: Flask) -> None:
    """A login ends SESSION_DAYS after it began, however active, so pages need not re-sign it."""
    client = app.test_client()
    assert "Set-Cookie" in client.post("/login", data={"email": "alice@example.com", "password": PASSWORD}).headers
    client.get("/corpora/")  # the first page stores its CSRF token in the session
    for path in ("/corpora/", "/tokenizers", "/jobs"):
        page = client.get(path)
        assert page.status_code == 200 and "Set-Cookie" not in page.headers
    assert "Set-Cookie" in client.post("/logout", data={}).headers


def test_login_is_rate_limited_per_email_and_ip(app: Flask) -> None:
    app.config["LOGIN_RATE_LIMIT"] = "3/300"
    client = app.test_client()
    codes = [client.post("/login", data={"email": "alice@example.com", "password": "guess"}).status_code
             for _ in range(4)]
    assert codes == [401, 401, 401, 429]
    refused = client.post("/login", data={"email": "alice@example.com", "password": PASSWORD})
    assert refused.status_code == 429  # even the right password waits out the window
    retry = int(refused.headers["Retry-After"])
    assert 0 < retry <= 600  # the sliding window counter frees a slot within two 300-second windows
    assert f"Too many login attempts. Wait {retry} second" in refused.get_data(as_text=True)


def test_api_needs_a_key_and_keys_work(app: Flask, client: FlaskClient, anon_client: FlaskClient) -> None:
    ref = store(app, byte_bpe())
    refused = anon_client.post("/api/v1/encode", json={"tokenizer": ref, "text": "the"})
    assert refused.status_code == 401 and "Authorization: Bearer" in refused.get_json()["error"]
    page = client.post("/account/keys", data={"name": "CI"}).get_data(as_text=True)
    key = re.search(r'data-testid="new-key">([^<]+)<', page).group(1)
    with app.app_context():
        row = db.get_session().scalar(select(ApiKey))
        assert row.key_hash != key and key not in row.key_hash and row.prefix == key[:11]
    headers = {"Authorization": f"Bearer {key}"}
    ok = anon_client.post("/api/v1/encode", json={"tokenizer": ref, "text": "the"}, headers=headers)
    assert ok.status_code == 200 and ok.get_json()["count"] == 1
    forged = anon_client.post("/api/v1/encode", json={"tokenizer": ref, "text": "the"},
                              headers={"Authorization": f"Bearer {key[:-2]}xx"})
    assert forged.status_code == 401
    assert anon_client.get("/corpora/", headers=headers).status_code == 303  # keys are for the API only
    client.post(f"/account/keys/{row.id}/delete")
    assert anon_client.post("/api/v1/encode", json={"tokenizer": ref, "text": "a"}, headers=headers).status_code == 401


@pytest.fixture
def other_team(app: Flask) -> dict[str, int]:
    """Bob's team (2) with a corpus, a job, a tokenizer, a share link, an invite, an API key and a leaderboard."""
    bob, team = add_user(app, "bob@example.com", "Bob")
    tokenizer_id = store(app, byte_bpe("bob-bpe"), team_id=team)
    with app.app_context():
        session = db.get_session()
        corpus = Corpus(team_id=team, name="bob-secret.txt", sha256="ab" * 32, format="txt", stats={})
        session.add(corpus)
        session.commit()
        job = jobs.enqueue(session, team_id=team, name="bob job", algorithm="bpe", options={}, corpus_ids=[corpus.id])
        link = ShareLink(tokenizer_id=tokenizer_id, token="t" * 43, created_by=bob)
        invite = Invite(team_id=team, token="i" * 43, created_by=bob, expires_at=utcnow())
        key = ApiKey(user_id=bob, name="bob key", prefix="tf_x", key_hash="0" * 64)
        board = Leaderboard(team_id=team, name="bob board", tokenizers=[{"id": tokenizer_id, "name": "bob-bpe"}],
                            corpora=[{"id": corpus.id, "name": "bob-secret.txt"}], max_bytes=1024, results={})
        session.add_all([link, invite, key, board])
        session.commit()
        return {"board_id": board.id, "corpus_id": corpus.id, "job_id": job.id, "tokenizer_id": tokenizer_id, "team_id": team,
                "user_id": bob, "link_id": link.id, "invite_id": invite.id, "key_id": key.id, "token_id": 0}


def test_every_route_with_an_id_is_404_for_another_team(app: Flask, client: FlaskClient,
                                                         other_team: dict[str, int]) -> None:
    """Walk the URL map: each route taking an id gets team B's ids, by GET and by POST."""
    checked = []
    for rule in app.url_map.iter_rules():
        ids = [a for a in rule.arguments if a.endswith("_id")]
        if not ids:
            continue
        unknown = set(ids) - other_team.keys()
        assert not unknown, f"{rule.rule}: add {unknown} to the other_team fixture"
        url = rule.build({a: other_team[a] for a in rule.arguments if a in other_team} |
                         {a: "tokenizer.json" for a in rule.arguments if a in ("key", "filename")})[1]
        for method in sorted(rule.methods - {"HEAD", "OPTIONS"}):
            data = {"confirmed": "yes", "confirm": "Bob's team", "text": "x", "name": "x", "role": "owner"}
            response = client.open(url, method=method, data=data)
            assert response.status_code == 404, f"{method} {url} answered {response.status_code}"
            assert b"bob" not in response.data.lower(), f"{method} {url} leaked Bob's data"
            checked.append(f"{method} {rule.endpoint}")
    assert len(checked) >= 30  # the walk really covered the app (30 method+route pairs today)
    with app.app_context():  # and nothing of Bob's changed
        session = db.get_session()
        assert session.get(Corpus, other_team["corpus_id"]).name == "bob-secret.txt"
        assert session.get(ShareLink, other_team["link_id"]).revoked_at is None
        assert session.get(ApiKey, other_team["key_id"]) is not None
        assert len(session.scalars(select(Membership).where(Membership.team_id == other_team["team_id"])).all()) == 1


def test_lists_and_api_show_only_your_teams_rows(app: Flask, client: FlaskClient, other_team: dict[str, int]) -> None:
    mine = store(app, byte_bpe("alice-bpe"))
    for url in ("/tokenizers", "/corpora/", "/jobs", "/compare", "/train", "/api"):
        page = client.get(url).get_data(as_text=True)
        assert "bob" not in page.lower(), url
    listed = client.get("/api/v1/tokenizers").get_json()["tokenizers"]
    assert [t["id"] for t in listed] == [mine]
    for ref in (other_team["tokenizer_id"], "bob-bpe", str(other_team["tokenizer_id"])):
        response = client.post("/api/v1/encode", json={"tokenizer": ref, "text": "hi"})
        assert response.status_code == 404 and "bob" not in str(response.get_json()).replace(repr(ref), "")
    compare = client.get(f"/compare?ids={mine}&ids={other_team['tokenizer_id']}")
    assert compare.status_code == 404
    train = client.post("/train", data={"algorithm": "bpe", "corpus_ids": [str(other_team["corpus_id"])],
                                        "vocab_size": "300"})
    assert train.status_code == 422 and "no longer exists" in train.get_data(as_text=True)


def test_uploads_are_deduplicated_only_within_a_team(app: Flask, client: FlaskClient) -> None:
    import io

    bob, _team = add_user(app, "bob@example.com")
    bob_client = login_as(app.test_client(), bob)
    bob_client.post("/corpora/", data={"files": [(io.BytesIO(b"same words"), "bob-secret.txt")]})
    response = client.post("/corpora/", data={"files": [(io.BytesIO(b"same words"), "mine.txt")]})
    assert response.status_code == 303
    page = client.get(response.headers["Location"]).get_data(as_text=True)
    assert "bob-secret" not in page and "mine.txt" in page
