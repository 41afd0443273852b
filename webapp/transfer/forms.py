"""The import form: what kind of tokenizer files, their parts, a name, and the settings that the
files themselves may not hold (split pattern, special tokens, lower-casing).

The kind, the pattern and the files are judged by ``imports.read``, which knows what each kind
needs and says so in its own words; the form bounds what is read (the special tokens' text, the
name) before that. :data:`KIND_FIELDS` says which fields each kind reads: the page shows only
those (``static/js/import.js`` hides the others and leaves them out of the request), and a file
sent in a part the kind does not read is refused (:meth:`ImportForm.stray_file`) rather than
silently ignored, since without script every field is on the page.
Left out: reading the uploads (``views.py``, at most ``MAX_IMPORT_BYTES`` each).
"""

from __future__ import annotations

from collections.abc import Callable

from flask_wtf.file import FileField
from wtforms import BooleanField, StringField, TextAreaField

from webapp.transfer.imports import KINDS
from webapp.web.forms import Form, name_field, name_from_filename, strip

MAX_SPECIALS_TEXT = 2000  # characters of the special-tokens box that are read
FILE_PARTS = ("file", "vocab", "merges", "sidecar", "config")
#: The fields each kind of import reads (``config``, tokenizer_config.json, fits every kind).
KIND_FIELDS: dict[str, frozenset[str]] = {
    "tokenizer_json": frozenset({"file", "config"}),
    "gpt2": frozenset({"vocab", "merges", "config", "pattern", "special_tokens"}),
    "vocab_txt": frozenset({"file", "config", "lowercase"}),
    "tiktoken": frozenset({"file", "sidecar", "config", "pattern", "special_tokens"}),
    "spm_model": frozenset({"file", "config"}),
}
PART_NAMES = {"file": "File", "vocab": "vocab.json", "merges": "merges.txt", "sidecar": "Sidecar",
              "config": "tokenizer_config.json"}


def kinds_reading(field: str) -> str:
    """The kinds that read ``field``, space-separated (the page's ``data-kinds``)."""
    return " ".join(kind for kind, fields in KIND_FIELDS.items() if field in fields)


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

    def stray_file(self) -> str | None:
        """Why not, when a file came in a part this kind does not read (else None)."""
        kind = self.kind.data or ""
        fields = KIND_FIELDS.get(kind)
        if fields is None:
            return None  # an unknown kind: ``imports.read`` names it
        for part in FILE_PARTS:
            upload = self[part].data
            if part not in fields and upload is not None and getattr(upload, "filename", ""):
                readers = " or ".join(f"“{KINDS[k]}”" for k in KIND_FIELDS if part in KIND_FIELDS[k])
                return (f"{name_from_filename(upload.filename, 'upload')} was chosen as the {PART_NAMES[part]} "
                        f"file, which an import of “{KINDS[kind]}” does not read. Remove it, or choose "
                        f"{readers} as what you are importing.")
        return None
