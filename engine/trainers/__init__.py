"""Trainers build tokenizers from corpora: one module per algorithm, one registry here.

``train(algorithm, files, options)`` is the single entry point the CLI and the web app's job
worker call. Each algorithm module exposes ``OPTIONS`` (its frozen options dataclass) and
``train(files, options, *, reporter) -> TrainResult``; modules are imported lazily so that
asking for the BPE options does not import the Unigram trainer. A *level* of a model can be
another module (``LEVELS``: ``--model bpe --level spm`` is ``bpe_spm``): its options join the
model's, and values that name the level are read and trained by that module.
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

# algorithm name -> module that implements it
TRAINERS: dict[str, str] = {
    "bpe": "engine.trainers.bpe",
    "wordpiece": "engine.trainers.wordpiece",
    "unigram": "engine.trainers.unigram",
    "wordlevel": "engine.trainers.baselines",
    "char": "engine.trainers.baselines",
    "byte": "engine.trainers.baselines",
}
# model -> {level: module}: a level trained by a module of its own. The module has ``OPTIONS``,
# ``LEVEL_HELP`` (added to the level's help), ``options_from(values, model_options)`` and ``train``.
LEVELS: dict[str, dict[str, str]] = {
    "bpe": {"spm": "engine.trainers.bpe_spm"},
}


def _module(algorithm: str) -> ModuleType:
    if algorithm not in TRAINERS:
        raise ConfigError(
            f"Unknown algorithm {algorithm!r}; choose one of: {', '.join(TRAINERS)}."
        )
    return importlib.import_module(TRAINERS[algorithm])


def options_class(algorithm: str) -> type:
    """The frozen options dataclass of ``algorithm``."""
    module = _module(algorithm)
    options = getattr(module, "OPTIONS")
    return options[algorithm] if isinstance(options, dict) else options


def _levels(algorithm: str) -> dict[str, ModuleType]:
    """The modules that train levels of ``algorithm``; one that does not import is left out."""
    found = {}
    for level, name in LEVELS.get(algorithm, {}).items():
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
    module = next((m for m in _levels(algorithm).values() if isinstance(opts, m.OPTIONS)), _module(algorithm))
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
