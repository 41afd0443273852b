"""What every fixed form shares: the base form class, the one rule for names, and fields for
numbers and ids from outside.

Each area declares its forms (Flask-WTF ``FlaskForm`` subclasses of :class:`Form`) beside its
views, and its templates keep writing their own HTML with the same field names, showing a
field's first error beside it. A form is validated once; when ``validate()`` is false, the view
answers 422 and re-renders the page with the form, each message beside its field.

- **Names.** Every name a user gives (account, team, API key, corpus, tokenizer, leaderboard)
  goes through :class:`Name`: cleaned of control and bidi characters and stripped
  (:func:`clean_name`), refused when empty (unless the view supplies a default name) and when
  longer than ``MAX_NAME``, the width of every name column (``store/model_base.py``). A name
  taken from an uploaded file's name (a corpus, an import with no name typed) is cleaned into
  one that passes the same rule (:func:`name_from_filename`), never refused.
- **Numbers.** :class:`WholeNumberField` reads its text with ``numbers.parse_int`` (plain ASCII
  digits, bounded), never with ``int()``; :class:`IdListField` reads repeated ids (checkboxes).

Left out: CSRF, which ``CSRFProtect`` checks for every POST before any view runs (htmx sends the
token in a header, which a form's own check would not read), and the training options, whose
fields are generated from the engine's option specs (``training/form.py``).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Sequence
from pathlib import PurePosixPath, PureWindowsPath
from typing import Any

from flask import request
from flask_wtf import FlaskForm
from werkzeug.datastructures import CombinedMultiDict
from wtforms import Field, HiddenField, StringField
from wtforms.validators import StopValidation

from webapp.store.model_base import MAX_NAME
from webapp.web.numbers import parse_id, parse_int

SUBMIT_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


class Form(FlaskForm):
    """The base of every fixed form (CSRF is ``CSRFProtect``'s, app-wide: see the module docstring)."""

    class Meta:
        csrf = False

        def wrap_formdata(self, form: FlaskForm, formdata: Any) -> Any:
            """A submitted form's fields and files, never a JSON body (which Flask-WTF would read,
            and a JSON list or number would break)."""
            if formdata is None or hasattr(formdata, "getlist"):
                return formdata  # given by the caller
            if request.method in SUBMIT_METHODS:
                return CombinedMultiDict((request.files, request.form))
            return None

    def first_errors(self) -> dict[str, str]:
        """Each invalid field's first message, by field name (what the templates show beside it)."""
        return {name: field.errors[0] for name, field in self._fields.items() if field.errors}


def strip(value: Any) -> str:
    """A filter: the text without surrounding white space; a field not sent is empty."""
    return value.strip() if isinstance(value, str) else ""


#: Bidi embeddings, overrides, isolates and marks: in a name they make it display as other text
#: ("\u202eevil" shows reversed, in lists, leaderboards and CSV files alike).
BIDI_CONTROLS = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def clean_name(value: Any) -> str:
    """A filter for names: control characters (NUL, tabs, newlines) become spaces, bidi controls
    go, and the surrounding white space is stripped. Joiners and variation selectors stay: emoji
    and many scripts need them."""
    if not isinstance(value, str):
        return ""
    kept = (" " if unicodedata.category(c) == "Cc" else c for c in value if c not in BIDI_CONTROLS)
    return "".join(kept).strip()


def name_from_filename(raw: Any, default: str) -> str:
    """A name made from a browser-supplied file name (an upload, an import): the same rule as a
    typed name, applied by cleaning instead of refusing, since the user did not type it.

    Only the last path component counts (never a path); control and format characters (NUL,
    tabs, newlines, bidi controls, zero-width characters) are dropped, so the name can neither
    break out of a header or a CSV cell nor disguise its extension; the rest is cut to
    ``MAX_NAME`` characters. ``.``, ``..`` and a name with nothing left become ``default``. The
    result always passes :class:`Name` unchanged (``clean_name`` leaves it as it is).
    """
    text = raw.replace("\x00", "") if isinstance(raw, str) else ""
    base = PureWindowsPath(PurePosixPath(text).name).name
    name = "".join(c for c in base if unicodedata.category(c) not in ("Cc", "Cf")).strip()
    if name in ("", ".", ".."):
        return default
    return name[:MAX_NAME].strip()


def too_long(text: str, limit: int = MAX_NAME) -> str | None:
    """The sentence for ``text`` longer than ``limit`` characters, else None."""
    if len(text) <= limit:
        return None
    return f"A name can be at most {limit:,} characters; this one has {len(text):,}."


class Name:
    """The one rule for names: at most ``MAX_NAME`` characters, and not empty.

    ``empty`` is the sentence for an empty name, or None where the view gives a default name
    (a tokenizer named after its file, a leaderboard after its date). Use with the
    :func:`clean_name` filter (:func:`name_field` does both).
    """

    def __init__(self, empty: str | None) -> None:
        self.empty = empty

    def __call__(self, form: FlaskForm, field: Field) -> None:
        value = field.data or ""
        if not value:
            if self.empty is None:
                raise StopValidation()  # no name: the view picks one
            raise StopValidation(self.empty)
        problem = too_long(value)
        if problem:
            raise StopValidation(problem)


def name_field(label: str = "Name", *, empty: str | None) -> StringField:
    """A name field: cleaned (:func:`clean_name`), then checked by :class:`Name`."""
    return StringField(label, filters=[clean_name], validators=[Name(empty)])


class WholeNumberField(StringField):
    """A whole number from ``low`` to ``high`` (a number, or a function of the app's settings).

    ``data`` is the number, or None when the field is empty (the view decides what that means;
    ``required`` refuses it instead); ``text`` keeps what was typed, for re-rendering.
    ``message`` is formatted with ``low``, ``high`` and ``text`` (its first 20 characters, repr'd).
    ``strip=False`` takes the text exactly as sent (for ids that pages send, never typed).
    """

    def __init__(self, label: str | None = None, *, low: int, high: int | Callable[[], int], message: str,
                 required: bool = False, strip: bool = True, **kwargs: Any) -> None:
        super().__init__(label, **kwargs)
        self.low, self._high, self.message, self.required = low, high, message, required
        self.strip = strip  # spaces around a typed number are fine; an id a page sends has none
        self.text = ""

    @property
    def high(self) -> int:
        return self._high() if callable(self._high) else self._high

    def process_formdata(self, valuelist: list[Any]) -> None:
        text = str(valuelist[0]) if valuelist else ""
        self.text = text.strip() if self.strip else text
        self.data = parse_int(self.text, low=self.low, high=self.high) if self.text else None

    def _value(self) -> str:
        return self.text

    def pre_validate(self, form: FlaskForm) -> None:
        if self.data is None and (self.text or self.required):
            raise StopValidation(self.message.format(low=self.low, high=self.high, text=repr(self.text[:20])))


class IdListField(Field):
    """Database ids from repeated fields (checked boxes), at most ``most`` of them.

    ``raw`` holds what was sent, without empty values; ``data`` the valid ids among the first
    ``most``, duplicates dropped; ``invalid`` the first value that is not an id. Whether the ids
    are the user's rows, and the wording, are the form's (``validate_<field>``).
    """

    def __init__(self, label: str | None = None, *, most: int, **kwargs: Any) -> None:
        super().__init__(label, **kwargs)
        self.most = most
        self.raw: list[str] = []
        self.data: list[int] = []
        self.invalid: str | None = None

    def process_formdata(self, valuelist: list[Any]) -> None:
        self.raw = [str(value) for value in valuelist if str(value).strip()]
        ids = [(value, parse_id(value)) for value in self.raw[:self.most]]
        self.invalid = next((value for value, parsed in ids if parsed is None), None)
        self.data = list(dict.fromkeys(parsed for _, parsed in ids if parsed is not None))

    def _value(self) -> str:
        return ""

    @property
    def chosen(self) -> Sequence[str]:
        """The values sent, for ticking the same boxes again."""
        return self.raw[:self.most]


class ConfirmForm(Form):
    """A confirmation page's form: only ``confirmed=yes`` deletes; anything else goes back to ask."""

    confirmed = HiddenField()

    def confirmed_yes(self) -> bool:
        return self.confirmed.data == "yes"
