"""Every fixed form names things by one rule, and reads numbers with their bounds (issue #13, item 2).

A name is stripped, refused when empty (where nothing else names the row) and when longer than
``MAX_NAME``, with the same sentence on every form: API key, team, corpus, training job,
imported tokenizer, leaderboard, account.
"""

from __future__ import annotations

import html
import io
import re
from pathlib import Path

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import select

from tests.webapp.conftest import default_form, make_app
from tests.webapp.playground_samples import byte_bpe, store
from webapp.store import db
from webapp.store.model_base import MAX_NAME
from webapp.store.models import ShareLink, Team

LONG = "n" * (MAX_NAME + 1)
TOO_LONG = f"A name can be at most {MAX_NAME} characters; this one has {MAX_NAME + 1}."


@pytest.fixture
def corpus(client: FlaskClient) -> int:
    answer = client.post("/corpora/", data={"files": [(io.BytesIO(b"the cat sat on the mat\n" * 20), "cats.txt")]})
    assert answer.status_code == 303
    return int(answer.headers["Location"].rsplit("/", 1)[1])


def _post(client: FlaskClient, app: Flask, form: str, name: str, corpus: int) -> tuple[int, str]:
    tokenizer = store(app, byte_bpe())
    data: dict[str, object] = {
        "key": {"name": name},
        "team": {"name": name},
        "corpus": {"name": name},
        "train": default_form("bpe", vocab_size="300") | {"corpus_ids": str(corpus), "name": name},
        "import": {"kind": "tokenizer_json", "name": name,
                   "file": (io.BytesIO(byte_bpe().to_json().encode()), "tokenizer.json")},
        "leaderboard": {"name": name, "tokenizer_ids": str(tokenizer), "corpus_ids": str(corpus), "kib": "1"},
    }[form]
    url = {"key": "/account/keys", "team": "/teams", "corpus": f"/corpora/{corpus}/rename", "train": "/train",
           "import": "/import", "leaderboard": "/leaderboards"}[form]
    response = client.post(url, data=data)
    return response.status_code, html.unescape(response.get_data(as_text=True))


FORMS = ["key", "team", "corpus", "train", "import", "leaderboard"]


@pytest.mark.parametrize("form", FORMS)
def test_a_long_name_is_refused_with_one_sentence_everywhere(client: FlaskClient, app: Flask, corpus: int,
                                                              form: str) -> None:
    status, page = _post(client, app, form, LONG, corpus)
    assert status == 422
    assert TOO_LONG in page


@pytest.mark.parametrize("form", FORMS)
def test_a_name_of_the_longest_length_is_accepted(client: FlaskClient, app: Flask, corpus: int, form: str) -> None:
    status, page = _post(client, app, form, " " + "n" * MAX_NAME + " ", corpus)  # spaces around are not counted
    assert status in (200, 303), page[:300]
    assert TOO_LONG[:30] not in page


@pytest.mark.parametrize(("form", "message"), [
    ("key", "Give the key a name, such as “CI”."),
    ("team", "Give the team a name."),
    ("corpus", "Give the corpus a name."),
])
def test_an_empty_name_says_what_to_do_where_nothing_else_names_the_row(client: FlaskClient, app: Flask,
                                                                         corpus: int, form: str, message: str) -> None:
    status, page = _post(client, app, form, "   ", corpus)
    assert (status, message in page) == (422, True)


def test_names_are_stored_stripped(client: FlaskClient, app: Flask) -> None:
    assert client.post("/teams", data={"name": "  Spare room  "}).status_code == 303
    with app.app_context():
        assert db.get_session().scalars(select(Team.name).order_by(Team.id.desc())).first() == "Spare room"


ASTRONAUT = "Bob 👩\u200d🚀's room"  # a zero-width joiner, which the emoji needs


@pytest.mark.parametrize(("typed", "stored"), [
    ("\u202eevil\x00", "evil"),  # a bidi override (shows the name reversed) and NUL go
    ("tab\tand\nnewline", "tab and newline"),  # controls become spaces
    ("\u2066isolated\u2069 \u200fmark", "isolated mark"),
    (ASTRONAUT, ASTRONAUT),  # joiners stay
])
def test_names_are_stored_without_control_or_bidi_characters(client: FlaskClient, app: Flask, typed: str,
                                                             stored: str) -> None:
    assert client.post("/teams", data={"name": typed}).status_code == 303
    with app.app_context():
        assert db.get_session().scalars(select(Team.name).order_by(Team.id.desc())).first() == stored


def test_a_name_in_a_message_is_shown_as_typed_between_quotes(client: FlaskClient, app: Flask, corpus: int) -> None:
    assert client.post(f"/corpora/{corpus}/rename", data={"name": ASTRONAUT}).status_code in (200, 303)
    page = html.unescape(client.get(f"/corpora/{corpus}/delete").get_data(as_text=True))
    assert f"Delete the corpus “{ASTRONAUT}”?" in page and "\\u200d" not in page


def test_the_sign_up_name_follows_the_same_rule(tmp_path: Path) -> None:
    app = make_app(tmp_path, f"sqlite:///{tmp_path / 's.sqlite3'}", OPEN_SIGNUP=True)
    client = app.test_client()
    form = {"email": "ada@example.com", "password": "a long password", "confirm": "a long password"}
    response = client.post("/signup", data=form | {"name": LONG})
    assert response.status_code == 422
    assert TOO_LONG in html.unescape(response.get_data(as_text=True))
    response = client.post("/signup", data=form | {"name": "  "})
    assert (response.status_code, "Enter your name." in response.get_data(as_text=True)) == (422, True)
    assert client.post("/signup", data=form | {"name": " Ada "}).status_code == 303
    db.get_engine(app).dispose()


@pytest.mark.parametrize(("days", "status"), [
    pytest.param("²", 422, id="superscript"), pytest.param("0", 422, id="zero"),
    pytest.param("3651", 422, id="above"), pytest.param("9" * 40, 422, id="huge"),
    pytest.param(" 7 ", 303, id="spaces"), pytest.param("", 303, id="never"),
])
def test_share_link_days_are_read_with_their_bounds(client: FlaskClient, app: Flask, days: str, status: int) -> None:
    tokenizer = store(app, byte_bpe())
    response = client.post(f"/tokenizers/{tokenizer}/share", data={"days": days})
    assert response.status_code == status
    if status == 422:
        assert ("The expiry must be a whole number of days from 1 to 3650, or empty for a link that never expires; "
                f"got {days[:20]!r}.") in html.unescape(response.get_data(as_text=True))
    with app.app_context():
        assert len(db.get_session().scalars(select(ShareLink)).all()) == (status == 303)


ROOT = Path(__file__).resolve().parents[3]


def test_delete_links_are_styled_as_danger_not_primary() -> None:
    css = (ROOT / "static" / "css" / "app.css").read_text(encoding="utf-8")
    rules = re.findall(r"([^{}]+)\{([^}]*)\}", css)
    danger = [body for selector, body in rules if ".button.danger" in selector.replace(" ", "")]
    assert danger and "background: transparent" in danger[-1] and "var(--danger)" in danger[-1]
    assert 'class="button danger"' in (ROOT / "templates" / "corpora" / "show.html").read_text(encoding="utf-8")
