"""Extend a tokenizer with a team's corpus: new tokens after the base's, its ids unchanged.

``extend_bpe(base, files, ExtendOptions(add=N))`` continues a byte-level BPE's merges on the
corpus (``bpe.py``), by default only where the base falls back on bytes (``protect.py``); a
character-level BPE (Llama 2, Mistral, Gemma style tokenizer.json) gets new characters by coverage
and then merges (``char_bpe.py``, ``char_coverage.py``), through the same ``extend_bpe``.
``build_report`` measures the result (``report.py``). The ``tokenforge extend`` command is
``engine/cli_extend.py``. Left out so far: sentencepiece ``.model`` BPE (refused, pointing to the
tokenizer.json form), Unigram and WordPiece bases, which are refused with one sentence naming
what is supported.
"""

from __future__ import annotations

from engine.extend.bpe import extend_bpe
from engine.extend.options import SUPPORTED, ExtendOptions, Extension, check_extendable
from engine.extend.report import build_report, measure, report_lines, split_held_out

__all__ = ["SUPPORTED", "ExtendOptions", "Extension", "build_report", "check_extendable", "extend_bpe", "measure",
           "report_lines", "split_held_out"]
