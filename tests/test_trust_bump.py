"""`upstream` only with evidence of where, and refresh/bump/export that validate first and write all or nothing.

Issue 11, items 4 and 10, through the real CLI on real git upstreams: a patch whose lines merely
appear elsewhere in the file is not `upstream`; `bump` drops a patch only when an upstream commit
has its patch-id; a refused bump or a write that fails midway leaves every file as it was.
"""

from __future__ import annotations

import resource
import shutil

import pytest
from support.commands import bump, export, move_args, refresh, status_of
from support.scenes import FIELDS, lines_with, pin_fixes, reworked_series, setup

from patchmgr.io import journal

BIG = "".join(f"line {i}\n" for i in range(1, 401))  # a 400-line module: room for a distant look-alike


def big_with(changes: dict[int, str], insert_after: dict[int, list[str]] | None = None) -> str:
    lines = lines_with(changes, BIG).splitlines(keepends=True)
    for number in sorted(insert_after or {}, reverse=True):
        lines[number:number] = [f"{line}\n" for line in insert_after[number]]
    return "".join(lines)


def fix_big(upstream, pin):
    return upstream.make_patch(pin, {"src/big.py": big_with({20: "fixed 20"})}, "Fix 20")


def project_files(project) -> dict:
    return {p.relative_to(project.root): p.read_bytes() for p in project.root.rglob("*") if p.is_file()}


def status_doc(cli, upstream):
    result = cli("status", "--target", "t", "--json", "--source", f"lib={upstream.path}", "--against", "lib=main")
    (doc,) = result.json["upstreams"][0]["patches"]
    return result, doc


def test_a_distant_look_alike_is_not_upstream_and_bump_keeps_the_patch(cli, project, upstream):
    upstream.commit({"src/big.py": BIG}, "add big")
    pin = upstream.head()
    setup(project, upstream, {"fix": fix_big(upstream, pin)})
    # upstream rewrote the patch's own line, and elsewhere (280 lines further) wrote the very lines the
    # patch produces, context and all: the change is not upstream, it only looks so far away
    look_alike = [f"line {i}" for i in (17, 18, 19)] + ["fixed 20"] + [f"line {i}" for i in (21, 22, 23)]
    upstream.commit({"src/big.py": big_with({20: "upstream rewrote 20"}, {300: look_alike})}, "unrelated work")
    result, doc = status_doc(cli, upstream)
    assert result.code == 1
    assert doc["state"] == "conflict", doc
    assert doc["notes"] == [
        "the lines hunk #1 produces appear at line 301 of src/big.py, 284 lines from where "
        "the patch places them, while the hunk's context is nearer, at line 17: not counted "
        "as upstream"
    ]
    assert "not counted as upstream" in doc["detail"]
    assert "carrier" not in doc
    before = project_files(project)
    refused = bump(cli, upstream)
    assert refused.code == 1, refused.out + refused.err
    assert "blocks the bump: fix is conflict" in refused.out
    assert (project.root / "patches/lib/fix.patch").exists()
    assert project_files(project) == before


def test_a_patch_taken_upstream_by_a_commit_names_it_and_bump_drops_it(cli, project, upstream):
    pin_fixes(project, upstream, {"fix": {20: "fixed 20"}, "ours": {5: "ours"}})
    carrier = upstream.commit({"src/mod.py": lines_with({20: "fixed 20"})}, "take the vendor fix (#31)")
    result = cli("status", "--target", "t", "--json", "--source", f"lib={upstream.path}", "--against", "lib=main")
    doc = result.json["upstreams"][0]["patches"][0]
    assert (doc["state"], doc["carrier"]) == ("upstream", carrier)
    assert f"upstream commit {carrier} carries this change (same patch-id)" in doc["evidence"]
    dropped = bump(cli, upstream)
    assert dropped.code == 0, dropped.out + dropped.err
    assert f"dropped fix: upstream commit {carrier}" in dropped.out.replace("\n", " ")
    assert not (project.root / "patches/lib/fix.patch").exists()
    assert 'patches = ["ours"]' in (project.root / "manifests/t.toml").read_text()
    assert status_of(cli, upstream) == [("ours", "clean")]


def test_a_patch_bump_drops_takes_its_own_smoke_test_with_it(cli, project, upstream):
    pin = upstream.head()
    tests = project.root / "tests/smoke/lib"
    tests.mkdir(parents=True)
    patches = {}
    for patch_id, line, test in (("fix", 20, "test_fix.py"), ("ours", 5, "test_ours.py")):
        (tests / test).write_text(f"def test_{patch_id}():\n    assert True\n")
        fields = f"{FIELDS}\nSmoke-Test: tests/smoke/lib/{test}"
        patches[patch_id] = upstream.make_patch(
            pin, {"src/mod.py": lines_with({line: patch_id})}, patch_id, fields=fields
        )
    setup(project, upstream, patches)
    upstream.commit({"src/mod.py": lines_with({20: "fix"})}, "take the vendor fix (#31)")
    dropped = bump(cli, upstream)
    assert dropped.code == 0, dropped.out + dropped.err
    assert "  removed patches/lib/fix.patch and its smoke test tests/smoke/lib/test_fix.py\n" in dropped.out
    assert not (project.root / "patches/lib/fix.patch").exists() and not (tests / "test_fix.py").exists()
    assert (tests / "test_ours.py").is_file()  # the kept patch's test stays


def test_a_smoke_test_stays_when_a_patch_file_that_may_name_it_cannot_be_read(cli, project, upstream):
    from patchmgr.maintain.leaving_tests import leaving_tests
    from patchmgr.model.patchfile import read_patch
    from patchmgr.model.project import Project

    pin = upstream.head()
    test = project.root / "tests/smoke/lib/test_fix.py"
    test.parent.mkdir(parents=True)
    test.write_text("def test_fix():\n    assert True\n")
    fields = f"{FIELDS}\nSmoke-Test: tests/smoke/lib/test_fix.py\nSmoke-Test: tests/smoke/lib/test_gone.py"
    setup(
        project,
        upstream,
        {"fix": upstream.make_patch(pin, {"src/mod.py": lines_with({20: "x"})}, "Fix", fields=fields)},
    )
    fix = read_patch(project.root / "patches/lib/fix.patch", "lib", "fix")
    opened = Project.at(project.root)
    assert leaving_tests(opened, "lib", [fix]) == {"fix": {test: test.read_bytes()}}  # a missing file names nothing
    (project.root / "patches/lib/unreadable.patch").mkdir()  # what it names cannot be known: keep every test
    assert leaving_tests(opened, "lib", [fix]) == {"fix": {}}


def test_reverse_applying_without_a_carrier_is_upstream_but_bump_asks_for_review(cli, project, upstream):
    pin_fixes(project, upstream, {"fix": {20: "fixed 20"}})
    # upstream made the same change in a commit that also changes other lines of the file: no patch-id match
    upstream.commit({"src/mod.py": lines_with({5: "upstream's own work", 20: "fixed 20"})}, "rework mod (#40)")
    _, doc = status_doc(cli, upstream)
    assert (doc["state"], doc["carrier"]) == ("upstream", None)
    assert "no upstream commit has its patch-id" in doc["evidence"]
    before = project_files(project)
    refused = bump(cli, upstream)
    assert refused.code == 1, refused.out + refused.err
    out = refused.out.replace("\n", " ")
    assert "needs review: fix looks upstream at main" in out and "bump --keep" in out
    assert "refused: lib stays at" in out
    assert project_files(project) == before
    kept = bump(cli, upstream, "--keep")
    assert kept.code == 0, kept.out + kept.err
    assert "kept fix (--keep)" in kept.out
    assert (project.root / "patches/lib/fix.patch").read_bytes() == before[
        (project.root / "patches/lib/fix.patch").relative_to(project.root)
    ]
    assert upstream.head() in (project.root / "manifests/t.toml").read_text()


def test_a_bad_version_is_refused_before_anything_is_written(cli, project, upstream):
    pin_fixes(project, upstream, {"fix": {20: "x"}}, {"version": "0.4.2"})
    upstream.commit({"src/mod.py": lines_with({}, insert_top=2)}, "shift: the patch would be refreshed")
    before = project_files(project)
    result = bump(cli, upstream, "--version", "not-a-version!")
    assert result.code == 2, result.out + result.err
    assert "'not-a-version!' is not a PEP 440 version" in result.err and "Traceback" not in result.err
    assert project_files(project) == before
    assert not (project.root / ".patchmgr-state").exists()


@pytest.fixture
def fail_writing(monkeypatch):
    """Make the transaction's write of one file really fail: its size limit is 0 while it is written.

    Root ignores permission bits, so a read-only file would not stop it; a file size limit
    (RLIMIT_FSIZE, as tests/test_full_disk.py uses) stops root as well: the write fails with EFBIG.
    """
    real = journal.write_atomic
    failing: dict[str, object] = {"path": None, "hit": 0}

    def write_atomic(path, data, *args, **kwargs):
        if path != failing["path"]:
            return real(path, data, *args, **kwargs)
        failing["hit"] += 1
        soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
        resource.setrlimit(resource.RLIMIT_FSIZE, (0, hard))
        try:
            return real(path, data, *args, **kwargs)
        finally:
            resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))

    monkeypatch.setattr(journal, "write_atomic", write_atomic)
    return failing


def two_offset_patches(project, upstream):
    pin_fixes(project, upstream, {"one": {5: "one"}, "two": {30: "two"}})
    upstream.commit({"src/mod.py": lines_with({}, insert_top=3)}, "upstream adds 3 lines on top")


@pytest.mark.parametrize("command", ["bump", "refresh"])
def test_a_write_failing_midway_puts_every_file_back(cli, project, upstream, fail_writing, command):
    two_offset_patches(project, upstream)
    before = project_files(project)
    fail_writing["path"] = project.root / "patches/lib/two.patch"  # the second file, after the first is written
    run = bump if command == "bump" else refresh
    result = run(cli, upstream)
    assert fail_writing["hit"] == 1
    assert result.code == 1, result.out + result.err
    assert "Traceback" not in result.err
    error = result.err.replace("\n", " ")
    assert "cannot write" in error and "File too large" in error and "everything was put back as it was" in error
    assert error.count("error:") == 1
    assert {k: v for k, v in project_files(project).items() if ".patchmgr-state" not in k.parts} == before
    assert not (project.root / ".patchmgr-state/journal").exists()
    # nothing is left half done: the same command without the fault goes through
    fail_writing["path"] = None
    again = run(cli, upstream)
    assert again.code == 0, again.out + again.err
    assert status_of(cli, upstream) == [("one", "clean"), ("two", "clean")]


def test_an_export_failing_midway_puts_every_file_back(tmp_path, cli, project, upstream, fail_writing):
    into = reworked_series(tmp_path, cli, project, upstream, "Add a new module")
    before = project_files(project)
    record = (into / ".git/patchmgr-edit.json").read_bytes()
    fail_writing["path"] = project.root / "manifests/t.toml"  # after the new patch file and the removal
    result = export(cli, into)
    assert fail_writing["hit"] == 1
    assert result.code == 1 and "Traceback" not in result.err, result.out + result.err
    assert "everything was put back as it was" in result.err.replace("\n", " ")
    assert {k: v for k, v in project_files(project).items() if ".patchmgr-state" not in k.parts} == before
    assert (into / ".git/patchmgr-edit.json").read_bytes() == record
    fail_writing["path"] = None
    again = export(cli, into)
    assert again.code == 0, again.out + again.err
    assert 'patches = ["first", "third", "add-a-new-module"]' in (project.root / "manifests/t.toml").read_text()
    assert not (project.root / "patches/lib/second.patch").exists()


def test_a_bump_killed_at_any_step_is_rolled_back_by_the_next_run(cli, project, upstream):
    """SIGKILL at each durable step of the bump's transaction; the next bump first puts everything back."""
    from support.reliability import run

    two_offset_patches(project, upstream)
    before = project_files(project)
    args = move_args("bump", upstream, "--root", str(project.root))

    def restore() -> None:
        shutil.rmtree(project.root / ".patchmgr-state", ignore_errors=True)
        for path in project.root.rglob("*"):
            if path.is_file() and path.relative_to(project.root) not in before:
                path.unlink()
        for rel, data in before.items():
            (project.root / rel).write_bytes(data)

    def files() -> dict:
        return {k: v for k, v in project_files(project).items() if ".patchmgr-state" not in k.parts}

    assert run(args)[0] == 0
    after = files()
    assert after != before
    half_written = 0
    for step in range(1, 40):
        restore()
        code, output = run(args, {"PATCHMGR_FAULT_KILL_AT": str(step)})
        if code == 0:
            assert files() == after
            break
        assert code == -9, output
        killed = files()
        half_written += killed not in (before, after)
        again = cli(*args[:-2])
        assert again.code == 0, again.out + again.err
        if killed not in (before, after):
            assert "an interrupted run was rolled back" in again.out
        assert files() == after, step
    else:
        raise AssertionError("the bump never finished")
    assert half_written, "no kill landed between two writes of the transaction"
