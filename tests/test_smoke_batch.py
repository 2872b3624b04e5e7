"""smoke runs all the patches of an upstream in one pytest process and gives each its own results: the same
verdicts, reasons and results as one process per patch (PATCHMGR_SMOKE_PER_PATCH=1), a collection error only
for the patches whose tests are in that file, and a test past the time limit timed out while the other
patches' results from that process stay. Real git repositories, the real CLI."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import pytest
from support.gitrepos import UpstreamRepo
from support.smoke_scene import CPU_ONLY, FIELDS, LOAD, Scene, verdicts


@pytest.fixture
def scene(tmp_path, project, cli, monkeypatch) -> Scene:
    import patchmgr.smoke.runner

    monkeypatch.setattr(patchmgr.smoke.runner, "available_devices", lambda python: dict(CPU_ONLY))
    return Scene(tmp_path, project, cli)


def pid_test(pids: Path, assertion: str, name: str = "test_add", before: str = "") -> str:
    """A smoke test that writes the pid of the process it runs in (one line per test), then asserts."""
    return (
        LOAD
        + f"""

def {name}():
    {before}
    with open({str(pids)!r}, "a") as out:
        out.write(f"{name} {{os.getpid()}}\\n")
    assert {assertion}
"""
    )


def pids_of(path: Path) -> dict[str, int]:
    return {name: int(pid) for name, pid in (line.split() for line in path.read_text().splitlines())}


def patches(scene: Scene, tests: dict[str, str]) -> None:
    """One patch per entry (its id: its test file's text), each adding a file of its own, in that order."""
    for patch_id, text in tests.items():
        test_file = f"tests/smoke/lib/test_{patch_id.replace('-', '_')}.py"
        scene.patch(smoke_tests=[test_file], patch_id=patch_id, files={f"{patch_id}.txt": f"{patch_id}\n"})
        scene.smoke_test(text, test_file)
    scene.manifest(tuple(tests))
    scene.apply()


def timeless(text: str) -> str:
    """pytest's own words without the seconds it took (``no tests ran in 4.15s``)."""
    return re.sub(r"\bin \d+\.\d+s\b", "in Ns", text)


def results_of(doc: dict) -> list[tuple]:
    return [(r["patch"], r["test"], r["device"], r["result"], timeless(r["reason"])) for r in doc["results"]]


def said_of(doc: dict) -> dict[str, tuple[str, str]]:
    return {patch: (verdict, timeless(reason)) for patch, (verdict, reason) in verdicts(doc).items()}


def test_two_patches_share_one_process_one_proven_one_failed(scene, tmp_path, monkeypatch):
    pids = tmp_path / "pids"
    patches(
        scene,
        {
            "good": pid_test(pids, "load_calc().add(2, 3) == -1", "test_good"),  # the upstream subtracts
            "bad": pid_test(pids, "load_calc().add(2, 3) == 5", "test_bad"),
        },
    )
    result = scene.smoke()
    assert result.code == 1
    assert "smoke: lib cpu: one pytest process for good, bad" in result.err
    assert "smoke: lib/good cpu: started" in result.err and "smoke: lib/good cpu: passed in " in result.err
    assert "smoke: lib/bad cpu: failed in " in result.err
    code, doc = scene.smoke_json()
    assert verdicts(doc)["good"] == ("proven", "1 tests passed on cpu")
    verdict, reason = verdicts(doc)["bad"]
    assert verdict == "failed" and reason == "test_bad on cpu failed: AssertionError: assert -1 == 5", reason
    ran = pids_of(pids)
    assert ran["test_good"] == ran["test_bad"], "two processes where one would do"

    monkeypatch.setenv("PATCHMGR_SMOKE_PER_PATCH", "1")  # the way before: one process per patch, the same answer
    pids.unlink()
    code_alone, alone = scene.smoke_json()
    assert pids_of(pids)["test_good"] != pids_of(pids)["test_bad"]
    assert (code_alone, said_of(alone), results_of(alone)) == (code, said_of(doc), results_of(doc))


# every way a patch's tests can end, each a patch of one upstream, run in one batch (these patches add a file
# each: the upstream's add still subtracts, patched or not)
KINDS = {
    "proven": LOAD + "\n\ndef test_add():\n    assert load_calc().add(2, 3) == -1\n",
    "fails": LOAD + "\n\ndef test_add():\n    assert load_calc().add(2, 3) == 5\n",
    "collection-error": "import module_that_does_not_exist\n\n\ndef test_add():\n    assert False\n",
    "syntax-error": "def test_add(:\n",
    "import-error-in-the-test": "def test_add():\n    import module_that_does_not_exist\n",
    "missing-fixture": "def test_add(calc_that_nobody_provides):\n    assert False\n",
    "skipped": "import pytest\n\n\ndef test_add():\n    pytest.skip('needs an NPU')\n",
    "no-test-in-the-file": "def helper():\n    return 1\n",
    "also-proven": LOAD + "\n\ndef test_sum():\n    assert load_calc().add(1, 1) == 0\n",
}


@pytest.mark.parametrize("unpatched", [False, True], ids=["patched", "unpatched"])
def test_a_batch_says_what_one_process_per_patch_says(scene, monkeypatch, unpatched):
    patches(scene, KINDS)
    args = ("--unpatched",) if unpatched else ()
    code, doc = scene.smoke_json(*args)
    monkeypatch.setenv("PATCHMGR_SMOKE_PER_PATCH", "1")
    code_alone, alone = scene.smoke_json(*args)
    assert said_of(doc) == said_of(alone)
    assert results_of(doc) == results_of(alone)
    assert code == code_alone == 1
    said = verdicts(doc)
    # a collection error is its own file's: the patches beside it keep their verdicts
    assert said["collection-error"][0] == "not-proven" and "module_that_does_not_exist" in said["collection-error"][1]
    assert said["syntax-error"][0] == "not-proven"
    if not unpatched:
        assert said["proven"] == said["also-proven"] == ("proven", "1 tests passed on cpu")
        assert said["fails"][0] == "failed"


def test_a_collection_error_is_only_its_own_patchs(scene, tmp_path):
    pids = tmp_path / "pids"
    patches(
        scene,
        {
            "good": pid_test(pids, "load_calc().add(2, 3) == -1"),  # these patches leave add as it is
            "broken": "import module_that_does_not_exist\n\n\ndef test_add():\n    pass\n",
            "other": pid_test(pids, "load_calc().add(1, 1) == 0", "test_other"),
        },
    )
    result = scene.smoke()
    assert result.code == 1
    assert "smoke: lib cpu: one pytest process for good, broken, other" in result.err
    code, doc = scene.smoke_json()
    said = verdicts(doc)
    assert said["good"] == said["other"] == ("proven", "1 tests passed on cpu")
    verdict, reason = said["broken"]
    assert verdict == "not-proven" and "did not run to an outcome" in reason
    assert "ModuleNotFoundError: No module named 'module_that_does_not_exist'" in reason, reason
    ran = pids_of(pids)
    assert ran["test_add"] == ran["test_other"]  # the good patches ran in that one process
    assert "smoke: lib/broken cpu: started" in result.err  # the broken one alone, where the error is its own


def test_a_hanging_test_in_a_batch_times_out_and_the_others_keep_their_results(scene, tmp_path):
    pids = tmp_path / "pids"
    patches(
        scene,
        {
            "first": pid_test(pids, "load_calc().add(2, 3) == -1", "test_first"),
            "hangs": pid_test(pids, "True", "test_hangs", before="import time; time.sleep(1000)"),
            "after": pid_test(pids, "load_calc().add(1, 1) == 0", "test_after"),
        },
    )
    started = time.monotonic()
    result = scene.smoke("--timeout", "8", "--json")
    assert time.monotonic() - started < 90
    assert result.code == 1
    doc = result.json
    said = verdicts(doc)
    assert said["first"] == said["after"] == ("proven", "1 tests passed on cpu")
    verdict, reason = said["hangs"]
    assert verdict == "not-proven" and reason.startswith("test_hangs on cpu timed out after 8 s"), reason
    late = [r for r in doc["results"] if r["result"] == "timed-out"]
    assert [(r["patch"], r["test"]) for r in late] == [("hangs", "tests/smoke/lib/test_hangs.py::test_hangs")]
    ran = pids_of(pids)
    assert "test_hangs" not in ran  # it never got past its sleep
    # the patch that ended before the hang kept its result from that process; the one after it ran again
    assert ran["test_first"] != ran["test_after"]
    err = result.err
    assert "smoke: lib/hangs cpu: tests/smoke/lib/test_hangs.py::test_hangs: timed out after 8 s" in err
    assert "smoke: lib cpu: one pytest process for first, hangs, after" in err
    assert err.count("smoke: lib/first cpu: started") == 1
    assert "smoke: lib/after cpu: started" in err.split("timed out after 8 s", 1)[1]


def test_a_test_that_failed_before_the_kill_stays_a_failure(scene):
    """The outcomes of tests that ended before the time limit killed their process are their own: a failure
    read as a pass would prove a patch by a test that failed."""
    patches(
        scene,
        {
            "fix-add": LOAD + "\n\ndef test_add():\n    assert load_calc().add(2, 3) == 6\n\n\n"
            "def test_hang():\n    import time\n    time.sleep(1000)\n"
        },
    )
    code, doc = scene.smoke_json("--timeout", "2")
    assert code == 1
    assert [(r["test"].rsplit("::", 1)[-1], r["result"]) for r in doc["results"]] == [
        ("test_add", "failed"),
        ("test_hang", "timed-out"),
    ]
    verdict, reason = verdicts(doc)["fix-add"]
    assert verdict == "failed" and reason == "test_add on cpu failed: AssertionError: assert -1 == 6", reason


def interval_test(stamps: Path, name: str) -> str:
    """A smoke test that writes when it starts and ends, sleeping 3 s between."""
    return f"""import time


def test_{name}():
    with open({str(stamps)!r}, "a") as out:
        out.write(f"{name} start {{time.time()}}\\n")
    time.sleep(3)
    with open({str(stamps)!r}, "a") as out:
        out.write(f"{name} end {{time.time()}}\\n")
"""


def two_upstreams(scene: Scene, stamps: Path) -> None:
    """Upstreams ``lib`` and ``other``, one patch each, whose tests each take 3 s."""
    other = UpstreamRepo(scene.tmp_path / "other-upstream")
    other_pin = other.commit({"README": "other\n"}, "initial")
    scene.patch(smoke_tests=["tests/smoke/lib/test_lib.py"])
    scene.smoke_test(interval_test(stamps, "lib"), "tests/smoke/lib/test_lib.py")
    fields = FIELDS + "\nSmoke-Test: tests/smoke/other/test_other.py"
    why = "Why: the readme said too little for our runs."
    scene.project.add_patch("other", "fix-readme", other.make_patch(other_pin, {"README": "x\n"}, "Fix", why, fields))
    scene.smoke_test(interval_test(stamps, "other"), "tests/smoke/other/test_other.py")
    scene.project.manifest(
        "t",
        {
            "lib": {"git": "https://example.invalid/lib.git", "commit": scene.pin, "patches": ["fix-add"]},
            "other": {"git": "https://example.invalid/other.git", "commit": other_pin, "patches": ["fix-readme"]},
        },
    )
    sources = ["--source", f"lib={scene.upstream.path}", "--source", f"other={other.path}"]
    result = scene.cli("apply", "--target", "t", "--into", str(scene.into), *sources)
    assert result.code == 0, result.out + result.err


def intervals(stamps: Path) -> dict[str, tuple[float, float]]:
    marks = {(name, what): float(at) for name, what, at in (line.split() for line in stamps.read_text().splitlines())}
    return {name: (marks[(name, "start")], marks[(name, "end")]) for name in ("lib", "other")}


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="one core: upstreams run one after another")
def test_upstreams_run_side_by_side(scene, tmp_path, monkeypatch):
    stamps = tmp_path / "stamps"
    two_upstreams(scene, stamps)
    code, doc = scene.smoke_json()
    assert code == 0, doc
    (lib_start, lib_end), (other_start, other_end) = intervals(stamps).values()
    assert lib_start < other_end and other_start < lib_end, "the upstreams ran one after another"

    stamps.unlink()
    monkeypatch.setenv("PATCHMGR_SMOKE_PER_PATCH", "1")  # the way before: one after another
    code_alone, alone = scene.smoke_json()
    assert (code_alone, verdicts(alone)) == (code, verdicts(doc))
    (lib_start, lib_end), (other_start, other_end) = intervals(stamps).values()
    assert lib_end <= other_start or other_end <= lib_start


def test_a_collection_error_the_batch_made_is_nobodys(scene):
    """Two test files of one basename in two folders clash in one pytest process (``import file mismatch``):
    their patches run alone, where each is proven as it always was."""
    same = LOAD + "\n\ndef test_add():\n    assert load_calc().add(2, 3) == -1\n"
    for patch_id in ("one", "two"):
        test_file = f"tests/smoke/lib/{patch_id}/test_same.py"
        scene.patch(smoke_tests=[test_file], patch_id=patch_id, files={f"{patch_id}.txt": "x\n"})
        scene.smoke_test(same, test_file)
    scene.manifest(("one", "two"))
    scene.apply()
    result = scene.smoke()
    assert result.code == 0, result.out + result.err
    assert "smoke: lib cpu: one pytest process for one, two" in result.err
    code, doc = scene.smoke_json()
    assert code == 0 and verdicts(doc) == {
        "one": ("proven", "1 tests passed on cpu"),
        "two": ("proven", "1 tests passed on cpu"),
    }
