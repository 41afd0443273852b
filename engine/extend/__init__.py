"""Extend a tokenizer with a team's corpus: new tokens after the base's, its ids unchanged.

``extend_bpe(base, files, ExtendOptions(add=N))`` continues a byte-level BPE's merges on the
corpus (``bpe.py``), by default only where the base falls back on bytes (``protect.py``); a
character-level BPE (Llama 2, Mistral, Gemma style tokenizer.json) gets new characters by coverage
and then merges (``char_bpe.py``, ``char_coverage.py``), through the same ``extend_bpe``.
Unigram and WordPiece bases go to ``unigram.py`` and ``wordpiece.py``. ``build_report`` measures
the result (``report.py``). ``merge.merge_vocabularies`` is the other way in: append a donor's
pieces as Chinese-LLaMA's ``merge_tokenizers.py`` does, its costs measured by the same report.
A sentencepiece BPE ``.model`` is extended as its tokenizer.json form and the new pieces are
appended to its proto (``spm_bpe.py``). The commands are ``engine/cli_extend.py`` and
``engine/cli_merge.py``.
"""

from __future__ import annotations

from engine.extend.bpe import extend_bpe
from engine.extend.merge import POLICIES, merge_vocabularies
from engine.extend.options import SUPPORTED, ExtendOptions, Extension, check_extendable
from engine.extend.report import build_report, measure, report_lines, split_held_out

__all__ = ["POLICIES", "SUPPORTED", "ExtendOptions", "Extension", "build_report", "check_extendable", "extend_bpe",
           "measure", "merge_vocabularies", "report_lines", "split_held_out"]
