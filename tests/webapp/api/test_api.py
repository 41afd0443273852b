"""The JSON API: encode, decode, the tokenizer list, the docs page, and 4xx errors with sentences."""

from __future__ import annotations

import pytest
from flask import Flask
from flask.testing import FlaskClient

from tests.webapp.conftest import login_as, make_app
from tests.webapp.playground_samples import EOT, byte_bpe, gpt2, store


@pytest.fixture
def bpe(app: Flask) -> int:
    return store(app, byte_bpe())


def test_encode_returns_ids_tokens_offsets_and_count(client: FlaskClient, bpe: int) -> None:
    response = client.post("/api/v1/encode", json={"tokenizer": bpe, "text": "the wé"})
    assert response.status_code == 200
    assert response.json == {"tokenizer": {"id": bpe, "name": "tiny-bpe"}, "ids": [257, 258, 260],
                             "tokens": ["the", "Ġw", "Ã©"], "offsets": [[0, 3], [3, 5], [5, 6]], "count": 3}


def test_encode_by_name_and_with_specials(client: FlaskClient, bpe: int) -> None:
    response = client.post("/api/v1/encode", json={"tokenizer": "tiny-bpe", "text": f"the{EOT}", "allowed_special": "all"})
    assert response.json["ids"] == [257, 261]
    # Not allowed: the special-token rule encodes its text as ordinary text, as the page does.
    plain = client.post("/api/v1/encode", json={"tokenizer": bpe, "text": f"the{EOT}"})
    assert plain.status_code == 200
    assert plain.json["ids"] == [257, *EOT.encode()] and 261 not in plain.json["ids"]
    assert "".join(plain.json["tokens"][1:]) == EOT  # byte-level pieces spelling <|endoftext|>


def test_encode_matches_tiktoken_on_gpt2(client: FlaskClient, app: Flask) -> None:
    tiktoken = pytest.importorskip("tiktoken")
    tok = gpt2()
    ranks = {tok.model.token_bytes(i): i for i in range(50256)}
    enc = tiktoken.Encoding("gpt2-local", pat_str=tok.pre_tokenizer.pattern, mergeable_ranks=ranks,
                            special_tokens={EOT: 50256})
    ref = store(app, tok)
    text = "Hello world! Ünïcödé 👋🏽 and\n\n  code()  <|endoftext|>"
    response = client.post("/api/v1/encode", json={"tokenizer": ref, "text": text, "allowed_special": "all"})
    assert response.json["ids"] == enc.encode(text, allowed_special="all")


@pytest.mark.parametrize("body, status, message", [
    pytest.param({"text": "x"}, 400, 'Give "tokenizer"', id="no-tokenizer"),
    pytest.param({"tokenizer": 999, "text": "x"}, 404, "There is no tokenizer 999", id="unknown"),
    pytest.param({"tokenizer": 1, "text": 5}, 400, 'Give "text" as a string', id="text-not-string"),
    pytest.param({"tokenizer": 1, "text": "x", "allowed_special": 3}, 400, '"allowed_special" must be', id="bad-allowed"),
    pytest.param({"tokenizer": 1, "text": "x", "allowed_special": ["<nope>"]}, 422, "'<nope>' is not a special token", id="unknown-special"),
    pytest.param([1, 2], 400, "The body must be a JSON object", id="not-an-object"),
])
def test_encode_errors(client: FlaskClient, bpe: int, body: object, status: int, message: str) -> None:
    response = client.post("/api/v1/encode", json=body)
    assert response.status_code == status
    assert message in response.json["error"]


def test_encode_needs_json_content_type(client: FlaskClient, bpe: int) -> None:
    response = client.post("/api/v1/encode", data="tokenizer=1&text=x")
    assert response.status_code == 415 and "application/json" in response.json["error"]


def test_encode_size_limit(app: Flask, client: FlaskClient, bpe: int) -> None:
    app.config["PLAYGROUND_MAX_CHARS"] = 10
    response = client.post("/api/v1/encode", json={"tokenizer": bpe, "text": "x" * 11})
    assert response.status_code == 413 and "at most 10" in response.json["error"]


def test_decode(client: FlaskClient, bpe: int) -> None:
    assert client.post("/api/v1/decode", json={"tokenizer": bpe, "ids": [257, 258, 260]}).json == {"text": "the wé", "count": 3}
    assert client.post("/api/v1/decode", json={"tokenizer": bpe, "ids": [195]}).json["text"] == "\ufffd"
    bad = client.post("/api/v1/decode", json={"tokenizer": bpe, "ids": [1, "2"]})
    assert bad.status_code == 400 and "non-negative integers" in bad.json["error"]
    unknown = client.post("/api/v1/decode", json={"tokenizer": bpe, "ids": [70000]})
    assert unknown.status_code == 422 and "70000" in unknown.json["error"]


def test_tokenizer_list_and_docs(client: FlaskClient, bpe: int) -> None:
    assert client.get("/api/v1/tokenizers").json == {"tokenizers": [
        {"id": bpe, "name": "tiny-bpe", "algorithm": "bpe", "vocab_size": 262, "source": "trained"}],
        "total": 1, "next_offset": None}
    docs = client.get("/api").get_data(as_text=True)
    assert "curl -X POST http://localhost/api/v1/encode" in docs and "/api/v1/decode" in docs
    assert "Authorization: Bearer" in docs and "/account" in docs


def test_api_is_exempt_from_csrf_but_forms_are_not(tmp_path, bpe: int) -> None:
    app = make_app(tmp_path / "csrf", f"sqlite:///{tmp_path / 'csrf.sqlite3'}", WTF_CSRF_ENABLED=True)
    ref = store(app, byte_bpe())
    client = login_as(app.test_client(), 1)
    assert client.post("/api/v1/encode", json={"tokenizer": ref, "text": "the"}).status_code == 200
    assert client.post(f"/tokenizers/{ref}/encode", data={"text": "the"}).status_code == 400


def test_the_tokenizer_list_comes_a_page_at_a_time(app: Flask, client: FlaskClient, bpe: int) -> None:
    more = [store(app, byte_bpe(f"bpe-{i}")) for i in range(4)]  # newest first: more[3], ..., more[0], bpe
    first = client.get("/api/v1/tokenizers?limit=2").json
    assert [t["id"] for t in first["tokenizers"]] == [more[3], more[2]]
    assert (first["total"], first["next_offset"]) == (5, 2)
    last = client.get("/api/v1/tokenizers?limit=2&offset=4").json
    assert [t["id"] for t in last["tokenizers"]] == [bpe] and last["next_offset"] is None
    assert client.get("/api/v1/tokenizers?offset=9").json == {"tokenizers": [], "total": 5, "next_offset": None}
    for query in ("limit=0", "limit=1001", "limit=ten", "offset=-1", "limit=99999999999999999999"):
        refused = client.get(f"/api/v1/tokenizers?{query}")
        assert refused.status_code == 400 and "limit as a whole number from 1 to 1,000" in refused.json["error"]
