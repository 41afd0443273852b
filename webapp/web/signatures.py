"""The session cookie's signature, verified once per cookie value and remembered.

A browser sends the same signed session cookie on every request until its session changes
(``SESSION_REFRESH_EACH_REQUEST`` is off, so answers do not re-sign it), and Flask checked its
HMAC, decoded its base64 and parsed its JSON on every one of them: about 30 microseconds of each
request's CPU, for the same answer each time.

:class:`RememberingSerializer` keeps, for each signed string it has verified, the payload and
the time it was signed. The key is the exact signed string, so a cookie that differs in any
byte (a tampered payload, a forged signature) is not found and gets the full check, and fails
it as before. What is never remembered: a string that failed. What is checked on every hit,
as on the full path: the age against ``max_age`` (an expired cookie, or one dated in the future,
goes through the full check, which raises as itsdangerous does). Each serializer belongs to one
set of secret keys (:class:`RememberingSessionInterface` makes a new one when the app's
``SECRET_KEY`` or its fallbacks change), so a cookie verified under an old key is not found under
the new one. A hit hands out a deep copy, so a view that changes the session's nested values
cannot change what the next request finds.

Left out: the CSRF token's signature (flask-wtf builds its own serializer inside
``validate_csrf``; its check costs ~20 microseconds a post and stays as it is) and the signing
of new cookies (``dumps``), which happens only when a session changes.
"""

from __future__ import annotations

import copy
import datetime as dt
import threading
import time
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

from flask.sessions import SecureCookieSessionInterface
from itsdangerous import URLSafeTimedSerializer
from itsdangerous.encoding import want_bytes

if TYPE_CHECKING:
    from flask import Flask

REMEMBERED = 4096  # signed strings per serializer; a session cookie is ~300 bytes, so ~2 MB at most


class RememberingSerializer(URLSafeTimedSerializer):
    """``URLSafeTimedSerializer`` whose :meth:`loads` remembers the strings it has verified."""

    def __init__(self, *args: Any, remembered: int = REMEMBERED, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._remembered = remembered
        self._verified: OrderedDict[tuple[bytes, bytes], tuple[Any, int]] = OrderedDict()
        self._lock = threading.Lock()

    def loads(self, s: str | bytes, max_age: int | None = None, return_timestamp: bool = False,
              salt: str | bytes | None = None) -> Any:
        """The payload of ``s`` as ``URLSafeTimedSerializer.loads`` gives it, verified once per string."""
        signed = want_bytes(s)
        key = (signed, want_bytes(self.salt if salt is None else salt))
        with self._lock:
            found = self._verified.get(key)
            if found is not None:
                self._verified.move_to_end(key)
        if found is not None:
            payload, signed_at = found
            age = int(time.time()) - signed_at
            if max_age is None or 0 <= age <= max_age:  # itsdangerous' rule; otherwise the full path raises
                payload = copy.deepcopy(payload)
                if return_timestamp:
                    return payload, dt.datetime.fromtimestamp(signed_at, tz=dt.timezone.utc)
                return payload
        payload, when = super().loads(signed, max_age=max_age, return_timestamp=True, salt=salt)
        with self._lock:
            self._verified[key] = (copy.deepcopy(payload), int(when.timestamp()))
            if len(self._verified) > self._remembered:
                self._verified.popitem(last=False)
        return (payload, when) if return_timestamp else payload


class RememberingSessionInterface(SecureCookieSessionInterface):
    """Flask's signed-cookie sessions, verified through a :class:`RememberingSerializer` per set of keys."""

    def __init__(self) -> None:
        self._serializers: dict[tuple[Any, ...], RememberingSerializer] = {}

    def get_signing_serializer(self, app: Flask) -> URLSafeTimedSerializer | None:
        keys = (app.secret_key, *(app.config.get("SECRET_KEY_FALLBACKS") or ()))
        found = self._serializers.get(keys)
        if found is None:
            plain = super().get_signing_serializer(app)  # Flask's choice of keys, salt and digest
            if plain is None:
                return None
            found = RememberingSerializer(plain.secret_keys, salt=plain.salt, serializer=plain.serializer,
                                          serializer_kwargs=plain.serializer_kwargs, signer=plain.signer,
                                          signer_kwargs=plain.signer_kwargs, fallback_signers=plain.fallback_signers)
            self._serializers.clear()  # one app uses one set of keys at a time
            self._serializers[keys] = found
        return found
