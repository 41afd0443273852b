"""The app writes JSON without json's check for cycles, and the same bytes as Flask's provider."""

from __future__ import annotations

import json

from flask import Flask
from flask.json.provider import DefaultJSONProvider

from webapp.web.json_answers import JSONAnswers

ANSWER = {"tokens": ["Ġthe", "é", "<|endoftext|>", '"\\'], "ids": [464, 0, 50256], "offsets": [[0, 3], [3, 4]],
          "tokenizer": {"name": "gpt2", "id": 1}, "count": 3, "empty": [], "none": None}


def test_the_answers_are_flasks_bytes(app: Flask) -> None:
    assert isinstance(app.json, JSONAnswers)
    plain = DefaultJSONProvider(app)
    with app.app_context():
        assert app.json.dumps(ANSWER) == plain.dumps(ANSWER)
        assert app.json.response(ANSWER).get_data() == plain.response(ANSWER).get_data()
        assert app.json.response(ANSWER).get_data() == (
            json.dumps(ANSWER, sort_keys=True, separators=(",", ":")) + "\n").encode()


def test_the_check_for_cycles_is_off_unless_asked(app: Flask, monkeypatch: object) -> None:
    seen: list[object] = []
    real = json.dumps

    def spy(obj: object, **kwargs: object) -> str:
        seen.append(kwargs.get("check_circular"))
        return real(obj, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(json, "dumps", spy)  # type: ignore[attr-defined]
    app.json.dumps([1])
    app.json.dumps([1], check_circular=True)
    assert seen == [False, True]
