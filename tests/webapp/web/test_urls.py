"""The templates' remembering ``url_for``: Flask's answers, built once, and never one request's
path for another request's prefix, value type, host or blueprint."""

from __future__ import annotations

from typing import Any

import pytest
from flask import Flask

from webapp.web import urls
from webapp.web.urls import remembering_url_for

CALLS: list[tuple[str, dict[str, Any]]] = [
    ("playground.play", {"tokenizer_id": 3}),
    ("playground.play", {"tokenizer_id": 3, "text": "a b&c"}),
    ("playground.play", {"tokenizer_id": 3, "text": 1}),
    ("playground.play", {"tokenizer_id": 3, "text": True}),  # equal to 1 as a key, not as a URL
    ("playground.play", {"tokenizer_id": 3, "group": [1, 2]}),  # unhashable: not remembered
    ("playground.play", {"tokenizer_id": 3, "_anchor": "x"}),
    ("playground.play", {"tokenizer_id": 3, "_external": True}),
    ("static", {"filename": "css/app.css"}),
]


@pytest.fixture
def built(app: Flask, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The endpoints the app's own ``url_for`` was asked to build, in order."""
    seen: list[str] = []
    real = app.url_for

    def counting(endpoint: str, /, **values: Any) -> str:
        seen.append(endpoint)
        return real(endpoint, **values)

    monkeypatch.setattr(app, "url_for", counting)
    return seen


def test_the_paths_are_flasks_and_built_once(app: Flask, built: list[str]) -> None:
    url_for = remembering_url_for(app)
    # A new prefix builds every path again; a new host only the external URL (and the two
    # calls never remembered: the list and the anchor), since relative paths do not name it.
    for environ, first_time in (({}, 8), ({"SCRIPT_NAME": "/mounted"}, 8), ({"HTTP_HOST": "other.example"}, 3)):
        with app.test_request_context("/", environ_overrides=environ):
            expected = [app.url_for(endpoint, **values) for endpoint, values in CALLS]
            built.clear()
            assert [url_for(endpoint, **values) for endpoint, values in CALLS] == expected
            assert len(built) == first_time
            assert [url_for(endpoint, **values) for endpoint, values in CALLS] == expected
            assert len(built) == first_time + 3  # the list, the anchor and the external URL again
    assert expected[2].endswith("?text=1") and expected[3].endswith("?text=True")


def test_a_blueprint_relative_endpoint_is_not_remembered(app: Flask, built: list[str]) -> None:
    url_for = remembering_url_for(app)
    with app.test_request_context("/tokenizers/3/play"):
        assert url_for(".play", tokenizer_id=3) == url_for(".play", tokenizer_id=3) == "/tokenizers/3/play"
    assert built == [".play", ".play"]


def test_outside_a_request_flask_answers(app: Flask, built: list[str]) -> None:
    url_for = remembering_url_for(app)
    app.config["SERVER_NAME"] = "example.org"
    with app.app_context():
        assert url_for("playground.play", tokenizer_id=3) == "http://example.org/tokenizers/3/play"
    assert built == ["playground.play"]


def test_the_memo_is_bounded(app: Flask, built: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(urls, "REMEMBERED", 2)
    url_for = remembering_url_for(app)
    with app.test_request_context("/"):
        for tokenizer_id in (1, 2, 3, 1):
            url_for("playground.play", tokenizer_id=tokenizer_id)
    assert len(built) == 4  # 1 and 2 were forgotten when 3 came


def test_long_strings_are_not_remembered(app: Flask, built: list[str]) -> None:
    url_for = remembering_url_for(app)
    short, long = "a" * urls.LONGEST, "a" * (urls.LONGEST + 1)
    with app.test_request_context("/"):
        for text in (short, short, long, long):
            assert url_for("playground.play", tokenizer_id=3, text=text) == f"/tokenizers/3/play?text={text}"
    assert len(built) == 3


def test_the_pages_and_the_playgrounds_links_use_it(app: Flask) -> None:
    remembering = app.jinja_env.globals["url_for"]
    assert remembering is not app.url_for and remembering.__qualname__.startswith("remembering_url_for")
    assert app.extensions["tokenforge.url_for"] is remembering
    with app.test_request_context("/"):
        assert urls.url_for("playground.play", tokenizer_id=3) == "/tokenizers/3/play"
