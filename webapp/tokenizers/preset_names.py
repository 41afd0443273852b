"""The presets by name, as the command line reads them: ``tokenforge encode -t o200k_base``.

Apart from ``presets.py``, which registers the presets' rows and so loads the database layer
(~0.4 s of a command's start): a command that only names a preset needs the installed files, the
engine and the snapshots, nothing else.

A named preset comes through a snapshot in the data folder (``snapshots.py``), made on its first
use: parsing Gemma 3's 33 MB file or building o200k's merges from its ranks took each command
~2 s, and loading their snapshots takes ~0.3 s. An open model's snapshot is named by its file's
text, an OpenAI encoding's by its table's pinned hash and its catalogue entry, and either also by
the engine's code (:func:`_engine_build`): everything the tokenizer is made from.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import engine
from engine import OPEN_MODELS, TIKTOKEN_ENCODINGS, ConfigError, Tokenizer
from engine.cli import NamedFile
from engine.formats import read_utf8
from engine.formats.tiktoken import build_tiktoken
from webapp.tokenizers import open_install, preset_install, snapshots

INSTALL_COMMAND = "tokenforge presets install"


def installed_folder(data_dir: str | Path) -> Path:
    """Where ``tokenforge presets install`` keeps an instance's verified files."""
    return Path(data_dir) / "presets"


def build(name: str, folder: Path) -> Tokenizer:
    """The OpenAI preset ``name`` as an engine tokenizer, from the verified table in ``folder``."""
    encoding = TIKTOKEN_ENCODINGS[name]
    table = preset_install.read_table(folder, name)
    return build_tiktoken(table.entries, pattern=encoding.pattern, special_tokens=encoding.special_tokens,
                          name=encoding.title, source=preset_install.table_path(folder, name).name)


def by_name(name: str, folder: Path, config: Mapping[str, Any]) -> NamedFile | Tokenizer | None:
    """What the command line's ``-t NAME`` means when no file ``NAME`` exists
    (``engine.cli.NamedFile``): an open model's installed ``tokenizer.json`` (its
    ``tokenizer_config.json`` beside it gives the chat settings), an OpenAI encoding built from
    its installed table, or None for a name that is no preset; either through its snapshot in the
    data folder of the settings ``config``. A preset whose files are not in ``folder`` is an
    error that says how to install them."""
    if name in OPEN_MODELS:
        path = open_install.model_path(open_install.open_folder(folder), name)
        if path.is_file():
            return NamedFile(str(path), functools.partial(_read_open_model, path, config))
    elif name in TIKTOKEN_ENCODINGS:
        if preset_install.table_path(folder, name).is_file():
            source = f"{_engine_build()} {preset_install.TABLE_SHA256[name]} {TIKTOKEN_ENCODINGS[name]!r}"
            try:
                return snapshots.cached(source, functools.partial(build, name, folder), config)
            except preset_install.PresetInstallError as exc:
                raise ConfigError(str(exc)) from None
    else:
        return None
    raise ConfigError(f"There is no file {name!r}, and the preset {name!r} is not installed in {folder}: run "
                      f"`{INSTALL_COMMAND}` (with this TOKENFORGE_DATA_DIR) or give a file.")


def _read_open_model(path: Path, config: Mapping[str, Any]) -> Tokenizer:
    """An installed open model's tokenizer: its file read as any ``-t FILE`` is, parsed through its snapshot."""
    text = read_utf8(path, source=str(path))
    return snapshots.cached(f"{_engine_build()} {text}", lambda: Tokenizer.from_json(text), config)


@functools.cache
def _engine_build() -> str:
    """The engine's code, as a preset's snapshot name must say it: the snapshot stands for the files
    as this engine reads them, and another may read them otherwise (813e4f8 gave every rank file
    2.3 times the merges). So the size and time of each of its source files go in (~3 ms): any
    change to the engine, or another install of it, names new snapshots (a stored document is the
    engine's own writing, which reads back alike, so the web app's need none of this)."""
    return code_stamp(Path(engine.__file__).parent)


def code_stamp(root: Path) -> str:
    """A digest of the path, size and time of every Python source file under ``root``."""
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        stat = path.stat()
        digest.update(f"{path.relative_to(root)} {stat.st_size} {stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:16]
