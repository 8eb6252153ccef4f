"""The package's import graph: layers as folders, every import running downward, no cycle.

Read from the source with ``ast`` (deferred imports inside functions included), so a cycle that
only shows at run time in some order is caught too. The layers, lowest first, are the ones the
README's "Layout" section describes.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "duckrank"

# Lowest first. A module may import its own package (folder) and any lower layer, nothing above.
LAYERS = (
    ("duckrank._version", "duckrank.lazy"),
    ("duckrank.seeded_hash", "duckrank.options", "duckrank.matching"),
    ("duckrank.metrics", "duckrank.stats", "duckrank.models", "duckrank.fusion",
     "duckrank.off_policy"),
    ("duckrank.render",),
    ("duckrank.hivemall",),
    ("duckrank.engines",),
    ("duckrank.files",),
    ("duckrank.evaluation",),
    ("duckrank.reports",),
    ("duckrank.cli", "duckrank.spark", "duckrank.dbt", "duckrank"),
)


def _modules() -> dict[str, Path]:
    modules = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join(parts)] = path
    return modules


def _imports(module: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The duckrank modules ``module`` imports (the longest known prefix of each name)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            assert node.level == 0, f"{module}: relative import"
            names = [f"{node.module}.{alias.name}" for alias in node.names]
        else:
            continue
        for name in names:
            while name and name not in modules:
                name = name.rpartition(".")[0]
            if name.startswith("duckrank") and name != module:
                found.add(name)
    return found


def _layer(module: str) -> tuple[int, str]:
    """(layer index, the package that owns ``module`` in that layer)."""
    best = None
    for index, owners in enumerate(LAYERS):
        for owner in owners:
            if (module == owner or module.startswith(owner + ".")) and (
                best is None or len(owner) > len(best[1])
            ):
                best = (index, owner)
    assert best is not None, f"{module} belongs to no layer: add it to LAYERS and the README"
    return best


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(name, path, modules) for name, path in modules.items()}


def test_every_import_runs_downward() -> None:
    upward = []
    for module, imported in _graph().items():
        level, owner = _layer(module)
        for target in imported:
            target_level, target_owner = _layer(target)
            same_package = target_owner == owner and owner != "duckrank"
            if target_level > level or (target_level == level and not same_package):
                upward.append(f"{module} -> {target}")
    assert upward == []


def test_no_import_cycle() -> None:
    graph = _graph()
    state: dict[str, int] = {}
    cycles = []

    def visit(module: str, stack: list[str]) -> None:
        state[module] = 1
        stack.append(module)
        for target in sorted(graph[module]):
            if target == "duckrank":  # the root only re-exports; nothing imports it but aliases
                continue
            if state.get(target) == 1:
                cycles.append(stack[stack.index(target):] + [target])
            elif not state.get(target):
                visit(target, stack)
        stack.pop()
        state[module] = 2

    for module in sorted(graph):
        if not state.get(module):
            visit(module, [])
    assert cycles == []


def test_each_folder_says_what_it_holds() -> None:
    for init in PACKAGE.rglob("__init__.py"):
        if "duckdb_capi" in init.parts:
            continue
        docstring = ast.get_docstring(ast.parse(init.read_text()))
        assert docstring, f"{init} has no docstring saying what the folder holds"


def test_public_paths_still_work() -> None:
    """The public API and its documented aliases (README "Layout")."""
    import duckrank
    import duckrank.dbt
    import duckrank.engines.dbt
    import duckrank.engines.spark
    import duckrank.spark

    assert duckrank.spark is duckrank.engines.spark
    assert callable(duckrank.spark.register)
    assert duckrank.dbt is duckrank.engines.dbt
    assert duckrank.dbt.Plugin.__module__ == "duckrank.engines.dbt"
    for name in ("connect", "register", "evaluate", "hive_sql", "__version__"):
        assert hasattr(duckrank, name)
