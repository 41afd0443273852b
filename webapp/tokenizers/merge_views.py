"""Merging two vocabularies from the browser, the ``merge_tokenizers.py`` way: costs first, then save.

``GET /tokenizers/merge?a=ID&b=ID`` shows the base (A) and donor (B) pickers and two optional
texts: one in the base's language (the reference) and one in the donor's (held out). ``POST``
with ``action=preview`` measures both score policies (``engine/extend/merge.py``): pieces
appended, donor pieces the base has, unreachable pieces, tokens per character and lines changed
on each text. Nothing is stored until ``action=save`` with a chosen policy, which builds that
merge again, stores it in the member's team (its quota applies), keeps the base's chat settings
and, for a sentencepiece base, the merged ``.model`` for its downloads, and opens its page.

Both tokenizers load through ``loaded.load``: one the member may not read is a 404. The engine's
refusals are a 422 with its sentence; the texts are bounded like the diff page's, and a merge
may append at most ``MERGE_MAX_APPENDED`` pieces here (the CLI is bounded by the engine's
vocabulary limit alone), so a request costs a few seconds at most.
"""

from __future__ import annotations

from typing import Any

from flask import Blueprint, current_app, redirect, request, url_for
from werkzeug.wrappers import Response

from engine import ConfigError, TokenforgeError
from engine.extend import POLICIES, build_report, merge_vocabularies
from webapp.access.auth import current_team
from webapp.store.db import get_session
from webapp.store.model_base import MAX_NAME
from webapp.store.models import Tokenizer as TokenizerRow
from webapp.store.models import stored_bytes
from webapp.tokenizers import quota
from webapp.tokenizers.diff_views import DEFAULT_MAX_CHARS, choice, picker
from webapp.tokenizers.loaded import Loaded, load
from webapp.tokenizers.originals import chat_settings, kept_model
from webapp.web.htmx import render

bp = Blueprint("tokenizer_merge", __name__)
MERGE_MAX_APPENDED = 65_536  # pieces one merge may append in the app (Gemma 3's 224k into Llama 2: 5 s)
MERGE = "merge"  # the stored row's config "algorithm"


def _texts(source: Any) -> tuple[dict[str, str], str | None]:
    """The reference and held-out texts, and a sentence when one is longer than the page allows."""
    limit = int(current_app.config.get("PLAYGROUND_MAX_CHARS", DEFAULT_MAX_CHARS))
    texts = {name: source.get(name, "") for name in ("reference", "held_out")}
    for name, text in texts.items():
        if len(text) > limit:
            return texts, f"The {name.replace('_', '-')} text has {len(text):,} characters; measure at most {limit:,}."
    return texts, None


def _merge(a: Loaded, b: Loaded, policy: str) -> Any:
    """The engine's merge, refused past :data:`MERGE_MAX_APPENDED` before any work."""
    try:
        return merge_vocabularies(a.tokenizer, b.tokenizer, policy=policy, most=MERGE_MAX_APPENDED)
    except ConfigError as exc:
        if exc.most == MERGE_MAX_APPENDED:  # the app's bound, not the file's: say where there is none
            raise ConfigError(f"{exc} tokenforge merge on the command line has no such bound.",
                              option="donor") from exc
        raise


def _context(source: Any) -> tuple[dict[str, Any], Loaded | None, Loaded | None]:
    a_id, b_id = choice(source, "a"), choice(source, "b")
    texts, problem = _texts(source)
    policy = source.get("policy", "zero")
    context: dict[str, Any] = {"a_id": a_id, "b_id": b_id, "rows": picker([i for i in (a_id, b_id) if i]),
                               "policies": POLICIES, "policy": policy if policy in POLICIES else "zero",
                               "costs": None, "error": problem, **texts}
    if a_id is None or b_id is None:
        return context, None, None
    a, b = load(a_id), load(b_id)  # 404 for what this member may not read
    context.update(a=a.row, b=b.row)
    return context, a, b


@bp.get("/tokenizers/merge")
def page() -> Response:
    """The merge form: base, donor and the texts to measure on."""
    context, _, _ = _context(request.args)
    return render("tokenizers/merge.html", **context)


@bp.post("/tokenizers/merge")
def merge() -> Response:
    """Preview both policies' costs, or save the chosen policy's merge."""
    context, a, b = _context(request.form)
    if a is None or b is None:
        context["error"] = "Choose a base and a donor."
        return render("tokenizers/merge.html", status=422, **context)
    if context["error"]:
        return render("tokenizers/merge.html", status=422, **context)
    texts = {name: context[name] or None for name in ("reference", "held_out")}
    try:
        if request.form.get("action") == "save":
            return _save(a, b, context, texts)
        context["costs"] = {policy: build_report(_merge(a, b, policy), a.tokenizer, **texts) for policy in POLICIES}
    except TokenforgeError as exc:
        context["error"] = str(exc)
        return render("tokenizers/merge.html", status=422, **context)
    return render("tokenizers/merge.html", **context)


def _save(a: Loaded, b: Loaded, context: dict[str, Any], texts: dict[str, str | None]) -> Response:
    policy = context["policy"]
    merged = _merge(a, b, policy)
    report = {**build_report(merged, a.tokenizer, **texts), "policy": policy}
    tokenizer = merged.tokenizer
    name = f"{a.row.name} + {b.row.name} ({policy})"[:MAX_NAME]
    original = kept_model(tokenizer)
    chat = chat_settings(a.config)  # the base's ids are kept, so its template still fits
    config = {"algorithm": MERGE, "merged_from": a.row.id, "donor": b.row.id, "base_name": a.row.name,
              "donor_name": b.row.name, "report": report, **({"chat": chat} if chat else {}), **original}
    document = tokenizer.to_json()
    session = get_session()
    team_id = current_team().id
    no_room = quota.no_room_for(session, team_id, stored_bytes(document, {}, config), f"“{name}”")
    if no_room is not None:
        return render("tokenizers/merge.html", status=413, **{**context, "error": no_room})
    # "trained" as an extension is: built here from tokenizers the team could read.
    row = TokenizerRow(team_id=team_id, name=name, algorithm=a.row.algorithm, source="trained",
                       tokenizer_json=document, vocab_size=tokenizer.vocab_size, stats={}, config=config)
    session.add(row)
    session.commit()
    return redirect(url_for("playground.play", tokenizer_id=row.id), 303)
