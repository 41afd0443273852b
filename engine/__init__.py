"""Tokenforge's tokenizer engine: Python on ``regex``, with numpy for the hot numeric work.

**The public API** is what the modules of :data:`PUBLIC_MODULES` list in their ``__all__``, and it
is all the web app uses (``tests/test_engine_api.py`` checks):

- ``engine`` (this file): load, build, encode and decode tokenizers (:class:`Tokenizer`, the models,
  the pipeline's parts, the presets' catalogues), train (``train``), evaluate (``evaluate``), the
  errors, the bounds a caller shows, and three tools the web app's pages use: the vocabulary diff
  (``diff``, ``line_diff``), the writing system of a token (``token_script``) and the parsed-BPE
  cache files (``snapshot_of``, ``load_snapshot``);
- ``engine.trainers``: the trainers' options, the corpus's document separator, the training bounds,
  counting on a Dask cluster;
- ``engine.extend``: extending a tokenizer with new tokens, and merging two vocabularies;
- ``engine.formats`` and its format modules (``gpt2``, ``tiktoken``, ``js_tiktoken``, ``spm``,
  ``spm_model``, ``vocab_txt``, ``transformers_config``): files other than ``tokenizer.json``,
  which ``Tokenizer.from_json`` / ``to_json`` read and write;
- ``engine.cli``: the engine's commands, for a program that adds them to its own parser;
- ``engine.processes``: child processes that die with their parent, shared with the web app's jobs,
  and what the entry points set for their own process.

**The rule:** each module of :data:`PUBLIC_MODULES` defines ``__all__``, its API. Every other
module is internal, and its docstring ends by saying so ("Internal: not part of the engine's
API"): it may change in any commit, and code outside the engine imports its names from a public
module (tests may import internals). ``tests/test_engine_api.py`` checks both, and that
``webapp/`` imports nothing else; ``docs/architecture.md`` has the same list.

Import cost: ``import engine`` loads only what loading and encoding need. The three tools above,
and the Dask and training-bound names of ``engine.trainers``, load their modules on first use
(``lazy_names.py``), so ``tokenforge --help`` does not pay for them.
"""

from __future__ import annotations

from engine.ascii_split import pretoken_split
from engine.errors import (
    ConfigError,
    EncodeTimeout,
    FormatError,
    SpecialTokenError,
    TokenforgeError,
    TrainingCancelled,
    UnknownTokenIdError,
)
from engine.lazy_names import on_first_use
from engine.limits import MAX_VOCAB_SIZE, shown, time_budget
from engine.metrics import evaluate
from engine.models.baselines import ByteLevel, CharLevel, MaxMatch, WordLevel
from engine.models.bpe import BPE
from engine.models.unigram import Unigram
from engine.models.wordpiece import WordPiece
from engine.normalizers import get_normalizer
from engine.offsets import SpanColumns, TokenSpan
from engine.presets import IM_SEP, OPEN_MODELS, TIKTOKEN_ENCODINGS, byte_level_bpe
from engine.pretokenizers import PATTERNS, get_pretokenizer
from engine.special_tokens import AllowedSpecial, SpecialTokens
from engine.tokenizer import Tokenizer
from engine.trainers import TrainResult, option_specs, train

#: The modules whose ``__all__`` is the engine's API; every other module is internal.
PUBLIC_MODULES = (
    "engine",
    "engine.cli",
    "engine.extend",
    "engine.formats",
    "engine.formats.gpt2",
    "engine.formats.js_tiktoken",
    "engine.formats.spm",
    "engine.formats.spm_model",
    "engine.formats.tiktoken",
    "engine.formats.transformers_config",
    "engine.formats.vocab_txt",
    "engine.processes",
    "engine.trainers",
)

#: Public names whose module is loaded on first use: name -> the internal module that defines it.
_ON_FIRST_USE = {
    **dict.fromkeys(("LineDiff", "VocabDiff", "diff", "line_diff"), "engine.vocab_diff"),
    "shown_piece": "engine.vocab_diff_report",
    **dict.fromkeys(("script_order", "token_script"), "engine.token_scripts"),
    **dict.fromkeys(("SNAPSHOT_VERSION", "SnapshotError", "load_snapshot", "snapshot_of"), "engine.snapshot"),
}


__getattr__, __dir__ = on_first_use(globals(), _ON_FIRST_USE)

__all__ = [
    "BPE",
    "IM_SEP",
    "MAX_VOCAB_SIZE",
    "OPEN_MODELS",
    "PATTERNS",
    "PUBLIC_MODULES",
    "TIKTOKEN_ENCODINGS",
    "AllowedSpecial",
    "ByteLevel",
    "CharLevel",
    "MaxMatch",
    "SpanColumns",
    "SpecialTokens",
    "TrainResult",
    "Unigram",
    "WordLevel",
    "WordPiece",
    "ConfigError",
    "EncodeTimeout",
    "FormatError",
    "SpecialTokenError",
    "TokenSpan",
    "Tokenizer",
    "TokenforgeError",
    "TrainingCancelled",
    "UnknownTokenIdError",
    "byte_level_bpe",
    "evaluate",
    "get_normalizer",
    "get_pretokenizer",
    "option_specs",
    "pretoken_split",
    "shown",
    "time_budget",
    "train",
    *_ON_FIRST_USE,
]
