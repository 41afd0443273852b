"""The leaderboard pages: choose tokenizers and held-out corpora, watch the board fill in, sort,
export as CSV, share read-only.

One view per action; the rows, sorting, chart data and CSV are ``leaderboard.py``'s. Every row
is the team's (``auth.owned_or_404``: another team's board is a 404); the tokenizers offered are
the team's own and the presets, the corpora the team's. The board page polls itself through
htmx (the ``board`` block) until its job has finished; a share link (``sharing/views.py``) serves the
same page read-only at ``/s/<token>``.

Left out: evaluating (``child.py``) and the link mechanism itself (``sharing/views.py``).
"""

from __future__ import annotations

from typing import Any

from flask import Blueprint, abort, current_app, redirect, request, url_for
from sqlalchemy import select
from sqlalchemy.orm import defer
from werkzeug.wrappers import Response

from webapp.access import auth
from webapp.access.forms import ShareLinkForm
from webapp.access.share_links import create_link, revoke_link
from webapp.corpora.storage import CorpusStore
from webapp.jobs import queue
from webapp.leaderboards import leaderboard
from webapp.leaderboards.forms import BoardForm, max_kib
from webapp.leaderboards.job_kinds import enqueue_leaderboard
from webapp.playground import charts
from webapp.store.db import get_session
from webapp.store.models import Corpus, Job, Leaderboard, ShareLink, Tokenizer, utcnow
from webapp.web.htmx import is_htmx, render
from webapp.web.lists import LIST_ROWS, PICKER_ROWS

bp = Blueprint("leaderboard", __name__, url_prefix="/leaderboards")


def _choices() -> tuple[list[Tokenizer], list[Corpus]]:
    """What a new board may use: the team's tokenizers and the presets, and the team's corpora."""
    session = get_session()
    tokenizers = session.scalars(auth.scoped(Tokenizer, presets=True)
                                 .options(defer(Tokenizer.tokenizer_json), defer(Tokenizer.stats))
                                 .order_by(Tokenizer.team_id.is_not(None), Tokenizer.id.desc())
                                 .limit(PICKER_ROWS)).all()
    corpora = session.scalars(auth.scoped(Corpus).order_by(Corpus.id.desc()).limit(PICKER_ROWS)).all()
    return list(tokenizers), list(corpora)


def _index_page(form: BoardForm | None = None, *, error: str | None = None, status: int = 200) -> Response:
    boards = get_session().scalars(auth.scoped(Leaderboard).order_by(Leaderboard.id.desc()).limit(LIST_ROWS)).all()
    job_ids = [board.job_id for board in boards if board.job_id is not None]
    statuses = ({job_id: status for job_id, status in get_session().execute(
        select(Job.id, Job.status).where(Job.id.in_(job_ids)))} if job_ids else {})
    tokenizers, corpora = _choices()
    if form is None:
        form = BoardForm(tokenizers=tokenizers, corpora=corpora)
    return render("leaderboard/index.html", status=status, boards=boards, statuses=statuses, tokenizers=tokenizers,
                  corpora=corpora, error=error or next(iter(form.first_errors().values()), None), form=form,
                  max_kib=max_kib(), max_tokenizers=leaderboard.MAX_TOKENIZERS, max_corpora=leaderboard.MAX_CORPORA)


@bp.get("", strict_slashes=False)
def index() -> Response:
    """The team's leaderboards, newest first, and the form for a new one."""
    return _index_page()


@bp.post("", strict_slashes=False)
def create() -> Response:
    """Store a new leaderboard and queue the job that fills it in."""
    tokenizers, corpora = _choices()
    form = BoardForm(tokenizers=tokenizers, corpora=corpora)
    if not form.validate():
        return _index_page(form, status=422)
    name = " ".join(form.name.data.split()) or f"Leaderboard of {utcnow():%Y-%m-%d %H:%M}"
    kib = form.kib.data or max_kib()
    board = Leaderboard(team_id=auth.current_team().id, name=name,
                        tokenizers=[{"id": row.id, "name": row.name} for row in form.chosen("tokenizer_ids")],
                        corpora=[{"id": row.id, "name": row.name} for row in form.chosen("corpus_ids")],
                        max_bytes=kib * 1024, results={})
    options = {"max_bytes": board.max_bytes,
               "pair_seconds": float(current_app.config["LEADERBOARD_PAIR_SECONDS"])}
    try:
        enqueue_leaderboard(get_session(), board, options=options, max_queued=current_app.config["MAX_QUEUED_JOBS"])
    except queue.QueueFull as full:
        get_session().rollback()
        return _index_page(form, error=str(full), status=429)
    return redirect(url_for("leaderboard.show", board_id=board.id), 303)


def _board_context(board: Leaderboard, *, shared_token: str | None = None) -> dict[str, Any]:
    """What the board page shows: progress, one sorted table and one chart per corpus."""
    job = get_session().get(Job, board.job_id) if board.job_id is not None else None
    sort, descending = leaderboard.parse_sort(request.args.get("sort"), request.args.get("order"))
    lossy_last = leaderboard.parse_lossy(request.args.get("lossy"))
    tables = []
    for entry in board.corpora:
        corpus_id = int(entry["id"])
        rows = leaderboard.rows(board, corpus_id, sort=sort, descending=descending, lossy_last=lossy_last)
        sample = next((row.figures for row in rows if row.figures), None)
        bars = leaderboard.chart_bars(rows)  # the table's order, so bar and row ranks agree
        chart = charts.hbar_chart(bars, label_value="Bytes per token", flag="lossy",
                                  title=f"Bytes per token on {entry['name']}") if bars else None
        tables.append({"id": corpus_id, "name": entry["name"], "rows": rows, "chart": chart, "sample": sample})
    links = [] if shared_token else get_session().scalars(
        select(ShareLink).where(ShareLink.leaderboard_id == board.id).order_by(ShareLink.id.desc())).all()
    here = (url_for("sharing.open_link", token=shared_token) if shared_token
            else url_for("leaderboard.show", board_id=board.id))
    return {"board": board, "job": job, "tables": tables, "sort": sort, "descending": descending,
            "lossy_last": lossy_last, "lossy_query": "" if lossy_last else "&lossy=mixed",
            "columns": leaderboard.COLUMNS, "done": leaderboard.pairs_done(board),
            "total": leaderboard.pairs_total(board), "finished": job is None or job.finished,
            "shared": shared_token is not None, "here": here, "links": links, "now": utcnow(), "share_error": None}


def _board_page(board: Leaderboard, *, status: int = 200, **extra: Any) -> Response:
    response = render("leaderboard/show.html", "board", status=status, **{**_board_context(board), **extra})
    response.headers["Cache-Control"] = "no-store"  # it lists the board's share links, which are secrets
    return response


@bp.get("/<int:board_id>")
def show(board_id: int) -> Response:
    """A leaderboard: its progress while it runs, then a sortable table and a chart per corpus."""
    return _board_page(auth.owned_or_404(Leaderboard, board_id))


def _csv_response(board: Leaderboard) -> Response:
    body = leaderboard.to_csv(board, [(int(entry["id"]), str(entry["name"])) for entry in board.corpora])
    response = current_app.response_class(body, mimetype="text/csv")
    response.headers["Content-Disposition"] = f'attachment; filename="leaderboard-{board.id}.csv"'
    return response


@bp.get("/<int:board_id>/csv")
def export_csv(board_id: int) -> Response:
    """Every pair of the leaderboard as CSV."""
    return _csv_response(auth.owned_or_404(Leaderboard, board_id))


@bp.get("/<int:board_id>/corpora/<int:corpus_id>/text")
def slice_text(board_id: int, corpus_id: int) -> Response:
    """The exact text the board evaluated on a corpus, to check a figure with ``tokenforge eval``."""
    board = auth.owned_or_404(Leaderboard, board_id)
    if corpus_id not in {int(entry["id"]) for entry in board.corpora}:
        abort(404)
    corpus = auth.owned_or_404(Corpus, corpus_id)
    path = CorpusStore(current_app.config["CORPUS_DIR"]).path(corpus.sha256)
    if path is None or not path.is_file():
        abort(404)
    try:
        text = leaderboard.read_slice(str(path), board.max_bytes)
    except leaderboard.SliceError as exc:
        abort(422, description=str(exc))
    response = current_app.response_class(text.encode("utf-8"), mimetype="text/plain")
    response.headers["Content-Disposition"] = f'attachment; filename="leaderboard-{board.id}-corpus-{corpus_id}.txt"'
    return response


@bp.post("/<int:board_id>/cancel")
def cancel(board_id: int) -> Response:
    """Stop the board's job; the pairs evaluated so far stay."""
    board = auth.owned_or_404(Leaderboard, board_id)
    if board.job_id is not None:
        queue.request_cancel(get_session(), board.job_id)
    if is_htmx():
        return _board_page(board)
    return redirect(url_for("leaderboard.show", board_id=board.id), 303)


@bp.post("/<int:board_id>/delete")
def delete(board_id: int) -> Response:
    """Delete a leaderboard and its share links; a job still filling it in is cancelled first."""
    board = auth.owned_or_404(Leaderboard, board_id)
    if board.job_id is not None:
        queue.request_cancel(get_session(), board.job_id)
    get_session().delete(board)  # its share links go with it (ON DELETE CASCADE)
    get_session().commit()
    return redirect(url_for("leaderboard.index"), 303)


@bp.post("/<int:board_id>/share")
def share(board_id: int) -> Response:
    """Create a read-only link to the board, optionally expiring after a number of days."""
    board = auth.owned_or_404(Leaderboard, board_id)
    form = ShareLinkForm()
    if not form.validate():
        return _board_page(board, status=422, share_error=form.days.errors[0])
    create_link(form.days.data, leaderboard_id=board.id)
    return redirect(url_for("leaderboard.show", board_id=board.id) + "#share", 303)


@bp.post("/<int:board_id>/share/<int:link_id>/revoke")
def revoke(board_id: int, link_id: int) -> Response:
    """Revoke a link to the board: it stops opening at once."""
    board = auth.owned_or_404(Leaderboard, board_id)
    link = get_session().scalar(select(ShareLink).where(ShareLink.id == link_id, ShareLink.leaderboard_id == board.id))
    if link is None:
        abort(404)
    revoke_link(link)
    return redirect(url_for("leaderboard.show", board_id=board.id) + "#share", 303)


def shared_board(link: ShareLink) -> Response:
    """A share link's leaderboard, read-only (``?format=csv``: its CSV); ``sharing.open_link`` calls it."""
    board = get_session().get(Leaderboard, link.leaderboard_id)
    if board is None:
        abort(404)
    if request.args.get("format") == "csv":
        return _csv_response(board)
    return render("leaderboard/show.html", "board", **_board_context(board, shared_token=link.token))
