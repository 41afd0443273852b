"""Files an import keeps verbatim beside its ``tokenizer.json``: today, a sentencepiece ``.model``.

The database stores every tokenizer as its ``tokenizer.json``; a ``.model`` holds more than that
document can say exactly (USER_DEFINED pieces inside sentencepiece's whitespace rules, fields
we do not use), so an imported one is kept in the row's ``config`` (base64), the tokenizer is
rebuilt from it (``loaded.py``), and its download is the uploaded file, byte for byte.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

# The row's config key under which an imported file is kept verbatim (base64), by format: an
# imported .model downloads byte for byte as it came, with the fields we do not use.
ORIGINAL_KEYS = {"spm_model": "spm_model"}


def keep_original(kind: str, data: bytes | None) -> dict[str, str]:
    """What a row's config keeps of an import of ``kind`` (empty for formats we rebuild anyway)."""
    key = ORIGINAL_KEYS.get(kind)
    return {key: base64.b64encode(data).decode("ascii")} if key and data else {}


def originals(config: Mapping[str, Any]) -> dict[str, bytes]:
    """The files kept verbatim in a row's ``config``, by format key; a damaged one is left out."""
    found: dict[str, bytes] = {}
    for key, config_key in ORIGINAL_KEYS.items():
        value = config.get(config_key)
        if isinstance(value, str):
            try:
                found[key] = base64.b64decode(value, validate=True)
            except ValueError:
                continue
    return found
