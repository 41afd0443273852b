"""The JSON API for scripts, shaped like Tiktokenizer's ``/api/v1/encode``.

``POST /api/v1/encode`` takes ``{tokenizer, text, allowed_special}`` and returns
``{ids, tokens, offsets, count}``; with ``{tokenizer, messages, template}`` instead of ``text`` it
counts a chat (``chat/chat.py``) and adds ``text`` (the rendered prompt), per-message counts and the
template's ``overhead``; ``POST /api/v1/decode`` takes ``{tokenizer, ids}`` and
returns ``{text, count}``; ``GET /api/v1/tokenizers`` lists what can be used, a page at a time. ``tokenizer`` is
an id or an exact name. Special tokens follow the playground's rule
(``encode_view.encode_spans``): text spelling one is that special token only when
``allowed_special`` allows it (``"all"`` or a list), and plain text otherwise. Every error is JSON
``{"error": sentence}`` with a 4xx status, and so are malformed bodies: wrong JSON types, deep
nesting, bodies over ``requests.BODY_BYTES`` (``web/errors.py`` answers the 404, 405 and 413 of
every ``/api/`` path in JSON too). The API is exempt from CSRF because it only accepts
``application/json``, which a cross-site form cannot send. ``GET /api`` is the documentation page
with curl examples.

Left out: authentication (API keys, ``access/auth.py``) and rate limits (``web/security.py``, ``web/ratelimit.py``),
which run before these views.
"""

from __future__ import annotations

from typing import Any

from flask import Blueprint, Flask, jsonify, request
from werkzeug.wrappers import Response

from engine import TokenforgeError
from webapp.chat import budgets as chat_budgets
from webapp.chat.chat import ChatError, TemplateRefused, count_chat, parse_messages, template_choices
from webapp.chat.views import render_seconds
from webapp.playground.encode_page import limits
from webapp.playground.encode_view import MAX_DECODE_BYTES, check_decode_size, encode_spans
from webapp.store.model_base import MAX_NAME
from webapp.tokenizers.loaded import Loaded, all_rows, count_rows, find
from webapp.web.htmx import render
from webapp.web.numbers import parse_id, parse_int

bp = Blueprint("api", __name__)
MAX_IDS = 1_000_000
LIST_PAGE, MAX_LIST_PAGE = 100, 1000  # tokenizers per page of GET /api/v1/tokenizers: default, most


def _error(message: str, status: int = 400) -> Response:
    response = jsonify({"error": message})
    response.status_code = status
    return response


def _body() -> dict[str, Any] | Response:
    if not request.is_json:
        return _error("Send a JSON body with the header Content-Type: application/json.", 415)
    try:
        body = request.get_json(silent=True)
    except RecursionError:  # json's parser recurses once per nesting level
        return _error("The JSON body is nested too deeply; send a flat object such as "
                      "{\"tokenizer\": 1, \"text\": \"hello\"}.")
    if not isinstance(body, dict):
        return _error("The body must be a JSON object, for example {\"tokenizer\": 1, \"text\": \"hello\"}.")
    return body


def _tokenizer(body: dict[str, Any]) -> Loaded | Response:
    ref = body.get("tokenizer")
    if ref is None or isinstance(ref, bool) or not isinstance(ref, (int, str)):
        return _error('Give "tokenizer": the id or exact name of a tokenizer (see GET /api/v1/tokenizers).')
    shown = repr(ref)[:80]
    if isinstance(ref, str) and (len(ref) > MAX_NAME or not ref.strip()):
        return _error(f"There is no tokenizer named {shown}; names are 1 to {MAX_NAME} characters "
                      "(GET /api/v1/tokenizers lists them).", 404)
    if isinstance(ref, str) and ref.strip().isdigit():
        # Strict ASCII digits only: ``"²".isdigit()`` is true, but it is neither an id nor
        # (being digit-like) looked up as a name.
        ref = parse_id(ref.strip())
        if ref is None:
            return _error(f"There is no tokenizer {shown}; an id is a whole number like 1 "
                          "(GET /api/v1/tokenizers lists them).", 404)
    elif isinstance(ref, int) and parse_id(ref) is None:
        return _error(f"There is no tokenizer {shown}; ids are whole numbers from 1 "
                      "(GET /api/v1/tokenizers lists them).", 404)
    loaded = find(ref)
    if loaded is None:
        return _error(f"There is no tokenizer {shown}; GET /api/v1/tokenizers lists them.", 404)
    return loaded


def _body_and_tokenizer() -> tuple[dict[str, Any], Loaded] | Response:
    """The JSON body and the tokenizer it names, or the error response to send instead."""
    body = _body()
    if isinstance(body, Response):
        return body
    loaded = _tokenizer(body)
    return loaded if isinstance(loaded, Response) else (body, loaded)


@bp.post("/api/v1/encode")
def encode() -> Response:
    """Encode text: ids, the vocabulary string of each, and [start, end] character offsets."""
    found = _body_and_tokenizer()
    if isinstance(found, Response):
        return found
    body, loaded = found
    if "messages" in body:
        return _encode_chat(body, loaded)
    # None allowed unless asked, as in tiktoken; the encode page's box starts unticked to match
    # (encode_page.ALLOW_SPECIAL_DEFAULT), so the same text gives the same ids in both.
    text, allowed = body.get("text"), body.get("allowed_special", [])
    if not isinstance(text, str):
        return _error('Give "text" as a string, or "messages" as a list of {"role", "content"} objects.')
    if len(text) > limits()[0]:
        return _error(f"The text has {len(text):,} characters; the API encodes at most {limits()[0]:,}.", 413)
    if allowed != "all" and not (isinstance(allowed, list) and all(isinstance(t, str) for t in allowed)):
        return _error('"allowed_special" must be "all" or a list of special-token strings.')
    if allowed != "all" and len(allowed) > MAX_IDS:
        return _error(f'"allowed_special" lists {len(allowed):,} strings; give at most {MAX_IDS:,}, or "all".')
    try:
        spans = encode_spans(loaded.tokenizer, text, "all" if allowed == "all" else frozenset(allowed))
    except TokenforgeError as exc:
        return _error(str(exc), 422)
    ids = spans.ids
    return jsonify({
        "tokenizer": {"id": loaded.row.id, "name": loaded.row.name},
        "ids": ids,
        "tokens": loaded.tokens(ids),
        "offsets": list(map(list, zip(spans.char_starts, spans.char_ends))),
        "count": len(ids),
    })


def _encode_chat(body: dict[str, Any], loaded: Loaded) -> Response:
    """The chat branch of encode: ``messages`` rendered with ``template``, then encoded (``chat/chat.py``)."""
    if "text" in body:
        return _error('Give either "text" or "messages", not both.')
    template, generation = body.get("template", "chatml"), body.get("add_generation_prompt", False)
    if not isinstance(template, str):
        return _error(f'"template" must be one of {", ".join(template_choices(loaded.config))}.')
    if not isinstance(generation, bool):
        return _error('"add_generation_prompt" must be true or false.')
    refused = chat_budgets.admit(loaded.row.id)  # the chat page's budgets: per key, member or link
    if refused is not None:
        return refused
    try:
        messages = parse_messages(body["messages"], max_chars=limits()[0])
        chat = count_chat(loaded.tokenizer, messages, template, loaded.config,
                          add_generation_prompt=generation, max_chars=limits()[0], seconds=render_seconds())
    except ChatError as exc:
        return _error(str(exc), 422 if isinstance(exc, TemplateRefused) else 400)
    except TokenforgeError as exc:
        return _error(str(exc), 422)
    ids = chat.ids
    return jsonify({
        "tokenizer": {"id": loaded.row.id, "name": loaded.row.name},
        "template": template,
        "text": chat.text,
        "ids": ids,
        # A preset's chat markers (<|im_start|>, ...) are known only to the chat's tokenizer.
        "tokens": [chat.tokenizer.id_to_token(i) if token is None else token
                   for i, token in zip(ids, loaded.tokens(ids))],
        "offsets": [[s.char_start, s.char_end] for s in chat.spans],
        "messages": [{"role": m.role, "count": n} for m, n in zip(messages, chat.message_counts)],
        "overhead": chat.overhead,
        "count": chat.total,
        "missing_special_tokens": chat.missing,
    })


@bp.post("/api/v1/decode")
def decode() -> Response:
    """Decode ids to text (invalid UTF-8 becomes U+FFFD)."""
    found = _body_and_tokenizer()
    if isinstance(found, Response):
        return found
    body, loaded = found
    ids = body.get("ids")
    if not isinstance(ids, list):
        return _error('Give "ids" as a list of non-negative integers, for example [15496, 995].')
    if len(ids) > MAX_IDS:
        return _error(f"Decode at most {MAX_IDS:,} ids at a time; got {len(ids):,}.", 413)
    bad = [i for i in ids if not isinstance(i, int) or parse_int(i) is None][:1]
    if bad:
        return _error(f'Give "ids" as a list of non-negative integers; {repr(bad[0])[:40]} is not one '
                      "(floats, booleans, strings and numbers beyond 64 bits are refused).")
    try:
        check_decode_size(loaded.tokenizer, ids, MAX_DECODE_BYTES)
        text = loaded.tokenizer.decode(ids)
    except TokenforgeError as exc:
        return _error(str(exc), 422)
    except ValueError as exc:  # from check_decode_size: the decoded text would be too large
        return _error(str(exc), 413)
    return jsonify({"text": text, "count": len(ids)})


@bp.get("/api/v1/tokenizers")
def tokenizers() -> Response:
    """The tokenizers, a page at a time: id, name, algorithm, vocabulary size and source, with the
    ``total`` and the ``next_offset`` to ask for (null after the last page)."""
    limit = parse_int(request.args.get("limit", LIST_PAGE), low=1, high=MAX_LIST_PAGE)
    offset = parse_int(request.args.get("offset", 0))
    if limit is None or offset is None:
        return _error(f"Give limit as a whole number from 1 to {MAX_LIST_PAGE:,} and offset as a whole number "
                      "of at least 0, such as ?limit=100&offset=200.")
    rows, total = all_rows(limit=limit, offset=offset), count_rows()
    return jsonify({
        "tokenizers": [
            {"id": r.id, "name": r.name, "algorithm": r.algorithm, "vocab_size": r.vocab_size, "source": r.source}
            for r in rows
        ],
        "total": total,
        "next_offset": offset + limit if offset + limit < total else None,
    })


@bp.get("/api")
def docs() -> Response:
    """The API documentation page, with curl examples against this server."""
    rows = all_rows(limit=1)  # one tokenizer to write the examples with
    return render("api/docs.html", base=request.host_url.rstrip("/"), example=rows[0] if rows else None)


def exempt_from_csrf(app: Flask) -> None:
    """Let scripts POST JSON without a CSRF token (a browser form cannot send JSON cross-site)."""
    csrf = app.extensions.get("csrf")
    if csrf is not None:
        csrf.exempt(bp)
