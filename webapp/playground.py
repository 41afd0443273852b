"""The playground blueprint: the encode view, paste-ids-to-decode, and the token inspector.

Each route serves the whole page, or for htmx requests only the block it swaps
(``webapp.htmx.render``). The encode form posts as the user types (debounced in the template);
bad input (text over the size limit, ids that are not in the vocabulary) re-renders the block
with a plain-sentence message and a 422, never a 500.

The encode page is a tokenizer's home: opening a tokenizer lands here, a picker switches to
another one keeping the text (``GET /play?tokenizer=<id>&text=...``, which works without
script), and ``?text=`` makes the page a permalink (``text_links.py`` says where texts travel).

:func:`init_app` registers this and the playground's other blueprints (compare, vocabulary and
insights, downloads and imports, the JSON API), so ``create_app`` needs one line.
Left out: the grouping of tokens into spans (``spans.py``), the comparison (``compare_views.py``).
"""

from __future__ import annotations

from typing import Any

from flask import Blueprint, Flask, abort, current_app, redirect, request, url_for
from werkzeug.wrappers import Response

from engine import TokenforgeError
from webapp.encode_view import MAX_CHARS, RENDER_TOKENS, check_decode_size, encode_for_display, parse_ids
from webapp.htmx import is_htmx, render
from webapp.inspector import inspect, shown_text
from webapp.loaded import Loaded, all_rows, load
from webapp.models import Tokenizer as TokenizerRow
from webapp.numbers import parse_id, parse_int
from webapp.text_links import play_url

bp = Blueprint("playground", __name__)
MAX_GROUP = 64  # ids in an inspector link's ?group= (one display span's tokens)
PICKER_ROWS = 200  # tokenizers the picker offers (the current one always)

SAMPLE_TEXT = ("Tokenizers split text into pieces: “Hello, world!” → tokens.\n"
               "Emoji 👩‍🚀 and accents (café, naïve) and 日本語 too.\n    indented code()\n")


def flag(name: str, default: bool) -> bool:
    """A checkbox: absent from a posted form means off; in a page's URL, absent means the default.

    A URL (a permalink, a reload after typing, the picker) sets a flag only by naming it, as
    ``allowed_special=on`` or ``allowed_special=0``, so ``?text=`` alone keeps the defaults.
    """
    if request.method == "POST":
        return request.form.get(name) in ("on", "1", "true")
    value = request.args.get(name)
    return default if value is None else value in ("on", "1", "true")


def limits() -> tuple[int, int]:
    """(largest text in characters, tokens rendered as spans) from the app config."""
    config = current_app.config
    return int(config.get("PLAYGROUND_MAX_CHARS", MAX_CHARS)), int(config.get("PLAYGROUND_RENDER_TOKENS", RENDER_TOKENS))


def inspect_base(loaded: Loaded) -> str:
    """The inspector URL without the token id, for the script that opens the inspector."""
    return url_for("playground.inspector", tokenizer_id=loaded.row.id, token_id=0)[:-1]


def encode_context(loaded: Loaded, text: str) -> tuple[dict[str, Any], int]:
    """The encode block's template context and HTTP status for ``text``."""
    options = {"allowed_special": flag("allowed_special", True), "show_ws": flag("show_ws", False),
               "colour_by_id": flag("colour_by_id", False)}
    max_chars, render_tokens = limits()
    context: dict[str, Any] = {"loaded": loaded, "text": text, "options": options, "result": None,
                               "error": None, "max_chars": max_chars, "inspect_base": inspect_base(loaded),
                               "ids_raw": "", "decoded": None, "decode_error": None, "rows": [], "id_count": 0}
    if len(text) > max_chars:
        context["error"] = (f"The text has {len(text):,} characters; the playground encodes at most "
                            f"{max_chars:,}. Shorten it, or use the command line for whole files.")
        return context, 422
    try:
        context["result"] = encode_for_display(loaded.tokenizer, text, limit=render_tokens, **options)
    except TokenforgeError as exc:
        context["error"] = str(exc)
        return context, 422
    return context, 200


def picker_rows(current: TokenizerRow) -> list[TokenizerRow]:
    """The picker's choices: what this visitor can read (``loaded.all_rows``: presets, then their
    teams' newest first, or what was shared with them), bounded, and always ``current``."""
    rows = all_rows(limit=PICKER_ROWS)
    return rows if any(r.id == current.id for r in rows) else [current, *rows]


def page_context(loaded: Loaded, text_from: str, address: str | None = None) -> dict[str, Any]:
    """What the whole encode page needs beyond the encode block: the picker and the text's origin.

    ``text_from`` tells the page script whether the text is the sample ("default", which a text
    kept in this browser replaces), one the request gave ("given": ``?text=`` or a posted form)
    or a shared text ("shared"); ``address`` is the path the script writes ``?text=`` onto,
    when not the page's own.
    """
    return {"picker": picker_rows(loaded.row), "text_from": text_from, "address": address}


def block_or_page(loaded: Loaded, text_from: str) -> dict[str, Any]:
    """:func:`page_context` for a request that gets the whole page; nothing for htmx's blocks."""
    return {} if is_htmx() else page_context(loaded, text_from)


def play_page(loaded: Loaded, text: str, *, text_from: str, address: str | None = None) -> Response:
    """The whole encode page, for the team's URL and a share link's alike."""
    context, status = encode_context(loaded, text)
    return render("playground/play.html", status=status, **page_context(loaded, text_from, address), **context)


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
    return play_page(load(tokenizer_id), SAMPLE_TEXT if text is None else text,
                     text_from="default" if text is None else "given")


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


def init_app(app: Flask) -> None:
    """Register the playground's blueprints (encode, compare, vocabulary, transfer, API)."""
    from webapp import api, compare_views, spans_html, text_links, transfer, vocab_views

    app.add_template_global(spans_html.spans_markup, "spans_markup")
    app.add_template_global(spans_html.ids_markup, "ids_markup")
    for helper in (text_links.play_url, text_links.page_url, text_links.compare_url, text_links.visitor_token,
                   text_links.url_text):
        app.add_template_global(helper, helper.__name__)
    app.jinja_env.globals["url_text_limit"] = text_links.URL_TEXT_LIMIT  # for the page script (base.html)
    app.register_blueprint(bp)
    app.register_blueprint(compare_views.bp)
    app.register_blueprint(vocab_views.bp)
    app.register_blueprint(transfer.bp)
    app.register_blueprint(api.bp)
    api.exempt_from_csrf(app)
