"""Files a row keeps verbatim beside its ``tokenizer.json``: today, a sentencepiece ``.model``.

The database stores every tokenizer as its ``tokenizer.json``; a ``.model`` holds more than that
document can say exactly (USER_DEFINED pieces inside sentencepiece's whitespace rules, fields
we do not use, and that a BPE merges by its pieces' scores: read back, the document is a
merge-list BPE), so an imported one is kept in the row's ``config`` (base64), the tokenizer is
rebuilt from it (``loaded.py``), and its download is the uploaded file, byte for byte. A
sentencepiece-style BPE trained here, or an extended ``.model``, keeps its ``.model`` the same
way (the job's child sends it, :func:`take_original` moves it into the config). The chat
settings of an imported ``tokenizer_config.json`` are kept in the config too (:func:`chat_settings`
reads them, for the chat page, the downloads and the extensions and merges that keep the base's ids).
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from engine import Tokenizer

# The row's config key under which an imported file is kept verbatim (base64), by format: an
# imported .model downloads byte for byte as it came, with the fields we do not use.
ORIGINAL_KEYS = {"spm_model": "spm_model"}


def keep_original(kind: str, data: bytes | None) -> dict[str, str]:
    """What a row's config keeps of an import of ``kind`` (empty for formats we rebuild anyway)."""
    key = ORIGINAL_KEYS.get(kind)
    return {key: base64.b64encode(data).decode("ascii")} if key and data else {}


def kept_model(tokenizer: Tokenizer) -> dict[str, str]:
    """What a row's config keeps of a tokenizer made here (trained, extended or merged) whose
    ``tokenizer.json`` does not say all of it: the ``.model`` of a sentencepiece BPE (read back,
    the document is a merge-list BPE) or of one grown from an imported ``.model`` (its
    ``spm_proto``, with the fields we do not use); nothing for the others."""
    if getattr(tokenizer, "spm_proto", None) is None and getattr(tokenizer.model, "level", "") != "spm":
        return {}
    from engine.formats.spm_model import dump_spm_model

    return keep_original("spm_model", dump_spm_model(tokenizer))


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


def chat_settings(config: Mapping[str, Any] | None) -> dict[str, Any]:
    """The ``chat`` entry (template, bos/eos/pad) an import kept of its ``tokenizer_config.json``
    in a tokenizer row's ``config``, or an extension or merge took from its base (empty when none)."""
    chat = (config or {}).get("chat")
    return chat if isinstance(chat, dict) else {}


def take_original(stats: dict[str, Any]) -> dict[str, str]:
    """The file a job's child kept (``stats["original"]``, made by :func:`keep_original`), taken out
    of the statistics for the row's config: it is the tokenizer, not a statistic."""
    original = stats.pop("original", None)
    return original if isinstance(original, dict) else {}


def stored_tokenizer(document: str | bytes) -> Tokenizer:
    """The tokenizer of a row's document as the job children read it: its ``tokenizer.json`` text,
    or the ``.model`` an import kept (:func:`originals`), which reads back exactly. Raises the
    engine's ``TokenforgeError`` on a document it cannot read."""
    from engine import Tokenizer
    from engine.formats.spm_model import load_spm_model

    return Tokenizer.from_json(document) if isinstance(document, str) else load_spm_model(document)

