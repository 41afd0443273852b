"""The tokenizers blueprint: the training form, the job pages and the tokenizer pages.

A valid training form becomes a queued job (``queue.enqueue``) and the browser is sent to the
job page, whose progress block polls itself through htmx until the job ends. The playground
(encode, compare, inspector, downloads) belongs to ``playground/views.py``, ``playground/compare_views.py`` and
``transfer/views.py``, not here.
Every row is fetched through ``auth.owned_or_404``/``auth.scoped``: other teams' jobs,
corpora and tokenizers are 404s. Deleting a tokenizer asks for confirmation first.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from flask import Blueprint, abort, current_app, flash, redirect, request, url_for
from sqlalchemy import select
from sqlalchemy.orm import defer
from werkzeug.wrappers import Response

from webapp.access.auth import current_team, owned_or_404, readable_or_404, scoped
from webapp.jobs import eta, queue
from webapp.store.db import get_session
from webapp.store.models import Corpus, Job, Tokenizer
from webapp.tokenizers import quota, summary
from webapp.tokenizers.loaded import load
from webapp.tokenizers.originals import originals
from webapp.tokenizers.presets import INSTALL_COMMAND, preset_rows
from webapp.training import extend_views
from webapp.training import form as training_form
from webapp.training.form import MAX_CORPORA, TrainForm
from webapp.web.filters import quoted
from webapp.web.forms import MAX_NAME, ConfirmForm
from webapp.web.htmx import is_htmx, render
from webapp.web.lists import LIST_ROWS
from webapp.web.numbers import parse_id, parse_ids

bp = Blueprint("tokenizers", __name__)
SHOWN_MERGES = 50


def _corpora() -> list[Corpus]:
    return list(get_session().scalars(scoped(Corpus).order_by(Corpus.name, Corpus.id).limit(MAX_CORPORA)))


def _train_page(algorithm: str, *, values: Mapping[str, str] | None = None, name: str = "",
                selected: set[int] | None = None, errors: dict[str, str] | None = None,
                status: int = 200) -> Response:
    """The training form for ``algorithm``, its options showing ``values`` (None: the defaults)."""
    algorithms = training_form.available_algorithms()
    if algorithm not in algorithms:
        algorithm = algorithms[0] if algorithms else ""
    fields = training_form.fields_for(algorithm, values, errors) if algorithm else []
    if selected is None:
        selected = set(parse_ids([request.args.get("corpus", "")], most=1))
    return render(
        "tokenizers/train.html", "options", algorithm=algorithm, algorithms=algorithms,
        fields=fields, corpora=_corpora(), selected=selected, errors=errors or {}, name=name, status=status,
    )


@bp.get("/train")
def train_form() -> Response:
    """The training form; htmx requests (changing the algorithm) get only the options.

    ``?again=JOB`` fills it with that job's corpora, name and options ("train again"); nothing
    starts until the form is submitted.
    """
    if "again" in request.args:
        job = _job_or_404(parse_id(request.args["again"]) or 0)
        return _train_page(job.algorithm, values=training_form.form_from_options(job.algorithm, job.options or {}),
                           name=job.name, selected=set(parse_ids(job.corpus_ids, most=MAX_CORPORA)))
    return _train_page(request.args.get("algorithm", "bpe"))


@bp.post("/train")
def train() -> Response:
    """Validate the form and queue a training job."""
    form = TrainForm()
    algorithm = form.algorithm.data
    valid = form.validate()
    errors = form.first_errors()

    def page(errors: dict[str, str], status: int) -> Response:
        return _train_page(algorithm, values=request.form, name=form.name.data, errors=errors, status=status,
                           selected=set(form.corpus_ids.data))

    if "algorithm" in errors:  # without an algorithm there are no options to judge
        return page({"": errors["algorithm"]}, 422)
    options, option_errors = training_form.parse(algorithm, request.form)
    errors.update(option_errors)
    if not valid or options is None:
        return page(errors, 422)
    corpora = form.corpora
    name = form.name.data
    if not name:
        vocab = options.get("vocab_size")
        name = f"{algorithm}{f'-{vocab}' if vocab else ''} on {', '.join(c.name for c in corpora)}"
    team_id = corpora[0].team_id  # all chosen corpora are the user's; train in the first's team
    if any(c.team_id != team_id for c in corpora):
        return page({"corpus_ids": "The chosen corpora belong to different teams; train on one team's corpora."}, 422)
    full = quota.full(get_session(), team_id, "no tokenizer can be trained")
    if full is not None:
        return page({"": full}, 413)
    try:
        job = queue.enqueue(get_session(), team_id=team_id, name=name[:MAX_NAME], algorithm=algorithm, options=options,
                           corpus_ids=[c.id for c in corpora], max_queued=current_app.config["MAX_QUEUED_JOBS"])
    except queue.QueueFull as full:
        return page({"": str(full)}, 429)
    return redirect(url_for("tokenizers.job", job_id=job.id), 303)


def _job_or_404(job_id: int) -> Job:
    job = owned_or_404(Job, job_id)
    if job.kind != "train":  # analyses show on their corpus's page, not as jobs
        abort(404)
    return job


def _job_context(job: Job) -> dict[str, Any]:
    session = get_session()
    tokenizer = session.scalars(select(Tokenizer).where(Tokenizer.job_id == job.id)).first()
    corpora = session.scalars(scoped(Corpus).where(Corpus.id.in_(job.corpus_ids))).all()
    return {"job": job, "tokenizer": tokenizer, "corpora": corpora, **_job_figures()}


def _job_figures() -> dict[str, Any]:
    """What the job page and the jobs list both use, so that they say the same for one job."""
    return {"run_seconds": queue.run_seconds, "progress_of": _progress_of,
            "shown_options": training_form.shown_options}


def _progress_of(job: Job) -> eta.Shown:
    """A running job's progress row as a label with units and a bar."""
    return eta.shown(job.progress_stage, job.progress_current, job.progress_total, job.options or {})


@bp.get("/jobs")
def job_list() -> Response:
    """All training jobs, newest first; while some run, htmx polls the table (only it is sent)."""
    rows = get_session().scalars(scoped(Job).where(Job.kind == "train").order_by(Job.id.desc()).limit(LIST_ROWS)).all()
    return render("tokenizers/jobs.html", "jobs_table", jobs=rows, **_job_figures())


@bp.get("/jobs/<int:job_id>")
def job(job_id: int) -> Response:
    """A job's page; htmx polls get only the progress block, which stops polling once done."""
    return render("tokenizers/job.html", "job", **_job_context(_job_or_404(job_id)))


@bp.post("/jobs/<int:job_id>/cancel")
def cancel(job_id: int) -> Response:
    """Cancel a queued job now, or ask the worker to stop a running one."""
    job = _job_or_404(job_id)
    queue.request_cancel(get_session(), job.id)
    get_session().refresh(job)
    if is_htmx():
        return render("tokenizers/job.html", "job", **_job_context(job))
    return redirect(url_for("tokenizers.job", job_id=job.id), 303)


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
                  options=training_form.shown_options(tokenizer.algorithm, options) if isinstance(options, dict) else {},
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
