"""The package's layers import only downward: the import-linter contracts in pyproject.toml hold."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _lint_imports() -> str:
    beside = Path(sys.executable).with_name("lint-imports")
    return str(beside) if beside.exists() else shutil.which("lint-imports") or "lint-imports"


def test_layering_contracts_are_kept():
    done = subprocess.run([_lint_imports(), "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "broken" in done.stdout and " 0 broken" in done.stdout


def import_cycles(package: str) -> list[list[str]]:
    """Every set of modules that import each other, directly or round a circle (imports inside functions
    count: a lazy import still ties the two modules together), by Tarjan's strongly connected components."""
    import grimp

    graph = grimp.build_graph(package)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for imported in sorted(graph.find_modules_directly_imported_by(module)):
            if imported not in index:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in on_stack:
                low[module] = min(low[module], index[imported])
        if low[module] == index[module]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == module:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for module in sorted(graph.modules):
        if module not in index:
            visit(module)
    return cycles


def test_no_module_imports_itself_round_a_circle():
    assert import_cycles("patchmgr") == []


MODULE_LINES = 400  # a module longer than this holds more than one job: split it by concept


@pytest.mark.fast
def test_every_module_is_at_most_400_lines():
    long = {
        str(path.relative_to(ROOT)): lines
        for path in sorted((ROOT / "patchmgr").rglob("*.py"))
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) > MODULE_LINES
    }
    assert long == {}, f"split these modules by concept (at most {MODULE_LINES} lines each): {long}"


@pytest.mark.fast
def test_no_test_module_imports_another():
    """Shared test code lives in tests/support/; a test module imported by another runs its tests' setup twice
    and ties files named by behaviour to each other."""
    import ast

    names = {path.stem for path in (ROOT / "tests").rglob("test_*.py")}
    found = []
    for path in sorted((ROOT / "tests").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            imported = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.module:
                imported = [node.module]
            found += [f"{path.relative_to(ROOT)}: {name}" for name in imported if name.split(".")[-1] in names]
    assert found == [], found
