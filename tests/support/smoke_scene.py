"""A tiny project for `patchmgr smoke`: an upstream whose ``add`` subtracts, a patch that fixes it with a
``Smoke-Test`` field, and the smoke test in the project's ``tests/smoke/lib/``."""

from __future__ import annotations

from pathlib import Path

from support.gitrepos import UpstreamRepo

BUGGY = "def add(a, b):\n    return a - b\n"


FIXED = "def add(a, b):\n    return a + b\n"


FIELDS = "Origin: vendor\nUpstream-Status: Pending"


TEST_FILE = "tests/smoke/lib/test_add.py"


LOAD = """import importlib.util
import os
from pathlib import Path


def load_calc():
    path = Path(os.environ["PATCHMGR_SMOKE_ROOT"]) / "lib" / "calc.py"
    spec = importlib.util.spec_from_file_location("calc_under_test", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
"""


DETECTS = (
    LOAD
    + """

def test_add():
    assert load_calc().add(2, 3) == 5
"""
)

# the smoke test of a smoke environment: it passes only where ``packaging`` is the version the manifest chose
SEES_PACKAGING = (
    LOAD
    + """

def test_add_with_the_pinned_packaging():
    import packaging
    assert packaging.__version__ == {version!r}, f"packaging {{packaging.__version__}} from {{packaging.__file__}}"
    assert load_calc().add(2, 3) == 5
"""
)


class Scene:
    def __init__(self, tmp_path: Path, project, cli) -> None:
        self.tmp_path, self.project, self.cli = tmp_path, project, cli
        self.upstream = UpstreamRepo(tmp_path / "lib-upstream")
        self.pin = self.upstream.commit({"lib/calc.py": BUGGY, "README": "lib\n"}, "initial")
        self.into = tmp_path / "build"

    def patch(
        self,
        smoke_tests: list[str] | None = (TEST_FILE,),
        patch_id: str = "fix-add",
        files: dict[str, str] | None = None,
    ) -> Path:
        fields = FIELDS + "".join(f"\nSmoke-Test: {value}" for value in smoke_tests or ())
        data = self.upstream.make_patch(
            self.pin,
            files or {"lib/calc.py": FIXED},
            "Fix add",
            body="Why: add subtracted its arguments, so every sum in our training runs came out wrong.",
            fields=fields,
        )
        return self.project.add_patch("lib", patch_id, data)

    def manifest(self, patch_ids=("fix-add",), smoke_requirements: list[str] | None = None) -> None:
        """Target ``t`` at the pin with ``patch_ids``, and the smoke environment's requirements when given."""
        spec: dict = {"git": "https://example.invalid/lib.git", "commit": self.pin}
        if smoke_requirements is not None:
            spec["smoke-requirements"] = smoke_requirements
        self.project.manifest("t", {"lib": {**spec, "patches": list(patch_ids)}})

    def smoke_test(self, text: str, name: str = TEST_FILE) -> Path:
        path = self.project.root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return path

    def one_patch_applied(self, smoke_test: str) -> Scene:
        """The patch that fixes add, with ``smoke_test`` as its test, in target ``t``, applied into the build."""
        self.patch()
        self.smoke_test(smoke_test)
        self.manifest()
        self.apply()
        return self

    def apply(self) -> None:
        result = self.cli("apply", "--target", "t", "--into", str(self.into), "--source", f"lib={self.upstream.path}")
        assert result.code == 0, result.out + result.err

    def smoke(self, *args: str):
        return self.cli("smoke", "--target", "t", "--into", str(self.into), "--device", "cpu", *args)

    def smoke_json(self, *args: str):
        result = self.smoke(*args, "--json")
        return result.code, result.json


CPU_ONLY = {"cpu": None, "cuda": "no CUDA device", "npu": "no NPU (torch_npu is not installed)"}


def verdicts(doc: dict) -> dict[str, tuple[str, str]]:
    return {p["patch"]: (p["verdict"], p["reason"]) for p in doc["patches"]}


def hangs(pids: Path) -> str:
    """A smoke test that starts a child (``sleep 1000``), writes its own pid and the child's, then hangs."""
    return f"""import os
import subprocess
import time


def test_add():
    child = subprocess.Popen(["sleep", "1000"])
    with open({str(pids)!r}, "w") as out:
        out.write(f"{{os.getpid()}} {{child.pid}}")
    time.sleep(1000)
"""
