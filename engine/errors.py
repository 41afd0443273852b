"""The exceptions the engine raises.

Every error is one of ours, so callers (the CLI, the web app) can turn it into a clear message
instead of a traceback. Messages are plain sentences that name the bad value and, where there is
one, the argument that fixes it. Programming errors (a wrong type passed by our own code) are left
to Python's built-in exceptions.
"""

from __future__ import annotations


class TokenforgeError(Exception):
    """Base class of every error the engine raises on purpose."""


class ConfigError(TokenforgeError, ValueError):
    """An option has a value the engine cannot use (e.g. a vocabulary smaller than the alphabet).

    The message is worded for a caller of the API or the CLI ("pass vocab_size of at most …").
    When the problem is a number out of bounds, ``option``, ``value``, ``least``/``most`` and
    ``why`` (what sets the bounds) say so as data, so a front end with other words for the fix
    (a web form's "enter a number …") can write its own sentence without parsing this one.
    """

    def __init__(self, message: str, *, option: str | None = None, value: float | None = None,
                 least: float | None = None, most: float | None = None, why: str = "") -> None:
        super().__init__(message)
        self.option = option
        self.value = value
        self.least = least
        self.most = most
        self.why = why


class FormatError(TokenforgeError, ValueError):
    """A file being imported is malformed; ``line`` is its 1-based line number when known."""

    def __init__(self, message: str, *, line: int | None = None, source: str | None = None) -> None:
        where = ""
        if source and line is not None:
            where = f"{source}, line {line}: "
        elif source:
            where = f"{source}: "
        elif line is not None:
            where = f"line {line}: "
        super().__init__(where + message)
        self.line = line
        self.source = source


class SpecialTokenError(TokenforgeError, ValueError):
    """The text contains a special token that the caller did not allow."""


class TrainingCancelled(TokenforgeError):
    """The caller's ``should_cancel`` check returned true while training ran."""


class UnknownTokenIdError(TokenforgeError, ValueError):
    """An id passed to decode is not in the vocabulary."""


class EncodeTimeout(TokenforgeError, ValueError):
    """Encoding ran past the time budget of ``engine.limits.time_budget`` (usually a slow pattern).

    It is a ``ValueError`` as well, like the other errors about what the caller passed, so code
    that reports bad input by catching ``ValueError`` reports this too instead of failing.
    """
