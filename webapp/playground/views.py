"""The playground blueprint: the encode view, paste-ids-to-decode, and the token inspector.

Each route serves the whole page, or for htmx requests only the block it swaps
(``webapp.web.htmx.render``). The encode form posts on every keystroke (no debounce; see the template);
bad input (text over the size limit, ids that are not in the vocabulary) re-renders the block
with a plain-sentence message and a 422, never a 500.

The encode page is a tokenizer's home: opening a tokenizer lands here, a picker switches to
another one keeping the text (``GET /play?tokenizer=<id>&text=...``, which works without
script), and ``?text=`` makes the page a permalink (``text_links.py`` says where texts travel).

Left out: the page's context and the helpers other views share (``encode_page.py``), the grouping
of tokens into spans (``spans.py``), the comparison (``compare_views.py``); ``create_app``
registers this blueprint with the others.
"""

from __future__ import annotations

from flask import Blueprint, abort, redirect, request
from werkzeug.wrappers import Response

from engine import TokenforgeError
from webapp.playground.encode_page import block_or_page, encode_context, limits, play_page
from webapp.playground.encode_view import check_decode_size, parse_ids
from webapp.playground.inspector import inspect
from webapp.playground.text_links import play_url
from webapp.tokenizers.loaded import load
from webapp.web.htmx import render
from webapp.web.numbers import parse_id, parse_int
from webapp.web.shown import shown_text

bp = Blueprint("playground", __name__)
MAX_GROUP = 64  # ids in an inspector link's ?group= (one display span's tokens)


# ``/play`` is the picker's form target, a second URL of this same endpoint so that everyone
# who may open an encode page (share-link visitors too, see ``auth.SHAREABLE_ENDPOINTS``) may
# switch; ``url_for("playground.play", tokenizer_id=...)`` still builds the page's own URL.
@bp.get("/play", defaults={"tokenizer_id": None})
@bp.get("/tokenizers/<int:tokenizer_id>/play")
def play(tokenizer_id: int | None) -> Response:
    """The encode page: a text box whose tokens are shown as coloured spans as you type."""
    text = request.args.get("text")
    if tokenizer_id is None:
        return switch(request.args.get("tokenizer", ""), text)
    return play_page(load(tokenizer_id), text)


def switch(raw_id: str, text: str | None) -> Response:
    """The picker: send the visitor to the chosen tokenizer's encode page, with the text when short."""
    tokenizer_id = parse_id(raw_id)
    if tokenizer_id is None:
        abort(404)
    loaded = load(tokenizer_id)  # scoped: a tokenizer this visitor cannot read is a 404
    return redirect(play_url(loaded.row, text), 303)


@bp.post("/tokenizers/<int:tokenizer_id>/encode")
def encode(tokenizer_id: int) -> Response:
    """Encode the posted text; htmx requests get only the result block."""
    loaded = load(tokenizer_id)
    context, status = encode_context(loaded, request.form.get("text", ""))
    return render("playground/play.html", "result", status=status, **block_or_page(loaded, "given"), **context)


@bp.post("/tokenizers/<int:tokenizer_id>/decode")
def decode(tokenizer_id: int) -> Response:
    """Decode pasted ids to text, listing each id's token."""
    loaded = load(tokenizer_id)
    raw = request.form.get("ids", "")
    # Without htmx the whole page is rendered, so start from the encode page's context.
    context, status = encode_context(loaded, request.form.get("text", ""))
    context["ids_raw"] = raw
    try:
        if len(raw) > limits()[0]:
            raise ValueError(f"That is {len(raw):,} characters of ids; paste at most {limits()[0]:,}.")
        ids = parse_ids(raw)
        tokenizer = loaded.tokenizer
        # The decoded text is shown whole, so it gets the same bound as a text to encode
        # (in UTF-8 bytes): a stored tokenizer's megabyte-long token must not make a huge page.
        check_decode_size(tokenizer, ids, limits()[0] * 4)
        context["decoded"] = tokenizer.decode(ids)
        context["rows"] = [(i, shown_text(tokenizer.token_bytes(i))) for i in ids[: limits()[1]]]
        context["id_count"] = len(ids)
    except (ValueError, TokenforgeError) as exc:
        context["decode_error"] = str(exc)
        status = 422
    # The decode form does not post the text, so the page script restores the kept one.
    return render("playground/play.html", "decoded", status=status, **block_or_page(loaded, "default"), **context)


@bp.get("/tokenizers/<int:tokenizer_id>/tokens/<int:token_id>")
def inspector(tokenizer_id: int, token_id: int) -> Response:
    """The token inspector: an id's bytes, and the merges, score or prefix that explain it."""
    loaded = load(tokenizer_id)
    parsed = (parse_int(item) for item in request.args.get("group", "").split())
    group = [i for i in parsed if i is not None][:MAX_GROUP]
    try:
        info = inspect(loaded.tokenizer, token_id, loaded.stats)
    except TokenforgeError as exc:
        return render("playground/inspector.html", "inspector", status=404, loaded=loaded, info=None,
                      error=str(exc), group=[])
    return render("playground/inspector.html", "inspector", loaded=loaded, info=info, error=None,
                  group=group if token_id in group else [])

