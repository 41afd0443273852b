"""The exceptions the engine raises.

Every error is one of ours, so callers (the CLI, the web app) can turn it into a clear message
instead of a traceback. Messages are plain sentences that name the bad value and, where there is
one, the argument that fixes it. Programming errors (a wrong type passed by our own code) are left
to Python's built-in exceptions.

Internal: not part of the engine's API (``engine.PUBLIC_MODULES``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any


class TokenforgeError(Exception):
    """Base class of every error the engine raises on purpose."""


class ConfigError(TokenforgeError, ValueError):
    """An option has a value the engine cannot use (e.g. a vocabulary smaller than the alphabet).

    The message is worded for a caller of the API or the CLI ("pass vocab_size of at most …").
    ``option`` names the field the problem belongs to (for a rule across fields, the one to
    change: "vocabulary smaller than the alphabet" belongs to ``vocab_size``), so a front end can
    put the message beside its own field, or name its own flag, without reading the sentence.
    When the problem is a number out of bounds, ``value``, ``least``/``most`` and ``why`` (what
    sets the bounds) say so as data, so a front end with other words for the fix (a web form's
    "enter a number …") can write its own sentence.

    One validation pass reports every bad option at once: ``problems`` holds one error per
    problem (just this error when there is one), and the message joins theirs.
    """

    def __init__(self, message: str, *, option: str | None = None, value: float | None = None,
                 least: float | None = None, most: float | None = None, why: str = "",
                 problems: Sequence[ConfigError] = ()) -> None:
        super().__init__(message)
        self.option = option
        self.value = value
        self.least = least
        self.most = most
        self.why = why
        self.problems: tuple[ConfigError, ...] = tuple(problems) or (self,)

    @classmethod
    def of(cls, problems: Sequence[ConfigError]) -> ConfigError:
        """One error for ``problems`` (at least one): the problem itself, or one that carries them all."""
        if len(problems) == 1:
            return problems[0]
        return cls(" ".join(str(problem) for problem in problems), problems=problems)


class ConfigProblems:
    """Collects the problems of one set of options, so a single pass reports all of them.

    An options class's ``__post_init__`` adds each problem it finds (or runs a check that
    raises) and ends with :meth:`raise_if_any`, instead of stopping at the first bad field.
    """

    def __init__(self) -> None:
        self.found: list[ConfigError] = []

    def add(self, problem: ConfigError) -> None:
        """Record one problem (its own problems, if it already carries several)."""
        self.found.extend(problem.problems)

    def run(self, check: Callable[..., object], *args: Any, **kwargs: Any) -> None:
        """Call a check that raises ConfigError, and record what it raises."""
        try:
            check(*args, **kwargs)
        except ConfigError as problem:
            self.add(problem)

    def raise_if_any(self) -> None:
        """Raise one ConfigError carrying every recorded problem, if there is one."""
        if self.found:
            raise ConfigError.of(self.found)


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
