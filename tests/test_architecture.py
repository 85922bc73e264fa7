"""The package's modules import in one direction: a declared order of layers, no cycles.

Every import counts (module level, inside functions, under ``TYPE_CHECKING``), relative or
absolute; only the package's own modules are nodes. The layers are written down here and in
the package docstring (:mod:`thors_stream`); a new module must be placed in one.
"""

from __future__ import annotations

import ast
import pathlib

import pytest

import thors_stream

PKG = pathlib.Path(thors_stream.__file__).parent

# lowest first: a module may import modules of its own layer or below, never above
LAYERS: list[tuple[str, set[str]]] = [
    ("foundations: validation, costs, version", {"_version", "_validation", "costs", "margin"}),
    ("rows and containers", {"rows", "_queue", "_prefix", "_prefix_blocks", "_prefix_bulk", "_ledger",
                             "_checkpoint_check", "checkpoint", "_files", "_keys"}),
    ("the tree (compiled or numpy)", {"_core", "_backend"}),
    ("bounds", {"_band", "bounds", "planner"}),
    ("the result of a selection", {"result", "plotting"}),
    ("selection on rows", {"neyman_pearson"}),
    ("arrays and streams", {"batch", "stream", "_stream_lock", "_stream_state", "_stream_np", "_stream_windows",
                            "_stream_store"}),
    ("built on them", {"selection", "segments", "event_costs", "multiclass", "release", "metrics",
                        "margin_stream", "store", "_store_sqlite", "_store_pending", "_store_loop"}),
    ("integrations and entry points", {"river", "_river_base", "_river_money", "_river_pending", "_river_state",
                                       "sklearn", "dask", "io", "cli", "demo", "money", "__main__",
                                       "__init__", "service", "cli_serve", "cli_common", "cli_fit", "cli_baseline",
                                       "cli_replay", "cli_replay_segments", "cli_monitor"}),
]


def _modules() -> set[str]:
    return {p.stem for p in PKG.glob("*.py")}


def _target(importer: str, node: ast.ImportFrom | ast.Import, modules: set[str]) -> list[str]:
    """The package modules an import statement names."""
    out: list[str] = []
    if isinstance(node, ast.Import):
        for alias in node.names:
            parts = alias.name.split(".")
            if parts[0] == "thors_stream":
                out.append(parts[1] if len(parts) > 1 else "__init__")
        return out
    if node.level == 0:
        parts = (node.module or "").split(".")
        if parts[0] != "thors_stream":
            return out
        base = parts[1:]
    elif node.level == 1:
        base = (node.module or "").split(".") if node.module else []
    else:  # pragma: no cover - the package is flat
        raise AssertionError(f"{importer}: relative import beyond the package")
    if base:
        out.append(base[0])
    else:  # from . import x / from thors_stream import x: x is a module or a name of __init__
        out.extend(a.name if a.name in modules else "__init__" for a in node.names)
    return out


def import_graph() -> dict[str, set[str]]:
    modules = _modules()
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for m in modules:
        tree = ast.parse((PKG / f"{m}.py").read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for t in _target(m, node, modules):
                    if t != m and t in modules:
                        graph[m].add(t)
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(u: str) -> list[str] | None:
        state[u] = 1
        stack.append(u)
        for v in sorted(graph[u]):
            if state.get(v) == 1:
                return stack[stack.index(v):] + [v]
            if v not in state:
                found = visit(v)
                if found:
                    return found
        stack.pop()
        state[u] = 2
        return None

    for u in sorted(graph):
        if u not in state:
            found = visit(u)
            if found:
                return found
    return None


def test_no_module_imports_a_module_that_imports_it_back():
    cycle = _cycle(import_graph())
    assert cycle is None, " -> ".join(cycle or [])


def test_every_module_has_a_layer_and_imports_only_its_layer_or_below():
    layer_of: dict[str, int] = {}
    for i, (_, names) in enumerate(LAYERS):
        for name in names:
            assert name not in layer_of, f"{name} in two layers"
            layer_of[name] = i
    graph = import_graph()
    unplaced = sorted(set(graph) - set(layer_of))
    assert not unplaced, f"modules without a layer: {unplaced}"
    upward = [(u, v) for u, vs in graph.items() for v in vs if layer_of[v] > layer_of[u]]
    assert not upward, "imports pointing up the layers: " + ", ".join(
        f"{u} ({LAYERS[layer_of[u]][0]}) -> {v} ({LAYERS[layer_of[v]][0]})" for u, v in sorted(upward))


def test_the_layers_are_documented_in_the_package_docstring():
    doc = thors_stream.__doc__ or ""
    for title, _ in LAYERS:
        assert title in doc, f"layer {title!r} is not described in thors_stream.__doc__"


@pytest.mark.parametrize("source, expected", [
    ("from .batch import x", {"batch"}),
    ("from . import cli", {"cli"}),
    ("from . import __version__", {"__init__"}),
    ("from thors_stream._validation import check", {"_validation"}),
    ("import thors_stream.stream", {"stream"}),
    ("def f():\n    from .bounds import threshold_bounds", {"bounds"}),
    ("import numpy", set()),
])
def test_the_import_scanner_sees_every_form(source, expected):
    modules = _modules()
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.update(_target("x", node, modules))
    assert found == expected


def test_a_cycle_is_detected():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None
