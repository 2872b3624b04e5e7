"""The bump journey through the tool: edit --onto a new upstream release, resolve, continue, export.

A synthetic upstream in a temporary repository: v0.4.2 (the pin) with three patches, and v0.5.0 where one
patch conflicts, one patch's change was committed upstream (the patch must be dropped, its commit named), and
one applies as it is. In the whole journey v0.5.0 also adds a call that the conflicting patch's guard forbids:
resolving only the conflict leaves the guard broken, and the move says so until the patch covers it.
"""

from __future__ import annotations

from support.commands import edit_onto, export, gitenv, resume
from support.gitrepos import BASE_TEXT, git, make_series
from support.journey import GUARD, NEW_CALL, OTHER, RESOLVED, journey_project, resolve_the_stop
from support.scenes import lines_with
from support.snapshot import snapshot

from patchmgr.model.dep3_edit import today


def status(cli, upstream):
    return cli("status", "--target", "t", "--source", f"lib={upstream.path}", "--json")


def test_the_whole_journey_edit_onto_resolve_continue_export(tmp_path, cli, project, upstream):
    pin, new, carrier = journey_project(project, upstream, new_call=True)
    before, files_before = snapshot(project.root), snapshot(project.root / "patches/lib")
    into = tmp_path / "work"

    # 0. the patch at the pin keeps its guard; v0.5.0 would break it (status at the pin: all clean, guards hold)
    at_pin = status(cli, upstream)
    assert at_pin.code == 0 and all(p["ok"] for p in at_pin.json["upstreams"][0]["patches"])

    # 1. edit --onto stops at the conflicting patch, markers in place, one message saying what to do
    started = edit_onto(cli, upstream, into)
    assert started.code == 1, started.out + started.err
    assert (
        f"left out thd-bool-attention-mask: upstream carries it as {carrier[:7]} "
        "(Use a bool mask for THD attention (#123))" in started.out
    )
    assert "stopped at patch 1 of 2, nvtx-ranges" in started.out
    assert "conflict markers (<<<<<<< ======= >>>>>>>) are in src/mod.py" in started.out
    assert (
        f"git -C {into.resolve()} add src/mod.py; then: patchmgr edit --continue --into {into.resolve()}" in started.out
    )
    assert "patchmgr edit --skip --into" in started.out and "patchmgr edit --abort --into" in started.out
    text = (into / "src/mod.py").read_text()
    assert "<<<<<<< " in text and "line 5 rewritten upstream" in text and "line 5 patched" in text
    assert NEW_CALL in text
    assert git(into, "rev-parse", "HEAD") == new

    # 2. export refuses while the move is unfinished; nothing is written
    refused = export(cli, into)
    assert refused.code == 1 and "stopped at nvtx-ranges" in refused.err and "edit --continue" in refused.err
    assert snapshot(project.root) == before

    # continuing with the markers still there is refused, naming the file
    unresolved = resume(cli, into, "continue")
    assert unresolved.code == 1 and "src/mod.py still has conflicts" in unresolved.err

    # 3. the person resolves the conflict, git add, continue: every patch is on, but the guard is broken
    (into / "src/mod.py").write_text(lines_with({5: "line 5 rewritten upstream, and patched", 30: NEW_CALL}))
    git(into, "add", "src/mod.py")
    done = resume(cli, into, "continue")
    assert done.code == 1, done.out + done.err
    assert "nvtx-ranges: guard broken at v0.5.0: absent /range_push/ in src/mod.py" in done.out
    assert f"src/mod.py:30: {NEW_CALL}" in done.out
    assert "every patch is on v0.5.0, but nvtx-ranges no longer keeps its guard there" in done.out
    # ... so the patch covers the new call too: a fixup of its commit, squashed in (notes follow the rebase)
    (into / "src/mod.py").write_text(RESOLVED)
    git(into, "commit", "-q", "-a", "--fixup=HEAD~1")
    rebased = gitenv(into, "-c", "sequence.editor=true", "rebase", "-q", "-i", "--autosquash", new)
    assert rebased.returncode == 0, rebased.stderr
    assert git(into, "log", "--format=%s", f"{new}..HEAD").splitlines() == ["Fix other 10", "Use our ranges on line 5"]
    assert git(into, "notes", "--ref", "refs/notes/patchmgr", "show", "HEAD~1") == "patchmgr-patch: nvtx-ranges"
    assert git(into, "status", "--porcelain") == ""

    # 4. export: refreshed patches, pin and version moved, carried patch dropped with its commit, range-diff;
    # the guards hold on the exported tree
    exported = export(cli, into)
    assert exported.code == 0, exported.out + exported.err
    out = exported.out
    assert "updated   nvtx-ranges" in out and "unchanged other-fix" in out
    assert (
        f"dropped   thd-bool-attention-mask: upstream carries it as {carrier[:7]} "
        "(Use a bool mask for THD attention (#123))" in out
    )
    assert f"moved the pin of lib: {pin[:12]} -> {new[:12]} (v0.5.0), version 0.4.2 -> 0.5.0" in out
    assert "range-diff" in out and "Use our ranges on line 5" in out

    exported, files_after = snapshot(project.root), snapshot(project.root / "patches/lib")
    manifest = (project.root / "manifests/t.toml").read_text()
    assert f'commit = "{new}"  # v0.5.0' in manifest and 'version = "0.5.0"' in manifest
    assert "# keep this comment" in manifest and manifest.startswith("# the test target")
    assert 'patches = ["nvtx-ranges", "other-fix"]' in manifest
    assert "thd-bool-attention-mask.patch" not in files_after
    # unchanged bytes for the patch that applied as it was; Last-Update only on the changed one
    assert files_after["other-fix.patch"] == files_before["other-fix.patch"]
    changed = (project.root / "patches/lib/nvtx-ranges.patch").read_bytes()
    assert f"Last-Update: {today()}".encode() in changed and b"Last-Update: 2025-01-01" not in changed
    assert f"Origin: vendor\nUpstream-Status: Pending\nLast-Update: {today()}\n{GUARD}\n".encode() in changed
    assert b"+line 5 rewritten upstream, and patched\n" in changed and b"-line 5 rewritten upstream\n" in changed

    # 5. status at the new pin: all clean, the guard holding
    after = status(cli, upstream)
    assert after.code == 0, after.out + after.err
    patches = after.json["upstreams"][0]["patches"]
    assert [(p["id"], p["state"], p["ok"]) for p in patches] == [
        ("nvtx-ranges", "clean", True),
        ("other-fix", "clean", True),
    ]
    assert patches[0]["guards"] == [
        {"guard": "absent /range_push/ in src/mod.py", "holds": True, "offenses": [], "error": None, "offense_count": 0}
    ]

    # exporting again changes nothing
    again = export(cli, into)
    assert again.code == 0 and "no patch changed" in again.out
    assert snapshot(project.root) == exported


def test_export_json_has_the_range_diff_and_the_dropped_patch(tmp_path, cli, project, upstream):
    pin, new, carrier = journey_project(project, upstream)
    into = tmp_path / "work"
    assert edit_onto(cli, upstream, into, "v0.5.0", "--json").code == 1
    resolve_the_stop(into)
    doc = resume(cli, into, "continue", "--json").json
    assert doc["command"] == "edit" and doc["ok"] and doc["finished"]
    assert [p["id"] for p in doc["patches"]] == ["nvtx-ranges", "other-fix"]
    doc = export(cli, into, "--json").json
    assert doc["command"] == "export" and doc["ok"]
    assert doc["dropped"] == [
        {
            "id": "thd-bool-attention-mask",
            "carrier": carrier,
            "reason": f"upstream carries it as {carrier[:7]} (Use a bool mask for THD attention (#123))",
        }
    ]
    assert doc["pin"] == {"from": pin, "to": new, "ref": "v0.5.0", "old_version": "0.4.2", "new_version": "0.5.0"}
    pairs = {p["subject"]: p["status"] for p in doc["range_diff"]["pairs"]}
    assert pairs == {
        "Use our ranges on line 5": "changed",
        "Use a bool attention mask": "removed",
        "Fix other 10": "same",
    }


def test_the_stopped_json_names_the_conflicted_files_and_the_next_commands(tmp_path, cli, project, upstream):
    journey_project(project, upstream)
    into = tmp_path / "work"
    result = edit_onto(cli, upstream, into, "v0.5.0", "--json")
    doc = result.json
    assert result.code == 1 and doc["command"] == "edit" and doc["ok"] is False and doc["finished"] is False
    assert doc["stopped"]["id"] == "nvtx-ranges" and doc["stopped"]["conflicts"] == ["src/mod.py"]
    assert doc["next"][0] == f"patchmgr edit --continue --into {into.resolve()}"
    assert [c["id"] for c in doc["carried"]] == ["thd-bool-attention-mask"]


def test_plain_git_am_continue_is_read_by_edit_continue(tmp_path, cli, project, upstream):
    _pin, new, _carrier = journey_project(project, upstream)
    into = tmp_path / "work"
    assert edit_onto(cli, upstream, into).code == 1
    resolve_the_stop(into)
    done = gitenv(into, "am", "--continue")
    assert done.returncode == 0, done.stderr
    result = resume(cli, into, "continue")
    assert result.code == 0, result.out + result.err
    assert git(into, "log", "--format=%s", f"{new}..HEAD").splitlines() == ["Fix other 10", "Use our ranges on line 5"]
    assert git(into, "notes", "--ref", "refs/notes/patchmgr", "show", "HEAD~1") == "patchmgr-patch: nvtx-ranges"
    assert export(cli, into).code == 0
    assert [p["state"] for p in status(cli, upstream).json["upstreams"][0]["patches"]] == ["clean", "clean"]


def test_skip_leaves_the_stopped_patch_out_of_the_series(tmp_path, cli, project, upstream):
    _pin, new, _carrier = journey_project(project, upstream)
    files_before = snapshot(project.root / "patches/lib")
    into = tmp_path / "work"
    assert edit_onto(cli, upstream, into).code == 1
    skipped = resume(cli, into, "skip")
    assert skipped.code == 0, skipped.out + skipped.err
    assert "skipped nvtx-ranges" in skipped.out and "every patch is on v0.5.0" in skipped.out
    assert git(into, "log", "--format=%s", f"{new}..HEAD").splitlines() == ["Fix other 10"]
    assert "<<<<<<<" not in (into / "src/mod.py").read_text()
    exported = export(cli, into)
    assert exported.code == 0, exported.out + exported.err
    assert "dropped   nvtx-ranges: skipped during edit --onto v0.5.0" in exported.out
    files_after, manifest = snapshot(project.root / "patches/lib"), (project.root / "manifests/t.toml").read_bytes()
    assert set(files_after) == {"other-fix.patch"} and files_after["other-fix.patch"] == files_before["other-fix.patch"]
    assert 'patches = ["other-fix"]' in manifest.decode() and new in manifest.decode()
    assert [p["state"] for p in status(cli, upstream).json["upstreams"][0]["patches"]] == ["clean"]


def test_abort_goes_back_to_the_pin_and_export_then_changes_nothing(tmp_path, cli, project, upstream):
    pin, _new, _carrier = journey_project(project, upstream)
    before = snapshot(project.root)
    into = tmp_path / "work"
    assert edit_onto(cli, upstream, into).code == 1
    aborted = resume(cli, into, "abort")
    assert aborted.code == 0, aborted.out + aborted.err
    assert f"back at the pin {pin[:12]}" in aborted.out
    assert git(into, "log", "--format=%s", f"{pin}..HEAD").splitlines() == [
        "Fix other 10",
        "Use a bool attention mask",
        "Use our ranges on line 5",
    ]
    assert git(into, "status", "--porcelain") == ""
    assert not (into / ".git" / "rebase-apply").exists()
    result = export(cli, into)
    assert result.code == 0 and "no patch changed" in result.out, result.out + result.err
    assert snapshot(project.root) == before
    again = resume(cli, into, "continue")
    assert again.code == 1 and "no edit --onto to continue" in again.err


def test_abort_after_a_resolved_patch_keeps_that_work_on_a_branch(tmp_path, cli, project, upstream):
    journey_project(project, upstream)
    # v0.6.0 also changes the line other-fix patches: two stops, the first one resolved before the abort
    upstream.commit({"src/other.py": OTHER.replace("other 10\n", "other 10 upstream\n")}, "Rewrite other 10")
    into = tmp_path / "work"
    assert edit_onto(cli, upstream, into, "main").code == 1
    resolve_the_stop(into)
    second = resume(cli, into, "continue")
    assert second.code == 1 and "stopped at patch 2 of 2, other-fix" in second.out
    aborted = resume(cli, into, "abort")
    assert aborted.code == 0, aborted.out + aborted.err
    saved = [line for line in aborted.out.splitlines() if "kept on branch" in line]
    assert saved, aborted.out
    branch = saved[0].split("kept on branch ")[1].strip()
    assert git(into, "show", f"{branch}:src/mod.py") + "\n" == RESOLVED


def test_edit_onto_a_bad_ref_is_exit_2_and_writes_nothing(tmp_path, cli, project, upstream):
    journey_project(project, upstream)
    before = snapshot(project.root)
    into = tmp_path / "work"
    result = edit_onto(cli, upstream, into, "v9.9.9")
    assert result.code == 2, result.out + result.err
    assert "v9.9.9" in result.err and "Traceback" not in result.err
    assert not into.exists()
    assert snapshot(project.root) == before


def test_edit_onto_the_pin_itself_is_refused(tmp_path, cli, project, upstream):
    journey_project(project, upstream)
    into = tmp_path / "work"
    result = edit_onto(cli, upstream, into, "v0.4.2")
    assert result.code == 2 and "already pinned at v0.4.2" in result.err
    assert not into.exists()


def test_export_refuses_a_git_am_in_progress(tmp_path, cli, project, upstream):
    """Export refuses an unfinished am even in a plain edit checkout (someone ran git am by hand)."""
    journey_project(project, upstream)
    into = tmp_path / "work"
    assert (
        cli("edit", "--target", "t", "--upstream", "lib", "--into", str(into), "--source", f"lib={upstream.path}").code
        == 0
    )
    before = snapshot(project.root)
    mail = tmp_path / "conflict.patch"
    mail.write_bytes(
        make_series(
            upstream,
            upstream.head(),
            [({"src/mod.py": BASE_TEXT.replace("line 5 rewritten upstream", "elsewhere")}, "x")],
        )[0]
    )
    (into / "src/mod.py").write_text(lines_with({5: "something else"}))
    git(into, "commit", "-q", "-am", "local change")
    assert gitenv(into, "am", "-3", str(mail)).returncode != 0
    result = export(cli, into)
    assert result.code == 1 and "a git am is in progress" in result.err
    assert snapshot(project.root) == before


def test_edit_onto_refuses_to_rebuild_a_checkout_with_a_move_under_way(tmp_path, cli, project, upstream):
    journey_project(project, upstream)
    into = tmp_path / "work"
    assert edit_onto(cli, upstream, into).code == 1
    again = edit_onto(cli, upstream, into)
    assert again.code == 1 and "lose work not yet exported" in again.err
    assert "edit --continue/--skip/--abort" in again.err
    assert "<<<<<<<" in (into / "src/mod.py").read_text()  # untouched


def test_continue_skip_abort_do_not_go_together(tmp_path, cli, project, upstream):
    journey_project(project, upstream)
    result = cli("edit", "--continue", "--skip", "--into", str(tmp_path / "w"))
    assert result.code == 2 and "--continue and --skip do not go together" in result.err


def test_bump_refusing_the_conflict_names_the_way_through_edit_onto(tmp_path, cli, project, upstream):
    journey_project(project, upstream)
    before = snapshot(project.root)
    result = cli("bump", "--target", "t", "--upstream", "lib", "--to", "v0.5.0", "--source", f"lib={upstream.path}")
    assert result.code == 1, result.out + result.err
    assert "patchmgr edit --target t --upstream lib --into DIR --onto v0.5.0" in " ".join(result.out.split())
    assert snapshot(project.root) == before


def test_a_finished_move_not_yet_exported_is_work_that_edit_keeps(tmp_path, cli, project, upstream):
    _pin, new, _carrier = journey_project(project, upstream)
    into = tmp_path / "work"
    assert edit_onto(cli, upstream, into).code == 1
    resolve_the_stop(into)
    assert resume(cli, into, "continue").code == 0
    head = git(into, "rev-parse", "HEAD")
    plain = cli("edit", "--target", "t", "--upstream", "lib", "--into", str(into), "--source", f"lib={upstream.path}")
    assert plain.code == 1 and "lose work not yet exported" in plain.err and "2 local commits" in plain.err
    assert git(into, "rev-parse", "HEAD") == head
    forced = cli(
        "edit", "--target", "t", "--upstream", "lib", "--into", str(into), "--source", f"lib={upstream.path}", "--force"
    )
    assert forced.code == 0, forced.out + forced.err
    saved = [b for b in git(into, "branch", "--format=%(refname:short)").split() if b.startswith("patchmgr-saved/")]
    assert len(saved) == 1 and git(into, "rev-parse", saved[0]) == head
    assert git(into, "show", f"{saved[0]}~1:src/mod.py") + "\n" == RESOLVED


def test_export_version_option_names_the_version_or_refuses_a_bad_one(tmp_path, cli, project, upstream):
    _pin, new, _carrier = journey_project(project, upstream)
    into = tmp_path / "work"
    assert edit_onto(cli, upstream, into, new).code == 1  # a bare commit: no version in its name
    assert resume(cli, into, "skip").code == 0
    before = snapshot(project.root)
    bad = export(cli, into, "--version", "not a version")
    assert bad.code == 2 and "not a PEP 440 version" in bad.err and snapshot(project.root) == before
    kept = export(cli, into, "--json")
    assert kept.code == 0 and kept.json["pin"]["new_version"] is None
    assert any(f"version stays 0.4.2: {new} names no release version" in n for n in kept.json["notes"])
    assert 'version = "0.4.2"' in (project.root / "manifests/t.toml").read_text()


def test_export_version_option_sets_the_version(tmp_path, cli, project, upstream):
    _pin, new, _carrier = journey_project(project, upstream)
    into = tmp_path / "work"
    assert edit_onto(cli, upstream, into, new).code == 1
    assert resume(cli, into, "skip").code == 0
    assert export(cli, into, "--version", "0.5.0rc1").code == 0
    manifest = (project.root / "manifests/t.toml").read_text()
    assert 'version = "0.5.0rc1"' in manifest and f'commit = "{new}"\n' in manifest
