"""Public names whose module loads on first use (PEP 562's module ``__getattr__``).

``import engine`` is what ``tokenforge --help`` and every web process pay first, so a public name
whose module is slow to import and seldom needed (the vocabulary diff, the Dask hooks) is
listed here instead of imported: the package's ``__getattr__`` imports the module the first time
the name is asked for, and keeps the value, so later look-ups are plain attribute reads.

Internal: not part of the engine's API (``engine.PUBLIC_MODULES``).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def on_first_use(namespace: dict[str, Any], table: Mapping[str, str]) -> tuple[Callable[[str], Any],
                                                                            Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of the package whose ``globals()`` is ``namespace``:
    ``table`` maps each lazy name to the module that defines it."""
    package = namespace["__name__"]

    def __getattr__(name: str) -> Any:
        module = table.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *table})

    return __getattr__, __dir__
