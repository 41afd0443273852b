"""Unigram trainer, as sentencepiece does it: seed, EM, prune by likelihood loss, finalize.

Training works on a table of distinct pre-tokens (``▁``-prefixed words, ``words``) with
counts, never on repeated sentences. Stages (numbered in :func:`train_on_counts`): bounds
(over-long words skipped, a table too big to seed here refused, ``bounds``) → required
characters (``character_coverage``) → the lattice workers start on the words and seed the
vocabulary (frequent right-branching substrings, ``seed``) → the corpus lattice (``lattice``)
→ repeat {``n_sub_iterations`` × (E-step, M-step, ``em``); prune to ``shrinking_factor`` of its
size, weighing pieces by their Viterbi counts (``prune``); stop once the vocabulary is at most
1.1 × ``vocab_size``} → finalize: the required characters, then the highest-scoring pieces until
``vocab_size``.

Tie-break rule: pieces with equal scores are ordered by the piece string (code point order); in
seeding, equal ``count × length`` goes to the smaller string; in pruning, equal loss keeps the
piece with the better seed rank. Required characters are never pruned.

The word counting (``counting.count_pretokens``) and the corpus passes (the lattice, the
E-step, the Viterbi counts and the pruning alternatives, ``parallel``) run on ``num_workers``
processes (default: one per CPU; one for a table too small to cut in slices), with the same
output for any number, and so does the seed (each worker cuts its words into segments, then
sorts one range of first characters, ``seed``); the M-step and the ranking run here.
The ``.model`` is written from the tokenizer (``engine.formats.spm_model``). Left out: user-defined
symbols, TSV input.

This package's own module loads nothing of the trainer (``engine/lazy_names.py``): the
options (``options``) and the parts sentencepiece-style BPE shares (``scripts``, ``seed``,
``segments``) import without the EM, the lattice and the worker pool; ``trainer`` runs the stages.

Internal: not part of the engine's API (``engine.PUBLIC_MODULES``).
"""

from __future__ import annotations

from engine.lazy_names import on_first_use
from engine.trainers.unigram.options import OPTIONS, UnigramOptions

# Public names loaded on first use: name -> the module that defines it.
_ON_FIRST_USE = {
    **dict.fromkeys(("MetaspaceSplit", "count_words"), "engine.trainers.unigram.words"),
    **dict.fromkeys(("SCORE_STEP", "build_tokenizer", "on_score_grid", "rounds_left", "train", "train_on_counts"),
                    "engine.trainers.unigram.trainer"),
}
__getattr__, __dir__ = on_first_use(globals(), _ON_FIRST_USE)

__all__ = ["OPTIONS", "MetaspaceSplit", "UnigramOptions", "build_tokenizer", "count_words", "train", "train_on_counts"]
