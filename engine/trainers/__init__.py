"""Trainers build tokenizers from corpora: one module per algorithm, one registry here.

``train(algorithm, files, options)`` is the single entry point the CLI and the web app's job
worker call. Each algorithm has two modules (``TRAINERS``): one that exposes ``OPTIONS`` (its
frozen options dataclass) and one that exposes ``train(files, options, *, reporter) ->
TrainResult``. Both are imported when first needed, so that building every model's CLI flags
or form fields imports no trainer (the CLI pays the options alone before it trains one model).
A *level* of a model can have modules of its own (``LEVELS``: ``--model bpe --level spm`` is
``bpe_spm``): its options join the model's, and values that name the level are read and
trained by its modules.
"""

from __future__ import annotations

import dataclasses
import importlib
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from engine.errors import ConfigError
from engine.gc_pause import collector_paused
from engine.lazy_names import on_first_use
from engine.trainers.base import (
    CancelCheck,
    OptionSpec,
    ProgressCallback,
    Reporter,
    TrainResult,
    options_from_mapping,
    options_to_dict,
)
from engine.trainers.base import option_specs as _dataclass_specs

# Public names loaded on first use (engine/lazy_names.py): name -> the module that defines it.
_ON_FIRST_USE = {
    **dict.fromkeys(("check_address", "counting_on", "require_dask"), "engine.trainers.cluster"),
    "DOCUMENT_SEPARATOR": "engine.trainers.corpus",
    **dict.fromkeys(("NotEnoughMemory", "PatternTooSlow", "cpu_count", "pattern_budget"), "engine.trainers.limits"),
}
__getattr__, __dir__ = on_first_use(globals(), _ON_FIRST_USE)

# algorithm -> (the module of its options, the module that trains it)
TRAINERS: dict[str, tuple[str, str]] = {
    "bpe": ("engine.trainers.bpe_options", "engine.trainers.bpe"),
    "wordpiece": ("engine.trainers.wordpiece_options", "engine.trainers.wordpiece"),
    "unigram": ("engine.trainers.unigram.options", "engine.trainers.unigram.trainer"),
    **dict.fromkeys(("wordlevel", "char", "byte"), ("engine.trainers.baselines", "engine.trainers.baselines")),
}
# model -> {level: (the module of its options, the module that trains it)}: a level trained by
# modules of its own. The first has ``OPTIONS``, ``LEVEL_HELP`` (added to the level's help) and
# ``options_from(values, model_options)``; the second ``train``.
LEVELS: dict[str, dict[str, tuple[str, str]]] = {
    "bpe": {"spm": ("engine.trainers.bpe_spm_options", "engine.trainers.bpe_spm")},
}


def _modules(algorithm: str) -> tuple[str, str]:
    if algorithm not in TRAINERS:
        raise ConfigError(
            f"Unknown algorithm {algorithm!r}; choose one of: {', '.join(TRAINERS)}."
        )
    return TRAINERS[algorithm]


def options_class(algorithm: str) -> type:
    """The frozen options dataclass of ``algorithm``."""
    options = getattr(importlib.import_module(_modules(algorithm)[0]), "OPTIONS")
    return options[algorithm] if isinstance(options, dict) else options


def _levels(algorithm: str) -> dict[str, ModuleType]:
    """The options modules of the levels of ``algorithm`` trained apart; one that does not import
    is left out."""
    found = {}
    for level, (name, _) in LEVELS.get(algorithm, {}).items():
        try:
            found[level] = importlib.import_module(name)
        except ImportError:
            continue
    return found


def option_specs(algorithm: str) -> list[OptionSpec]:
    """The options of ``algorithm`` with types, defaults, help and choices (for forms and flags);
    a level trained by its own module adds its choice and the options the model lacks."""
    specs = _dataclass_specs(options_class(algorithm))
    for level, module in _levels(algorithm).items():
        names = {spec.name for spec in specs}
        specs = [dataclasses.replace(spec, choices=(*spec.choices, level), help=f"{spec.help} {module.LEVEL_HELP}")
                 if spec.name == "level" and spec.choices and level not in spec.choices else spec for spec in specs]
        specs += [spec for spec in _dataclass_specs(module.OPTIONS) if spec.name not in names]
    return specs


def make_options(algorithm: str, values: Mapping[str, Any] | object) -> object:
    """Validate untyped option values (or pass through an options instance) for ``algorithm``."""
    cls = options_class(algorithm)
    levels = _levels(algorithm)
    if isinstance(values, (cls, *(module.OPTIONS for module in levels.values()))):
        return values
    if not isinstance(values, Mapping):
        raise ConfigError(f"Options for {algorithm} must be a mapping or a {cls.__name__}.")
    level = values.get("level")
    if isinstance(level, str) and level.strip() in levels:
        return levels[level.strip()].options_from(values, cls)
    extra = {spec.name for module in levels.values() for spec in _dataclass_specs(module.OPTIONS)}
    extra -= {f.name for f in dataclasses.fields(cls)}
    return options_from_mapping(cls, {k: v for k, v in values.items() if k not in extra})


def train(
    algorithm: str,
    files: Sequence[str | Path],
    options: Mapping[str, Any] | object = (),
    *,
    progress: ProgressCallback | None = None,
    should_cancel: CancelCheck | None = None,
) -> TrainResult:
    """Train a tokenizer of kind ``algorithm`` on ``files`` and return it with its statistics."""
    opts = make_options(algorithm, options if options != () else {})
    paths = [Path(f) for f in files]
    if not paths:
        raise ConfigError("Training needs at least one corpus file.")
    for path in paths:
        if path.is_dir():
            raise ConfigError(f"Corpus file {str(path)!r} is a directory; give the files in it instead.")
        if not path.is_file():
            raise ConfigError(f"Corpus file {str(path)!r} does not exist.")
    started = time.perf_counter()
    level = next((level for level, m in _levels(algorithm).items() if isinstance(opts, m.OPTIONS)), None)
    module = importlib.import_module(LEVELS[algorithm][level][1] if level else _modules(algorithm)[1])
    with collector_paused():  # engine/gc_pause.py: ~5% of a training's CPU
        result: TrainResult = module.train(paths, opts, reporter=Reporter(progress, should_cancel))
    result.stats.setdefault("algorithm", algorithm)
    result.stats.setdefault("options", options_to_dict(opts))
    result.stats.setdefault("seconds", round(time.perf_counter() - started, 3))
    result.stats.setdefault("vocab_size", result.tokenizer.vocab_size)
    return result


__all__ = [
    "DOCUMENT_SEPARATOR",
    "LEVELS",
    "TRAINERS",
    "NotEnoughMemory",
    "OptionSpec",
    "PatternTooSlow",
    "Reporter",
    "TrainResult",
    "check_address",
    "counting_on",
    "cpu_count",
    "make_options",
    "option_specs",
    "options_class",
    "options_to_dict",
    "pattern_budget",
    "require_dask",
    "train",
]
