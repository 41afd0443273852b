"""The new-leaderboard form: a name (or one from the date), the tokenizers and corpora to score,
and the slice size in KiB.

The rows offered (the team's tokenizers and the presets, the team's corpora) come from the view,
so a chosen id that is not among them is refused like one that does not exist. An id chosen
twice is folded into one choice (``IdListField``), and counts once against the bounds.
Left out: queueing the job (``views.py``) and the bounds of a board (``leaderboard.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from flask import current_app
from wtforms.validators import StopValidation

from webapp.leaderboards import leaderboard
from webapp.web.forms import Form, IdListField, WholeNumberField, name_field

MOST_SENT = 50  # checkboxes read from one submission; the bounds below are smaller still


def max_bytes() -> int:
    """The largest slice of each corpus a board may evaluate (``LEADERBOARD_MAX_BYTES``)."""
    return int(current_app.config["LEADERBOARD_MAX_BYTES"])


def max_kib() -> int:
    """:func:`max_bytes` in whole KiB, at least 1: what the slice field accepts."""
    return max(1, max_bytes() // 1024)


class BoardForm(Form):
    """A new leaderboard."""

    name = name_field(empty=None)  # empty: the view names the board after its date
    tokenizer_ids = IdListField(most=MOST_SENT)
    corpus_ids = IdListField(most=MOST_SENT)
    kib = WholeNumberField(low=1, high=lambda: max_kib(), message=(
        "The slice must be a whole number of KiB from {low} to {high:,}; got {text}."))  # empty: the most

    def __init__(self, *, tokenizers: Sequence[Any], corpora: Sequence[Any], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.offered = {"tokenizer_ids": {row.id: row for row in tokenizers},
                        "corpus_ids": {row.id: row for row in corpora}}

    def chosen(self, field: str) -> list[Any]:
        """The offered rows the valid form chose in ``field``, in the order chosen."""
        return [self.offered[field][row_id] for row_id in self[field].data]

    def _check(self, field: IdListField, limit: int, what: str) -> None:
        sent = len(set(field.raw))  # the same id twice is one choice: folded, never a second column
        if sent > limit:
            raise StopValidation(f"Choose at most {limit} {what}; {sent:,} were chosen.")
        if field.invalid is not None or any(row_id not in self.offered[field.name] for row_id in field.data):
            raise StopValidation(f"One of the {what} chosen does not exist, or is not your team's.")
        if not field.data:
            raise StopValidation(f"Choose at least one of the {what}.")

    def validate_tokenizer_ids(self, field: IdListField) -> None:
        self._check(field, leaderboard.MAX_TOKENIZERS, "tokenizers")

    def validate_corpus_ids(self, field: IdListField) -> None:
        if not self.tokenizer_ids.errors:  # one problem at a time, the tokenizers' first
            self._check(field, leaderboard.MAX_CORPORA, "corpora")

