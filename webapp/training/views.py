"""The training blueprint: the training form (``/train``) and the training jobs' pages (``/jobs``).

A valid training form becomes a queued job (``queue.enqueue``) and the browser is sent to the
job page, whose progress block polls itself through htmx until the job ends. The job pages list
the "train" jobs only, trainings and extensions (``tokenizers/extend_views.py`` queues those): an
analysis shows on its corpus's page and a leaderboard's job on its board. They are here, not in
``jobs/``, because that package is the queue under every area, which knows no page, no team and
no training option. Every row is fetched through ``auth.owned_or_404``/``auth.scoped``: other
teams' jobs and corpora are 404s.

Left out: the tokenizer pages (``tokenizers/views.py``), and the form's fields and checks (``form.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from flask import Blueprint, abort, current_app, redirect, request, url_for
from sqlalchemy import select
from werkzeug.wrappers import Response

from webapp.access.auth import owned_or_404, scoped
from webapp.corpora.forms import MAX_CORPORA
from webapp.jobs import queue
from webapp.store.db import get_session
from webapp.store.models import Corpus, Job, Tokenizer
from webapp.tokenizers import quota
from webapp.tokenizers.levels import shown_options
from webapp.training import form as training_form
from webapp.training import stages
from webapp.training.form import TrainForm
from webapp.web.forms import MAX_NAME
from webapp.web.htmx import is_htmx, render
from webapp.web.lists import LIST_ROWS
from webapp.web.numbers import parse_id, parse_ids

bp = Blueprint("training", __name__)


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
        "training/train.html", "options", algorithm=algorithm, algorithms=algorithms,
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
    return redirect(url_for("training.job", job_id=job.id), 303)


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
            "shown_options": shown_options}


def _progress_of(job: Job) -> stages.Shown:
    """A running job's progress row as a label with units and a bar."""
    return stages.shown(job.progress_stage, job.progress_current, job.progress_total, job.options or {})


@bp.get("/jobs")
def job_list() -> Response:
    """All training jobs, newest first; while some run, htmx polls the table (only it is sent)."""
    rows = get_session().scalars(scoped(Job).where(Job.kind == "train").order_by(Job.id.desc()).limit(LIST_ROWS)).all()
    return render("training/jobs.html", "jobs_table", jobs=rows, **_job_figures())


@bp.get("/jobs/<int:job_id>")
def job(job_id: int) -> Response:
    """A job's page; htmx polls get only the progress block, which stops polling once done."""
    return render("training/job.html", "job", **_job_context(_job_or_404(job_id)))


@bp.post("/jobs/<int:job_id>/cancel")
def cancel(job_id: int) -> Response:
    """Cancel a queued job now, or ask the worker to stop a running one."""
    job = _job_or_404(job_id)
    queue.request_cancel(get_session(), job.id)
    get_session().refresh(job)
    if is_htmx():
        return render("training/job.html", "job", **_job_context(job))
    return redirect(url_for("training.job", job_id=job.id), 303)
