"""The corpora's forms: the upload (files, the JSON text field, decoding with replacement) and
the rename; and how many corpora a form elsewhere may choose at once (:data:`MAX_CORPORA`: a
training's, an extension's), a bound the pages that read a stored list of corpus ids share.

Left out: reading and checking the files themselves (``storage.py``, while they stream in).
"""

from __future__ import annotations

from flask_wtf.file import MultipleFileField
from werkzeug.datastructures import FileStorage
from wtforms import BooleanField, Field, StringField
from wtforms.validators import ValidationError

from webapp.web.forms import MAX_NAME, Form, name_field, strip

DEFAULT_TEXT_FIELD = "text"
MAX_CORPORA = 1000  # corpus checkboxes one form may submit; more is not a person choosing


class UploadForm(Form):
    """One or more corpus files; ``text_field`` names the JSON field of a .jsonl file's documents."""

    files = MultipleFileField()
    text_field = StringField(filters=[strip])
    replace_errors = BooleanField()

    def validate_files(self, field: Field) -> None:
        if not self.chosen_files():
            raise ValidationError("Choose at least one file to upload.")

    def validate_text_field(self, field: Field) -> None:
        if len(field.data) > MAX_NAME:  # a JSON key, bounded like a name
            raise ValidationError(f"The text field's name can be at most {MAX_NAME} characters; this one has "
                                  f"{len(field.data):,}. Nothing was stored.")

    def chosen_files(self) -> list[FileStorage]:
        """The file parts that carry a file (a browser sends an empty part when none is chosen)."""
        return [f for f in self.files.data or [] if f.filename]

    def json_field(self) -> str:
        return self.text_field.data or DEFAULT_TEXT_FIELD


class RenameForm(Form):
    """A corpus's new name."""

    name = name_field(empty="Give the corpus a name.")
