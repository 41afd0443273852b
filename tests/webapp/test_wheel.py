"""The wheel works without a checkout: built, installed in a fresh venv, migrated and served.

The build uses the test venv's setuptools without build isolation and without an index, so
nothing is downloaded. It runs on a copy of the sources in ``tmp_path`` (an in-tree build
writes ``build/`` and ``*.egg-info`` beside the sources). The fresh venv is made without pip;
the test venv's pip installs the wheel into it, and only afterwards does a ``.pth`` file lend
it the test venv's site-packages for the dependencies (Flask, SQLAlchemy, ...), so the
install itself can never touch the test venv. Every command runs from a folder that is not
the checkout and without ``PYTHONPATH``, so the code, templates, static files and migrations
can only come from the installed wheel.
"""

from __future__ import annotations

import os
import re
import shutil
import site
import subprocess
import sys
import tomllib
import urllib.error
import urllib.request
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.live import REPO, LiveApp
from webapp.assets import asset_dir

#: What a source distribution of Tokenforge holds; the wheel is built from a copy of these.
SOURCES = ("pyproject.toml", "setup.py", "README.md", "engine", "webapp", "templates", "static", "migrations")


def _run(args: list[str], cwd: Path, env: dict[str, str], timeout: float = 120) -> str:
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{args} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}"
    return done.stdout


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A fresh venv with the wheel installed; yields its bin folder."""
    root = tmp_path_factory.mktemp("wheel")
    source = root / "source"
    source.mkdir()
    for name in SOURCES:
        if (REPO / name).is_dir():
            shutil.copytree(REPO / name, source / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(REPO / name, source / name)
    env = {key: value for key, value in os.environ.items() if not key.startswith(("PYTHON", "PIP_"))}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    pip = [sys.executable, "-m", "pip"]
    _run([*pip, "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-w", str(root / "dist"), str(source)],
         cwd=root, env=env)
    (wheel,) = (root / "dist").glob("tokenforge-*.whl")

    venv = root / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], cwd=root, env=env)
    python = venv / "bin" / "python"
    _run([*pip, "--python", str(python), "install", "--no-deps", "--no-index", str(wheel)], cwd=root, env=env)
    purelib = _run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], root, env).strip()
    (Path(purelib) / "test_venv_dependencies.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    yield venv / "bin"


@pytest.fixture()
def elsewhere(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A working folder outside the checkout and an environment with a fresh data folder."""
    cwd = tmp_path / "elsewhere"
    cwd.mkdir()
    env = {key: value for key, value in os.environ.items()
           if not key.startswith("PYTHON") and key not in ("DATABASE_URL", "TOKENFORGE_CORPUS_DIR")}
    env["TOKENFORGE_DATA_DIR"] = str(tmp_path / "data")
    return cwd, env


@pytest.mark.slow
def test_the_wheel_ships_the_templates_static_files_and_migrations(installed: Path) -> None:
    (wheel,) = (installed.parent.parent / "dist").glob("tokenforge-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for folder in ("templates", "static", "migrations"):
        shipped = {p.relative_to(REPO / folder).as_posix() for p in (REPO / folder).rglob("*")
                   if p.is_file() and "__pycache__" not in p.parts}
        assert {f"webapp/{folder}/{name}" for name in shipped} <= names, folder
    assert "webapp/migrations/env.py" in names and "webapp/templates/base.html" in names


@pytest.mark.slow
def test_the_installed_package_is_the_one_imported(installed: Path, elsewhere: tuple[Path, dict[str, str]]) -> None:
    cwd, env = elsewhere
    version = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]
    assert _run([str(installed / "tokenforge"), "--version"], cwd, env) == f"tokenforge {version}\n"
    where = _run([str(installed / "python"), "-c", "import webapp.assets as a; print(a.asset_dir('templates'))"],
                 cwd, env).strip()
    assert Path(where) == installed.parent / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" \
        / "site-packages" / "webapp" / "templates"


@pytest.mark.slow
def test_migrate_then_serve_from_any_folder(installed: Path, elsewhere: tuple[Path, dict[str, str]]) -> None:
    cwd, env = elsewhere
    out = _run([str(installed / "tokenforge"), "migrate"], cwd, env)
    assert "The database is up to date" in out
    assert (Path(env["TOKENFORGE_DATA_DIR"]) / "tokenforge.sqlite3").is_file()

    server = LiveApp(Path(env["TOKENFORGE_DATA_DIR"]), command=[str(installed / "tokenforge")], base_env=env,
                     cwd=cwd)
    server.start()
    base = server.url.rstrip("/")
    try:
        with urllib.request.urlopen(f"{base}/login", timeout=10) as page:
            assert page.status == 200
            body = page.read().decode()
        assert 'name="password"' in body
        stylesheet = re.search(r'<link rel="stylesheet" href="(/static/css/app\.css[^"]*)"', body)
        assert stylesheet, body
        with urllib.request.urlopen(base + stylesheet.group(1), timeout=10) as css:
            assert css.status == 200
            assert css.read() == (REPO / "static" / "css" / "app.css").read_bytes()
    finally:
        server.stop()


def test_a_checkout_finds_the_folders_beside_the_package() -> None:
    assert [asset_dir(name) for name in ("templates", "static", "migrations")] == [
        REPO / "templates", REPO / "static", REPO / "migrations"]
    with pytest.raises(ValueError, match="'tests' is not one of the web app's folders"):
        asset_dir("tests")
