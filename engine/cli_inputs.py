"""What the commands read: a tokenizer file, and a text file or standard input.

Shared by every command that takes ``-t TOKENIZER`` or a text (``cli.py``'s encode, eval and
diff, ``cli_extend.py``), so that they accept the same files and fail with the same sentences
(the readers' size bounds are ``engine.limits``').

Internal: not part of the engine's API (``engine.PUBLIC_MODULES``).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass

from engine.formats import read_utf8
from engine.limits import read_bytes
from engine.tokenizer import Tokenizer


@dataclass(frozen=True)
class NamedFile:
    """A named tokenizer that is a file (an installed open model): its ``path``, beside which its
    settings may lie, and ``load``, which makes the tokenizer that reading ``path`` makes, sooner
    where it can (the web app loads a snapshot of the parsed file: Gemma 3's 33 MB in ~0.3 s,
    not ~2 s)."""

    path: str
    load: Callable[[], Tokenizer]


Named = Callable[[str], "str | NamedFile | Tokenizer | None"]
"""What ``-t NAME`` may name besides a file, for a program that has such names (the web app's
installed presets): the path of the file to read instead, that file with a quicker way to load
it (:class:`NamedFile`), the tokenizer itself, or None when ``NAME`` names nothing. Asked only
when no file ``NAME`` exists, so a file always wins."""


def resolved(path: str, named: Named | None) -> str | NamedFile | Tokenizer:
    """``path``, or what ``named`` makes of it when no such file exists."""
    if named is None or path == "-" or os.path.exists(path):
        return path
    found = named(path)
    return path if found is None else found


def read_text(path: str) -> str:
    """The text of ``path`` (UTF-8, bounded), or standard input for ``-``."""
    if path == "-":
        return sys.stdin.read()
    return read_utf8(path, source=path)


def chat_settings_beside(path: str, named: Named | None = None) -> dict[str, object]:
    """The chat settings of the ``tokenizer_config.json`` beside the tokenizer file ``path``
    (Hugging Face's folder layout), or ``{}`` when there is none."""
    from pathlib import Path

    from engine.formats.transformers_config import MAX_CONFIG_BYTES, read_chat_settings

    found = resolved(path, named)
    if isinstance(found, Tokenizer):  # built from a name: no folder, no settings
        return {}
    path = found.path if isinstance(found, NamedFile) else found
    config = Path(path).with_name("tokenizer_config.json")
    if path == "-" or not config.is_file():
        return {}
    text = read_utf8(config, source=str(config), limit=MAX_CONFIG_BYTES)
    return read_chat_settings(text, source=str(config))


def load_tokenizer(path: str, named: Named | None = None) -> Tokenizer:
    """A tokenizer.json, or a sentencepiece .model (by its suffix, or not starting with "{"), or
    what ``named`` gives for ``path`` when no such file exists."""
    found = resolved(path, named)
    if isinstance(found, Tokenizer):
        return found
    if isinstance(found, NamedFile):
        return found.load()
    path = found
    data = read_bytes(path, source=path)
    if path.endswith(".model") or not data.lstrip()[:1] == b"{":  # tokenizer.json is an object
        from engine.formats.spm_model import load_spm_model

        return load_spm_model(data, source=path)
    return Tokenizer.from_json(data)
