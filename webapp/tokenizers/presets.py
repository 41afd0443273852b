"""Preset tokenizers: OpenAI's encodings as read-only tokenizers that every team sees.

A preset is a ``tokenizers`` row with no team and ``preset`` set to the encoding's name
(``r50k_base``, ``p50k_base``, ``cl100k_base``, ``o200k_base``); see the model's check
constraint. Reading goes through ``loaded.rows_query`` like any tokenizer, which admits rows of no
team; writing goes through ``auth.owned_or_404``, which never does, so no team can rename,
delete or share a preset, whatever the route.

:func:`register` builds each tokenizer from a verified rank table (``preset_install.py``) with
tiktoken's pattern and special tokens (``engine.presets.TIKTOKEN_ENCODINGS``) and writes or
refreshes its row. The app never downloads: when no preset is registered, the tokenizer list
shows :data:`INSTALL_COMMAND` instead.
"""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import select
from sqlalchemy.orm import Session, defer

from engine import Tokenizer
from engine.formats.tiktoken import build_tiktoken
from engine.presets import TIKTOKEN_ENCODINGS
from webapp.store.db import make_engine
from webapp.store.models import Tokenizer as TokenizerRow
from webapp.tokenizers import preset_install

INSTALL_COMMAND = "tokenforge presets install"


def installed_folder(data_dir: str | Path) -> Path:
    """Where ``tokenforge presets install`` keeps an instance's verified rank tables."""
    return Path(data_dir) / "presets"


def register_at(database_url: str, folder: Path) -> dict[str, str]:
    """:func:`register` in a session of its own on ``database_url`` (for commands, not requests)."""
    engine = make_engine(database_url)
    try:
        with Session(engine) as session:
            return register(session, folder)
    finally:
        engine.dispose()


def build(name: str, folder: Path) -> Tokenizer:
    """The preset ``name`` as an engine tokenizer, from the verified table in ``folder``."""
    encoding = TIKTOKEN_ENCODINGS[name]
    table = preset_install.read_table(folder, name)
    return build_tiktoken(table.entries, pattern=encoding.pattern, special_tokens=encoding.special_tokens,
                          name=encoding.title, source=preset_install.table_path(folder, name).name)


def register(db: Session, folder: Path) -> dict[str, str]:
    """Add or refresh a row for every preset from the tables in ``folder``; name -> what happened.

    Every table is checked and built before the first row is written, and all rows are
    committed together, so a bad table leaves the database as it was.
    """
    built = {name: build(name, folder) for name in TIKTOKEN_ENCODINGS}
    rows = {row.preset: row for row in db.scalars(select(TokenizerRow).where(TokenizerRow.preset.is_not(None)))}
    outcome: dict[str, str] = {}
    for name, tokenizer in built.items():
        document = tokenizer.to_json()
        config = {"preset": name, "package": f"{preset_install.PACKAGE}@{preset_install.VERSION}",
                  "pattern": TIKTOKEN_ENCODINGS[name].pattern}
        row = rows.get(name)
        if row is None:
            db.add(TokenizerRow(team_id=None, preset=name, name=TIKTOKEN_ENCODINGS[name].title, algorithm="bpe",
                                source="preset", tokenizer_json=document, config=config, stats={},
                                vocab_size=tokenizer.vocab_size))
            outcome[name] = "added"
        elif row.tokenizer_json != document or row.config != config:
            # A changed document needs a new row id: cached parses are keyed by (id, created_at).
            db.delete(row)
            db.flush()
            db.add(TokenizerRow(team_id=None, preset=name, name=TIKTOKEN_ENCODINGS[name].title, algorithm="bpe",
                                source="preset", tokenizer_json=document, config=config, stats={},
                                vocab_size=tokenizer.vocab_size))
            outcome[name] = "replaced"
        else:
            outcome[name] = "unchanged"
    db.commit()
    return outcome


def preset_rows(db: Session) -> list[TokenizerRow]:
    """The registered presets in catalogue order, without their documents."""
    rows = {row.preset: row for row in db.scalars(
        select(TokenizerRow).where(TokenizerRow.preset.is_not(None))
        .options(defer(TokenizerRow.tokenizer_json), defer(TokenizerRow.stats)))}
    return [rows[name] for name in TIKTOKEN_ENCODINGS if name in rows]
