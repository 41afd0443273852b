"""The compare blueprint: two to four tokenizers side by side on the same text.

Each tokenizer's spans are shown with its counts, and the stretches where the tokenizers differ
are marked: every stretch cut differently, or (``mark=counts``) only those where they spend a
different number of tokens; each column says how many of its tokens are marked and how many more
than the leanest it spends (``compare.py``). The form re-encodes as the user types, like
the encode view; the page is also a plain GET so a comparison can be linked. It starts from the
text of the page it was opened from: ``?text=`` when short, else the text kept in the browser
(``text_links.py``).
Left out: the diff itself (``compare.py``) and span grouping (``spans.py``).
"""

from __future__ import annotations

from typing import Any

from flask import Blueprint, request
from werkzeug.wrappers import Response

from engine import TokenforgeError
from webapp.playground import compare
from webapp.playground.encode_page import ALLOW_SPECIAL_DEFAULT, SAMPLE_TEXT, flag, inspect_base, limits, picker_rows
from webapp.playground.encode_view import encode_for_display
from webapp.tokenizers.loaded import load
from webapp.web.htmx import render
from webapp.web.numbers import parse_id

bp = Blueprint("compare", __name__)
MAX_SUBMITTED = 100  # ids read from one request; enough to say "5 are chosen", not a flood


def _selected(source: Any) -> list[int]:
    """The distinct tokenizer ids chosen, in order; values that are not ids are ignored."""
    seen: list[int] = []
    for raw in source.getlist("ids")[:MAX_SUBMITTED]:
        value = parse_id(raw)
        if value is not None and value not in seen:
            seen.append(value)
    return seen


def _mark(source: Any) -> str:
    """The chosen mark; anything but a known one is the default, "all"."""
    value = source.get("mark", "all")
    return value if value in compare.MARKS else "all"


def _context(ids: list[int], text: str, text_from: str = "given", mark: str = "all") -> tuple[dict[str, Any], int]:
    options = {"allowed_special": flag("allowed_special", ALLOW_SPECIAL_DEFAULT), "show_ws": flag("show_ws", False)}
    context: dict[str, Any] = {"rows": picker_rows(ids), "selected": ids, "text": text, "options": options,
                               "columns": [], "summary": None, "error": None, "text_from": text_from,
                               "mark": mark, "marks": compare.MARKS}
    max_chars, render_tokens = limits()
    if not compare.MIN_TOKENIZERS <= len(ids) <= compare.MAX_TOKENIZERS:
        context["error"] = (f"Choose between {compare.MIN_TOKENIZERS} and {compare.MAX_TOKENIZERS} "
                            f"tokenizers to compare; "
                            f"{len(ids)} {'is' if len(ids) == 1 else 'are'} chosen.")
        return context, 422
    if len(text) > max_chars:
        context["error"] = f"The text has {len(text):,} characters; compare at most {max_chars:,}."
        return context, 422
    try:
        loaded = [load(i) for i in ids]
        results = [encode_for_display(item.tokenizer, text, limit=render_tokens, **options) for item in loaded]
    except TokenforgeError as exc:
        context["error"] = str(exc)
        return context, 422
    tokenizations = [r.spans for r in results]
    found = compare.regions(tokenizations, len(text))
    differs = compare.mark_spans(tokenizations, found, mark)
    figures = compare.column_figures(found, mark, len(results))
    context["columns"] = [
        {"loaded": item, "result": result, "differs": diff, "figures": fig, "inspect_base": inspect_base(item)}
        for item, result, diff, fig in zip(loaded, results, differs, figures)
    ]
    context["summary"] = compare.summary(tokenizations, len(text), found)
    return context, 200


@bp.get("/compare")
def page() -> Response:
    """The compare page; with ``ids`` (2 to 4) in the query it shows the comparison at once."""
    ids = _selected(request.args)
    text = request.args.get("text")
    text_from = "default" if text is None else "given"
    text = SAMPLE_TEXT if text is None else text
    if len(ids) < compare.MIN_TOKENIZERS:
        context: dict[str, Any] = {"rows": picker_rows(ids), "selected": ids, "text": text, "columns": [],
                                   "summary": None, "error": None, "text_from": text_from,
                                   "options": {"allowed_special": ALLOW_SPECIAL_DEFAULT, "show_ws": False},
                                   "mark": _mark(request.args), "marks": compare.MARKS}
        return render("playground/compare.html", **context)
    context, status = _context(ids, text, text_from, _mark(request.args))
    return render("playground/compare.html", status=status, **context)


@bp.post("/compare")
def run() -> Response:
    """Compare the chosen tokenizers on the posted text; htmx gets only the result block."""
    context, status = _context(_selected(request.form), request.form.get("text", ""), mark=_mark(request.form))
    return render("playground/compare.html", "comparison", status=status, **context)
