"""Stored tokenizer documents keep their pieces now that a tokenizer.json regex means what Oniguruma reads.

Until this revision the engine read a ``Split`` pre-tokenizer's regex as Python's ``regex`` module
reads it; it now reads it as Hugging Face's Oniguruma does (``engine/onig.py``). The two differ
for a quantifier after an interval (the GPT-4 pattern's ``\\p{N}{1,3}+``, which Oniguruma reads as
any run of digits) and for ``^``/``$``. Every stored document was read the old way, and the GPT-4
preset and every tokenizer trained with the gpt4 pattern hold such a pattern, so each ``Split``
regex of a document's ``pre_tokenizer`` is rewritten with ``to_onig``: the same pieces under the
new reading, and in Hugging Face for the documents downloaded from now on. Patterns ``to_onig``
leaves as they are (Llama 3's, Qwen's, GPT-2's named pattern...) leave their document untouched.
A document is rewritten the way the engine writes one (``json.dumps(..., ensure_ascii=False,
indent=2)``), rows one at a time (a document can be tens of MB), and ``size_bytes`` follows.

Downgrade leaves the documents as they are: the previous code reads a rewritten pattern as it read
the old one (an atomic group is its possessive interval, ``\\A`` its ``^``), except that its
``\\Z`` does not hold before a final newline where its ``$`` did; the named patterns' ``\\s++$``
takes that newline anyway.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-28 11:40:00
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op

from engine.onig import to_onig

revision: str = '0009'
down_revision: str | Sequence[str] | None = '0008'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _rewritten(step: Any) -> bool:
    """Rewrite the Split regexes of a pre-tokenizer object in place; whether any changed."""
    if not isinstance(step, dict):
        return False
    if step.get("type") == "Sequence" and isinstance(step.get("pretokenizers"), list):
        return any([_rewritten(inner) for inner in step["pretokenizers"]])  # a list: rewrite every step
    pattern = step.get("pattern")
    if step.get("type") != "Split" or not isinstance(pattern, dict) or not isinstance(pattern.get("Regex"), str):
        return False
    spelled = to_onig(pattern["Regex"])
    if spelled == pattern["Regex"]:
        return False
    pattern["Regex"] = spelled
    return True


def upgrade() -> None:
    bind = op.get_bind()
    ids = [row[0] for row in bind.execute(sa.text(
        "SELECT id FROM tokenizers WHERE tokenizer_json LIKE '%\"Split\"%' ORDER BY id"))]
    for row_id in ids:
        document, size = bind.execute(sa.text("SELECT tokenizer_json, size_bytes FROM tokenizers WHERE id = :id"),
                                      {"id": row_id}).one()
        try:
            data = json.loads(document)
        except ValueError:
            continue  # never written by the engine; left for the reader to refuse, as before
        if not isinstance(data, dict) or not _rewritten(data.get("pre_tokenizer")):
            continue
        text = json.dumps(data, ensure_ascii=False, indent=2)
        grown = len(text.encode("utf-8")) - len(document.encode("utf-8"))
        bind.execute(sa.text("UPDATE tokenizers SET tokenizer_json = :text, size_bytes = :size WHERE id = :id"),
                     {"text": text, "size": size + grown, "id": row_id})


def downgrade() -> None:
    pass
