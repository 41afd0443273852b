"""Strict parsing of numbers that come from outside: form fields, query strings, JSON bodies.

``str.isdigit()`` is true for characters such as ``²`` or ``١`` that ``int()`` then either
refuses (a 500) or reads as another digit system, and ``int()`` itself accepts ``" 7"``,
``"+7"``, ``"7_000"`` and unbounded lengths. Every number a request carries therefore goes
through :func:`parse_int`, which accepts only plain ASCII digits, a bounded number of them,
and a value inside the caller's range. A rejected value is ``None``; each view decides what
that means (a 404, an inline message, or "ignore this item").

Left out: ids in URL paths, which ``converters.py`` bounds before routing.
"""

from __future__ import annotations

#: The largest id the databases can compare (a signed 64-bit integer).
MAX_ID = 2**63 - 1
_MAX_DIGITS = len(str(MAX_ID))


def parse_int(raw: object, *, low: int = 0, high: int = MAX_ID) -> int | None:
    """``raw`` as an int in ``[low, high]``, or None unless it is exactly ASCII digits (after one
    ``-`` where ``low`` is negative).

    A JSON integer (not a bool) is accepted as it is, within the same range.
    """
    if isinstance(raw, bool):
        return None
    if isinstance(raw, int):
        value = raw
    elif isinstance(raw, str):
        negative = low < 0 and raw.startswith("-")
        digits = raw[1:] if negative else raw
        if not (0 < len(digits) <= _MAX_DIGITS and digits.isascii() and digits.isdigit()):
            return None
        value = -int(digits) if negative else int(digits)
    else:
        return None
    return value if low <= value <= high else None


def plain_digits_problem(label: str, text: str) -> str | None:
    """The sentence for a typed whole number that is not plain ASCII digits (``٢``, ``２``,
    ``2_000``, ``+2``), else None; whether it is in range is the caller's check.

    For fields whose numbers another layer converts (the training options, which the engine
    reads): this is the same rule as :func:`parse_int`, so every number field refuses alike.
    """
    stripped = text.strip()
    digits = stripped.removeprefix("-")
    if not stripped or (digits.isascii() and digits.isdigit()):  # however long: the range is checked later
        return None
    return f"{label} must be a whole number written with the digits 0 to 9, not {stripped[:20]!r}."


def parse_id(raw: object) -> int | None:
    """A database id (1 to :data:`MAX_ID`) from a form field or JSON value, else None."""
    return parse_int(raw, low=1)


def parse_ids(raw: object, *, most: int) -> list[int]:
    """The valid ids among the first ``most`` items of a list (anything else is skipped).

    For lists from outside or stored with a row (a form's checked boxes, a tokenizer's
    ``corpus_ids``); what is not a list holds no ids.
    """
    if not isinstance(raw, list):
        return []
    parsed = (parse_id(value) for value in raw[:most])
    return [value for value in parsed if value is not None]
