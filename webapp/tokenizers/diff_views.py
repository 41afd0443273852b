"""The vocabulary diff page: what two readable tokenizers share, and what only one of them has.

``GET /tokenizers/diff?a=ID&b=ID`` shows two pickers and, once both are chosen, the counts and
the pieces only in A and only in B grouped by script (``engine/vocab_diff.py`` says when two
pieces are the same), at most :data:`SHOWN_PER_GROUP` a group with "… and N more" (the CLI's
``tokenforge diff --limit 0`` lists them all). ``POST`` with a text adds the lines the two encode
differently; htmx gets only that block. Both tokenizers load through ``loaded.load``, so one the
visitor may not read is a 404 like any other, and so is an id that is not one; a tokenizer that
cannot be parsed is ``load``'s 422, and an engine error while encoding the text (a time budget
spent) is a 422 with its sentence. Left out: the diff itself (the engine's) and merging.
"""

from __future__ import annotations

from typing import Any

from flask import Blueprint, abort, current_app, request
from werkzeug.wrappers import Response

from engine import LineDiff, TokenforgeError, diff, line_diff, shown_piece
from webapp.store.records import TokenizerRecord
from webapp.tokenizers.loaded import Loaded, all_rows, load, rows_with_ids
from webapp.web.htmx import is_htmx, render
from webapp.web.lists import PICKER_ROWS
from webapp.web.numbers import parse_id

bp = Blueprint("tokenizer_diff", __name__)
SHOWN_PER_GROUP = 100  # pieces listed per script and side
DEFAULT_MAX_CHARS = 100_000  # of the text, where the app sets no PLAYGROUND_MAX_CHARS


def choice(source: Any, name: str) -> int | None:
    """The id chosen as ``name``; None when the field is absent or empty; 404 when it is no id."""
    raw = source.get(name, "")
    if raw == "":
        return None
    value = parse_id(raw)
    if value is None:
        abort(404)
    return value


def picker(chosen: list[int]) -> list[TokenizerRecord]:
    """What this visitor can read, bounded, always with the chosen ones."""
    rows = all_rows(limit=PICKER_ROWS)
    missing = set(chosen) - {r.id for r in rows}
    return [*rows_with_ids(missing), *rows] if missing else rows


def _context(source: Any, text: str | None, *, vocabulary: bool = True) -> tuple[dict[str, Any], int]:
    """The page's context and status; ``vocabulary=False`` leaves the piece lists out (htmx's lines block)."""
    a_id, b_id = choice(source, "a"), choice(source, "b")
    chosen = [i for i in (a_id, b_id) if i is not None]
    context: dict[str, Any] = {"a_id": a_id, "b_id": b_id, "text": text or "", "result": None, "lines": None,
                               "error": None, "shown": SHOWN_PER_GROUP,
                               "show_piece": shown_piece}
    if a_id is None or b_id is None:
        context["rows"] = picker(chosen)
        return context, 200
    a, b = load(a_id), load(b_id)  # 404 for what this visitor may not read
    context.update(rows=picker(chosen), a=a.row, b=b.row,
                   result=diff(a.tokenizer, b.tokenizer) if vocabulary else None)
    if text:
        context["lines"], context["error"], status = _lines(a, b, text)
        return context, status
    return context, 200


def _lines(a: Loaded, b: Loaded, text: str) -> tuple[LineDiff | None, str | None, int]:
    max_chars = int(current_app.config.get("PLAYGROUND_MAX_CHARS", DEFAULT_MAX_CHARS))
    if len(text) > max_chars:
        return None, f"The text has {len(text):,} characters; compare at most {max_chars:,}.", 422
    try:
        return line_diff(a.tokenizer, b.tokenizer, text), None, 200
    except TokenforgeError as exc:
        return None, str(exc), 422


@bp.get("/tokenizers/diff")
def page() -> Response:
    """The vocabulary diff of the tokenizers ``a`` and ``b`` (the pickers alone until both are chosen)."""
    context, status = _context(request.args, None)
    return render("tokenizers/diff.html", status=status, **context)


@bp.post("/tokenizers/diff")
def lines() -> Response:
    """The same page with the lines of the posted text that the two encode differently."""
    context, status = _context(request.form, request.form.get("text", ""), vocabulary=not is_htmx())
    return render("tokenizers/diff.html", "lines", status=status, **context)
