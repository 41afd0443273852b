"""The playground's one submitted form: the held-out evaluation on the insights page (which
corpus, what share of it, its first or last part).

Left out: the encode, decode, compare and chat inputs, which htmx sends as the user types or
toggles (one text or a few flags each, bounded where they are read: ``encode_page.limits``).
"""

from __future__ import annotations

from collections.abc import Callable

from wtforms import StringField

from webapp.web.forms import Form, WholeNumberField
from webapp.web.numbers import MAX_ID

MAX_HELD_OUT_PERCENT = 50  # the rest is for training; heldout.read_split refuses more too


def _first(limit: int) -> Callable[[object], str]:
    """A filter: the first ``limit`` characters (a field not sent is empty)."""
    return lambda value: value[:limit] if isinstance(value, str) else ""


class HeldOutForm(Form):
    """Evaluate on ``percent`` % of a corpus; the view checks the corpus is the team's."""

    corpus_id = WholeNumberField(low=1, high=MAX_ID, required=True, strip=False,
                                 message="Choose a corpus to take the held-out split from.")
    percent = WholeNumberField(low=1, high=MAX_HELD_OUT_PERCENT, required=True,
                               message="The held-out share must be a whole percentage from {low} to {high}, "
                                       "not {text}.")
    part = StringField(default="last", filters=[_first(20)])  # heldout.read_split names a bad one
