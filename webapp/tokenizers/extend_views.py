"""Extending a tokenizer from its page (the "tokenizer_extend" blueprint): the form, the queued
job, and the report of the result.

``GET /tokenizers/ID/extend`` shows the form alone (the tokenizer page embeds the same form);
``POST`` checks it (``extend_form.check``) and queues an extension job through ``queue.enqueue``,
so the team's cap on waiting jobs and the fair claim apply as to a training, then sends the
browser to the job page. The base is fetched with ``auth.readable_or_404``: the team's own
tokenizers and the presets; anything else is a 404. A base the engine cannot extend is a 422
with the engine's sentence; bad fields are a 422 with a sentence beside each; a full queue a 429.
:func:`show_context` gives the tokenizer page the form and, for an extension, its report.

It lives with the tokenizer pages because it is one: its URL is the tokenizer's, the tokenizer
page embeds its form, and its report shows there beside a merge's (``merge_views.py``). The job it
queues is a training job (kind "train", algorithm ``extend``), so the job side is the training
area's, above this one: the work (``training/extend_child.py``), the stored row
(``training/extend_job.py``), and the job page the browser is sent to (``training/views.py``).
"""

from __future__ import annotations

from typing import Any

from flask import Blueprint, current_app, redirect, url_for
from werkzeug.wrappers import Response

from engine import Tokenizer
from webapp.access.auth import readable_or_404
from webapp.jobs import queue
from webapp.store.db import get_session
from webapp.store.models import Tokenizer as TokenizerRow
from webapp.tokenizers import extend_form, quota
from webapp.tokenizers.extend_form import EXTEND
from webapp.tokenizers.loaded import load
from webapp.tokenizers.merge_views import MERGE
from webapp.web.htmx import render

bp = Blueprint("tokenizer_extend", __name__)


def show_context(row: TokenizerRow, tokenizer: Tokenizer) -> dict[str, Any]:
    """The tokenizer page's extension parts: ``extend`` (the form) and ``extension`` (the report of
    an extension or of a merge of vocabularies, ``tokenizers/merge_views.py``; else None)."""
    config = row.config or {}
    extension = None
    made = config.get("algorithm")
    if made in (EXTEND, MERGE) and isinstance(config.get("report"), dict):
        base_id = config.get("extended_from" if made == EXTEND else "merged_from")
        base = get_session().get(TokenizerRow, base_id) if isinstance(base_id, int) else None
        readable = base is not None and (base.team_id is None or base.team_id == row.team_id)
        extension = {"report": config["report"], "base_id": base_id if readable else None,
                     "base_name": config.get("base_name") or f"#{base_id}",
                     "merged": {"donor_name": config.get("donor_name"), "policy": config["report"].get("policy")}
                     if made == MERGE else None}
    return {"extend": extend_form.page(row, tokenizer), "extension": extension}


@bp.get("/tokenizers/<int:tokenizer_id>/extend")
def form(tokenizer_id: int) -> Response:
    """The "Extend with a corpus" form for one tokenizer."""
    row = readable_or_404(TokenizerRow, tokenizer_id)
    page = extend_form.page(row, load(tokenizer_id).tokenizer)
    return render("tokenizers/extend.html", extend=page, status=422 if page.unsupported else 200)


@bp.post("/tokenizers/<int:tokenizer_id>/extend")
def extend(tokenizer_id: int) -> Response:
    """Check the form and queue the extension job."""
    row = readable_or_404(TokenizerRow, tokenizer_id)
    tokenizer = load(tokenizer_id).tokenizer
    sent = extend_form.ExtendForm()
    sent.validate()  # only fills the fields; check() judges them against the base

    def again(errors: dict[str, str], status: int) -> Response:
        page = extend_form.page(row, tokenizer, values=extend_form.sent_values(sent), errors=errors)
        return render("tokenizers/extend.html", extend=page, status=status)

    page = extend_form.page(row, tokenizer)
    if page.unsupported:
        return render("tokenizers/extend.html", extend=page, status=422)
    job, errors = extend_form.check(row, tokenizer, sent)
    if job is None:
        return again(errors, 422)
    full = quota.full(get_session(), job["team_id"], "no tokenizer can be extended")
    if full is not None:
        return again({"": full}, 413)
    try:
        queued = queue.enqueue(get_session(), team_id=job["team_id"], name=job["name"], algorithm=job["algorithm"],
                              options=job["options"], corpus_ids=job["corpus_ids"],
                              max_queued=current_app.config["MAX_QUEUED_JOBS"])
    except queue.QueueFull as full:
        return again({"": str(full)}, 429)
    return redirect(url_for("training.job", job_id=queued.id), 303)
