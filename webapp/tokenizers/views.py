"""The tokenizers blueprint: the team's list of tokenizers, a tokenizer's page, and deleting one.

``/tokenizers`` lists the team's tokenizers, newest first, with the presets every team can read
and the training jobs still running; ``/tokenizers/ID`` is a tokenizer's summary: how it was
trained, extended, merged or imported, what its model holds, its first merges, and the form that
extends it (``extend_views.show_context``). Every row is fetched through
``auth.readable_or_404``/``auth.owned_or_404``/``auth.scoped``: other teams' tokenizers are 404s,
and the presets can be read but not deleted. Deleting a tokenizer asks for confirmation first.

Left out: the other pages under ``/tokenizers/``: the vocabulary diff (``diff_views.py``), the
merge (``merge_views.py``) and the extension (``extend_views.py``) here; encoding, the vocabulary
and the inspector (``playground/``), the chat page (``chat/``), downloads (``transfer/``) and share
links (``sharing/``), each in the area that owns it. Training and its job pages are ``training/``'s.
"""

from __future__ import annotations

from flask import Blueprint, flash, redirect, url_for
from sqlalchemy.orm import defer
from werkzeug.wrappers import Response

from webapp.access.auth import current_team, owned_or_404, readable_or_404, scoped
from webapp.corpora.forms import MAX_CORPORA
from webapp.store.db import get_session
from webapp.store.models import Corpus, Job, Tokenizer
from webapp.tokenizers import extend_views, quota, summary
from webapp.tokenizers.levels import shown_options
from webapp.tokenizers.loaded import load
from webapp.tokenizers.originals import originals
from webapp.tokenizers.preset_names import INSTALL_COMMAND
from webapp.tokenizers.presets import preset_rows
from webapp.web.filters import quoted
from webapp.web.forms import ConfirmForm
from webapp.web.htmx import render
from webapp.web.lists import LIST_ROWS
from webapp.web.numbers import parse_ids

bp = Blueprint("tokenizers", __name__)
SHOWN_MERGES = 50


@bp.get("/tokenizers")
def index() -> Response:
    """The team's tokenizers, newest first, and the presets every team can read."""
    # The list needs neither the JSON document, the training stats nor the config (an imported
    # .model is kept there), which can be megabytes each.
    rows = get_session().scalars(scoped(Tokenizer).options(defer(Tokenizer.tokenizer_json), defer(Tokenizer.stats),
                                                           defer(Tokenizer.config))
                                 .order_by(Tokenizer.id.desc()).limit(LIST_ROWS)).all()
    active = get_session().scalars(
        scoped(Job).where(Job.status.in_(("queued", "running")), Job.kind == "train").order_by(Job.id)
    ).all()
    return render("tokenizers/index.html", tokenizers=rows, active=active, capped=len(rows) == LIST_ROWS,
                  presets=preset_rows(get_session()), presets_command=INSTALL_COMMAND,
                  usage=quota.usage(get_session(), current_team().id))


@bp.get("/tokenizers/<int:tokenizer_id>")
def show(tokenizer_id: int) -> Response:
    """A tokenizer's summary: how it was trained or imported, what its model holds, its first merges."""
    tokenizer = readable_or_404(Tokenizer, tokenizer_id)  # the team's own, or a preset
    job = get_session().scalar(scoped(Job).where(Job.id == tokenizer.job_id)) if tokenizer.job_id else None
    corpus_ids = parse_ids(tokenizer.config.get("corpus_ids"), most=MAX_CORPORA)
    corpora = get_session().scalars(scoped(Corpus).where(Corpus.id.in_(corpus_ids))).all() if corpus_ids else []
    engine_tokenizer = load(tokenizer_id).tokenizer
    stats = tokenizer.stats or {}
    options = tokenizer.config.get("options")
    imported = tokenizer.config.get("import")
    return render("tokenizers/show.html", tokenizer=tokenizer, job=job, corpora=corpora,
                  figures=summary.figures(engine_tokenizer, stats),
                  merges=summary.first_merges(engine_tokenizer, stats, SHOWN_MERGES),
                  piece_types=summary.piece_types(engine_tokenizer, originals(tokenizer.config).get("spm_model")),
                  options=shown_options(tokenizer.algorithm, options) if isinstance(options, dict) else {},
                  imported=imported if isinstance(imported, dict) else {},
                  **extend_views.show_context(tokenizer, engine_tokenizer))


@bp.get("/tokenizers/<int:tokenizer_id>/delete")
def confirm_delete(tokenizer_id: int) -> Response:
    """Ask before deleting a tokenizer."""
    tokenizer = owned_or_404(Tokenizer, tokenizer_id)
    return render("auth/confirm.html", what=f"the tokenizer {quoted(tokenizer.name)}",
                  detail="Its share links and shared texts stop working.",
                  action=url_for("tokenizers.delete", tokenizer_id=tokenizer.id),
                  back=url_for("tokenizers.show", tokenizer_id=tokenizer.id))


@bp.post("/tokenizers/<int:tokenizer_id>/delete")
def delete(tokenizer_id: int) -> Response:
    """Delete a tokenizer (its JSON lives in its row) with its share links."""
    tokenizer = owned_or_404(Tokenizer, tokenizer_id)
    if not ConfirmForm().confirmed_yes():
        return redirect(url_for("tokenizers.confirm_delete", tokenizer_id=tokenizer_id), 303)
    name = tokenizer.name
    get_session().delete(tokenizer)
    get_session().commit()
    flash(f"Deleted the tokenizer {quoted(name)}.")
    return redirect(url_for("tokenizers.index"), 303)
