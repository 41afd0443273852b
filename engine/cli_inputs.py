"""What the commands read: a tokenizer file, and a text file or standard input.

Shared by every command that takes ``-t TOKENIZER`` or a text (``cli.py``'s encode, eval and
diff, ``cli_extend.py``), so that they accept the same files and fail with the same sentences
(the readers' size bounds are ``engine.limits``').

Internal: not part of the engine's API (``engine.PUBLIC_MODULES``).
"""

from __future__ import annotations

import sys

from engine.formats import read_utf8
from engine.limits import read_bytes
from engine.tokenizer import Tokenizer


def read_text(path: str) -> str:
    """The text of ``path`` (UTF-8, bounded), or standard input for ``-``."""
    if path == "-":
        return sys.stdin.read()
    return read_utf8(path, source=path)


def chat_settings_beside(path: str) -> dict[str, object]:
    """The chat settings of the ``tokenizer_config.json`` beside the tokenizer file ``path``
    (Hugging Face's folder layout), or ``{}`` when there is none."""
    from pathlib import Path

    from engine.formats.transformers_config import MAX_CONFIG_BYTES, read_chat_settings

    config = Path(path).with_name("tokenizer_config.json")
    if path == "-" or not config.is_file():
        return {}
    text = read_utf8(config, source=str(config), limit=MAX_CONFIG_BYTES)
    return read_chat_settings(text, source=str(config))


def load_tokenizer(path: str) -> Tokenizer:
    """A tokenizer.json, or a sentencepiece .model (by its suffix, or not starting with "{")."""
    data = read_bytes(path, source=path)
    if path.endswith(".model") or not data.lstrip()[:1] == b"{":  # tokenizer.json is an object
        from engine.formats.spm_model import load_spm_model

        return load_spm_model(data, source=path)
    return Tokenizer.from_json(data)
