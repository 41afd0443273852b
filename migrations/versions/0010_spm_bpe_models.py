"""sentencepiece-style BPE tokenizers trained before their ``.model`` was kept get it now.

A sentencepiece-style BPE (``--level spm``) trained in the app keeps its ``.model`` in the row's
``config["spm_model"]`` (``webapp/tokenizers/originals.py``): its ``tokenizer.json`` reads back as a
merge-list BPE, so without it the row offers no ``tokenizer.model`` download and its page calls
it another kind of BPE. Rows trained before that have only the document. The trainer numbers the
pieces so that their scores follow from their ids (``engine/trainers/bpe_spm.py``: the special
and byte pieces score 0, then piece ``i`` scores ``-(i - first)``), so the ``.model`` is rebuilt
from the document's vocabulary with the trainer's own pipeline, and kept only where it encodes a
set of sample texts exactly as the stored document does (a row that does not is left as it was).
Rows one at a time; ``size_bytes`` follows the grown config.

Downgrade leaves the kept files: the previous code reads a row with one as it reads an import's.

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-29 04:10:00
"""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0010'
down_revision: str | Sequence[str] | None = '0009'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

SAMPLES = ("Hello, world! The 2 cats sat on 1,234 mats.", "  indented\tcode(x) = y  ",
           "Ünïcödé façade, naïve café 日本語のテキスト 한국어 текст 🙂🚀", "<s> literal </s> <unk> ▁▁ ⁇", "")

_TOKENIZERS = sa.table("tokenizers", sa.column("id", sa.Integer), sa.column("algorithm", sa.String),
                       sa.column("source", sa.String), sa.column("config", sa.JSON),
                       sa.column("tokenizer_json", sa.Text), sa.column("size_bytes", sa.BigInteger))


def spm_model_of(document: str) -> bytes | None:
    """The ``.model`` of a stored sentencepiece-style BPE document, or None where the rebuilt
    tokenizer would not encode as the document does."""
    from engine import TokenforgeError, Tokenizer
    from engine.formats.spm_model import dump_spm_model
    from engine.trainers.bpe_spm import build_tokenizer
    from engine.trainers.bpe_spm_options import SPECIAL_TOKENS, SpmBpeOptions

    try:
        stored = Tokenizer.from_json(document)
        model = json.loads(document)["model"]
        byte_fallback = bool(model.get("byte_fallback"))
        vocab = sorted(model["vocab"].items(), key=lambda item: item[1])
        first = len(SPECIAL_TOKENS) + (256 if byte_fallback else 0)
        if [i for _, i in vocab] != list(range(len(vocab))) or len(vocab) <= first:
            return None
        pieces = [(piece, 0.0 if i < first else -float(i - first)) for piece, i in vocab]
        rebuilt = build_tokenizer(pieces, SpmBpeOptions(vocab_size=len(pieces), byte_fallback=byte_fallback))
        if any(rebuilt.encode(text, allowed_special="all") != stored.encode(text, allowed_special="all")
               for text in SAMPLES):
            return None
        return dump_spm_model(rebuilt)
    except (TokenforgeError, KeyError, TypeError, ValueError, AttributeError):
        return None


def upgrade() -> None:
    bind = op.get_bind()
    ids = bind.execute(sa.select(_TOKENIZERS.c.id).where(_TOKENIZERS.c.source == "trained",
                                                         _TOKENIZERS.c.algorithm == "bpe")
                       .order_by(_TOKENIZERS.c.id)).scalars().all()
    for row_id in ids:
        config, document, size = bind.execute(
            sa.select(_TOKENIZERS.c.config, _TOKENIZERS.c.tokenizer_json, _TOKENIZERS.c.size_bytes)
            .where(_TOKENIZERS.c.id == row_id)).one()
        if not isinstance(config, dict) or "spm_model" in config:
            continue
        options = config.get("options")
        if not isinstance(options, dict) or options.get("level") != "spm" or not isinstance(document, str):
            continue
        data = spm_model_of(document)
        if data is None:
            continue
        grown = {**config, "spm_model": base64.b64encode(data).decode("ascii")}
        bind.execute(sa.update(_TOKENIZERS).where(_TOKENIZERS.c.id == row_id).values(
            config=grown, size_bytes=(size or 0) + len(json.dumps(grown)) - len(json.dumps(config))))


def downgrade() -> None:
    pass
