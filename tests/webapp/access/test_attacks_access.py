"""Issue #11's attacks on accounts and teams: silent invites (7), sessions that outlive logout (8),
a login limit that resets (9), ``²`` and CRLF in account forms (10) and deleting data while
refusing (11). Each test failed against the code before the fix."""

from __future__ import annotations

import datetime as dt
import io
import re
import time

import pytest
from flask import Flask
from flask.testing import FlaskClient
from flask_login.utils import encode_cookie
from sqlalchemy import func, select

from tests.webapp.conftest import PASSWORD, add_user, invite_url, login_as
from tests.webapp.playground_samples import byte_bpe, store
from webapp.access.auth import LOGIN_AT
from webapp.store import db
from webapp.store.models import ApiKey, Corpus, Membership, Team, Tokenizer, User


def login(client: FlaskClient, email: str, password: str = PASSWORD, **extra: str) -> int:
    return client.post("/login", data={"email": email, "password": password, **extra}).status_code


def teams_of(app: Flask, user_id: int) -> set[int]:
    with app.app_context():
        return set(db.get_session().scalars(select(Membership.team_id).where(Membership.user_id == user_id)))


def copy_of(client: FlaskClient, app: Flask) -> FlaskClient:
    """Another browser holding a copy of ``client``'s session cookie (what a thief would have)."""
    thief = app.test_client()
    thief.set_cookie("session", client.get_cookie("session").value)
    return thief


def key_count(app: Flask) -> int:
    with app.app_context():
        return db.get_session().scalar(select(func.count()).select_from(ApiKey))


# 7. Invites join silently ---------------------------------------------------------------------

def test_opening_an_invite_then_logging_in_joins_nothing(app: Flask, client: FlaskClient) -> None:
    bob, bob_team = add_user(app, "bob@example.com", "Bob")
    url = invite_url(client)
    browser = app.test_client()
    page = browser.get(url).get_data(as_text=True)  # logged out: the link only invites to log in
    assert f'href="/login?next={url}"' in page
    assert login(browser, "bob@example.com", next=url) == 303
    assert teams_of(app, bob) == {bob_team}  # logging in joined nothing
    assert "Join Alice&#39;s team?" in browser.get(url).get_data(as_text=True)  # GET joins nothing
    assert teams_of(app, bob) == {bob_team}
    upload = browser.post("/corpora/", data={"files": [(io.BytesIO(b"bob's notes"), "notes.txt")]})
    assert upload.status_code == 303
    with app.app_context():
        corpus = db.get_session().scalar(select(Corpus).where(Corpus.name == "notes.txt"))
        assert corpus.team_id == bob_team  # the upload stayed in Bob's team
    assert "notes.txt" not in client.get("/corpora/").get_data(as_text=True)  # Alice cannot read it
    assert browser.post(url).status_code == 303  # the explicit click joins
    assert teams_of(app, bob) == {bob_team, 1}
    again = browser.post("/corpora/", data={"files": [(io.BytesIO(b"more notes"), "more.txt")]})
    assert again.status_code == 303
    with app.app_context():  # and joining did not move Bob's work into the new team either
        assert db.get_session().scalar(select(Corpus.team_id).where(Corpus.name == "more.txt")) == bob_team


def test_after_joining_a_new_login_still_works_in_your_own_team(app: Flask, client: FlaskClient) -> None:
    bob, bob_team = add_user(app, "bob@example.com", "Bob")
    url = invite_url(client)
    browser = app.test_client()
    login(browser, "bob@example.com", next=url)
    browser.post(url)
    browser.post("/logout")
    login(browser, "bob@example.com")  # a fresh session has no working team chosen
    browser.post("/corpora/", data={"files": [(io.BytesIO(b"bob's diary"), "diary.txt")]})
    with app.app_context():  # Alice's team has the smaller id, but Bob owns his own
        assert db.get_session().scalar(select(Corpus.team_id).where(Corpus.name == "diary.txt")) == bob_team


def test_joining_needs_the_csrf_token(app: Flask, client: FlaskClient) -> None:
    bob, bob_team = add_user(app, "bob@example.com", "Bob")
    url = invite_url(client)
    app.config["WTF_CSRF_ENABLED"] = True
    browser = login_as(app.test_client(), bob)
    assert browser.post(url).status_code == 400  # a cross-site form cannot make Bob join
    token = re.search(r'name="csrf_token" value="([^"]+)"', browser.get(url).get_data(as_text=True)).group(1)
    assert browser.post(url, data={"csrf_token": token}).status_code == 303
    assert teams_of(app, bob) == {bob_team, 1}


# 8. Logout does not end the session -----------------------------------------------------------

def test_a_cookie_copied_before_logout_is_dead_after_it(app: Flask) -> None:
    browser = app.test_client()
    assert login(browser, "alice@example.com") == 303
    thief = copy_of(browser, app)
    assert thief.get("/account").status_code == 200  # the copy works while the session lives
    browser.post("/logout")
    page = thief.get("/account")
    assert (page.status_code, page.headers["Location"]) == (303, "/login?next=/account")
    assert thief.post("/account/keys", data={"name": "stolen"}).status_code == 303  # to the login
    assert key_count(app) == 0
    assert login(browser, "alice@example.com") == 303  # logging in again works
    assert browser.get("/account").status_code == 200


def test_logout_also_invalidates_a_remember_me_cookie(app: Flask) -> None:
    with app.test_request_context():  # a "remember me" cookie as flask-login would have set it
        remembered = encode_cookie("1:0")
    returning = app.test_client()
    returning.set_cookie("remember_token", remembered)
    assert returning.get("/account").status_code == 200
    browser = login_as(app.test_client(), 1)
    browser.post("/logout")
    returning = app.test_client()
    returning.set_cookie("remember_token", remembered)
    assert returning.get("/account").status_code == 303
    assert "remember_token" not in str(app.test_client().post(
        "/login", data={"email": "alice@example.com", "password": PASSWORD}).headers)  # none issued


def test_changing_the_password_ends_every_other_session(app: Flask) -> None:
    browser = app.test_client()
    login(browser, "alice@example.com")
    other_device = app.test_client()
    login(other_device, "alice@example.com")
    thief = copy_of(browser, app)
    new = "a much better passphrase"
    changed = browser.post("/account/password", data={"current": PASSWORD, "password": new, "confirm": new})
    assert (changed.status_code, changed.headers["Location"]) == (303, "/account")
    page = browser.get("/account").get_data(as_text=True)  # this session goes on
    assert "Every other session of your account was signed out." in page
    assert other_device.get("/account").status_code == 303
    assert thief.get("/account").status_code == 303  # a copy of this very cookie too
    assert login(app.test_client(), "alice@example.com") == 401  # the old password is gone
    assert login(app.test_client(), "alice@example.com", new) == 303
    with app.app_context():
        assert db.get_session().get(User, 1).password_hash.startswith("scrypt:")


@pytest.mark.parametrize(("form", "field", "message"), [
    ({"current": "not my password"}, "current", "That is not your current password"),
    ({"password": "short", "confirm": "short"}, "password", "at least 10 characters"),
    ({"password": "x" * 1001, "confirm": "x" * 1001}, "password", "at most 1,000 characters"),
    ({"confirm": "something else entirely"}, "confirm", "The two passwords differ"),
    ({"password": PASSWORD, "confirm": PASSWORD}, "password", "differs from the current one"),
], ids=["wrong-current", "short", "long", "mismatch", "unchanged"])
def test_password_change_validation(app: Flask, client: FlaskClient, form: dict[str, str], field: str,
                                    message: str) -> None:
    data = {"current": PASSWORD, "password": "a new passphrase", "confirm": "a new passphrase", **form}
    other = copy_of(client, app)
    response = client.post("/account/password", data=data)
    assert response.status_code == 422
    assert message in response.get_data(as_text=True)
    assert other.get("/account").status_code == 200  # nothing changed, nobody signed out
    assert login(app.test_client(), "alice@example.com") == 303


def test_password_guesses_through_the_account_page_are_limited(app: Flask, client: FlaskClient) -> None:
    app.config["LOGIN_RATE_LIMIT"] = "2/300"
    data = {"current": "guess", "password": "a new passphrase", "confirm": "a new passphrase"}
    codes = [client.post("/account/password", data=data).status_code for _ in range(3)]
    assert codes == [422, 422, 429]


def test_sign_out_everywhere_else(app: Flask) -> None:
    browser = app.test_client()
    login(browser, "alice@example.com")
    other_device, thief = app.test_client(), copy_of(browser, app)
    login(other_device, "alice@example.com")
    assert browser.post("/account/logout-elsewhere").status_code == 303
    assert browser.get("/account").status_code == 200
    assert other_device.get("/account").status_code == 303
    assert thief.get("/account").status_code == 303


def test_a_session_lasts_session_days_from_its_login(app: Flask) -> None:
    assert app.config["SESSION_DAYS"] == 14
    assert app.permanent_session_lifetime == dt.timedelta(days=14)
    browser = app.test_client()
    response = browser.post("/login", data={"email": "alice@example.com", "password": PASSWORD})
    expires = browser.get_cookie("session").expires
    assert expires is not None and dt.timedelta(days=13.9) < expires - dt.datetime.now(dt.timezone.utc) <= dt.timedelta(days=14)
    assert response.status_code == 303 and browser.get("/account").status_code == 200
    with browser.session_transaction() as session:  # the login was 14 days and a minute ago
        session[LOGIN_AT] = time.time() - 14 * 86400 - 60
    assert browser.get("/account").status_code == 303  # however active the session stayed
    app.config["SESSION_DAYS"] = 30
    assert browser.get("/account").status_code == 200


# 9. The login limit resets --------------------------------------------------------------------

def test_api_calls_do_not_reset_the_login_limit(app: Flask, client: FlaskClient) -> None:
    """The old cleanup forgot every key idle for longer than the API's window, logins included."""
    app.config.update(LOGIN_RATE_LIMIT="3/300", API_RATE_LIMIT="100000/60")
    from webapp.web import ratelimit

    # One second into a login window, so the jump below stays inside it (the sliding-window
    # estimate would rightly let a login through once most of the window has slid past).
    now = [time.time() // 300 * 300 + 1]
    with app.app_context():
        ratelimit.limiter().clock = lambda: now[0]
    attacker = app.test_client()
    codes = [login(attacker, "alice@example.com", "guess") for _ in range(4)]
    assert codes == [401, 401, 401, 429]
    now[0] += 120  # longer than the API's window, well inside the login window
    ref = store(app, byte_bpe())
    for _ in range(1000):  # the old limiter cleaned up every 1000th call
        assert client.post("/api/v1/decode", json={"tokenizer": ref, "ids": [116]}).status_code == 200
    assert login(attacker, "alice@example.com", "guess") == 429
    assert login(app.test_client(), "alice@example.com", "guess") == 429  # per e-mail, any address


# 10. ² and CRLF ---------------------------------------------------------------------------------

@pytest.mark.parametrize("raw", ["²", "1²", "١", " 1", "+1", "1_0", "9" * 30, "-1", ""],
                         ids=["superscript", "digit-superscript", "arabic-indic", "space", "plus",
                              "underscore", "huge", "negative", "empty"])
def test_choosing_a_working_team_parses_the_id_strictly(client: FlaskClient, raw: str) -> None:
    response = client.post("/account/team", data={"team_id": raw})
    assert response.status_code == 404


@pytest.mark.parametrize("target", ["/corpora/\r\nSet-Cookie: x=1", "/x\n", "/x\x00", "/x\x7f", "/a b",
                                    "/corpora//evil", "/%0d%0a/\\evil", "/" + "a" * 3000],
                         ids=["crlf", "lf", "nul", "del", "space", "double-slash", "backslash", "long"])
def test_login_next_with_control_characters_goes_home(anon_client: FlaskClient, target: str) -> None:
    page = anon_client.get("/login", query_string={"next": target})
    assert page.status_code == 200 and 'name="next" value="/"' in page.get_data(as_text=True)
    response = anon_client.post("/login", data={"email": "alice@example.com", "password": PASSWORD,
                                                "next": target})
    assert (response.status_code, response.headers["Location"]) == (303, "/")


def test_login_next_keeps_a_plain_path_with_its_query(anon_client: FlaskClient) -> None:
    response = anon_client.post("/login", data={"email": "alice@example.com", "password": PASSWORD,
                                                "next": "/compare?ids=1&ids=2"})
    assert response.headers["Location"] == "/compare?ids=1&ids=2"


# 11. Data loss -----------------------------------------------------------------------------------

def test_refusing_to_delete_the_only_team_deletes_nothing(app: Flask, client: FlaskClient) -> None:
    client.post("/corpora/", data={"files": [(io.BytesIO(b"precious words"), "precious.txt")]})
    store(app, byte_bpe("precious-bpe"))
    response = client.post("/teams/1/delete", data={"what": "team", "confirm": "Alice's team"})
    assert (response.status_code, response.headers["Location"]) == (303, "/teams/1")
    assert "This is your only team" in client.get("/teams/1").get_data(as_text=True)
    with app.app_context():
        session = db.get_session()
        assert [c.name for c in session.scalars(select(Corpus))] == ["precious.txt"]
        assert [t.name for t in session.scalars(select(Tokenizer))] == ["precious-bpe"]
        assert session.get(Team, 1) is not None
    corpus_id = int(re.search(r"/corpora/(\d+)", client.get("/corpora/").get_data(as_text=True)).group(1))
    assert "precious words" in client.get(f"/corpora/{corpus_id}").get_data(as_text=True)  # the file too


def test_deleting_a_team_that_is_not_your_only_one_deletes_it_and_its_data(app: Flask, client: FlaskClient) -> None:
    client.post("/teams", data={"name": "Second"})  # team 2, now the working team
    client.post("/account/team", data={"team_id": "1"})
    client.post("/corpora/", data={"files": [(io.BytesIO(b"old words"), "old.txt")]})
    response = client.post("/teams/1/delete", data={"what": "team", "confirm": "Alice's team"})
    assert (response.status_code, response.headers["Location"]) == (303, "/teams")
    with app.app_context():
        session = db.get_session()
        assert session.get(Team, 1) is None
        assert session.scalar(select(func.count()).select_from(Corpus)) == 0


def test_an_unknown_delete_kind_deletes_nothing(app: Flask, client: FlaskClient) -> None:
    client.post("/corpora/", data={"files": [(io.BytesIO(b"kept words"), "kept.txt")]})
    response = client.post("/teams/1/delete", data={"what": "everything", "confirm": "Alice's team"})
    assert response.status_code == 400
    with app.app_context():
        assert db.get_session().scalar(select(func.count()).select_from(Corpus)) == 1
