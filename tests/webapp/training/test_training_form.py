"""The training form shows every bad option of a submission beside its field, from one validation
pass of the engine (issue #13, item 2): no second pass, no matching field names in messages."""

from __future__ import annotations

import html
import re

import pytest
from flask.testing import FlaskClient

from engine import ConfigError
from engine.trainers import make_options
from tests.webapp.conftest import default_form
from webapp.training import form as training_form
from webapp.training.form import available_algorithms


def field_errors(page: str) -> dict[str, str]:
    """Each invalid option field's message, by option name."""
    found = re.findall(r'<div class="field invalid">.*?name="opt-(\w+)".*?<p class="field-error" role="alert">(.*?)</p>',
                       page, re.S)
    return {name: html.unescape(message) for name, message in found}


def test_two_bad_fields_show_both_messages(client: FlaskClient) -> None:
    response = client.post("/train", data=default_form("bpe", vocab_size="5000000", min_frequency="-1"))
    assert response.status_code == 422
    assert field_errors(response.get_data(as_text=True)) == {
        "vocab_size": "Vocab size must be from 257 (the 1 special tokens + 256 bytes) to 1,000,000, not 5,000,000. "
                      "Enter a number in that range.",
        "min_frequency": "min_frequency=-1 must be 0 or more.",
    }


def test_a_rule_across_fields_is_shown_beside_its_field(client: FlaskClient) -> None:
    if "wordpiece" not in training_form.available_algorithms():
        pytest.skip("no wordpiece trainer")
    response = client.post("/train", data=default_form("wordpiece", vocab_size="4", limit_alphabet="2"))
    assert response.status_code == 422
    assert field_errors(response.get_data(as_text=True)) == {
        "vocab_size": "vocab_size 4 is smaller than the 5 special tokens plus the alphabet; use vocab_size of at least 7.",
    }


def test_parse_validates_once(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    real = training_form.make_options

    def counting(algorithm: str, values: object) -> object:
        calls.append(values)
        return real(algorithm, values)  # type: ignore[arg-type]

    monkeypatch.setattr(training_form, "make_options", counting)
    form = {key: value for key, value in default_form("bpe", vocab_size="10", num_workers="0").items()}
    options, errors = training_form.parse("bpe", form)
    assert options is None and set(errors) == {"vocab_size", "num_workers"}
    assert len(calls) == 1
    calls.clear()
    options, errors = training_form.parse("bpe", default_form("bpe", vocab_size="300"))
    assert errors == {} and options is not None and options["vocab_size"] == 300
    assert len(calls) == 1


@pytest.mark.parametrize(("algorithm", "changed"), [("byte", {}), ("bpe", {"special_tokens": ""})])
def test_an_empty_special_tokens_box_trains_with_none(algorithm: str, changed: dict[str, str]) -> None:
    # The byte baseline's default is no special token, and a BPE may be trained without any.
    options, errors = training_form.parse(algorithm, default_form(algorithm, vocab_size="300", **changed))
    assert errors == {} and options is not None and list(options["special_tokens"]) == []


@pytest.mark.parametrize(("algorithm", "message"), [
    ("bpe", "Vocab size must be from 257 (the 1 special tokens + 256 bytes) to 1,000,000, not 5,000,000. "
            "Enter a number in that range."),
    ("wordpiece", "Vocab size can be at most 1,000,000, not 5,000,000. Enter a smaller number."),
    ("unigram", "Vocab size can be at most 1,000,000, not 5,000,000. Enter a smaller number."),
])
def test_an_oversized_vocabulary_gets_form_advice_and_the_cli_keeps_its_own(client: FlaskClient, algorithm: str,
                                                                            message: str) -> None:
    if algorithm not in available_algorithms():
        pytest.skip(f"no {algorithm} trainer")
    page = client.post("/train", data={"algorithm": algorithm, "opt-vocab_size": "5000000"}).get_data(as_text=True)
    assert field_errors(page)["vocab_size"] == message
    with pytest.raises(ConfigError, match=r"; pass (a )?vocab_size"):  # the API and CLI wording is unchanged
        make_options(algorithm, {"vocab_size": 5_000_000})
