"""The training form: its fixed fields (a Flask-WTF form), and its options, generated from the
engine's option dataclasses.

:class:`TrainForm` reads the name, the algorithm and the chosen corpora. ``fields_for`` lists one
field per ``engine.trainers.option_specs(algorithm)`` entry (its type, default, help and
choices), holding what the user typed so a re-rendered form keeps it;
``parse`` turns the submitted form into an options dict that the engine has already validated,
or into plain-sentence errors attached to the field they concern, from one validation pass of
the engine. Rendering is the template's job and queueing the job is ``views.py``'s.

Some options are read at one level only (``tokenizers/levels.py``'s ``LEVEL_OPTIONS``, which the
tokenizer and job pages also follow): the form shows a field only at the levels that read it
(``static/js/train.js`` follows the level as it changes).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from wtforms import Field as WTField
from wtforms import StringField
from wtforms.validators import StopValidation

from engine import ConfigError, shown
from engine.trainers import TRAINERS, OptionSpec, make_options, option_specs, options_class, options_to_dict
from webapp.access.auth import scoped
from webapp.corpora.forms import MAX_CORPORA
from webapp.store.db import get_session
from webapp.store.models import Corpus
from webapp.tokenizers.levels import LEVEL_OPTIONS
from webapp.web.forms import Form, IdListField, name_field, strip
from webapp.web.numbers import plain_digits_problem

PREFIX = "opt-"


class TrainForm(Form):
    """The fixed fields: a name (empty: one from the algorithm and corpora), the algorithm, the corpora.

    A valid form's ``corpora`` are the chosen rows, all the user's (``auth.scoped``).
    """

    name = name_field(empty=None)
    algorithm = StringField(filters=[strip])
    corpus_ids = IdListField(most=MAX_CORPORA)

    corpora: list[Corpus]

    def validate_algorithm(self, field: WTField) -> None:
        if field.data not in available_algorithms():
            raise StopValidation(f"Choose an algorithm; {field.data!r} is not available.")

    def validate_corpus_ids(self, field: IdListField) -> None:
        if len(field.raw) > MAX_CORPORA:
            raise StopValidation(f"Choose at most {MAX_CORPORA:,} corpora; {len(field.raw):,} were sent.")
        if field.invalid is not None:
            raise StopValidation(f"{field.invalid[:20]!r} is not a corpus id; choose the corpora from the list.")
        if not field.data:
            raise StopValidation("Choose at least one corpus to train on.")
        self.corpora = list(get_session().scalars(scoped(Corpus).where(Corpus.id.in_(field.data))))
        if len(self.corpora) != len(field.data):
            raise StopValidation("One of the chosen corpora no longer exists; choose again.")


@dataclass
class Field:
    """One option as the template renders it."""

    spec: OptionSpec
    value: Any  # str for inputs, bool for checkboxes
    error: str | None = None
    levels: tuple[str, ...] | None = None  # the levels that read it; None: every level
    shown: bool = True  # read at the form's current level

    @property
    def input_name(self) -> str:
        return PREFIX + self.spec.name

    @property
    def label(self) -> str:
        return self.spec.name.replace("_", " ").capitalize()

    @property
    def widget(self) -> str:
        """"select", "checkbox", "number", "textarea" or "text"."""
        if self.spec.choices:
            return "select"
        return {"bool": "checkbox", "int": "number", "float": "number",
                "list": "textarea"}.get(self.spec.type, "text")


def available_algorithms() -> list[str]:
    """Algorithms whose trainer is installed (others are still being written, or absent)."""
    names = []
    for name in TRAINERS:
        try:
            options_class(name)
        except ImportError:
            continue
        names.append(name)
    return names


def _shown(spec: OptionSpec, value: Any) -> Any:
    if spec.type == "bool":
        return bool(value)
    if value is None:
        return ""
    if spec.type == "list":
        return "\n".join(str(v) for v in value)
    return str(value)


def fields_for(algorithm: str, form: Mapping[str, str] | None = None,
               errors: Mapping[str, str] | None = None) -> list[Field]:
    """The form fields for ``algorithm``, showing ``form``'s values where given; a field its
    current level does not read is marked not ``shown``."""
    fields = []
    specs = option_specs(algorithm)
    level_spec = next((spec for spec in specs if spec.name == "level"), None)
    level = None if level_spec is None else (form or {}).get(PREFIX + "level", level_spec.default)
    for spec in specs:
        if form is None:
            value = _shown(spec, spec.default)
        elif spec.type == "bool":
            value = form.get(PREFIX + spec.name) == "on"
        else:
            value = form.get(PREFIX + spec.name, "")
        levels = LEVEL_OPTIONS.get(algorithm, {}).get(spec.name)
        known = level_spec is not None and level in level_spec.choices  # a bad level: show all
        fields.append(Field(spec, value, (errors or {}).get(spec.name), levels,
                            shown=levels is None or not known or level in levels))
    return fields


def form_from_options(algorithm: str, options: Mapping[str, Any]) -> dict[str, str]:
    """The submitted form that would give ``options`` (for "train again with these options").

    Options the algorithm no longer has are dropped and missing ones take their default, so a
    job stored before an option was added or removed still fills the form.
    """
    form: dict[str, str] = {}
    for spec in option_specs(algorithm):
        value = options.get(spec.name, spec.default)
        if spec.type == "bool":
            if value:
                form[PREFIX + spec.name] = "on"
        elif isinstance(value, (list, tuple)):
            form[PREFIX + spec.name] = "\n".join(str(v) for v in value)
        else:
            form[PREFIX + spec.name] = "" if value is None else str(value)
    return form


def _raw_values(algorithm: str, form: Mapping[str, str]) -> dict[str, Any]:
    """The submitted option values. A box the page shows is always sent, even empty (an empty
    list box means no items); one not sent at all keeps the option's default. An unticked
    checkbox is never sent, so a bool's absence means off."""
    values: dict[str, Any] = {}
    for spec in option_specs(algorithm):
        if spec.type == "bool":
            values[spec.name] = form.get(PREFIX + spec.name) == "on"
        elif PREFIX + spec.name in form:
            values[spec.name] = form[PREFIX + spec.name]
    return values


def _figure(value: float) -> str:
    return f"{value:,}" if isinstance(value, int) else f"{value:,g}"


def form_message(exc: ConfigError) -> str:
    """The engine's message, or for a number out of bounds, a sentence in the form's own words.

    The engine words its fixes for the API and the CLI ("pass vocab_size of at most …"); on the
    form the user types into a field, so the fix is to enter another number there.
    """
    if not exc.option or exc.value is None or (exc.least is None and exc.most is None):
        return str(exc)
    label = exc.option.replace("_", " ").capitalize()  # as the form labels the field
    why = f" ({exc.why})" if exc.why else ""
    if exc.least is not None and exc.most is not None:
        limits, fix = f"must be from {_figure(exc.least)}{why} to {_figure(exc.most)}", "a number in that range"
    elif exc.most is not None:
        limits, fix = f"can be at most {_figure(exc.most)}{why}", "a smaller number"
    else:
        limits, fix = f"must be at least {_figure(exc.least)}{why}", "a larger number"  # type: ignore[arg-type]
    value = exc.value
    given = shown(value) if isinstance(value, int) and abs(value) >= 10**15 else _figure(value)  # no 4,000-digit echo
    return f"{label} {limits}, not {given}. Enter {fix}."


def parse(algorithm: str, form: Mapping[str, str]) -> tuple[dict[str, Any] | None, dict[str, str]]:
    """Validate the submitted options; return (options, {}) or (None, {field or "": message}).

    The engine validates once and reports every bad field of the submission, each problem
    naming its ``option``; a field with several problems shows the first.
    """
    values = _raw_values(algorithm, form)
    # Whole numbers are read by the one parser of every form (``web/numbers.py``): plain ASCII
    # digits. The engine's ``int()`` would read "٢" as 2 and "2_000" as 2000.
    errors: dict[str, str] = {}
    for spec in option_specs(algorithm):
        raw = values.get(spec.name)
        if spec.type == "int" and isinstance(raw, str):
            problem = plain_digits_problem(spec.name.replace("_", " ").capitalize(), raw)
            if problem:
                errors[spec.name] = problem
    try:
        options = make_options(algorithm, values)
    except ConfigError as exc:
        for problem in exc.problems:
            errors.setdefault(problem.option if problem.option in values else "", form_message(problem))
    if errors:
        return None, errors
    return options_to_dict(options), {}
