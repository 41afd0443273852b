"""Issue 22, findings 2 (teams a member may create), 8 (one name rule for every source of a name,
and CSV cells that a spreadsheet neither runs nor shows reversed), 9 (no account is left without
a team) and 10 (ASCII digits only, duplicate ids folded, JSON 405 on every API path)."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import func, select, update

from tests.webapp.conftest import add_corpus, add_user, login_as, make_app
from tests.webapp.playground_samples import byte_bpe, store
from webapp.store import db
from webapp.store.models import Corpus, Leaderboard, Membership, Team, Tokenizer
from webapp.transfer.backup import backup, restore
from webapp.web.forms import BIDI_CONTROLS, MAX_NAME, clean_name, name_from_filename
from webapp.web.numbers import parse_int, plain_digits_problem

HOSTILE_NAMES = {
    "tab-formula": ('\t=HYPERLINK("evil.example","tab").json', '=HYPERLINK("evil.example","tab").json'),
    "nul": ("a\x00b.json", "ab.json"),
    "rtl-override": ("\u202eevil\u202c.json", "evil.json"),
    "isolates-and-marks": ("\u2066a\u2069\u200e\u200f\u061cb.json", "ab.json"),
    "carriage-return": ("\r\n=1+1.json", "=1+1.json"),
    "path": ("C:\\Users\\x\\tok\u202e.json", "tok.json"),
    "only-controls": ("\x00\t\u202e", "upload"),
}
#: The ones a multipart body carries as they are (a browser escapes quotes, CR and LF in a file name).
SENT_NAMES = {key: HOSTILE_NAMES[key] for key in ("nul", "rtl-override", "isolates-and-marks", "only-controls")}
SENT_NAMES["tab-formula"] = ("\t=HYPERLINK(1)\u202e.json", "=HYPERLINK(1).json")


def _row(app: Flask, model: type, row_id: int) -> object:
    with app.app_context():
        return db.get_session().get(model, row_id)


# --------------------------------------------------------------------- 8: names and CSV
@pytest.mark.parametrize(("raw", "expected"), HOSTILE_NAMES.values(), ids=HOSTILE_NAMES.keys())
def test_a_name_from_a_file_name_passes_the_name_rule(raw: str, expected: str) -> None:
    name = name_from_filename(raw, "upload")
    assert name == expected
    assert clean_name(name) == name and 0 < len(name) <= MAX_NAME  # what a typed name must be
    assert len(name_from_filename("é" * 500 + ".json", "upload")) == MAX_NAME


@pytest.mark.parametrize(("raw", "expected"), SENT_NAMES.values(), ids=SENT_NAMES.keys())
def test_an_import_named_after_its_file_gets_a_legal_name(client: FlaskClient, app: Flask,
                                                          raw: str, expected: str) -> None:
    response = client.post("/import", data={"kind": "tokenizer_json", "name": "",
                                            "file": (io.BytesIO(byte_bpe().to_json().encode()), raw)})
    assert response.status_code == 303, response.get_data(as_text=True)[:500]
    row = _row(app, Tokenizer, int(response.headers["Location"].split("/")[2]))
    assert row.name == expected
    assert row.config["import"]["files"] == [expected]  # what its page lists, and a backup carries


def test_a_corpus_named_after_its_file_gets_a_legal_name(client: FlaskClient, app: Flask) -> None:
    response = client.post("/corpora/", data={"files": [(io.BytesIO(b"some words"), "\t=cmd|calc\x00!A0\u202e.txt")]})
    assert response.status_code == 303
    with app.app_context():
        corpus = db.get_session().scalar(select(Corpus))
        assert (corpus.name, corpus.original_filename) == ("=cmd|calc!A0.txt", "=cmd|calc!A0.txt")


def _board_with_names(app: Flask, client: FlaskClient, tokenizer_names: list[str], corpus_name: str) -> int:
    """A board over tokenizers and a corpus whose names were stored before the name rule held
    (an older version, or a restore): the CSV must be safe whatever the rows hold."""
    ids = [store(app, byte_bpe(f"t{i}")) for i in range(len(tokenizer_names))]
    corpus_id = add_corpus(app, "hello world\n" * 5, "c.txt")
    response = client.post("/leaderboards", data={"tokenizer_ids": [str(i) for i in ids],
                                                   "corpus_ids": [str(corpus_id)]})
    assert response.status_code == 303
    board_id = int(response.headers["Location"].rsplit("/", 1)[1])
    with app.app_context():
        session = db.get_session()
        session.execute(update(Leaderboard).where(Leaderboard.id == board_id).values(
            tokenizers=[{"id": i, "name": n} for i, n in zip(ids, tokenizer_names, strict=True)],
            corpora=[{"id": corpus_id, "name": corpus_name}]))
        session.commit()
    return board_id


def test_the_leaderboard_csv_escapes_tab_and_cr_and_drops_nul_and_bidi(app: Flask, client: FlaskClient) -> None:
    names = ["\t=HYPERLINK(\"http://evil.example\",\"tab\")", "\r=1+1", "a\x00b", "\u202eevil\u202c",
             "\u2066x\u2069\u200e\u200f\u061c", "@SUM(1)", "plain"]
    board_id = _board_with_names(app, client, names, "-corpus\x00")
    response = client.get(f"/leaderboards/{board_id}/csv")
    assert response.status_code == 200
    body = response.get_data(as_text=True)
    assert "\x00" not in body and not set(body) & BIDI_CONTROLS
    rows = list(csv.DictReader(io.StringIO(body)))
    assert {row["corpus"] for row in rows} == {"'-corpus"}
    assert sorted(row["tokenizer"] for row in rows) == sorted([
        "'\t=HYPERLINK(\"http://evil.example\",\"tab\")", "'\r=1+1", "ab", "evil", "x", "'@SUM(1)", "plain"])
    for row in rows:  # no cell a spreadsheet would run
        assert not any(cell.startswith(("=", "+", "-", "@", "\t", "\r")) for cell in row.values() if cell)


def test_restore_brings_names_back_under_the_name_rule(app: Flask, client: FlaskClient, tmp_path: Path) -> None:
    tokenizer_id = store(app, byte_bpe("kept"))
    with app.app_context():
        session = db.get_session()
        session.execute(update(Tokenizer).where(Tokenizer.id == tokenizer_id).values(
            name="\t=evil\x00name\u202e" + "x" * 300))
        session.execute(update(Team).where(Team.id == 1).values(name="\u202eTeam\u202c"))
        session.commit()
    archive = tmp_path / "backup.tar.gz"
    backup(dict(app.config), archive)
    empty = make_app(tmp_path / "second", f"sqlite:///{tmp_path / 'second.sqlite3'}", seed=False)
    restore(dict(empty.config), archive)
    with empty.app_context():
        session = db.get_session()
        name = session.get(Tokenizer, tokenizer_id).name
        assert name == ("=evil name" + "x" * 300)[:MAX_NAME] and clean_name(name) == name
        assert session.get(Team, 1).name == "Team"


# --------------------------------------------------------------------- 9: every account keeps a team
def test_a_member_whose_last_team_is_deleted_gets_a_team_of_their_own(app: Flask, client: FlaskClient) -> None:
    bob, bob_team = add_user(app, "bob@example.com", "Bob")
    bob_client = login_as(app.test_client(), bob)
    with app.app_context():  # Bob joins Alice's team 1, then deletes his own team (he has two)
        session = db.get_session()
        session.add(Membership(team_id=1, user_id=bob, role="member"))
        session.commit()
    assert bob_client.post(f"/teams/{bob_team}/delete", data={"what": "team", "confirm": "Bob's team"}).status_code == 303
    client.post("/teams", data={"name": "Alice's other team"})  # so team 1 is not her only team
    deleted = client.post("/teams/1/delete", data={"what": "team", "confirm": "Alice's team"})
    assert deleted.status_code == 303
    with app.app_context():
        session = db.get_session()
        assert session.get(Team, 1) is None
        teams = session.execute(select(Team.name, Membership.role).join(Membership, Membership.team_id == Team.id)
                                .where(Membership.user_id == bob)).all()
    assert [tuple(row) for row in teams] == [("Bob's team", "owner")]  # a fresh team, his alone
    page = bob_client.get("/account")
    assert page.status_code == 200 and "new work goes here" in page.get_data(as_text=True)
    assert bob_client.get("/corpora/").status_code == 200


def test_a_member_removed_from_their_only_team_gets_one_of_their_own(app: Flask, client: FlaskClient) -> None:
    bob, _ = add_user(app, "bob@example.com", "Bob", team_id=1, role="member")
    assert client.post(f"/teams/1/members/{bob}/remove").status_code == 303
    with app.app_context():
        owned = db.get_session().scalars(select(Membership.role).where(Membership.user_id == bob)).all()
    assert owned == ["owner"]
    assert login_as(app.test_client(), bob).get("/account").status_code == 200


def test_the_account_page_works_for_an_account_in_no_team(app: Flask) -> None:
    bob, bob_team = add_user(app, "bob@example.com", "Bob")
    with app.app_context():  # data from before every account kept a team
        session = db.get_session()
        session.execute(Membership.__table__.delete().where(Membership.user_id == bob))
        session.commit()
    bob_client = login_as(app.test_client(), bob)
    page = bob_client.get("/account")
    assert page.status_code == 200
    assert "You are in no team" in page.get_data(as_text=True)
    assert bob_client.post("/account/keys", data={"name": "CI"}).status_code == 200
    upload = bob_client.post("/corpora/", data={"files": [(io.BytesIO(b"words"), "a.txt")]})
    assert upload.status_code == 403 and "Start a team" in upload.get_data(as_text=True)
    assert bob_client.post("/teams", data={"name": "Mine"}).status_code == 303  # the way out
    assert bob_client.get("/corpora/").status_code == 200


# --------------------------------------------------------------------- 2: teams a member may create
def test_a_member_may_create_only_so_many_teams(tmp_path: Path) -> None:
    app = make_app(tmp_path, f"sqlite:///{tmp_path / 'app.sqlite3'}", MAX_TEAMS_PER_MEMBER=3)
    client = login_as(app.test_client(), 1)  # Alice owns team 1 already
    assert [client.post("/teams", data={"name": f"T{i}"}).status_code for i in range(2)] == [303, 303]
    refused = client.post("/teams", data={"name": "one too many"})
    assert refused.status_code == 429
    text = refused.get_data(as_text=True)
    assert "You already own 3 teams" in text and "TOKENFORGE_MAX_TEAMS_PER_MEMBER is 3" in text
    with app.app_context():
        names = db.get_session().scalars(select(Team.name).order_by(Team.id)).all()
        assert names == ["Alice's team", "T0", "T1"]  # nothing of the refused one was kept
        assert db.get_session().scalar(select(func.count()).select_from(Membership)) == 3
    assert client.post("/teams/3/delete", data={"what": "team", "confirm": "T1"}).status_code == 303
    assert client.post("/teams", data={"name": "room again"}).status_code == 303


def test_the_team_limit_is_a_documented_setting() -> None:
    from webapp.web.config import ENV_DEFAULTS, load_settings

    assert load_settings({})["MAX_TEAMS_PER_MEMBER"] == 10
    assert load_settings({"TOKENFORGE_MAX_TEAMS_PER_MEMBER": "2"})["MAX_TEAMS_PER_MEMBER"] == 2
    docs = Path(__file__).resolve().parents[2] / "docs"
    assert "TOKENFORGE_MAX_TEAMS_PER_MEMBER" in ENV_DEFAULTS
    for page in ("configuration.md", "security.md"):
        assert "TOKENFORGE_MAX_TEAMS_PER_MEMBER" in (docs / page).read_text(encoding="utf-8")


# --------------------------------------------------------------------- 10: digits, duplicates, 405
@pytest.mark.parametrize("text", ["٢", "２", "²", "2_000", "+2", "2.0", "1e3", "- 2"])
def test_only_ascii_digits_are_numbers(text: str) -> None:
    assert parse_int(text) is None and parse_int(text, low=-10) is None
    assert plain_digits_problem("Num workers", text) == (
        f"Num workers must be a whole number written with the digits 0 to 9, not {text!r}.")


def test_plain_numbers_still_parse() -> None:
    assert (parse_int("2"), parse_int("-3", low=-5), parse_int("-3")) == (2, -3, None)
    assert plain_digits_problem("Seed", " -42 ") is None and plain_digits_problem("Seed", "") is None


def test_a_tokenizer_chosen_many_times_on_a_board_counts_once(app: Flask, client: FlaskClient) -> None:
    tokenizer_id = store(app, byte_bpe())
    corpus_id = add_corpus(app, "hello world\n", "c.txt")
    response = client.post("/leaderboards", data={"tokenizer_ids": [str(tokenizer_id)] * 13,
                                                   "corpus_ids": [str(corpus_id)] * 7})
    assert response.status_code == 303, response.get_data(as_text=True)[-2000:]
    board = _row(app, Leaderboard, int(response.headers["Location"].rsplit("/", 1)[1]))
    assert [entry["id"] for entry in board.tokenizers] == [tokenizer_id]
    assert [entry["id"] for entry in board.corpora] == [corpus_id]


@pytest.mark.parametrize(("method", "path"), [("PATCH", "/api"), ("POST", "/api"), ("DELETE", "/api"),
                                              ("PATCH", "/api/v1/encode"), ("PUT", "/api/v1/tokenizers")])
def test_every_api_path_answers_405_in_json(client: FlaskClient, anon_client: FlaskClient,
                                            method: str, path: str) -> None:
    for who in (client, anon_client):
        response = who.open(path, method=method)
        assert response.status_code == 405 and response.is_json
        assert response.json["error"].startswith(f"{method} {path} is not allowed; use ")
    assert client.get("/api").content_type.startswith("text/html")  # the docs page stays a page
