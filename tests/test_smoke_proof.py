"""smoke proves a patch only by tests that ran; Smoke-Test values are test ids under tests/smoke/<upstream>/.

A tiny real project: an upstream git repository whose ``add`` subtracts, a
patch that fixes it with a ``Smoke-Test`` field, the smoke test itself in the
project's ``tests/smoke/lib/`` (it imports the upstream module from
PATCHMGR_SMOKE_ROOT), ``apply --into``, then ``smoke`` through the real CLI.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from support.needs import missing_modules, require
from support.smoke_scene import CPU_ONLY, DETECTS, LOAD, TEST_FILE, Scene, verdicts

# each of these proves nothing: the test never gets to ask the code under test about the bug
CANNOT_RUN = {
    "collection-import-error": "import module_that_does_not_exist\n\n\ndef test_add():\n    assert False\n",
    "import-error-in-the-test": LOAD + "\n\ndef test_add():\n    import module_that_does_not_exist\n"
    "    assert load_calc().add(2, 3) == 5\n",
    "fixture-error": "import pytest\n\n\n@pytest.fixture\ndef calc():\n    raise RuntimeError('no calc here')\n\n\n"
    "def test_add(calc):\n    assert calc.add(2, 3) == 5\n",
    "missing-fixture": "def test_add(calc_that_nobody_provides):\n    assert False\n",
    "every-test-skipped": "import pytest\n\n\ndef test_add():\n    pytest.skip('needs an NPU')\n",
    "no-test-in-the-file": "def helper():\n    return 1\n",
}


@pytest.fixture
def real_probe_scene(tmp_path, project, cli) -> Scene:
    """Devices probed for real (a python that imports torch): what every smoke run does."""
    require(not missing_modules("torch"), "torch is not installed, so devices cannot be probed for real")
    return Scene(tmp_path, project, cli)


@pytest.fixture
def scene(tmp_path, project, cli, monkeypatch) -> Scene:
    """The device probe (seconds of importing torch) answered with what this machine has: a CPU."""
    import patchmgr.smoke.runner

    monkeypatch.setattr(patchmgr.smoke.runner, "available_devices", lambda python: dict(CPU_ONLY))
    return Scene(tmp_path, project, cli)


# -- proven --------------------------------------------------------------------
def test_green_patch_is_proven_and_red_unpatched_detects_its_bug(real_probe_scene):
    scene = real_probe_scene
    scene.patch()
    scene.manifest()
    scene.smoke_test(DETECTS)
    scene.apply()
    assert scene.cli("lint").code == 0

    patched = scene.smoke()
    assert patched.code == 0, patched.out + patched.err
    assert "1 proven, 0 failed, 0 not proven (1 tests passed, 0 failed)" in patched.out

    unpatched = scene.smoke("--unpatched")
    assert unpatched.code == 0, unpatched.out + unpatched.err
    assert "1 proven (each detects its bug), 0 failed" in unpatched.out
    assert "0 not proven" in unpatched.out

    code, doc = scene.smoke_json("--unpatched")
    assert code == 0 and doc["ok"] is True
    assert doc["summary"] == {"proven": 1, "failed": 0, "not-proven": 0}
    assert verdicts(doc)["fix-add"][0] == "proven"
    (result,) = doc["results"]
    assert result["result"] == "failed" and "assert" in result["reason"]


def test_a_node_id_with_a_name_and_a_parameter_is_accepted(scene):
    scene.patch([f"{TEST_FILE}::test_add[two-three]"])
    scene.manifest()
    scene.smoke_test(
        "import pytest\n\n" + LOAD + "\n\n@pytest.mark.parametrize('a, b', [(2, 3)], ids=['two-three'])\n"
        "def test_add(a, b):\n    assert load_calc().add(a, b) == 5\n\n\n"
        "def test_not_selected():\n    assert False\n"
    )
    scene.apply()
    assert scene.cli("lint").code == 0
    code, doc = scene.smoke_json()
    assert code == 0, doc
    assert [r["test"].rsplit("::", 1)[-1] for r in doc["results"]] == ["test_add[two-three]"]


# -- failed --------------------------------------------------------------------
def test_a_fix_that_does_not_work_fails_and_a_test_that_passes_unpatched_fails(scene):
    scene.patch(files={"lib/calc.py": "def add(a, b):\n    return a * b\n"})
    scene.manifest()
    scene.smoke_test(DETECTS)
    scene.apply()
    patched = scene.smoke()
    assert patched.code == 1
    assert "failed: lib/fix-add: test_add on cpu failed: AssertionError: assert 6 == 5" in patched.out
    assert "0 proven, 1 failed, 0 not proven" in patched.out

    scene.smoke_test(LOAD + "\n\ndef test_add():\n    assert load_calc().add(0, 0) == 0\n")
    unpatched = scene.smoke("--unpatched")
    assert unpatched.code == 1
    assert "failed: lib/fix-add: test_add on cpu passes without the patch: it does not detect the bug" in unpatched.out
    assert "0 proven (each detects its bug), 1 failed" in unpatched.out


# -- not proven: nothing ran ---------------------------------------------------
def test_nothing_can_run_when_the_upstream_is_not_applied(scene):
    scene.patch()
    scene.manifest()
    scene.smoke_test(DETECTS)
    scene.into.mkdir()
    for args in ((), ("--unpatched",)):
        result = scene.smoke(*args)
        assert result.code == 1, result.out
        assert "not proven: lib/fix-add: lib is not applied into" in result.out
        assert "0 proven" in result.out and "1 not proven" in result.out
        assert "every one of" not in result.out


def test_a_patch_without_smoke_test_is_not_proven(scene):
    scene.patch()
    scene.patch(smoke_tests=None, patch_id="untested", files={"README": "lib, documented\n"})
    scene.manifest(("fix-add", "untested"))
    scene.smoke_test(DETECTS)
    scene.apply()
    result = scene.smoke()
    assert result.code == 1, result.out
    assert "not proven: lib/untested: the patch names no Smoke-Test" in result.out
    assert "1 proven, 0 failed, 1 not proven" in result.out
    code, doc = scene.smoke_json("--unpatched")
    assert code == 1
    assert verdicts(doc) == {
        "fix-add": ("proven", verdicts(doc)["fix-add"][1]),
        "untested": ("not-proven", "the patch names no Smoke-Test"),
    }


@pytest.mark.parametrize("kind", sorted(CANNOT_RUN))
def test_a_test_that_cannot_run_proves_nothing_either_way(scene, kind):
    scene.patch()
    scene.manifest()
    scene.smoke_test(CANNOT_RUN[kind])
    scene.apply()
    result = scene.smoke()
    assert result.code == 1, result.out
    assert "not proven: lib/fix-add: " in result.out, result.out
    assert "0 proven, 0 failed, 1 not proven" in result.out
    code, doc = scene.smoke_json("--unpatched")
    verdict, reason = verdicts(doc)["fix-add"]
    assert (code, verdict) == (1, "not-proven")
    assert not any(r["result"] == "failed" for r in doc["results"]), doc["results"]
    if "import" in kind:
        assert "ModuleNotFoundError" in reason and "module_that_does_not_exist" in reason, reason
    elif kind == "fixture-error":
        assert "no calc here" in reason, reason
    elif kind == "missing-fixture":
        assert "calc_that_nobody_provides" in reason, reason
    elif kind == "every-test-skipped":
        assert reason == "no test ran: needs an NPU" or "needs an NPU" in reason, reason
    else:
        assert "exit 5" in reason and "no tests were collected" in reason, reason


# -- only the test's own assertion detects a bug ------------------------------------
# each ends in an exception before its assertion can say anything: a typo of the test's own, or the bug's symptom
# (an exception) that the test does not assert; the text its reason shows
CRASHES = {
    "attribute-error": (
        LOAD + "\n\ndef test_add():\n    assert load_calc().ad(2, 3) == 5\n",
        "AttributeError: module 'calc_under_test' has no attribute 'ad'",
    ),
    "name-error": (
        "def test_add():\n    assert lod_calc().add(2, 3) == 5\n",
        "NameError: name 'lod_calc' is not defined",
    ),
    "type-error": (
        LOAD + "\n\ndef test_add():\n    assert load_calc().add(2) == 5\n",
        "TypeError: add() missing 1 required positional argument: 'b'",
    ),
    "syntax-error": (
        LOAD + "\n\ndef test_add():\n    exec(compile('def add(a, b:\\n    pass\\n', 'calc_check.py', 'exec'))\n",
        "SyntaxError: '(' was never closed (calc_check.py, line 1)",
    ),
    # with the fix the index is 0 and the test passes; without it the list is indexed at -6
    "exception-not-asserted": (
        LOAD + "\n\ndef test_add():\n    assert [5][load_calc().add(2, 3) - 5] == 5\n",
        "IndexError: list index out of range",
    ),
}


@pytest.mark.parametrize("kind", sorted(CRASHES))
def test_an_exception_other_than_a_failed_assertion_proves_nothing_without_the_patch(scene, kind):
    test, said = CRASHES[kind]
    scene.patch()
    scene.manifest()
    scene.smoke_test(test)
    scene.apply()
    code, doc = scene.smoke_json("--unpatched")
    verdict, reason = verdicts(doc)["fix-add"]
    assert (code, verdict) == (1, "not-proven"), (verdict, reason)
    assert reason == f"test_add on cpu did not run to an outcome: {said} (an exception, not a failed assertion)"
    assert [r["result"] for r in doc["results"]] == ["error"]
    if kind != "exception-not-asserted":  # with the patch it crashes the same way: an error is no red result
        code, doc = scene.smoke_json()
        assert (code, verdicts(doc)["fix-add"][0]) == (1, "not-proven"), doc["patches"]


def test_a_test_that_asserts_the_exception_its_bug_raises_detects_the_bug(scene):
    scene.patch()
    scene.manifest()
    scene.smoke_test(
        "import pytest\n\n" + LOAD + "\n\ndef test_add():\n    try:\n        [5][load_calc().add(2, 3) - 5]\n"
        "    except IndexError as error:\n        pytest.fail(f'add(2, 3) is not 5: {error}')\n"
    )
    scene.apply()
    unpatched = scene.smoke("--unpatched")
    assert unpatched.code == 0, unpatched.out + unpatched.err
    assert "fix-add test_add cpu: failed" in unpatched.out and "Failed: add(2, 3) is not 5: list index" in unpatched.out
    assert scene.smoke().code == 0


def test_a_test_file_that_does_not_parse_shows_the_syntax_error(scene):
    scene.patch()
    scene.manifest()
    scene.smoke_test("def test_add(:\n    pass\n")
    scene.apply()
    code, doc = scene.smoke_json("--unpatched")
    reason = verdicts(doc)["fix-add"][1]
    assert code == 1 and "collection failure: SyntaxError: invalid syntax (" in reason, reason
    assert f"{TEST_FILE.rsplit('/', 1)[-1]}, line 1)" in reason, reason


def test_a_device_that_is_not_there_runs_nothing_and_proves_nothing(scene):
    scene.patch()
    scene.manifest()
    scene.smoke_test(DETECTS)
    scene.apply()
    result = scene.cli("smoke", "--target", "t", "--into", str(scene.into), "--device", "cuda")
    assert result.code == 1, result.out
    assert "not proven: lib/fix-add: no test ran: cuda: no CUDA device" in result.out
    # auto: the devices that are there run; the ones that are not are reported, and do not block the proof
    result = scene.cli("smoke", "--target", "t", "--into", str(scene.into), "--device", "auto")
    assert result.code == 0, result.out
    assert "1 proven, 0 failed, 0 not proven" in result.out


def test_a_test_skipped_on_one_device_and_run_on_another_counts_as_run(scene, monkeypatch):
    import patchmgr.smoke.runner

    monkeypatch.setattr(
        patchmgr.smoke.runner,
        "available_devices",
        lambda python: {"cpu": None, "cuda": None, "npu": "no NPU (torch_npu is not installed)"},
    )
    scene.patch()
    scene.manifest()
    scene.smoke_test(
        "import os\n\nimport pytest\n\n" + LOAD + "\n\ndef test_add_on_cuda():\n"
        "    if os.environ['PATCHMGR_SMOKE_DEVICE'] != 'cuda':\n        pytest.skip('a CUDA race test')\n"
        "    assert load_calc().add(2, 3) == 5\n"
    )
    scene.apply()
    result = scene.cli("smoke", "--target", "t", "--into", str(scene.into), "--device", "auto", "--json")
    code, doc = result.code, result.json
    assert code == 0, doc
    assert {(r["device"], r["result"]) for r in doc["results"] if r["test"] != "-"} == {
        ("cpu", "skipped"),
        ("cuda", "passed"),
    }
    assert verdicts(doc)["fix-add"] == ("proven", "1 tests passed on cuda")


# -- Smoke-Test values are test ids inside tests/smoke/<upstream>/ -------------
def bad_values(tmp_path: Path, project_root: Path) -> dict[str, tuple[str, str]]:
    """name -> (Smoke-Test value, what lint and smoke say about it)."""
    outside = tmp_path / "outside"
    return {
        "basetemp": ("--basetemp=victim", "looks like a pytest option"),
        "junitxml": (f"--junitxml={outside / 'x.xml'}", "looks like a pytest option"),
        "plugin": ("-pescape_plugin", "looks like a pytest option"),
        "absolute": (str(outside / "test_escape.py"), "is an absolute path"),
        "parent": ("../outside/test_escape.py", "climbs out with '..'"),
        "parent-inside-smoke": ("tests/smoke/lib/../../../../outside/test_escape.py", "climbs out with '..'"),
        "other-folder": ("tests/test_escape.py", "is not a test id of the form tests/smoke/lib/"),
        "not-python": ("tests/smoke/lib/test_add.txt", "is not a test id of the form tests/smoke/lib/"),
        "whitespace": (f"{TEST_FILE} --basetemp=victim", "is not a test id of the form tests/smoke/lib/"),
        "link-out": ("tests/smoke/lib/test_link.py", "leaves tests/smoke/ (it resolves outside it through a link)"),
        "missing": ("tests/smoke/lib/test_gone.py", "does not exist"),
    }


@pytest.mark.parametrize("name", sorted(bad_values(Path("/tmp"), Path("/tmp"))))
def test_a_smoke_test_value_that_is_not_a_test_id_is_flagged_by_lint_and_refused_by_smoke(scene, tmp_path, name):
    value, said = bad_values(tmp_path, scene.project.root)[name]
    outside = tmp_path / "outside"
    outside.mkdir()
    marker = tmp_path / "escaped"
    escape = f"from pathlib import Path\n\n\ndef test_escape():\n    Path({str(marker)!r}).write_text('ran')\n"
    (outside / "test_escape.py").write_text(escape)
    (outside / "escape_plugin.py").write_text(f"from pathlib import Path\nPath({str(marker)!r}).write_text('ran')\n")
    (scene.project.root / "tests").mkdir()
    (scene.project.root / "tests" / "test_escape.py").write_text(escape)
    victim = scene.project.root / "victim"
    victim.mkdir()
    (victim / "keep.txt").write_text("precious\n")
    scene.smoke_test(DETECTS)
    (scene.project.root / "tests/smoke/lib/test_link.py").symlink_to(outside / "test_escape.py")
    patch = scene.patch([value])
    scene.manifest()
    scene.apply()

    lint = scene.cli("lint")
    assert lint.code == 1
    (line,) = [line for line in lint.out.splitlines() if "Smoke-Test" in line]
    assert "fix-add.patch" in line and repr(value) in line and said in line, lint.out

    for args in ((), ("--unpatched",), ("--json",)):
        result = scene.smoke(*args)
        assert result.code == 2, (args, result.out, result.err)
        assert result.out == ""
        assert f"patches/lib/{patch.name}: Smoke-Test {value!r} {said}" in result.err, result.err
        assert "nothing was run" in result.err and "Traceback" not in result.err
    assert (victim / "keep.txt").read_text() == "precious\n"
    assert sorted(p.name for p in outside.iterdir()) == ["escape_plugin.py", "test_escape.py"]
    assert not marker.exists()


def test_the_shipped_patches_name_valid_smoke_tests():
    from patchmgr.model.lint import smoke_test_problem
    from patchmgr.model.project import Project

    project = Project.at(Path(__file__).resolve().parent.parent)
    values = [
        (patch, value)
        for target in project.targets()
        for upstream in target.upstreams
        for patch in project.patches(upstream)
        for value in patch.field_values("Smoke-Test")
    ]
    assert values
    assert [
        (p.id, v, smoke_test_problem(project, p.upstream, v))
        for p, v in values
        if smoke_test_problem(project, p.upstream, v)
    ] == []
