"""The encode page and the request helpers the playground's views share.

The encode page is served at two kinds of URL: the team's (``playground.play``) and a share
link's (``sharing.open_link``, ``sharing.open_text``); :func:`play_page` builds it for both.
The compare, chat and JSON API views read the same checkboxes (:func:`flag`), size limits
(:func:`limits`) and inspector address (:func:`inspect_base`), so every view imports them from
here and no view imports another view's module.
Left out: the routes (``views.py`` and its siblings) and encoding for display
(``encode_view.py``).
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from flask import current_app, request
from werkzeug.wrappers import Response

from engine import TokenforgeError
from webapp.playground.encode_view import MAX_CHARS, RENDER_TOKENS, encode_for_display
from webapp.store.records import TokenizerRecord
from webapp.tokenizers.loaded import Loaded, all_rows, rows_with_ids
from webapp.web.htmx import is_htmx, render
from webapp.web.lists import PICKER_ROWS
from webapp.web.urls import url_for

# Off, as in tiktoken and the JSON API (``"allowed_special": []``): text that spells a special token
# is ordinary text unless the box is ticked, so the page and the API give the same ids for the
# same text, and a pasted document cannot turn into control tokens unnoticed.
ALLOW_SPECIAL_DEFAULT = False
SHOWN_SPECIALS = 5  # special tokens named beside the checkbox; Llama 3 has 256
MAX_IMPORT_NOTES = 4  # notes kept from an import (transfer.imports.read); it writes at most two

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
    return (int(config.get("PLAYGROUND_MAX_CHARS", MAX_CHARS)),
            int(config.get("PLAYGROUND_RENDER_TOKENS", RENDER_TOKENS)))


def inspect_base(loaded: Loaded) -> str:
    """The inspector URL without the token id, for the script that opens the inspector."""
    return url_for("playground.inspector", tokenizer_id=loaded.row.id, token_id=0)[:-1]


def encode_context(loaded: Loaded, text: str) -> tuple[dict[str, Any], int]:
    """The encode block's template context and HTTP status for ``text``."""
    options = {"allowed_special": flag("allowed_special", ALLOW_SPECIAL_DEFAULT), "show_ws": flag("show_ws", False),
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


def picker_rows(chosen: Collection[int] = ()) -> list[TokenizerRecord]:
    """A picker's choices: what this visitor can read (``loaded.all_rows``: presets, then their
    teams' newest first, or what was shared with them), bounded, and always the ``chosen`` ones."""
    rows = all_rows(limit=PICKER_ROWS)
    missing = set(chosen) - {r.id for r in rows}
    return [*rows_with_ids(missing), *rows] if missing else rows


def special_names(loaded: Loaded, most: int = SHOWN_SPECIALS) -> tuple[list[str], int]:
    """The first ``most`` special tokens by id, and how many there are, for the checkbox's hint."""
    specials = sorted(loaded.tokenizer.special_tokens.items(), key=lambda item: item[1])
    return [token for token, _ in specials[:most]], len(specials)


def import_notes(config: dict[str, Any]) -> list[str]:
    """What an import decided on its own (say, which tokens it took as special, and why), as the
    import view kept it in the row's ``config["import"]["notes"]``; a row without them has none."""
    imported = config.get("import") if isinstance(config, dict) else None
    notes = imported.get("notes") if isinstance(imported, dict) else None
    return [n for n in notes if isinstance(n, str)][:MAX_IMPORT_NOTES] if isinstance(notes, list) else []


def page_context(loaded: Loaded, text_from: str, address: str | None = None) -> dict[str, Any]:
    """What the whole encode page needs beyond the encode block: the picker, the text's origin,
    the special tokens named beside their checkbox and the notes of an import.

    ``text_from`` tells the page script whether the text is the sample ("default", which a text
    kept in this browser replaces), one the request gave ("given": ``?text=`` or a posted form)
    or a shared text ("shared"); ``address`` is the path the script writes ``?text=`` onto,
    when not the page's own.
    """
    specials, special_count = special_names(loaded)
    return {"picker": picker_rows([loaded.row.id]), "text_from": text_from, "address": address,
            "specials": specials, "special_count": special_count, "import_notes": import_notes(loaded.config)}


def block_or_page(loaded: Loaded, text_from: str) -> dict[str, Any]:
    """:func:`page_context` for a request that gets the whole page; nothing for htmx's blocks."""
    return {} if is_htmx() else page_context(loaded, text_from)


def play_page(loaded: Loaded, text: str | None, *, text_from: str | None = None,
              address: str | None = None) -> Response:
    """The whole encode page, for the team's URL and a share link's alike.

    ``text`` None is the sample text (``text_from`` "default"); a given text is "given" unless
    ``text_from`` says otherwise.
    """
    if text is None:
        text, text_from = SAMPLE_TEXT, "default"
    context, status = encode_context(loaded, text)
    return render("playground/play.html", status=status, **page_context(loaded, text_from or "given", address),
                  **context)
