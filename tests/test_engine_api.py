"""The engine's public API is declared, and the web app uses nothing else.

``engine.PUBLIC_MODULES`` lists the public modules; each defines ``__all__``, every name of which
exists, and every other engine module's docstring says it is internal (``engine/__init__.py``
states the rule). ``webapp/`` imports engine modules only from that list (its function-level
imports too), and only names in their ``__all__``. Tests may import internals.
"""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

import engine
from tests.project_imports import REPO, imports_of, module_name

MARK = "Internal: not part of the engine's API (``engine.PUBLIC_MODULES``)."


def engine_modules() -> dict[str, Path]:
    return {module_name(path): path for path in sorted((REPO / "engine").rglob("*.py"))}


def names_imported_from_engine(path: Path) -> set[tuple[str, str]]:
    """``(module, name)`` for every ``from engine... import name`` in ``path``."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "engine":
            found |= {(node.module, alias.name) for alias in node.names}
    return found


def test_every_public_module_declares_its_api() -> None:
    modules = engine_modules()
    assert set(engine.PUBLIC_MODULES) <= set(modules)
    for name in engine.PUBLIC_MODULES:
        module = importlib.import_module(name)
        assert isinstance(getattr(module, "__all__", None), list), f"{name} has no __all__"
        missing = [n for n in module.__all__ if not hasattr(module, n)]
        assert missing == [], f"{name}.__all__ names what it lacks: {missing}"


def test_every_other_module_says_it_is_internal() -> None:
    unmarked = []
    for name, path in engine_modules().items():
        if name in engine.PUBLIC_MODULES:
            continue
        docstring = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
        if not docstring.endswith(MARK):
            unmarked.append(name)
    assert unmarked == []


def test_the_web_app_imports_only_the_public_api() -> None:
    modules = set(engine_modules())
    internal: set[tuple[str, str]] = set()
    for path in sorted((REPO / "webapp").rglob("*.py")):
        where = str(path.relative_to(REPO))
        internal |= {(where, m) for m in imports_of(path, modules) if m not in engine.PUBLIC_MODULES}
        for module, name in names_imported_from_engine(path):
            public = module in engine.PUBLIC_MODULES
            if public and name not in importlib.import_module(module).__all__ and f"{module}.{name}" not in modules:
                internal.add((where, f"{module}.{name}"))
    assert internal == set()


def test_the_checker_sees_an_internal_import(tmp_path: Path) -> None:
    module = tmp_path / "view.py"
    module.write_text("def f():\n    from engine.models.bpe import BPE\n    from engine import Tokenizer\n")
    assert imports_of(module, set(engine_modules())) == {"engine", "engine.models.bpe"}


def test_the_names_loaded_on_first_use_leave_the_start_up_alone() -> None:
    """``import engine`` loads neither the vocabulary diff, the snapshots, the script classifier nor
    the trainers' Dask hooks and bounds (``engine/lazy_names.py``); asking for a name loads its module."""
    lazy = ["engine.vocab_diff", "engine.snapshot", "engine.token_scripts", "engine.trainers.cluster",
            "engine.trainers.corpus", "engine.trainers.limits"]
    code = (f"import sys, engine, engine.trainers; lazy = {lazy!r}; print([m for m in lazy if m in sys.modules]);"
            "engine.diff; engine.trainers.DOCUMENT_SEPARATOR; print([m for m in lazy if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO).stdout
    assert out.splitlines() == ["[]", "['engine.vocab_diff', 'engine.token_scripts', 'engine.trainers.corpus']"]
    with pytest.raises(AttributeError, match="module 'engine' has no attribute 'nonexistent'"):
        engine.nonexistent
    assert "diff" in dir(engine)


def test_building_the_command_line_imports_no_trainer() -> None:
    """Every model's flags come from its options module (``engine.trainers.TRAINERS``), so building
    the parser imports neither numpy nor a module that trains (a refused ``tokenforge train``
    answered in 0.24 s when it did, 0.13 s now); sentencepiece-style BPE loads the Unigram
    package's shared parts without its stages."""
    modules = ["numpy", "engine.trainers.bpe", "engine.trainers.bpe_spm", "engine.trainers.wordpiece",
               "engine.trainers.unigram.trainer", "engine.trainers.counting"]
    code = (f"import sys; from webapp.cli import build_parser; build_parser(); "
            f"print([m for m in {modules!r} if m in sys.modules]); import engine.trainers.bpe_spm; "
            f"print('engine.trainers.unigram.trainer' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO).stdout
    assert out.splitlines() == ["[]", "False"]
