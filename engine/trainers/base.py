"""What every trainer shares: options, progress reporting, cancellation and the result.

Each algorithm's options are one frozen dataclass whose fields carry ``metadata={"help": ...}``
(and optionally ``"choices"``); :func:`option_specs` turns it into the list that the CLI flags
and the web form are generated from, and :func:`options_from_mapping` builds an instance from
untyped input (form fields, JSON), raising one :class:`ConfigError` whose ``problems`` are every
bad value, each a plain sentence naming its ``option``. Reading corpora lives in
``trainers/corpus.py``; this module does no I/O.

Internal: not part of the engine's API (``engine.PUBLIC_MODULES``).
"""

from __future__ import annotations

import dataclasses
import time
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from engine.errors import ConfigError, ConfigProblems, TrainingCancelled

if TYPE_CHECKING:
    from engine.tokenizer import Tokenizer

ProgressCallback = Callable[[str, int, int], None]
"""Called as ``progress(stage, current, total)``; ``total`` is 0 when unknown."""
CancelCheck = Callable[[], bool]
"""Returns true when the caller wants training to stop."""

OptionsT = TypeVar("OptionsT")


@dataclass(frozen=True)
class OptionSpec:
    """One trainer option as the CLI and the web form see it."""

    name: str
    type: str  # "int" | "float" | "bool" | "str" | "list"
    default: Any
    help: str
    choices: tuple[str, ...] | None = None
    optional: bool = False  # None is an allowed value


@dataclass
class TrainResult:
    """A trained tokenizer and JSON-able statistics about the run.

    ``stats`` holds at least ``algorithm``, ``options``, ``seconds`` and ``vocab_size``; BPE and
    WordPiece add ``merges`` (``[left, right, count]`` per merge, in rank order) and trainers that
    can afford it add ``curve`` (``[vocab_size, bytes_per_token]`` points over training).
    """

    tokenizer: Tokenizer
    stats: dict[str, Any] = field(default_factory=dict)


def _field_kind(annotation: Any) -> tuple[str, bool]:
    """Map a dataclass field annotation to an OptionSpec type name and whether None is allowed."""
    optional = False
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        optional = len(args) < len(typing.get_args(annotation))
        annotation = args[0]
        origin = typing.get_origin(annotation)
    if origin in (tuple, list):
        return "list", optional
    names = {int: "int", float: "float", bool: "bool", str: "str"}
    if annotation not in names:
        raise TypeError(f"unsupported option type {annotation!r}")
    return names[annotation], optional


def option_specs(options_cls: type) -> list[OptionSpec]:
    """Describe each field of an options dataclass, in declaration order."""
    hints = typing.get_type_hints(options_cls)
    specs = []
    for f in dataclasses.fields(options_cls):
        kind, optional = _field_kind(hints[f.name])
        default = f.default if f.default is not dataclasses.MISSING else f.default_factory()  # type: ignore[misc]
        choices = f.metadata.get("choices")
        specs.append(
            OptionSpec(
                name=f.name,
                type=kind,
                default=list(default) if isinstance(default, tuple) else default,
                help=f.metadata.get("help", ""),
                choices=tuple(choices) if choices else None,
                optional=optional,
            )
        )
    return specs


def _coerce(spec: OptionSpec, value: Any) -> Any:
    """Turn one untyped value into the option's type, or raise ConfigError naming the option."""
    if value is None or (isinstance(value, str) and value.strip() == "" and spec.type not in ("str", "list")):
        if spec.optional:
            return None
        raise ConfigError(f"Option {spec.name} needs a value.", option=spec.name)
    try:
        if spec.type == "bool":
            if isinstance(value, bool):
                return value
            text = str(value).strip().lower()
            if text in ("1", "true", "yes", "on"):
                return True
            if text in ("0", "false", "no", "off"):
                return False
            raise ValueError
        if spec.type == "int":
            if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
                raise ValueError
            return int(str(value).strip()) if isinstance(value, str) else int(value)
        if spec.type == "float":
            if isinstance(value, bool):
                raise ValueError
            return float(value)
        if spec.type == "list":
            if isinstance(value, str):
                value = [line for line in value.splitlines() if line != ""]
            if not all(isinstance(v, str) for v in value):
                raise ValueError
            return tuple(value)
        return str(value)
    except (TypeError, ValueError):
        raise ConfigError(
            f"Option {spec.name} must be {'a whole number' if spec.type == 'int' else 'a ' + spec.type}, "
            f"not {value!r}.", option=spec.name,
        ) from None


def options_from_mapping(options_cls: type[OptionsT], values: Mapping[str, Any]) -> OptionsT:
    """Build ``options_cls`` from untyped values; unknown names and bad values raise ConfigError.

    One pass finds every problem: each value is converted, and the dataclass's own checks run
    once, with the default in place of a value that could not be converted (its problem is
    already known, and the checks need a value of the right type). The ConfigError raised
    carries them all in ``problems``, each naming its ``option``.
    """
    specs = {spec.name: spec for spec in option_specs(options_cls)}
    unknown = sorted(set(values) - set(specs))
    if unknown:
        raise ConfigError(
            f"Unknown option {unknown[0]!r}; the options are: {', '.join(sorted(specs))}."
        )
    problems = ConfigProblems()
    kwargs: dict[str, Any] = {}
    for name, value in values.items():
        try:
            kwargs[name] = _coerce(specs[name], value)
        except ConfigError as problem:
            problems.add(problem)
    unconverted = {problem.option for problem in problems.found}
    try:
        options = options_cls(**kwargs)
    except ConfigError as checked:
        for problem in checked.problems:
            if problem.option not in unconverted:  # the default stood in for it; its problem is known
                problems.add(problem)
    problems.raise_if_any()
    return options


def options_to_dict(options: Any) -> dict[str, Any]:
    """Return the options as JSON-able values (tuples become lists)."""
    return {
        f.name: list(v) if isinstance(v := getattr(options, f.name), tuple) else v
        for f in dataclasses.fields(options)
    }


class Reporter:
    """Rate-limited progress reporting plus the cancellation check trainers poll.

    Trainers call :meth:`update` as often as they like; the callback runs at most every
    ``interval`` seconds (and always on a new stage), and the cancel check is polled on the
    same clock, so a cancel is seen within about ``interval`` seconds of being requested.
    """

    def __init__(
        self,
        progress: ProgressCallback | None = None,
        should_cancel: CancelCheck | None = None,
        *,
        interval: float = 0.2,
    ) -> None:
        self._progress = progress
        self._should_cancel = should_cancel
        self._interval = interval
        self._last = 0.0
        self._stage = ""

    def update(self, stage: str, current: int, total: int = 0, *, force: bool = False) -> None:
        """Report progress if due; raise TrainingCancelled if the caller asked to stop."""
        now = time.monotonic()
        if not force and stage == self._stage and now - self._last < self._interval:
            return
        self._last = now
        self._stage = stage
        if self._should_cancel is not None and self._should_cancel():
            raise TrainingCancelled("Training was cancelled.")
        if self._progress is not None:
            self._progress(stage, current, total)

    def check_cancel(self) -> None:
        """Poll the cancel check now (for long steps between updates)."""
        if self._should_cancel is not None and self._should_cancel():
            raise TrainingCancelled("Training was cancelled.")
