"""The application factory is where the web app is wired: every blueprint is registered there.

``create_app`` imports each blueprint's module at the top and registers it; no other module
registers one, and no view imports another view's helpers from ``playground/views.py`` (they live in
``playground/encode_page.py``). ``tests/test_import_graph.py`` checks the whole graph for circles.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

from flask import Blueprint, Flask

from tests.webapp.conftest import login_as

WEBAPP = Path(__file__).resolve().parents[2] / "webapp"


def _calls(path: Path, name: str) -> bool:
    return any(isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == name
               for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))))


def _module(path: Path) -> str:
    """``webapp/playground/views.py`` -> ``playground.views`` (the name below ``webapp``)."""
    return ".".join(path.relative_to(WEBAPP).with_suffix("").parts)


def test_only_create_app_registers_blueprints() -> None:
    assert [_module(p) for p in sorted(WEBAPP.rglob("*.py")) if _calls(p, "register_blueprint")] == ["app"]


def test_every_blueprint_in_the_package_is_registered(app: Flask) -> None:
    defined = {}
    for path in sorted(WEBAPP.rglob("*.py")):
        if "Blueprint(" not in path.read_text(encoding="utf-8"):
            continue
        module = importlib.import_module(f"webapp.{_module(path)}")
        for value in vars(module).values():
            if isinstance(value, Blueprint) and value.import_name == module.__name__:
                defined[value.name] = _module(path)
    assert defined == {name: app.blueprints[name].import_name.removeprefix("webapp.") for name in app.blueprints}
    assert set(defined) == {"accounts", "teams", "sharing", "corpora", "tokenizers", "training", "leaderboard",
                            "playground", "compare", "vocab", "transfer", "api", "chat", "tokenizer_diff",
                            "tokenizer_merge", "tokenizer_extend"}


#: Where each URL's view lives (``docs/architecture.md``): the URL's first part names the area's
#: folder, but for a tokenizer's pages that another area owns, which name their area here.
URL_FOLDERS = {"account": "access", "login": "access", "logout": "access", "signup": "access", "teams": "access",
               "join": "access", "corpora": "corpora", "tokenizers": "tokenizers", "train": "training",
               "jobs": "training", "play": "playground", "compare": "playground", "leaderboards": "leaderboards",
               "import": "transfer", "s": "sharing", "api": "api"}
TOKENIZER_PAGES = {"play": "playground", "encode": "playground", "decode": "playground", "tokens": "playground",
                   "vocab": "playground", "insights": "playground", "chat": "chat", "downloads": "transfer",
                   "download": "transfer", "download.zip": "transfer", "share": "sharing"}


def test_the_url_map_reads_like_the_folder_list(app: Flask) -> None:
    """``/tokenizers/...`` is served from ``webapp/tokenizers/``, ``/train`` and ``/jobs`` from
    ``webapp/training/``, and so on; a tokenizer's page that another area owns is that area's."""
    misplaced = []
    for rule in app.url_map.iter_rules():
        parts = rule.rule.strip("/").split("/")
        if parts[0] in ("", "static", "healthz"):
            continue
        folder = URL_FOLDERS[parts[0]]
        if parts[0] == "tokenizers" and len(parts) > 2:
            folder = TOKENIZER_PAGES.get(parts[2], folder)
        module = app.view_functions[rule.endpoint].__module__
        if not module.startswith(f"webapp.{folder}."):
            misplaced.append((rule.rule, module))
    assert misplaced == []


def test_no_module_imports_the_playground_views() -> None:
    importers = []
    for path in sorted(WEBAPP.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module == "webapp.playground.views" or (
                    node.module == "webapp.playground" and any(a.name == "views" for a in node.names))):
                importers.append(_module(path))
    assert importers == ["app"]


def test_the_playground_template_globals_are_set(app: Flask) -> None:
    globals_ = app.jinja_env.globals
    assert {"spans_markup", "ids_markup", "play_url", "page_url", "compare_url", "visitor_token",
            "url_text"} <= set(globals_)
    assert globals_["url_text_limit"] == 2000


def test_every_page_names_its_icon_and_the_icon_is_served(app: Flask) -> None:
    client = app.test_client()
    page = client.get("/login").get_data(as_text=True)
    assert '<link rel="icon" href="/static/favicon.svg" type="image/svg+xml">' in page
    with client.get("/static/favicon.svg") as icon:
        assert (icon.status_code, icon.mimetype) == (200, "image/svg+xml") and b"<svg" in icon.data


def test_lists_answer_with_and_without_a_trailing_slash(app: Flask) -> None:
    client = login_as(app.test_client(), 1)
    assert [client.get(url).status_code for url in ("/leaderboards", "/leaderboards/", "/corpora/")] == [200] * 3
    assert client.get("/corpora").headers["Location"].endswith("/corpora/")
