"""Preset tokenizers: OpenAI's encodings and open models' tokenizers, read-only for every team.

A preset is a ``tokenizers`` row with no team and ``preset`` set to its catalogue name: an
encoding of ``engine.presets.TIKTOKEN_ENCODINGS`` (``r50k_base``, ..., ``o200k_base``) or an open
model of ``engine.presets.OPEN_MODELS`` (``llama2``, ..., ``gptoss``); see the model's check
constraint. Reading goes through ``loaded.rows_query`` like any tokenizer, which admits rows of no
team; writing goes through ``auth.owned_or_404``, which never does, so no team can rename,
delete or share a preset, whatever the route. Like every tokenizer, a preset's document is kept
in its row (the engine's ``tokenizer.json``), so the web processes never read the presets folder,
and parse a preset only when a request first uses it (``loaded.py``).

:func:`fetch` puts the verified files in the presets folder (``preset_install.py``,
``open_install.py``); :func:`register` builds each preset from them and writes or refreshes its
row. The OpenAI encodings must all build, or nothing is registered. An open model whose file
the engine cannot read yet is skipped with the engine's reason, and the others are registered;
a file that is not the pinned bytes refuses the whole registration. An open model's
``tokenizer_config.json`` gives the row its chat settings (``config["chat"]``: the chat template
and the bos/eos/pad tokens, as an import with a ``tokenizer_config.json`` keeps them). The app
never downloads: when no preset is registered, the tokenizer list shows :data:`INSTALL_COMMAND`.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session, defer

from engine import OPEN_MODELS, TIKTOKEN_ENCODINGS, TokenforgeError, Tokenizer
from engine.formats.transformers_config import read_chat_settings
from webapp.store.db import make_engine
from webapp.store.models import Tokenizer as TokenizerRow
from webapp.tokenizers import open_install, preset_install, snapshots
from webapp.tokenizers.preset_names import INSTALL_COMMAND, build

# The round trip an open model's stored document must survive (as an import's must).
SAMPLE = "Round trip check: Hello, world! café 日本 👋 <|endoftext|> <s> \n\n  x"


def fetch(folder: Path, *, from_folder: Path | None = None) -> Path:
    """Put every verified file in ``folder`` at once: downloaded, or copied from ``from_folder``."""
    if from_folder is not None:
        tables = preset_install.read_tables(from_folder)
    else:
        tables = preset_install.tables_from_tarball(preset_install.download())
    folder = folder.resolve()
    folder.parent.mkdir(parents=True, exist_ok=True)
    source = open_install.open_folder(from_folder) if from_folder is not None else None
    staged = open_install.stage(folder.parent, from_open_dir=source)
    try:
        return preset_install.write_tables(tables, folder, open_models=staged)
    finally:
        shutil.rmtree(staged, ignore_errors=True)


def register_at(database_url: str, folder: Path) -> dict[str, str]:
    """:func:`register` in a session of its own on ``database_url`` (for commands, not requests)."""
    engine = make_engine(database_url)
    try:
        with Session(engine) as session:
            return register(session, folder)
    finally:
        engine.dispose()


@dataclass(frozen=True, slots=True)
class Built:
    """What a preset's row holds; the tokenizer itself is not kept (an open model's is large)."""

    title: str
    algorithm: str
    document: str
    vocab_size: int
    config: dict[str, Any]


def _built(tokenizer: Tokenizer, title: str, config: dict[str, Any]) -> Built:
    return Built(title, tokenizer.model.kind, tokenizer.to_json(), tokenizer.vocab_size, config)


def build_open(name: str, folder: Path) -> Built | str:
    """The open model ``name`` from the verified files in ``folder``, or why it is skipped."""
    texts = open_install.read_files(open_install.open_folder(folder), name)
    if texts is None:
        return f"its files are not in {folder} (installed by an older version): run `{INSTALL_COMMAND}` again"
    try:
        tokenizer = Tokenizer.from_json(texts[0])
        document = tokenizer.to_json()
        stored = Tokenizer.from_json(document)
        same = stored.encode(SAMPLE, allowed_special="all") == tokenizer.encode(SAMPLE, allowed_special="all")
    except (TokenforgeError, ValueError, RecursionError) as exc:
        reason = " ".join(str(exc).split()) or type(exc).__name__
        return f"the engine cannot read its tokenizer.json yet ({reason})"
    if not same:
        return "its tokenizer.json does not survive conversion to the stored document"
    pin = open_install.PACKAGES[name]
    config = {"preset": name, "package": f"{pin.package}@{open_install.VERSION}",
              "tokenizer_json_sha256": pin.sha256[open_install.TOKENIZER]}
    chat = read_chat_settings(texts[1])  # the pinned tokenizer_config.json: template, bos/eos/pad
    if chat:
        config["chat"] = chat
    return Built(OPEN_MODELS[name].title, tokenizer.model.kind, document, tokenizer.vocab_size, config)


def register(db: Session, folder: Path) -> dict[str, str]:
    """Add or refresh a row for every preset from the files in ``folder``; name -> what happened.

    Every file is checked and every preset built before the first row is written, and all rows
    are committed together, so a bad file leaves the database as it was. An open model the engine
    cannot read is ``"skipped: <why>"``, and a row it already has is kept.
    """
    built: dict[str, Built] = {}
    for name, encoding in TIKTOKEN_ENCODINGS.items():
        config = {"preset": name, "package": f"{preset_install.PACKAGE}@{preset_install.VERSION}",
                  "pattern": encoding.pattern}
        built[name] = _built(build(name, folder), encoding.title, config)
    outcome: dict[str, str] = {}
    for name in OPEN_MODELS:
        result = build_open(name, folder)
        if isinstance(result, str):
            outcome[name] = f"skipped: {result}"
        else:
            built[name] = result
    rows = {row.preset: row for row in db.scalars(select(TokenizerRow).where(TokenizerRow.preset.is_not(None)))}
    for name, preset in built.items():
        row = rows.get(name)
        if row is not None and row.tokenizer_json == preset.document and row.config == preset.config:
            outcome[name] = "unchanged"
            continue
        if row is not None:  # a changed document needs a new row id: cached parses are keyed by (id, created_at)
            db.delete(row)
            db.flush()
        db.add(TokenizerRow(team_id=None, preset=name, name=preset.title, algorithm=preset.algorithm,
                            source="preset", tokenizer_json=preset.document, config=preset.config, stats={},
                            vocab_size=preset.vocab_size))
        outcome[name] = "added" if row is None else "replaced"
    db.commit()
    return {name: outcome[name] for name in (*TIKTOKEN_ENCODINGS, *OPEN_MODELS) if name in outcome}


def preset_rows(db: Session) -> list[TokenizerRow]:
    """The registered presets in catalogue order, without their documents."""
    rows = {row.preset: row for row in db.scalars(
        select(TokenizerRow).where(TokenizerRow.preset.is_not(None))
        .options(defer(TokenizerRow.tokenizer_json), defer(TokenizerRow.stats)))}
    return [rows[name] for name in (*TIKTOKEN_ENCODINGS, *OPEN_MODELS) if name in rows]


def write_snapshots(config: Mapping[str, Any]) -> int:
    """Write the snapshot (``snapshots.py``) of every registered preset whose document is large,
    one document in memory at a time, so that even a fresh server's first request on an open
    model loads without parsing; how many presets have one now."""
    engine = make_engine(config["DATABASE_URL"])
    try:
        with Session(engine) as session:
            ids = list(session.scalars(select(TokenizerRow.id).where(TokenizerRow.preset.is_not(None))))
            written = 0
            for row_id in ids:
                document = session.scalar(select(TokenizerRow.tokenizer_json).where(TokenizerRow.id == row_id))
                written += bool(document) and snapshots.write_for(document, config)
            return written
    finally:
        engine.dispose()
