"""Which writing system a token is in: the classifier lives in the engine (``engine/token_scripts.py``),
which the vocabulary diff uses too; the playground's modules import it from here."""

from __future__ import annotations

from engine import script_order as order
from engine import token_script

__all__ = ["order", "token_script"]
