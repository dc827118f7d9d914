"""The package's shape (docs/DESIGN.md, "The Python package"): its layers import downwards only (core <- run <-
tuner <- analysis <- cli), no module imports itself again through others (a cycle, however it is held apart),
and no module grows past 400 lines. Read from the source with ast: every import counts, at module level or inside
a function, and so does a module named in a string for importlib (the CLI's command table)."""
from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "autopager"
LAYERS = ("core", "run", "tuner", "analysis", "cli")  # each may import only its own and the ones before it
MOST_LINES = 400
NAMED = re.compile(r"^(autopager(?:\.\w+)+)(?::\w+)?$")


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def layer(module: str) -> int:
    parts = module.split(".")
    return LAYERS.index(parts[1]) if len(parts) > 2 or (len(parts) == 2 and parts[1] in LAYERS) else 0


def imported(module: str) -> set[str]:
    """The package's modules that ``module`` imports, or names for importlib (not its own packages: Python runs
    those first anyway)."""
    names = set()
    for node in ast.walk(ast.parse(MODULES[module].read_text())):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names |= {f"{node.module}.{alias.name}" for alias in node.names}
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and NAMED.match(node.value):
            names.add(NAMED.match(node.value).group(1))
    return {name for name in names if name in MODULES and name != module and not module.startswith(name + ".")}


GRAPH = {module: imported(module) for module in MODULES}


def test_the_graph_reads_the_package():
    assert {"autopager.pager", "autopager.run.runner", "autopager.tuner.study", "autopager.analysis.report",
            "autopager.cli.main"} <= set(MODULES)
    assert "autopager.cli.tune" in GRAPH["autopager.cli.main"]  # named in the command table, imported on use


def test_no_import_cycle():
    done: set[str] = set()

    def visit(module: str, path: list[str]) -> None:
        if module in path:
            pytest.fail("import cycle: " + " -> ".join(path[path.index(module):] + [module]))
        if module in done:
            return
        for other in sorted(GRAPH[module]):
            visit(other, path + [module])
        done.add(module)

    for module in MODULES:
        visit(module, [])


def test_layers_import_downwards():
    upward = [f"{module} ({LAYERS[layer(module)]}) imports {other} ({LAYERS[layer(other)]})"
              for module, others in GRAPH.items() for other in sorted(others) if layer(other) > layer(module)]
    assert not upward, "\n".join(upward)


def test_no_module_over_the_limit():
    long = {module: lines for module, path in MODULES.items()
            if (lines := len(path.read_text().splitlines())) > MOST_LINES}
    assert not long, f"modules over {MOST_LINES} lines: {long}"


@pytest.mark.parametrize("module", sorted(MODULES))
def test_every_module_imports(module):
    importlib.import_module(module)
