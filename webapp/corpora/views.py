"""The corpora blueprint: upload, list, show, rename and delete text corpora.

Uploads are streamed into the content-addressed store by ``storage.py``; this module turns
the outcome into database rows and pages. Each new corpus gets an "analyse" job for its full
statistics; its page polls (htmx) until they arrive, or says why the analysis failed and offers
to run it again (``analysis.py``). An upload whose content is already stored is
reused instead of stored twice (within the same team: another team's corpora are never
revealed). Every row is fetched through ``auth.owned_or_404``/``auth.scoped``; deleting asks for
confirmation on a page of its own, and removes the stored file when no corpus uses it any more.
"""

from __future__ import annotations

from flask import Blueprint, current_app, flash, redirect, request, url_for
from flask_wtf.csrf import CSRFError
from sqlalchemy import func, select
from werkzeug.exceptions import ClientDisconnected, HTTPException
from werkzeug.wrappers import Response

from webapp.access.auth import current_team, owned_or_404, scoped
from webapp.corpora import budgets
from webapp.corpora.analysis import analysis_states
from webapp.corpora.forms import RenameForm, UploadForm
from webapp.corpora.job_kinds import enqueue_analysis
from webapp.corpora.storage import CorpusStore, UploadError
from webapp.jobs import queue
from webapp.store.db import get_session
from webapp.store.models import Corpus, Job
from webapp.web import requests
from webapp.web.errors import CSRF_MESSAGE
from webapp.web.filters import quoted
from webapp.web.forms import ConfirmForm, name_from_filename
from webapp.web.htmx import is_htmx, render
from webapp.web.lists import LIST_ROWS
from webapp.web.shown import human_size

bp = Blueprint("corpora", __name__, url_prefix="/corpora")
# Before CSRF parses (and spools) an upload's body: the quota and the upload budgets.
bp.record_once(lambda state: requests.add_gate(state.app, "corpora.upload", budgets.admit))
INTERRUPTED = "The upload was interrupted before it finished. Nothing was stored; please try again."


def store() -> CorpusStore:
    """The app's corpus store."""
    return CorpusStore(current_app.config["CORPUS_DIR"])


def clean_filename(raw: str) -> str:
    """The corpus name for a browser-supplied file name: the name rule for file names
    (``forms.name_from_filename``: the last path component, no control, format or bidi
    characters, at most ``MAX_NAME`` characters). The name is only ever displayed: files are
    stored under their hash."""
    return name_from_filename(raw, "upload")


def _all_corpora() -> list[Corpus]:
    """The newest ``LIST_ROWS`` corpora, for the list page."""
    return list(get_session().scalars(scoped(Corpus).order_by(Corpus.created_at.desc(), Corpus.id.desc())
                                      .limit(LIST_ROWS)))


def _get_or_404(corpus_id: int) -> Corpus:
    return owned_or_404(Corpus, corpus_id)


@bp.get("/")
def index() -> Response:
    """List corpora, with the upload form."""
    return _index_page([])


def _index_page(errors: list[str], form: UploadForm | None = None, *, offer_replace: bool = False,
                status: int = 200) -> Response:
    corpora = _all_corpora()
    quota = budgets.team_quota(get_session(), current_team().id)
    return render("corpora/index.html", corpora=corpora, errors=errors, form=form or UploadForm(formdata=None),
                  quota=quota, offer_replace=offer_replace, status=status, capped=len(corpora) == LIST_ROWS,
                  states=analysis_states(get_session(), corpora))


@bp.post("/")
def upload() -> Response:
    """Store one or more uploaded files as corpora."""
    try:
        form = UploadForm()  # reads the whole body: the files stream into the store's tmp folder
        # A body shorter than its Content-Length means the client went away mid-upload.
        cut_short = bool(getattr(request, "body_cut_short", False))
    except ClientDisconnected:
        cut_short = True
    if cut_short and requests.body_cut_off():
        return _index_page([_too_slow()], status=408)
    if cut_short:
        return _index_page([INTERRUPTED], status=400)
    valid = form.validate()
    errors: list[str] = [error for field_errors in form.errors.values() for error in field_errors]
    files = form.chosen_files() if valid else []
    refused = budgets.count_more_files(len(files))  # the first was counted before the body came
    if refused is not None:
        return refused
    text_field, replace = form.json_field(), form.replace_errors.data
    offer_replace = full = False
    stored: list[Corpus] = []
    session = get_session()
    team_id = current_team().id
    for upload_file in files:
        filename = clean_filename(upload_file.filename or "")
        try:
            result = store().ingest(
                upload_file.stream, filename, max_bytes=int(current_app.config["MAX_UPLOAD_BYTES"]),
                text_field=text_field, replace_errors=replace, quota=budgets.team_quota(session, team_id),
            )
            existing = session.scalars(select(Corpus).where(Corpus.sha256 == result.sha256,
                                                            Corpus.team_id == team_id)).first()
            quota = None if existing else budgets.over_quota(session, team_id, result.size_bytes)
            if quota is not None:  # uploads that finished meanwhile took the room
                _forget(result.sha256)
                raise quota.refusal(filename)
        except UploadError as exc:
            errors.append(str(exc))
            offer_replace = offer_replace or exc.kind == "utf8"
            full = full or exc.kind == "quota"
            continue
        if existing is not None:
            flash(f"{quoted(filename)} has the same content as the corpus {quoted(existing.name)}, "
                  "so that corpus is reused.")
            stored.append(existing)
            continue
        corpus = Corpus(
            team_id=team_id, name=filename, sha256=result.sha256, format=result.format,
            original_filename=filename, upload_bytes=result.upload_bytes,
            size_bytes=result.size_bytes, stats=result.stats,
        )
        session.add(corpus)
        session.flush()
        enqueue_analysis(session, corpus)  # commits the corpus and its job together
        stored.append(corpus)
    if errors:  # 413 when the team's quota refused a file
        return _index_page(errors, form, offer_replace=offer_replace, status=413 if full else 422)
    if len(stored) == 1:
        return redirect(url_for("corpora.show", corpus_id=stored[0].id), 303)
    flash(f"Stored {len(stored)} corpora.")
    return redirect(url_for("corpora.index"), 303)


@bp.errorhandler(CSRFError)
@bp.errorhandler(ClientDisconnected)
def body_ended(error: HTTPException) -> Response:
    """An upload the CSRF check refused, usually because its body ended early (the form it parsed
    lost its token): the server cut it off, or the client went away; else the token expired."""
    if requests.body_cut_off():
        return _index_page([_too_slow()], status=408)
    if isinstance(error, ClientDisconnected) or getattr(request, "body_cut_short", False):
        return _index_page([INTERRUPTED], status=400)
    return _index_page([CSRF_MESSAGE], status=400)


def _too_slow() -> str:
    """Why the server cut an upload off: the rate floor or the time limit, and their settings."""
    config = current_app.config
    return (f"The upload arrived too slowly and was cut off: after the first {config['UPLOAD_RATE_WINDOW']:g} "
            f"seconds it must bring {human_size(int(config['UPLOAD_MIN_RATE']))} a second "
            "(TOKENFORGE_UPLOAD_MIN_RATE), and the whole file must arrive within "
            f"{config['UPLOAD_MAX_SECONDS']:g} seconds (TOKENFORGE_UPLOAD_MAX_SECONDS). "
            "Nothing was stored; try again over a faster connection.")


def _forget(sha: str) -> None:
    """Remove the stored file with this hash unless a corpus (of any team) still uses it."""
    if not get_session().scalar(select(func.count()).select_from(Corpus).where(Corpus.sha256 == sha)):
        store().delete(sha)


def _show_page(corpus: Corpus, *, block: str, rename_error: str | None = None,
               status: int = 200) -> Response:
    analysis = analysis_states(get_session(), [corpus])[corpus.id]
    return render("corpora/show.html", block, corpus=corpus, analysis=analysis,
                  rename_error=rename_error, status=status)


@bp.get("/<int:corpus_id>")
def show(corpus_id: int) -> Response:
    """A corpus's statistics and preview; htmx polls get the statistics block until analysed."""
    return _show_page(_get_or_404(corpus_id), block="stats")


@bp.post("/<int:corpus_id>/analyse")
def analyse(corpus_id: int) -> Response:
    """Queue the corpus's analysis again (after it failed); the page then polls for it."""
    corpus = _get_or_404(corpus_id)
    if analysis_states(get_session(), [corpus])[corpus.id].status == "failed":  # not twice
        enqueue_analysis(get_session(), corpus)
    if is_htmx():
        return _show_page(corpus, block="stats")
    return redirect(url_for("corpora.show", corpus_id=corpus.id), 303)


@bp.post("/<int:corpus_id>/rename")
def rename(corpus_id: int) -> Response:
    """Rename a corpus (the htmx form swaps only the title block)."""
    corpus = _get_or_404(corpus_id)
    form = RenameForm()
    error = None
    if not form.validate():
        error = form.name.errors[0]
    else:
        corpus.name = form.name.data
        get_session().commit()
    return _show_page(corpus, block="title", rename_error=error, status=422 if error else 200)


@bp.get("/<int:corpus_id>/delete")
def confirm_delete(corpus_id: int) -> Response:
    """Ask before deleting a corpus."""
    corpus = _get_or_404(corpus_id)
    return render("auth/confirm.html", what=f"the corpus {quoted(corpus.name)}",
                  detail="Its stored file is removed too, unless another corpus has the same content.",
                  action=url_for("corpora.delete", corpus_id=corpus.id),
                  back=url_for("corpora.show", corpus_id=corpus.id))


@bp.post("/<int:corpus_id>/delete")
def delete(corpus_id: int) -> Response:
    """Delete a corpus and, if no other corpus shares its content, its stored file."""
    session = get_session()
    corpus = _get_or_404(corpus_id)
    if not ConfirmForm().confirmed_yes():
        return redirect(url_for("corpora.confirm_delete", corpus_id=corpus_id), 303)
    active = session.scalars(select(Job).where(Job.status.in_(("queued", "running")), Job.kind == "train",
                                               Job.team_id == corpus.team_id)).all()
    if any(corpus_id in job.corpus_ids for job in active):
        flash(f"{quoted(corpus.name)} is used by a job that has not finished; cancel it first.")
        return redirect(url_for("corpora.show", corpus_id=corpus_id), 303)
    if corpus.analysis_job_id is not None:  # an unfinished analysis of it is pointless now
        queue.request_cancel(session, corpus.analysis_job_id)
    sha, name = corpus.sha256, corpus.name
    session.delete(corpus)
    session.commit()
    _forget(sha)
    flash(f"Deleted the corpus {quoted(name)}.")
    target = url_for("corpora.index")
    if is_htmx():
        response = Response("", 200)
        response.headers["HX-Redirect"] = target
        return response
    return redirect(target, 303)
