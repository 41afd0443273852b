"""Hostile inputs against every route (issue 11, findings 3 and 10): never a 5xx, JSON for /api/.

:func:`test_no_route_answers_5xx` walks ``app.url_map``: each route's path parameters are filled
with real ids of objects Alice's team owns and with bad ones (0, the largest id, another team's
object, ``²``, CRLF, NUL, a very long string), and each method gets query strings, form fields
and JSON bodies holding ``²``, CRLF, NUL, very long strings, deep nesting and wrong types, as
Alice, as a visitor, and as a visitor holding a share link. Routes that delete or sign out run
last, so they do not remove what the others need. The smaller tests pin each fix with the
message a user sees, and the vocabulary pages are checked against a stored tokenizer that no
import would accept (a 10 MB token, tokens of thousands of lengths), inserted directly.
"""

from __future__ import annotations

import io
import json
import re
import time
import urllib.parse
from collections.abc import Iterator
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import select

from engine import Tokenizer
from engine.models.wordpiece import WordPiece
from engine.pretokenizers import BertPreTokenizer
from engine.trainers import option_specs
from tests.webapp.conftest import HX, add_user, login_as, make_app
from tests.webapp.playground_samples import byte_bpe, store, unigram, wordpiece
from webapp.jobs import queue as jobs
from webapp.playground import charts, vocab_browser
from webapp.store import db
from webapp.store.models import Corpus, Leaderboard
from webapp.store.models_auth import ApiKey, Invite, SharedText, ShareLink, Team
from webapp.training.form import PREFIX, available_algorithms
from webapp.web.errors import MESSAGES
from webapp.web.numbers import MAX_ID

DEEP = "[" * 100_000 + "]" * 100_000
LONG = "9" * 5_000
# The values every query string and form field gets, one kind per request.
NASTY: dict[str, str] = {
    "superscript": "²",
    "crlf": "1\r\nSet-Cookie: x=1",
    "nul": "\x00",
    "long-digits": LONG,
    "long-text": "é" * 5_000,
    "negative": "-1",
    "float": "1.5",
    "deep": DEEP[:2_000] + DEEP[-2_000:],
}
FIELDS = ["text", "name", "next", "confirm", "confirmed", "what", "team_id", "role", "password", "current",
          "ids", "email", "days", "q", "page", "group", "corpus", "corpus_id", "corpus_ids", "percent", "part",
          "algorithm", "kind", "pattern", "lowercase", "special_tokens", "text_field", "replace_errors",
          "allowed_special", "show_ws", "colour_by_id"]
DESTRUCTIVE = ("delete", "remove", "revoke", "logout", "cancel")


def _json_bodies(tokenizer_id: int) -> dict[str, Any]:
    """JSON bodies for POST routes: deep nesting and every wrong type the API could meet."""
    return {
        "deep": DEEP,
        "deep-object": '{"tokenizer": ' * 50_000 + "1" + "}" * 50_000,
        "list": [1, 2],
        "string": "hello",
        "number": 5,
        "tokenizer-superscript": {"tokenizer": "²", "text": "x", "ids": [1]},
        "tokenizer-huge": {"tokenizer": 10**30, "text": "x", "ids": [1]},
        "tokenizer-bool": {"tokenizer": True, "text": "x", "ids": [1]},
        "tokenizer-float": {"tokenizer": 1.0, "text": "x", "ids": [1]},
        "tokenizer-list": {"tokenizer": [tokenizer_id], "text": "x"},
        "tokenizer-long-name": {"tokenizer": "x" * 100_000, "text": "x"},
        "tokenizer-crlf": {"tokenizer": "\r\n", "text": "x"},
        "text-number": {"tokenizer": tokenizer_id, "text": 5},
        "text-deep": {"tokenizer": tokenizer_id, "text": [[[[["x"]]]]]},
        "text-surrogate": {"tokenizer": tokenizer_id, "text": "\ud800x\udfff"},
        "allowed-string": {"tokenizer": tokenizer_id, "text": "x", "allowed_special": "none"},
        "allowed-mixed": {"tokenizer": tokenizer_id, "text": "x", "allowed_special": ["<|endoftext|>", 5]},
        "ids-bools": {"tokenizer": tokenizer_id, "ids": [True, False]},
        "ids-floats": {"tokenizer": tokenizer_id, "ids": [1.5, 2.0]},
        "ids-huge": {"tokenizer": tokenizer_id, "ids": [10**30, 2**63]},
        "ids-negative": {"tokenizer": tokenizer_id, "ids": [-1]},
        "ids-strings": {"tokenizer": tokenizer_id, "ids": ["²", "1"]},
        "ids-object": {"tokenizer": tokenizer_id, "ids": {"0": 1}},
    }


def _world(app: Flask, client: FlaskClient) -> dict[str, Any]:
    """Alice's objects of every kind (and a few of Carol's, in another team), as the routes name them."""
    bob, _ = add_user(app, "bob@example.com", "Bob", team_id=1, role="member")
    carol, carol_team = add_user(app, "carol@example.com", "Carol")
    bpe = store(app, byte_bpe(), stats={"merges": [[116, 104, 9], [256, 101, 7]], "curve": [[256, 1.0], [258, 1.5]]})
    store(app, wordpiece())
    store(app, unigram())
    carol_tokenizer = store(app, byte_bpe("carol's"), team_id=carol_team)
    answer = client.post("/corpora/", data={"files": [(io.BytesIO(b"the cat sat on the mat\n" * 20), "cats.txt")]})
    assert answer.status_code == 303, answer.get_data(as_text=True)[:500]
    assert client.post("/teams", data={"name": "Spare"}).status_code in (200, 302, 303)
    assert client.post(f"/tokenizers/{bpe}/share", data={"days": ""}).status_code == 303
    assert client.post("/account/keys", data={"name": "walk"}).status_code in (200, 303)
    assert client.post("/teams/1/invites", data={"role": "member"}).status_code in (200, 303)
    with app.app_context():
        session = db.get_session()
        corpus = session.scalars(select(Corpus).where(Corpus.team_id == 1)).first()
        carol_corpus = Corpus(team_id=carol_team, name="c", sha256=corpus.sha256, format="txt",
                              original_filename="c", upload_bytes=1, size_bytes=1, stats={})
        session.add(carol_corpus)
        session.commit()
        job = jobs.enqueue(session, team_id=1, name="walk job", algorithm="bpe", options={"vocab_size": 300},
                           corpus_ids=[corpus.id])
        link = session.scalars(select(ShareLink).where(ShareLink.tokenizer_id == bpe)).one()
        shared = SharedText(share_link_id=link.id, token="t" * 43, text="the cat")
        board = Leaderboard(team_id=1, name="walk board", tokenizers=[{"id": bpe, "name": "bpe"}],
                            corpora=[{"id": corpus.id, "name": "cats.txt"}], max_bytes=1024, results={})
        carol_board = Leaderboard(team_id=carol_team, name="carol board", tokenizers=[], corpora=[],
                                  max_bytes=1024, results={})
        session.add_all([shared, board, carol_board])
        session.commit()
        invite = session.scalars(select(Invite)).first()
        spare = session.scalars(select(Team).where(Team.name == "Spare")).one()
        key = session.scalars(select(ApiKey)).first()
        return {
            "board": board.id, "carol_board": carol_board.id,
            "bob": bob, "carol": carol, "bpe": bpe, "carol_tokenizer": carol_tokenizer,
            "corpus": corpus.id, "carol_corpus": carol_corpus.id, "job": job.id, "link": link.id,
            "share_token": link.token, "text_token": shared.token, "invite": invite.id if invite else 1,
            "invite_token": invite.token if invite else "nope", "spare_team": spare.id, "carol_team": carol_team,
            "key": key.id if key else 1,
        }


def _path_values(endpoint: str, name: str, world: dict[str, Any]) -> list[str]:
    """Real and bad values of one path parameter of ``endpoint``."""
    real: dict[str, Any] = {
        "tokenizer_id": world["bpe"], "corpus_id": world["corpus"], "job_id": world["job"],
        "board_id": world["board"], "link_id": world["link"], "key_id": world["key"], "team_id": world["spare_team"],
        "invite_id": world["invite"], "user_id": world["bob"], "token_id": 257,
        "text_token": world["text_token"], "key": "tokenizer.json", "filename": "tokenizer.json",
        "token": world["invite_token"] if endpoint.startswith("teams.") else world["share_token"],
    }
    other_team = {"tokenizer_id": world["carol_tokenizer"], "corpus_id": world["carol_corpus"],
                  "board_id": world["carol_board"],
                  "team_id": world["carol_team"], "user_id": world["carol"]}
    if name == "filename" and endpoint == "static":
        return ["app.css", "..%2f..%2fpyproject.toml", "%00"]
    values = [str(real[name])]
    if name in other_team:
        values.append(str(other_team[name]))
    if name.endswith("_id"):
        values += ["0", str(MAX_ID)]
    else:
        values += ["²", "a\r\nb", "\x00", "x" * 3_000]
    return values


def _paths(rule: Any, world: dict[str, Any]) -> Iterator[str]:
    """The rule's URL with each parameter in turn given each of its values (the others real)."""
    args = sorted(rule.arguments)
    if not args:
        yield rule.rule
        return
    choices = {name: _path_values(rule.endpoint, name, world) for name in args}
    seen: set[str] = set()
    for varied in args:
        for value in choices[varied]:
            path = rule.rule
            for name in args:
                raw = value if name == varied else choices[name][0]
                quoted = raw if "%" in raw else urllib.parse.quote(raw, safe="")
                path = re.sub(rf"<(?:[a-z]+:)?{name}>", quoted, path)
            if path not in seen:
                seen.add(path)
                yield path


def _form(value: str) -> dict[str, Any]:
    fields: dict[str, Any] = {name: value for name in FIELDS}
    for algorithm in available_algorithms():
        fields.update((PREFIX + spec.name, value) for spec in option_specs(algorithm))
    fields["corpus_ids"] = [value, value]
    fields["ids"] = [value, value]
    return fields


def _problem(response: Any, method: str, path: str, what: str) -> str | None:
    """What is wrong with this answer (a 5xx, or a non-JSON /api/ error), or None."""
    where = f"{method} {path[:80]!r} with {what}"
    if response.status_code >= 500:
        return f"{where}: {response.status_code}"
    if path.startswith("/api/") and response.status_code >= 400:
        error = response.json.get("error") if response.is_json and isinstance(response.json, dict) else None
        if not (isinstance(error, str) and error.strip()):
            return f"{where}: a {response.status_code} without a JSON error sentence"
    return None


@pytest.fixture
def walk_app(tmp_path: Any) -> Iterator[Flask]:
    app = make_app(tmp_path, f"sqlite:///{tmp_path / 'walk.sqlite3'}", API_RATE_LIMIT="1000000/60",
                   LOGIN_RATE_LIMIT="1000000/60", SIGNUP_RATE_LIMIT="1000000/60", PROPAGATE_EXCEPTIONS=False)
    yield app
    db.get_engine(app).dispose()


API_ONLY_BODIES = ("deep", "list", "text-number", "tokenizer-superscript")


@pytest.mark.slow
def test_no_route_answers_5xx(walk_app: Flask) -> None:
    app = walk_app
    world = _world(app, login_as(app.test_client(), 1))
    rules = [r for r in app.url_map.iter_rules() if r.endpoint != "static"]
    rules.sort(key=lambda r: any(word in r.endpoint for word in DESTRUCTIVE))  # stable: the rest first
    bodies = _json_bodies(world["bpe"])
    forms = {kind: _form(value) for kind, value in NASTY.items()}
    queries = {kind: urllib.parse.urlencode({name: value for name in FIELDS}) for kind, value in NASTY.items()}

    def visitors() -> Iterator[tuple[str, FlaskClient]]:
        yield "alice", login_as(app.test_client(), 1)
        yield "visitor", app.test_client()
        sharer = app.test_client()
        sharer.get(f"/s/{world['share_token']}")
        yield "share visitor", sharer

    def send(client: FlaskClient, method: str, path: str, kind: str, who: str) -> None:
        if kind in NASTY:
            if method == "GET":
                response = client.get(f"{path}?{queries[kind]}", headers=HX if kind == "crlf" else {})
            else:
                response = client.open(path, method=method, data=forms[kind])
        elif kind in bodies:
            body = bodies[kind]
            response = client.open(path, method=method, content_type="application/json",
                                   data=body if isinstance(body, str) else json.dumps(body))
        else:  # raw percent-escapes: NUL, invalid UTF-8, a superscript two
            response = client.open(path, method=method, query_string="page=%00&q=%ff%fe&group=1+%C2%B2&ids=%C2%B2")
        problem = _problem(response, method, path, f"{kind} as {who}")
        if problem:
            problems.append(problem)
        nonlocal sent
        sent += 1

    sent = 0
    problems: list[str] = []
    for rule in rules:
        methods = sorted(rule.methods - {"HEAD", "OPTIONS"})
        paths = list(_paths(rule, world))
        for who, client in visitors():
            send(client, "PUT", paths[0], "escapes", who)  # a 405 everywhere (JSON under /api/)
            for method in methods:
                # Every nasty value on the real path; each bad path value with one plain request.
                kinds = [*NASTY, "escapes"]
                if method != "GET":
                    kinds += list(bodies) if rule.rule.startswith("/api/") else list(API_ONLY_BODIES)
                for kind in kinds:
                    send(client, method, paths[0], kind, who)
                for path in paths[1:]:
                    send(client, method, path, "escapes", who)
    assert sent > 1000
    assert problems == [], f"{len(problems)} bad answers:\n" + "\n".join(problems[:60])


# ----------------------------------------------------------------- finding 10, input by input
@pytest.fixture
def three(app: Flask) -> dict[str, int]:
    return {"bpe": store(app, byte_bpe()), "wp": store(app, wordpiece()), "uni": store(app, unigram())}


def _corpus(client: FlaskClient) -> int:
    client.post("/corpora/", data={"files": [(io.BytesIO(b"the cat sat\n" * 50), "cats.txt")]})
    page = client.get("/train").get_data(as_text=True)
    return int(re.search(r'name="corpus_ids" value="(\d+)"', page).group(1))  # type: ignore[union-attr]


def test_share_link_days_superscript(client: FlaskClient, three: dict[str, int]) -> None:
    response = client.post(f"/tokenizers/{three['bpe']}/share", data={"days": "²"})
    assert response.status_code == 422
    assert "The expiry must be a whole number of days from 1 to 3650" in response.get_data(as_text=True)
    assert "got &#39;²&#39;" in response.get_data(as_text=True)


def test_train_form_corpus_superscript(client: FlaskClient) -> None:
    corpus = _corpus(client)
    page = client.get("/train?corpus=²")
    assert page.status_code == 200 and f'value="{corpus}" checked' not in page.get_data(as_text=True)
    assert f'value="{corpus}" checked' in client.get(f"/train?corpus={corpus}").get_data(as_text=True)
    response = client.post("/train", data={"algorithm": "bpe", "corpus_ids": [str(corpus), "²"]})
    assert response.status_code == 422
    assert "&#39;²&#39; is not a corpus id; choose the corpora from the list." in response.get_data(as_text=True)


def test_compare_ignores_ids_that_are_not_ids(client: FlaskClient, three: dict[str, int]) -> None:
    response = client.post("/compare", headers=HX, data={"ids": ["²", str(three["bpe"]), str(three["wp"])], "text": "the"})
    assert response.status_code == 200  # "the" is one token in both, so they agree
    assert "0 of 1 stretches of text are split differently (0 characters)." in response.get_data(as_text=True)
    page = client.get(f"/compare?ids=²&ids={three['bpe']}")
    assert page.status_code == 200 and "Choose between" not in page.get_data(as_text=True)


def test_inspector_group_superscript(client: FlaskClient, three: dict[str, int]) -> None:
    html = client.get(f"/tokenizers/{three['bpe']}/tokens/257?group=257+²+258", headers=HX).get_data(as_text=True)
    assert "This span is 2 tokens" in html and "?group=257+258" in html


@pytest.mark.parametrize("field, value, message", [
    pytest.param("corpus_id", "²", "Choose a corpus to take the held-out split from.", id="corpus"),
    pytest.param("percent", "²", "The held-out share must be a whole percentage from 1 to 50, not &#39;²&#39;.", id="percent"),
    pytest.param("percent", "5" * 5000, "The held-out share must be a whole percentage from 1 to 50", id="long-percent"),
])
def test_evaluation_form_superscript(client: FlaskClient, three: dict[str, int], field: str, value: str, message: str) -> None:
    form = {"corpus_id": str(_corpus(client)), "percent": "10", "part": "last", field: value}
    response = client.post(f"/tokenizers/{three['bpe']}/insights/evaluate", headers=HX, data=form)
    assert response.status_code == 422 and message in response.get_data(as_text=True)


def test_vocab_search_superscript(client: FlaskClient, three: dict[str, int]) -> None:
    # "²" is searched as text: the byte 0xb2, which byte-level BPE spells "²", is token 178.
    response = client.get(f"/tokenizers/{three['bpe']}/vocab?q=²", headers=HX)
    html = response.get_data(as_text=True)
    assert response.status_code == 200 and "1 token match <code>²</code>" in html
    assert re.findall(r'/tokens/(\d+)">', html) == ["178"]
    assert "0 tokens match" in client.get(f"/tokenizers/{three['wp']}/vocab?q=²", headers=HX).get_data(as_text=True)
    assert "1 token match" in client.get(f"/tokenizers/{three['bpe']}/vocab?q=257", headers=HX).get_data(as_text=True)


def test_decode_form_superscript(client: FlaskClient, three: dict[str, int]) -> None:
    response = client.post(f"/tokenizers/{three['bpe']}/decode", headers=HX, data={"ids": "257, ²"})
    assert response.status_code == 422
    assert "Item 2, &#39;²&#39;, is not a token id" in response.get_data(as_text=True)


def test_jsonl_upload_nested_too_deeply(client: FlaskClient) -> None:
    body = b'{"text": "fine"}\n' + b"[" * 100_000 + b"]" * 100_000 + b"\n"
    response = client.post("/corpora/", data={"files": [(io.BytesIO(body), "deep.jsonl")]})
    assert response.status_code == 422
    assert "“deep.jsonl”, line 2 is nested too deeply to read" in response.get_data(as_text=True)


# ----------------------------------------------------------------- the JSON API's errors
@pytest.mark.parametrize("body, status, message", [
    pytest.param(DEEP, 400, "The JSON body is nested too deeply", id="deep-list"),
    pytest.param('{"tokenizer": ' * 50_000 + "1" + "}" * 50_000, 400, "nested too deeply", id="deep-object"),
    pytest.param({"tokenizer": "²", "text": "x"}, 404, "There is no tokenizer '²'", id="superscript"),
    pytest.param({"tokenizer": 10**30, "text": "x"}, 404, "ids are whole numbers from 1", id="huge-id"),
    pytest.param({"tokenizer": True, "text": "x"}, 400, 'Give "tokenizer"', id="bool-id"),
    pytest.param({"tokenizer": 1.0, "text": "x"}, 400, 'Give "tokenizer"', id="float-id"),
    pytest.param({"tokenizer": "x" * 1000, "text": "x"}, 404, "names are 1 to 200 characters", id="long-name"),
    pytest.param({"tokenizer": "BPE", "text": "x"}, 404, "There is no tokenizer 'BPE'", id="no-such-name"),
])
def test_api_encode_refuses_malformed_bodies(client: FlaskClient, three: dict[str, int], body: Any, status: int,
                                             message: str) -> None:
    data = body if isinstance(body, str) else json.dumps(body)
    response = client.post("/api/v1/encode", data=data, content_type="application/json")
    assert response.status_code == status, response.get_data(as_text=True)[:300]
    assert message in response.json["error"]


@pytest.mark.parametrize("ids, bad", [
    pytest.param([True], "True", id="bool"), pytest.param([1.0], "1.0", id="float"),
    pytest.param([2**63], str(2**63), id="beyond-64-bits"), pytest.param([-1], "-1", id="negative"),
    pytest.param(["1"], "'1'", id="string"),
])
def test_api_decode_refuses_wrong_ids(client: FlaskClient, three: dict[str, int], ids: list[Any], bad: str) -> None:
    response = client.post("/api/v1/decode", json={"tokenizer": three["bpe"], "ids": ids})
    assert response.status_code == 400
    assert response.json["error"].startswith(f'Give "ids" as a list of non-negative integers; {bad} is not one')


def test_api_decode_output_is_bounded(client: FlaskClient, three: dict[str, int], monkeypatch: pytest.MonkeyPatch) -> None:
    from webapp.api import views as api

    monkeypatch.setattr(api, "MAX_DECODE_BYTES", 10)
    response = client.post("/api/v1/decode", json={"tokenizer": three["bpe"], "ids": [257] * 4})  # "the" x 4
    assert response.status_code == 413
    assert response.json["error"] == "These 4 ids decode to more than 10 bytes; decode fewer ids at a time."


def test_api_body_size_is_bounded(client: FlaskClient, three: dict[str, int], monkeypatch: pytest.MonkeyPatch) -> None:
    from webapp.web import requests

    monkeypatch.setattr(requests, "BODY_BYTES", 100)
    response = client.post("/api/v1/encode", json={"tokenizer": three["bpe"], "text": "x" * 200})
    assert response.status_code == 413 and response.is_json
    assert response.json["error"].startswith("This request may carry at most 100 bytes; it declared 2")


@pytest.mark.parametrize("method, path, status, message", [
    pytest.param("GET", "/api/v1/nothing", 404, "There is no API endpoint GET /api/v1/nothing; GET /api lists", id="404"),
    pytest.param("POST", "/api/v2/encode", 404, "There is no API endpoint POST /api/v2/encode", id="404-post"),
    pytest.param("GET", "/api/v1/encode", 405, "GET /api/v1/encode is not allowed; use POST", id="405"),
    pytest.param("DELETE", "/api/v1/tokenizers", 405, "use GET", id="405-delete"),
])
@pytest.mark.parametrize("who", ["alice", "visitor"])
def test_api_404_and_405_are_json(app: Flask, method: str, path: str, status: int, message: str, who: str) -> None:
    client = login_as(app.test_client(), 1) if who == "alice" else app.test_client()
    response = client.open(path, method=method)
    assert response.status_code == status and response.is_json
    assert message in response.json["error"]
    if status == 405:
        assert method not in response.headers["Allow"]


def test_html_pages_keep_html_errors(client: FlaskClient) -> None:
    response = client.get("/apis-are-elsewhere")
    assert response.status_code == 404 and response.mimetype == "text/html"
    assert client.post("/api").status_code == 405  # the docs page is a page, not the API


def test_api_500_and_csrf_failures_are_json(tmp_path: Any) -> None:
    app = make_app(tmp_path, f"sqlite:///{tmp_path / 'csrf.sqlite3'}", WTF_CSRF_ENABLED=True, PROPAGATE_EXCEPTIONS=False)

    def boom() -> str:
        raise RuntimeError("a bug")

    app.add_url_rule("/api/v1/boom", "boom", boom)
    app.add_url_rule("/api/v1/form", "form", lambda: "ok", methods=["POST"])  # not CSRF-exempt
    client = login_as(app.test_client(), 1)
    crashed = client.get("/api/v1/boom")
    assert crashed.status_code == 500 and crashed.json == {"error": MESSAGES[500]}
    refused = client.post("/api/v1/form", data={"x": "1"})
    assert refused.status_code == 400
    assert refused.json == {"error": "This form has expired or did not come from this site. Reload the page and try again."}
    db.get_engine(app).dispose()


# ----------------------------------------------------------------- finding 3: bounded pages
PAGES = ["/tokenizers/{}/vocab", "/tokenizers/{}/vocab?q=b&page=2", "/tokenizers/{}/insights", "/tokenizers/{}",
         "/tokenizers/{}/tokens/{}", "/tokenizers/{}/play", "/tokenizers/{}/downloads", "/compare?ids={}&ids={}"]
MAX_PAGE_BYTES = 400_000
LENGTHS = range(1, 1025)  # every length up to the engine's MAX_TOKEN_LENGTH


def _wordpiece(tokens: list[str]) -> Tokenizer:
    """A WordPiece whose vocabulary is ``tokens``: its constructor takes any string, however long."""
    vocab = {"[UNK]": 0, **{token: i for i, token in enumerate(tokens, start=1)}}
    return Tokenizer(WordPiece(vocab), pre_tokenizer=BertPreTokenizer(), name="pathological")


def _insert(app: Flask, tokenizer: Tokenizer, name: str) -> int:
    """Store ``tokenizer`` as a row directly, bypassing every import check."""
    return store(app, tokenizer, name=name)


def _share(app: Flask, tokenizer_id: int) -> FlaskClient:
    with app.app_context():
        session = db.get_session()
        session.add(ShareLink(tokenizer_id=tokenizer_id, token=f"share{tokenizer_id}" + "x" * 30, created_by=1))
        session.commit()
    visitor = app.test_client()
    # The link serves the encode page itself: a 422 for a tokenizer that breaks the limits.
    assert visitor.get(f"/s/share{tokenizer_id}" + "x" * 30).status_code in (200, 422)
    return visitor


def test_histogram_and_rows_stay_bounded_for_a_10_mb_token() -> None:
    tokenizer = _wordpiece(["a" * 10_000_000, *("b" * n for n in LENGTHS), *("c" * 10**k for k in range(3, 7))])
    started = time.monotonic()
    bars = vocab_browser.length_histogram(tokenizer)
    assert len(bars) == charts.MAX_BARS  # not ten million: lengths are binned
    assert bars[0] == ("1–166,667", 1024 + 1 + 3)  # the b-tokens, [UNK], and c-tokens of 1,000 to 100,000
    assert bars[5] == ("833,336–1,000,002", 1)  # the c-token of a million
    assert bars[-1] == ("9,833,354–10,000,000", 1) and sum(count for _, count in bars) == 1024 + 1 + 4 + 1
    chart = charts.bar_chart(bars, label_x="length", label_y="tokens", title="t")
    assert chart.count('class="chart-bar"') == charts.MAX_BARS and len(chart) < 30_000
    page = vocab_browser.search(tokenizer, "a")
    longest = vocab_browser.longest(tokenizer, 3)
    assert [r.byte_length for r in longest] == [10_000_000, 1_000_000, 100_000]
    assert longest[0].text == "a" * 256 + "…" and longest[0].token == "a" * 256 + "…"
    assert page.total == 1 and len(page.rows[0].text) == 257
    assert time.monotonic() - started < 30  # generous: the unbinned histogram took minutes and gigabytes


def test_bar_and_line_charts_have_a_bounded_size() -> None:
    bars = charts.bar_chart([(i, i % 7) for i in range(1, 100_001)], label_x="x", label_y="y", title="t")
    assert bars.count('class="chart-bar"') == charts.MAX_BARS
    assert "<title>1–1,667: " in bars  # merged ranges say which values they hold
    line = charts.line_chart([(i, 1.0 + 1 / i) for i in range(1, 100_001)], label_x="x", label_y="y", title="t")
    assert line.count("L") <= charts.MAX_POINTS and line.count("<circle") <= 61
    points = charts.numeric_points([[1, 2], ["x", 3], [float("inf"), 1], [True, 1], [2], 5, [3, 4.5]])
    assert points == [(1.0, 2.0), (3.0, 4.5)]


def test_stored_tokenizer_with_a_10_mb_token_cannot_blow_up_a_page(app: Flask, client: FlaskClient) -> None:
    """A row stored before the engine's limits: refused at load (a 422 page), quickly and small."""
    tokenizer_id = _insert(app, _wordpiece(["a" * 10_000_000, *("b" * n for n in range(1, 3001))]), "huge token")
    other = store(app, wordpiece())
    visitor = _share(app, tokenizer_id)
    started = time.monotonic()
    for who, browser in (("alice", client), ("share visitor", visitor)):
        for page in PAGES:
            url = page.format(tokenizer_id, 1) if "compare" not in page else page.format(tokenizer_id, other)
            response = browser.get(url)
            if who == "share visitor" and response.status_code in (303, 404):  # team-only pages, or compare's other
                continue
            body = response.get_data()
            assert len(body) < MAX_PAGE_BYTES, (who, url, len(body))
            assert response.status_code in (200, 422), (who, url, response.status_code)
            if response.status_code == 422:
                assert b"This tokenizer cannot be opened: it breaks this server&#39;s limits" in body
    assert time.monotonic() - started < 60  # the vocabulary page alone took more than 60 s


def test_pages_of_a_tokenizer_with_tokens_of_every_length_are_bounded(app: Flask, client: FlaskClient) -> None:
    """The longest tokens the engine loads, of every length up to it: binned bars, cut text, small pages."""
    tokens = [*("b" * n for n in LENGTHS), *("é" * n for n in range(1, 1025, 7))]
    tokenizer_id = _insert(app, _wordpiece(tokens), "every length")
    other = store(app, wordpiece())
    visitor = _share(app, tokenizer_id)
    longest_id = len(LENGTHS)  # "b" * 1024
    for who, browser in (("alice", client), ("share visitor", visitor)):
        for page in PAGES:
            url = page.format(tokenizer_id, longest_id) if "compare" not in page else page.format(tokenizer_id, other)
            response = browser.get(url)
            if who == "share visitor" and response.status_code in (303, 404):
                continue
            html = response.get_data(as_text=True)
            assert response.status_code == 200, (who, url, response.status_code)
            assert len(html.encode()) < MAX_PAGE_BYTES, (who, url, len(html))
            assert "b" * 257 not in html and "é" * 257 not in html, (who, url)
    vocab = visitor.get(f"/tokenizers/{tokenizer_id}/vocab").get_data(as_text=True)
    assert vocab.count('class="chart-bar"') == 59  # up to 2,046 bytes ("é" * 1,023) in bars of 35 lengths
    assert f"<code>{'é' * 128}…</code>" in vocab  # 256 bytes of a 2,046-byte token, then an ellipsis
    inspector = client.get(f"/tokenizers/{tokenizer_id}/tokens/{longest_id}").get_data(as_text=True)
    assert "Bytes (1,024)" in inspector and "only the first 256 bytes are shown" in inspector
    hex_shown = re.search(r'data-testid="inspector-hex">([^<]*)<', inspector).group(1)  # type: ignore[union-attr]
    assert hex_shown == " ".join(["62"] * 256)  # the first 256 of the 1,024 "b" bytes


def test_list_pages_are_capped(app: Flask, client: FlaskClient, monkeypatch: pytest.MonkeyPatch) -> None:
    from webapp.corpora import views as corpora
    from webapp.tokenizers import views as tokenizers

    monkeypatch.setattr(tokenizers, "LIST_ROWS", 2)
    monkeypatch.setattr(corpora, "LIST_ROWS", 2)
    ids = [store(app, byte_bpe(f"bpe {i}")) for i in range(3)]
    html = client.get("/tokenizers").get_data(as_text=True)
    assert re.findall(r'href="/tokenizers/(\d+)/play" data-carry-text>bpe', html) == [str(ids[2]), str(ids[1])]
    assert "Only the newest 2 tokenizers are listed." in html
    for i in range(3):
        client.post("/corpora/", data={"files": [(io.BytesIO(f"text {i}\n".encode()), f"c{i}.txt")]})
    html = client.get("/corpora/").get_data(as_text=True)
    assert re.findall(r'href="/corpora/\d+">(c\d)\.txt', html) == ["c2", "c1"]
    assert "Only the newest 2 corpora are listed." in html
