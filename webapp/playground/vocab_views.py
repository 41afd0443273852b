"""The vocabulary blueprint: the vocabulary browser and the training-insights page.

The browser lists tokens (searchable, paged; htmx swaps only the table), the longest tokens and
a histogram of token lengths. Insights show compression (bytes per token) against vocabulary
size over training (``stats["curve"]``), the length histogram, and an evaluation on a held-out
split of a corpus the user chooses. Charts are server-rendered SVG (``charts.py``).
Left out: the row data (``vocab_browser.py``) and reading the split (``corpora/heldout.py``).
"""

from __future__ import annotations

from typing import Any

from flask import Blueprint, request
from sqlalchemy.orm import defer
from werkzeug.wrappers import Response

from webapp.access.auth import owned_or_404, scoped
from webapp.corpora import heldout
from webapp.corpora.forms import MAX_CORPORA
from webapp.corpora.views import store
from webapp.playground import charts, vocab_browser
from webapp.playground.forms import HeldOutForm
from webapp.store.db import get_session
from webapp.store.models import Corpus, Job
from webapp.store.models import Tokenizer as TokenizerRow
from webapp.tokenizers.loaded import Loaded, load
from webapp.web.htmx import render
from webapp.web.lists import PICKER_ROWS
from webapp.web.numbers import parse_ids, parse_int

bp = Blueprint("vocab", __name__)


def _page_number(raw: str | None) -> int:
    """A 1-based page number; anything that is not one is page 1, huge ones clamp to the last page."""
    value = parse_int(raw)
    return min(value, 10**9) if value else 1


@bp.get("/tokenizers/<int:tokenizer_id>/vocab")
def browse(tokenizer_id: int) -> Response:
    """The vocabulary browser; htmx requests (search, sort, filter, paging) get only the table.

    The whole query (q, sort, kind, script, page) is in the URL, so a listing can be shared and
    survives a reload; values the tokenizer does not offer fall back to the defaults.
    """
    loaded = load(tokenizer_id)
    tokenizer = loaded.tokenizer
    sorts, scripts = vocab_browser.sorts_for(tokenizer), vocab_browser.scripts_in(tokenizer)
    kinds = {name: vocab_browser.KINDS[name] for name in vocab_browser.kinds_for(tokenizer)}
    args = request.args
    sort = args.get("sort", "id") if args.get("sort", "id") in sorts else "id"
    kind = args.get("kind", "") if args.get("kind", "") in kinds else ""
    script = args.get("script", "") if any(name == args.get("script") for name, _ in scripts) else ""
    query = args.get("q", "")[:vocab_browser.MAX_QUERY]  # not stripped: " the" asks for a space before "the"
    page = vocab_browser.search(tokenizer, query, _page_number(args.get("page")), sort=sort, kind=kind, script=script)
    chosen = {key: value for key, value in (("q", query), ("sort", sort if sort != "id" else ""),
                                            ("kind", kind), ("script", script)) if value}
    return render("playground/vocab.html", "table", loaded=loaded, q=query, page=page, chosen=chosen,
                  shown_q=vocab_browser.shown_query(query), sort=sort, kind=kind, script=script, sorts=sorts,
                  kinds=kinds, sort_names=vocab_browser.SORTS, scripts=scripts,
                  longest=vocab_browser.longest(tokenizer),
                  histogram=_histogram(vocab_browser.length_histogram(tokenizer)))


def _histogram(lengths: list[tuple[int | str, int]]) -> Any:
    return charts.bar_chart(lengths, label_x="token length (bytes)", label_y="tokens",
                            title="How many tokens have each length")


def _insights_context(loaded: Loaded) -> dict[str, Any]:
    curve = loaded.stats.get("curve")
    points = charts.numeric_points(curve if isinstance(curve, list) else [])
    corpora = list(get_session().scalars(scoped(Corpus).options(defer(Corpus.stats))
                                         .order_by(Corpus.name, Corpus.id).limit(PICKER_ROWS)))
    trained_on = set(parse_ids(loaded.config.get("corpus_ids"), most=MAX_CORPORA))
    if loaded.row.job_id:
        job = get_session().scalar(scoped(Job).where(Job.id == loaded.row.job_id))
        trained_on.update(job.corpus_ids if job else [])
    return {
        "loaded": loaded,
        "curve": charts.line_chart(points, label_x="vocabulary size", label_y="bytes per token",
                                   title="Compression over the course of training") if points else None,
        "histogram": _histogram(vocab_browser.length_histogram(loaded.tokenizer)),
        "corpora": corpora, "trained_on": trained_on,
        "evaluation": None, "eval_error": None, "split": None, "form": HeldOutForm(formdata=None),
    }


@bp.get("/tokenizers/<int:tokenizer_id>/insights")
def insights(tokenizer_id: int) -> Response:
    """Training insights: the compression curve, token lengths and a held-out evaluation form."""
    owned_or_404(TokenizerRow, tokenizer_id)  # insights show training data: team members only
    return render("playground/insights.html", **_insights_context(load(tokenizer_id)))


@bp.post("/tokenizers/<int:tokenizer_id>/insights/evaluate")
def evaluate(tokenizer_id: int) -> Response:
    """Evaluate the tokenizer on the chosen held-out split; htmx gets only the result block."""
    owned_or_404(TokenizerRow, tokenizer_id)
    context = _insights_context(load(tokenizer_id))
    form = HeldOutForm()
    context["form"] = form
    valid = form.validate()
    corpus = (get_session().scalar(scoped(Corpus).where(Corpus.id == form.corpus_id.data))
              if form.corpus_id.data is not None else None)
    if corpus is None:
        context["eval_error"] = form.corpus_id.message
    elif not valid:
        context["eval_error"] = next(iter(form.first_errors().values()))
    else:
        try:
            split = heldout.read_split(store().path(corpus.sha256), form.percent.data / 100, form.part.data)
            context["split"] = split
            context["evaluation"] = heldout.report(heldout.evaluate(context["loaded"].tokenizer, split))
            context["eval_corpus"] = corpus
        except (OSError, ValueError) as exc:
            context["eval_error"] = f"The split could not be evaluated: {exc}"
    return render("playground/insights.html", "evaluation", status=422 if context["eval_error"] else 200, **context)
