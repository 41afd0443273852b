"""The packages' import graph has no circle, and the engine never imports the web app.

Every ``import`` and ``from … import`` of a module inside ``engine`` or ``webapp`` counts, at
the top of a file or inside a function alike: an import moved into a function still ties the
two modules together, it only hides the circle from Python.
"""

from __future__ import annotations

import ast

from tests.project_imports import REPO, imports_of, module_name

PACKAGES = ("engine", "webapp")


def import_graph() -> dict[str, set[str]]:
    files = [p for package in PACKAGES for p in (REPO / package).rglob("*.py")]
    modules = {module_name(p) for p in files}
    graph = {module_name(p): imports_of(p, modules) for p in files}
    for module, targets in graph.items():  # a package's __init__ is not a dependency of its own modules
        targets.discard(module)
        targets.difference_update({t for t in targets if module.startswith(t + ".")})
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_import_circles() -> None:
    assert circles(import_graph()) == []


def test_the_engine_never_imports_the_web_app() -> None:
    graph = import_graph()
    assert {(m, t) for m, targets in graph.items() if m.startswith("engine") for t in targets
            if t.startswith("webapp")} == set()


def test_the_frame_and_the_store_import_no_area() -> None:
    """``webapp.web`` (the frame) and ``webapp.store`` (the database) sit under every area: they
    import no area package, so any area can use them without a layering knot. (``webapp.assets``,
    the package's folders, sits below everything.)"""
    graph = import_graph()
    below = ("webapp.web.", "webapp.store.", "webapp.assets")
    upward = {(m, t) for m, targets in graph.items() if m.startswith(below) for t in targets
              if t.startswith("webapp.") and not t.startswith(below)}
    assert upward == set()


AREAS = ("access", "api", "chat", "corpora", "leaderboards", "playground", "sharing", "tokenizers", "training",
         "transfer")


def test_the_job_queue_imports_no_area() -> None:
    """``webapp.jobs`` (the queue, the worker, the supervisor) sits under every area: it knows a
    kind of job only through what the areas register (``jobs/kinds.py``), never by importing one,
    nor the modules above the areas (``app``, ``cli``, ``job_kinds``) that import them all."""
    graph = import_graph()
    assert {"webapp.jobs.queue", "webapp.jobs.worker", "webapp.jobs.kinds"} <= set(graph)
    reached = {t for m, targets in graph.items() if m.startswith("webapp.jobs.") for t in targets}
    assert {t for t in reached if t.split(".")[1] in AREAS} == set()
    assert {t for t in reached if t.startswith("webapp.")
            and not t.startswith(("webapp.jobs.", "webapp.store.", "webapp.web.", "webapp.assets"))} == set()


#: ``webapp``'s parts from the bottom up: each may import only parts at or below it. The frame and
#: the queue first; then the areas, each after those it uses; the share-link pages and the API,
#: which open every area; then the modules that assemble them all.
LAYERS = ("assets", "store", "web", "jobs", "access", "corpora", "tokenizers", "training", "playground", "chat",
          "leaderboards", "transfer", "sharing", "api", "job_kinds", "app", "cli")
#: The imports allowed to run back up, each with its reason (issue #26 allows three).
UPWARD = {
    # Deleting a team deletes its corpora's stored files; the store of files is the corpora area's.
    ("webapp.access.teams", "webapp.corpora.storage"),
}


def test_each_part_of_the_web_app_imports_only_parts_below_it() -> None:
    graph = import_graph()

    def layer(module: str) -> str | None:
        parts = module.split(".")
        return parts[1] if parts[0] == "webapp" and len(parts) > 1 else None

    assert {layer(m) for m in graph} - {None} == set(LAYERS)  # a new part of webapp/ takes its place here
    upward = {(m, t) for m, targets in graph.items() if layer(m) for t in targets
              if layer(t) and LAYERS.index(layer(t)) > LAYERS.index(layer(m))}  # type: ignore[arg-type]
    assert upward == UPWARD


def test_the_graph_sees_the_web_app_packages() -> None:
    """Modules two levels down count, under their dotted names, with ``from package import module``."""
    graph = import_graph()
    assert {"webapp.jobs.queue", "webapp.store.models"} <= graph["webapp.jobs.worker"]
    assert "webapp.playground.views" in graph["webapp.app"]


def test_the_web_app_package_files_only_say_what_their_area_covers() -> None:
    """Each ``webapp/<area>/__init__.py`` is a docstring alone: importing a module of an area runs
    nothing else, which is why the graph may leave the packages themselves out."""
    for init in sorted((REPO / "webapp").rglob("__init__.py")):
        body = ast.parse(init.read_text(encoding="utf-8")).body
        assert len(body) == 1 and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant), init


def test_the_circle_finder_finds_circles() -> None:
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": set()}) == []
