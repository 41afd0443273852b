"""Which writing system a token is in: the classifier lives in the engine (``engine/token_scripts.py``),
which the vocabulary diff uses too; the playground's modules import it from here."""

from __future__ import annotations

from engine.token_scripts import MIXED, NAMED, NO_LETTERS, OTHER, PARTIAL, char_script, order, token_script

__all__ = ["MIXED", "NAMED", "NO_LETTERS", "OTHER", "PARTIAL", "char_script", "order", "token_script"]
