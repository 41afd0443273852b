"""The import form: what kind of tokenizer files, their parts, a name, and the settings that the
files themselves may not hold (split pattern, special tokens, lower-casing).

The kind, the pattern and the files are judged by ``imports.read``, which knows what each kind
needs and says so in its own words; the form bounds what is read (the special tokens' text, the
name) before that.
Left out: reading the uploads (``views.py``, at most ``MAX_IMPORT_BYTES`` each).
"""

from __future__ import annotations

from collections.abc import Callable

from flask_wtf.file import FileField
from wtforms import BooleanField, StringField, TextAreaField

from webapp.web.forms import Form, name_field, strip

MAX_SPECIALS_TEXT = 2000  # characters of the special-tokens box that are read
FILE_PARTS = ("file", "vocab", "merges", "sidecar", "config")


def _first(limit: int) -> Callable[[object], str]:
    """A filter: the first ``limit`` characters (a field not sent is empty)."""
    return lambda value: value[:limit] if isinstance(value, str) else ""


class ImportForm(Form):
    """An import: ``kind`` of ``imports.KINDS`` and the file parts that kind uses."""

    kind = StringField(filters=[strip])
    name = name_field(empty=None)  # empty: named after the first file
    file = FileField()
    vocab = FileField()
    merges = FileField()
    sidecar = FileField()
    config = FileField()
    pattern = StringField(default="gpt2")  # "": the tiktoken sidecar's
    special_tokens = TextAreaField(filters=[_first(MAX_SPECIALS_TEXT)])
    lowercase = BooleanField(default=True)
