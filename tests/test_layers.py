"""The package's layers import only downward: the import-linter contracts in pyproject.toml hold."""

import ast
import re
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


# calls that import a module or run a file named by a string: importlib.import_module, __import__,
# pytest.importorskip, runpy.run_module and run_path, importlib.util.spec_from_file_location, SourceFileLoader,
# imp.load_source
IMPORTING_CALLS = {"import_module", "__import__", "importorskip", "run_module", "run_path"}
IMPORTING_CALLS |= {"spec_from_file_location", "SourceFileLoader", "load_source"}


def imports_named(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, name) of every module a file imports, by any form: ``import a.b``, ``from a import b`` (``b`` may
    be a module: ``from tests import test_x``, ``from . import test_x``), a string given to an importing call
    (a dotted name or a file's path), and a ``pytest_plugins`` entry (pytest imports each)."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            module = "." * node.level + (f"{node.module}." if node.module else "")
            found += [(node.lineno, module + alias.name) for alias in node.names]
        elif isinstance(node, ast.Call):
            called = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if called in IMPORTING_CALLS:
                arguments = [*node.args, *(keyword.value for keyword in node.keywords)]
                found += [(node.lineno, arg.value) for arg in arguments if isinstance(arg, ast.Constant)]
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(getattr(target, "id", "") == "pytest_plugins" for target in targets):
                found += [(node.lineno, c.value) for c in ast.walk(node.value) if isinstance(c, ast.Constant)]
    return sorted((line, name) for line, name in found if isinstance(name, str))


@pytest.mark.fast
def test_no_test_module_imports_another():
    """Shared test code lives in tests/support/; a test module imported by another runs its tests' setup twice
    and ties files named by behaviour to each other."""
    names = {path.stem for path in (ROOT / "tests").rglob("test_*.py")}
    found = []
    for path in sorted((ROOT / "tests").rglob("*.py")):
        for line, name in imports_named(ast.parse(path.read_text(encoding="utf-8"))):
            if names & set(re.split(r"[./\\]", name)):  # a dotted name, or a path, with a test module in it
                found.append(f"{path.relative_to(ROOT)}:{line}: {name}")
    assert found == [], found
