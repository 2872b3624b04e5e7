"""smoke knows its interpreter: an upstream's Requires-Python against the one the smoke tests run on, and
`smoke --python` as the way out; on real git repositories through the real CLI."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from support.smoke_scene import CPU_ONLY, DETECTS, Scene, verdicts

PYPROJECT = '[project]\nname = "lib"\nversion = "1.0"\nrequires-python = "{spec}"\n'
THIS = f"{sys.version_info[0]}.{sys.version_info[1]}"


@pytest.fixture
def scene(tmp_path, project, cli, monkeypatch) -> Scene:
    import patchmgr.smoke.choice
    import patchmgr.smoke.runner

    monkeypatch.setattr(patchmgr.smoke.runner, "available_devices", lambda python: dict(CPU_ONLY))
    # no other interpreter on this machine: the running one runs every upstream (tests/test_smoke_pythons.py
    # covers the interpreters found)
    monkeypatch.setattr(patchmgr.smoke.choice, "find_interpreter", lambda spec: None)
    return Scene(tmp_path, project, cli)


# a smoke test that dies on an interpreter the upstream does not declare (as v0.5.0's `typing.override` on 3.11)
NEEDS_NEWER = "from typing import override_of_python_3_99\n\n" + DETECTS
# one that fails by its assertion there (the bytes under test differ on that interpreter, say)
FAILS = DETECTS.replace("== 5", "== 6")


def pinned_with_pyproject(scene: Scene, spec: str, test: str = DETECTS) -> None:
    scene.pin = scene.upstream.commit({"pyproject.toml": PYPROJECT.format(spec=spec)}, "declare python")
    scene.patch()
    scene.manifest()
    scene.smoke_test(test)
    scene.apply()


def test_smoke_dying_on_an_undeclared_interpreter_is_not_proven_and_names_the_way_out(scene):
    pinned_with_pyproject(scene, ">=3.99", NEEDS_NEWER)
    result = scene.smoke()
    assert result.code == 1, result.out + result.err
    assert f"not proven: lib/fix-add: needs Python >=3.99 (this is {THIS})" in result.out
    assert "0 proven, 0 failed, 1 not proven" in result.out
    assert "outside its declared Requires-Python >=3.99 (pyproject.toml" in result.out
    assert "pass --python with an interpreter that fits" in result.out

    code, doc = scene.smoke_json()
    assert code == 1 and doc["ok"] is False
    assert doc["summary"] == {"proven": 0, "failed": 0, "not-proven": 1}
    verdict, reason = verdicts(doc)["fix-add"]
    assert verdict == "not-proven" and reason.startswith(f"needs Python >=3.99 (this is {THIS})")
    assert "override_of_python_3_99" in reason  # what happened there, quoted
    (need,) = doc["python"]
    assert need["upstream"] == "lib" and need["requires_python"] == ">=3.99" and need["fits"] is False
    assert need["version"].startswith(THIS) and need["from"].startswith("pyproject.toml")
    assert any("--python" in note for note in doc["notes"])


def test_a_failed_assertion_on_an_undeclared_interpreter_is_not_proven_never_failed(scene):
    pinned_with_pyproject(scene, f"<{THIS}", FAILS)
    code, doc = scene.smoke_json()
    assert code == 1
    verdict, reason = verdicts(doc)["fix-add"]
    assert verdict == "not-proven" and reason.startswith(f"needs Python <{THIS} (this is {THIS})")
    assert "failed" in reason
    assert doc["summary"]["failed"] == 0


def test_tests_that_pass_on_an_undeclared_interpreter_prove_the_patch_with_a_note(scene):
    # Megatron-Bridge 0.4.2 declares >=3.12,<3.13, yet the modules its smoke tests load import on 3.11
    pinned_with_pyproject(scene, ">=3.99")
    code, doc = scene.smoke_json()
    assert code == 0, doc
    assert verdicts(doc)["fix-add"][0] == "proven"
    assert any("outside its declared Requires-Python >=3.99" in n and "they passed there" in n for n in doc["notes"])


def test_tests_failing_without_the_patch_on_an_interpreter_no_range_holds_prove_nothing(scene):
    # the manifest's smoke-python, which no interpreter here fits: failing there says nothing of the bug
    scene.patch()
    scene.smoke_test(DETECTS)
    scene.project.manifest(
        "t",
        {
            "lib": {
                "git": "https://example.invalid/lib.git",
                "commit": scene.pin,
                "smoke-python": ">=3.99",
                "patches": ["fix-add"],
            }
        },
    )
    scene.apply()
    code, doc = scene.smoke_json("--unpatched")
    assert code == 1 and doc["summary"] == {"proven": 0, "failed": 0, "not-proven": 1}, doc["patches"]
    verdict, reason = verdicts(doc)["fix-add"]
    assert verdict == "not-proven" and reason.startswith(f"needs Python >=3.99 (this is {THIS}) and no interpreter"), (
        reason
    )
    assert [r["result"] for r in doc["results"]] == ["failed"]  # what happened there, as it happened
    assert not any("they passed there" in note for note in doc["notes"])
    both = scene.smoke("--both", "--json")
    assert both.code == 1 and both.json["patches"][0]["verdict"] == "not-proven", both.json["patches"]
    assert both.json["patches"][0]["reason"].startswith("without the patch: needs Python >=3.99"), both.json["patches"]


def test_a_declared_python_that_fits_changes_nothing(scene):
    pinned_with_pyproject(scene, f">={THIS}", FAILS)
    code, doc = scene.smoke_json()
    assert code == 1 and verdicts(doc)["fix-add"][0] == "failed"  # a real failure stays one
    (need,) = doc["python"]
    assert need["fits"] is True and need["requires_python"] == f">={THIS}"
    assert not any("Requires-Python" in note for note in doc["notes"])


def test_smoke_without_a_declared_python_runs_as_before(scene):
    scene.patch()
    scene.manifest()
    scene.smoke_test(DETECTS)
    scene.apply()
    code, doc = scene.smoke_json()
    assert code == 0 and doc["python"][0]["requires_python"] is None and doc["python"][0]["fits"] is True


def test_requires_python_of_an_installed_distribution_and_of_an_explicit_interpreter(tmp_path):
    from patchmgr.model.manifest import Upstream
    from patchmgr.smoke.interpreter import interpreter_version, python_need
    from patchmgr.targets.trees import SmokeTree

    site = tmp_path / "site-packages"
    (site / "lib").mkdir(parents=True)
    info = site / "lib_thing-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: lib-thing\nVersion: 1.0\nRequires-Python: >=3.12,<3.13\n\nthe description\n"
    )
    upstream = Upstream("lib", None, (), "0" * 40, "1.0", "lib-thing", "", ())
    python, version = interpreter_version(sys.executable)  # asked, as for --python
    assert python == sys.executable and version == ".".join(map(str, sys.version_info[:3]))
    need = python_need(SmokeTree(upstream, site), python, "3.11.7")
    assert need.spec == ">=3.12,<3.13" and need.where == str(info / "METADATA") and not need.fits
    assert need.reason("x failed").startswith("needs Python >=3.12,<3.13 (this is 3.11), so this outcome")
    assert "(`pyenv install 3.12`) and run smoke again without --python" in need.note(proven=False)
    assert "pyenv" not in need.note(proven=True)
    assert python_need(SmokeTree(upstream, site), python, "3.12.1").fits


def python_3_12() -> str | None:
    """Python 3.12 from pyenv (its shim answers only for the selected version, so look under its root), or
    the system's."""
    import shutil

    roots = []
    if shutil.which("pyenv"):
        done = subprocess.run(["pyenv", "root"], capture_output=True, text=True)
        roots = [Path(done.stdout.strip())] if done.returncode == 0 else []
    found = [str(p) for root in roots for p in sorted(root.glob("versions/3.12*/bin/python3.12"))]
    for candidate in [*found, "/usr/bin/python3.12", "/usr/local/bin/python3.12"]:
        if Path(candidate).is_file() and subprocess.run([candidate, "-c", "pass"]).returncode == 0:
            return candidate
    return None


def test_the_way_out_runs_the_checkout_on_an_interpreter_that_fits(scene, tmp_path):
    """`smoke --into DIR --python PATH`: DIR's tests on an interpreter the upstream declares, here pyenv's 3.12."""
    from support.needs import require

    python312 = python_3_12()
    require(python312 is not None, "no Python 3.12 here (pyenv install 3.12)")
    venv = tmp_path / "py312"
    subprocess.run([python312, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "pytest>=8"], check=True)
    # a test that needs 3.12 (typing.override is new there), as v0.5.0's smoke tests do
    pinned_with_pyproject(scene, ">=3.12", "from typing import override  # noqa: F401\n\n" + DETECTS)

    if sys.version_info < (3, 12):
        code, doc = scene.smoke_json()
        assert code == 1 and verdicts(doc)["fix-add"][0] == "not-proven"

    code, doc = scene.smoke_json("--python", str(venv / "bin" / "python"))
    assert code == 0, doc
    assert verdicts(doc)["fix-add"][0] == "proven"
    (need,) = doc["python"]
    assert need["fits"] is True and need["version"].startswith("3.12")
    code, doc = scene.smoke_json("--python", str(venv / "bin" / "python"), "--unpatched")
    assert code == 0 and verdicts(doc)["fix-add"][0] == "proven", doc  # red there without the patch, for its reason
