"""The remembered session-cookie signatures: a verified string is not verified again, and nothing
else changes: tampered or re-signed strings, expired or future-dated ones, another salt and
another secret key all get the full check and fail as before."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from itsdangerous import BadSignature, SignatureExpired, URLSafeTimedSerializer
from itsdangerous.timed import TimestampSigner

from webapp.web.signatures import RememberingSerializer

SECRET = "s" * 32
NOW = 1_800_000_000


def _tampered(signed: str, position: int) -> str:
    """``signed`` with the character at ``position`` changed (inside the payload or the signature)."""
    swap = "A" if signed[position] != "A" else "B"
    return signed[:position] + swap + signed[position + 1:]


@pytest.fixture
def unsigns(monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    """The strings whose signature itsdangerous checks, in order (the clock fixed at NOW)."""
    seen: list[bytes] = []
    real: Callable[..., Any] = TimestampSigner.unsign

    def counting(self: TimestampSigner, value: Any, *args: Any, **kwargs: Any) -> Any:
        seen.append(value)
        return real(self, value, *args, **kwargs)

    monkeypatch.setattr(TimestampSigner, "unsign", counting)
    monkeypatch.setattr(time, "time", lambda: float(NOW))
    return seen


def test_a_verified_string_is_remembered_and_its_payload_copied(unsigns: list[bytes]) -> None:
    serializer = RememberingSerializer(SECRET, salt="cookie")
    signed = serializer.dumps({"user": "1:0", "links": [3, 4]})
    first = serializer.loads(signed, max_age=60)
    first["links"].append(5)  # a view changing the session must not change what is remembered
    assert serializer.loads(signed, max_age=60) == {"user": "1:0", "links": [3, 4]}
    assert len(unsigns) == 1
    payload, when = serializer.loads(signed, return_timestamp=True)
    assert when.timestamp() == NOW and payload["user"] == "1:0"
    assert len(unsigns) == 1


@pytest.mark.parametrize("position", [5, -20], ids=["payload", "signature"])
def test_a_tampered_string_is_refused_after_the_valid_one_was_remembered(unsigns: list[bytes],
                                                                         position: int) -> None:
    serializer = RememberingSerializer(SECRET, salt="cookie")
    signed = serializer.dumps({"user": "1:0"})
    serializer.loads(signed, max_age=60)
    with pytest.raises(BadSignature):
        serializer.loads(_tampered(signed, position), max_age=60)
    with pytest.raises(BadSignature):  # and a failure is not remembered either
        serializer.loads(_tampered(signed, position), max_age=60)
    assert len(unsigns) == 3


def test_a_string_signed_with_another_key_or_salt_is_refused(unsigns: list[bytes]) -> None:
    serializer = RememberingSerializer(SECRET, salt="cookie")
    serializer.loads(serializer.dumps({"user": "1:0"}))
    for other in (URLSafeTimedSerializer("x" * 32, salt="cookie"), URLSafeTimedSerializer(SECRET, salt="csrf")):
        with pytest.raises(BadSignature):
            serializer.loads(other.dumps({"user": "1:0"}))
    signed = serializer.dumps("token")
    serializer.loads(signed)
    with pytest.raises(BadSignature):  # the same string under another salt: not the remembered answer
        serializer.loads(signed, salt="csrf")


@pytest.mark.parametrize("moved", [61, -1], ids=["expired", "from-the-future"])
def test_the_age_is_checked_on_every_remembered_string(unsigns: list[bytes], monkeypatch: pytest.MonkeyPatch,
                                                       moved: int) -> None:
    serializer = RememberingSerializer(SECRET, salt="cookie")
    signed = serializer.dumps({"user": "1:0"})
    serializer.loads(signed, max_age=60)
    monkeypatch.setattr(time, "time", lambda: float(NOW + moved))
    with pytest.raises(SignatureExpired):
        serializer.loads(signed, max_age=60)
    assert serializer.loads(signed) == {"user": "1:0"}  # without max_age the age does not matter


def test_the_oldest_strings_are_forgotten(unsigns: list[bytes]) -> None:
    serializer = RememberingSerializer(SECRET, salt="cookie", remembered=2)
    signed = [serializer.dumps(i) for i in range(3)]
    for value in signed:
        serializer.loads(value)
    serializer.loads(signed[2])
    serializer.loads(signed[0])  # forgotten: checked again
    assert unsigns == [s.encode() for s in [*signed, signed[0]]]


def test_a_tampered_session_cookie_is_refused_after_the_valid_one(app: Flask, client: FlaskClient) -> None:
    assert client.get("/tokenizers").status_code == 200
    cookie = client.get_cookie("session")
    assert cookie is not None
    for position in (5, -20):
        client.set_cookie("session", _tampered(cookie.value, position))
        assert client.get("/tokenizers").status_code == 303  # to the login page
    client.set_cookie("session", cookie.value)
    assert client.get("/tokenizers").status_code == 200


def test_a_new_secret_key_refuses_the_cookies_of_the_old_one(app: Flask, client: FlaskClient) -> None:
    assert client.get("/tokenizers").status_code == 200
    old_key = app.secret_key
    app.secret_key = "another secret key, as after a rotation"
    assert client.get("/tokenizers").status_code == 303
    app.config["SECRET_KEY_FALLBACKS"] = [old_key]  # Flask's rotation: the old key still verifies
    assert client.get("/tokenizers").status_code == 200
