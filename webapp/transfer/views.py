"""The transfer blueprint: downloads of a tokenizer in each format, and imports of tokenizer files.

Downloads are built and verified when first asked for (``downloads.py``); formats made for
another kind of model are left out of the page, one that fits the model but cannot hold this
tokenizer says why in place of its button, and asking for either anyway is a 422 page with the
reason. An import becomes a ``Tokenizer`` row with ``source="imported"`` and opens in the
encode view; a bad file re-renders the form with the problem named and a 422, and one that
would pass the team's tokenizer quota with a 413 (nothing stored).
Left out: the file formats (``engine.formats``) and their checks (``imports.py``); the import's
budgets (``budgets.py``).
"""

from __future__ import annotations

import re

from flask import Blueprint, abort, redirect, render_template, request, url_for
from werkzeug.datastructures import FileStorage
from werkzeug.wrappers import Response

from webapp.access.auth import current_team
from webapp.store.db import get_session
from webapp.store.models import Tokenizer as TokenizerRow
from webapp.store.models import stored_bytes
from webapp.tokenizers import quota
from webapp.tokenizers.loaded import load
from webapp.tokenizers.originals import chat_settings, keep_original, originals
from webapp.transfer import budgets, downloads, imports
from webapp.transfer.forms import FILE_PARTS, ImportForm, kinds_reading
from webapp.web import requests
from webapp.web.forms import name_from_filename
from webapp.web.htmx import render
from webapp.web.requests import MAX_IMPORT_BYTES

bp = Blueprint("transfer", __name__)
bp.record_once(lambda state: requests.add_gate(state.app, "transfer.import_upload", budgets.admit))


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-.")[:80] or "tokenizer"


@bp.get("/tokenizers/<int:tokenizer_id>/downloads", endpoint="downloads")
def downloads_page(tokenizer_id: int) -> Response:
    """Each download format, or the reason this tokenizer cannot be written in it."""
    loaded = load(tokenizer_id)
    formats = downloads.plan(loaded.tokenizer, originals(loaded.config))
    return render("playground/downloads.html", loaded=loaded, formats=formats)


@bp.get("/tokenizers/<int:tokenizer_id>/download/<key>/<filename>")
def download(tokenizer_id: int, key: str, filename: str) -> Response:
    """One verified file of one format, as an attachment."""
    loaded = load(tokenizer_id)
    try:
        files = downloads.build(loaded.tokenizer, key, chat=chat_settings(loaded.config),
                                originals=originals(loaded.config))
    except downloads.ExportError as exc:
        return Response(render_template("errors/error.html", status=422, message=str(exc)), 422)
    if filename not in files:
        abort(404)
    mimetype = ("application/json" if filename.endswith(".json") else
                "application/octet-stream" if filename.endswith(".model") else "text/plain")
    response = Response(files[filename], mimetype=mimetype)
    response.headers["Content-Disposition"] = f'attachment; filename="{_slug(loaded.row.name)}-{filename}"'
    response.headers["X-Content-Type-Options"] = "nosniff"
    return response


@bp.get("/tokenizers/<int:tokenizer_id>/download.zip")
def download_zip(tokenizer_id: int) -> Response:
    """Every available format and a README, zipped."""
    loaded = load(tokenizer_id)
    archive = downloads.zip_all(loaded.tokenizer, loaded.row.name, chat=chat_settings(loaded.config),
                                originals=originals(loaded.config))
    response = Response(archive, mimetype="application/zip")
    response.headers["Content-Disposition"] = f'attachment; filename="{_slug(loaded.row.name)}.zip"'
    return response


def _form_context(form: ImportForm, **extra: object) -> dict[str, object]:
    return {"kinds": imports.KINDS, "patterns": imports.PATTERN_CHOICES, "error": None, "form": form,
            "kinds_reading": kinds_reading, **extra}


@bp.get("/import")
def import_form() -> Response:
    """The import form: upload a tokenizer.json, GPT-2 files, a vocab.txt or a tiktoken rank file."""
    return render("playground/import.html",
                  **_form_context(ImportForm(), kind=request.args.get("kind", "tokenizer_json")))


def _upload(storage: FileStorage | None) -> imports.Upload | None:
    if storage is None or not storage.filename:
        return None
    try:
        data = storage.stream.read(MAX_IMPORT_BYTES + 1)
    finally:
        storage.close()  # werkzeug spools big parts to a temp file; do not leave it to the GC
    # The file's name names the tokenizer when no name is typed, and shows in messages and on
    # its page: the name rule for file names, before anything uses it.
    filename = name_from_filename(storage.filename, "upload")
    if len(data) > MAX_IMPORT_BYTES:
        raise imports.ImportProblem(f"{filename} is larger than {MAX_IMPORT_BYTES >> 20} MiB, "
                                    "the most an imported tokenizer file may be.")
    return imports.Upload(filename, data)


@bp.post("/import")
def import_upload() -> Response:
    """Read the uploaded files into a tokenizer, store it, and open its encode page."""
    form = ImportForm()
    kind = form.kind.data
    try:
        if not form.validate():
            raise imports.ImportProblem(next(iter(form.first_errors().values())))
        stray = form.stray_file()  # the page hides such parts; without script they are all there
        if stray:
            raise imports.ImportProblem(stray)
        files = {part: _upload(form[part].data) for part in FILE_PARTS}
        notes: list[str] = []  # what the import decided for the user (special tokens it took)
        tokenizer = imports.read(kind, files, pattern=form.pattern.data, specials=form.special_tokens.data,
                                 lowercase=form.lowercase.data, notes=notes)
        chat = imports.read_config(files["config"])  # tokenizer_config.json: chat template, bos/eos/pad
    except imports.ImportProblem as exc:
        return render("playground/import.html", status=422, **_form_context(form, kind=kind, error=str(exc)))
    first = next((f for f in files.values() if f is not None), None)
    original = keep_original(kind, files["file"].data if files["file"] else None)
    name = form.name.data or (first.filename if first else "imported tokenizer")  # both pass the name rule
    document = tokenizer.to_json()
    config = {"import": {"kind": kind, "files": [f.filename for f in files.values() if f],
                         "pattern": form.pattern.data, **({"notes": notes} if notes else {})},
              **({"chat": chat} if chat else {}), **original}
    session = get_session()
    team_id = current_team().id
    no_room = quota.no_room_for(session, team_id, stored_bytes(document, {}, config), f"“{name}”")
    if no_room is not None:
        return render("playground/import.html", status=413, **_form_context(form, kind=kind, error=no_room))
    row = TokenizerRow(team_id=team_id, name=name, algorithm=tokenizer.model.kind, source="imported",
                       tokenizer_json=document, vocab_size=tokenizer.vocab_size, stats={}, config=config)
    session.add(row)
    session.commit()
    return redirect(url_for("playground.play", tokenizer_id=row.id), 303)
