"""Rules the test suite keeps, checked on its own sources.

- A test module never imports another test module: what two modules share lives in a
  ``conftest.py`` or a support module (``tests/live.py``, ``tests/shared_data.py``, ...), so
  changing one test file cannot break another.
- The optional libraries the tests compare against (``tiktoken``, ``tokenizers``,
  ``sentencepiece``, ``transformers``, Dask) are never imported at a module's top level: a test
  asks for one with ``pytest.importorskip``, so a missing library skips the tests that need it
  instead of failing the collection of the whole file.
"""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent
OPTIONAL = ("tiktoken", "tiktoken_ext", "tokenizers", "sentencepiece", "transformers", "dask", "distributed")


def sources() -> list[Path]:
    return sorted(TESTS.rglob("*.py"))


def top_level_imports(tree: ast.Module) -> list[str]:
    """The modules imported by the module's own statements (not inside functions or classes)."""
    found = []
    for node in tree.body:
        if isinstance(node, ast.Import):
            found.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append(node.module)
    return found


def every_import(tree: ast.Module) -> list[str]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.extend([node.module, *(f"{node.module}.{alias.name}" for alias in node.names)])
    return found


def test_no_test_module_imports_another() -> None:
    found = {}
    for path in sources():
        names = [name for name in every_import(ast.parse(path.read_text(encoding="utf-8")))
                 if name.startswith("tests.") and name.rsplit(".", 1)[-1].startswith("test_")]
        if names:
            found[path.relative_to(TESTS).as_posix()] = names
    assert found == {}, "move what they share into a conftest.py or a support module"


def test_optional_libraries_are_not_imported_at_module_top() -> None:
    found = {}
    for path in sources():
        names = [name for name in top_level_imports(ast.parse(path.read_text(encoding="utf-8")))
                 if name.split(".")[0] in OPTIONAL]
        if names:
            found[path.relative_to(TESTS).as_posix()] = names
    assert found == {}, "ask for them with pytest.importorskip in the tests that need them"
