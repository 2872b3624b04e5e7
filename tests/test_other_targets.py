"""A project of several targets: --source/--against for an upstream the chosen target lacks is ignored with
a note, and only the chosen target's manifest must parse."""

from __future__ import annotations

from support.commands import move_args
from support.scenes import lines_with
from support.snapshot import snapshot


# -- --source/--against for an upstream the chosen target does not have ------------------------
def two_targets(project, upstream, other_manifest: str | None = None) -> str:
    pin = upstream.head()
    project.add_patch("lib", "fix", upstream.make_patch(pin, {"src/mod.py": lines_with({20: "fixed 20"})}, "Fix"))
    project.manifest("a", {"lib": {"git": "https://example.invalid/lib.git", "commit": pin, "patches": ["fix"]}})
    if other_manifest is None:
        project.manifest(
            "b",
            {
                "lib": {"git": "https://example.invalid/lib.git", "commit": pin, "patches": ["fix"]},
                "other": {"git": "https://example.invalid/other.git", "commit": pin, "patches": []},
            },
        )
    else:
        (project.root / "manifests/b.toml").write_text(other_manifest)
    return pin


def test_source_for_an_upstream_of_another_target_is_ignored_with_a_note(cli, project, upstream):
    two_targets(project, upstream)
    args = ("status", "--target", "a", "--source", f"lib={upstream.path}", "--source", "other=/srv/nowhere")
    result = cli(*args)
    assert result.code == 0, result.out + result.err
    assert "--source other: target a has no upstream other; ignored" in result.out
    doc = cli(*args, "--json").json
    assert doc["ok"] is True and "--source other: target a has no upstream other; ignored" in doc["notes"]
    against = cli(*args, "--against", "other=main", "--json")
    assert against.code == 0, against.out
    assert "--against other: target a has no upstream other; ignored" in against.json["notes"]
    # the other target has it: used there
    other = cli(
        "status", "--target", "b", "--json", "--source", f"lib={upstream.path}", "--source", f"other={upstream.path}"
    )
    assert other.code == 0, other.out
    # refresh and bump take it the same way
    refresh = cli(*move_args("refresh", upstream, "--source", "other=/srv/nowhere", "--json", target="a"))
    assert refresh.code == 0 and "--source other: target a has no upstream other; ignored" in refresh.json["notes"]


def test_source_for_an_upstream_no_manifest_names_stays_an_error(cli, project, upstream):
    two_targets(project, upstream)
    for option in ("--source", "--against"):
        result = cli("status", "--target", "a", "--source", f"lib={upstream.path}", option, "nosuch=main")
        assert result.code == 2
        assert "no upstream 'nosuch' in target a" in result.err and "no manifest names 'nosuch'" in result.err
    assert cli("status", "--target", "a", "--upstream", "other").code == 2  # --upstream selects: never ignored


def test_source_named_only_by_a_broken_manifest_is_ignored_too(cli, project, upstream):
    two_targets(project, upstream, '[target]\nname = "b"\n[upstreams.other]\ncommit = \n')
    result = cli(*move_args("refresh", upstream, "--source", "other=/srv/x", "--json", target="a"))
    assert result.code == 0, result.out + result.err
    assert "--source other: target a has no upstream other; ignored" in result.json["notes"]


# -- only the chosen target's manifest must parse --------------------------------------------
BROKEN = '[target]\nname = "b"\n[upstreams.lib]\ncommit = \npatches = ["fix"]\n'


def test_a_broken_other_manifest_does_not_fail_status_of_this_target(cli, project, upstream):
    two_targets(project, upstream, BROKEN)
    result = cli("status", "--target", "a", "--source", f"lib={upstream.path}", "--json")
    assert result.code == 0, result.out + result.err
    (warning,) = result.json["warnings"]
    assert "b.toml" in warning and "invalid TOML" in warning and "patchmgr lint" in warning
    # status works on one target: without --target it names them, it does not check them all
    unnamed = cli("status", "--source", f"lib={upstream.path}")
    assert unnamed.code == 2 and "--target is required" in unnamed.err and "targets: a, b" in unnamed.err
    assert cli("status", "--target", "b", "--source", f"lib={upstream.path}").code == 2  # the broken one itself
    # lint still reads every manifest and reports the broken one
    lint = cli("lint")
    assert lint.code == 1 and "b.toml" in lint.out


def test_bump_names_a_broken_other_manifest_that_may_list_a_rewritten_file(cli, project, upstream):
    """A manifest that does not load may list the patch bump rewrites: bump refuses naming it (nothing written), and
    writes this target's own copy with --own-copy."""
    two_targets(project, upstream, BROKEN)
    upstream.commit({"src/mod.py": lines_with({}, insert_top=3)}, "upstream adds 3 lines on top")
    words = ["bump", "--target", "a", "--upstream", "lib", "--to", "main", "--source", f"lib={upstream.path}"]
    before = snapshot(project.root)
    result = cli(*words)
    assert (
        result.code == 1
        and "patches/lib/fix.patch, which target b (its manifest does not load) lists too: made for" in result.err
    )
    assert "; or fix the manifest of b (patchmgr lint says what is wrong)" in result.err, result.err
    assert snapshot(project.root) == before
    own = cli(*words, "--own-copy")
    assert own.code == 0, own.out + own.err
    assert upstream.head() in (project.root / "manifests/a.toml").read_text()
    assert snapshot(project.root)["patches/lib/fix.patch"] == before["patches/lib/fix.patch"]  # b's file stays


# -- a patch file another target lists is not rewritten for one target unasked ----------------
def shared_fix(project, upstream, b_patches=("fix",)) -> str:
    """Targets a and b list lib's ``fix`` (line 20) at the same pin (b may list more); returns the pin."""
    pin = upstream.head()
    project.add_patch("lib", "fix", upstream.make_patch(pin, {"src/mod.py": lines_with({20: "fixed 20"})}, "Fix"))
    if "more" in b_patches:
        project.add_patch("lib", "more", upstream.make_patch(pin, {"src/mod.py": lines_with({5: "more"})}, "More"))
    for name, patches in (("a", ["fix"]), ("b", list(b_patches))):
        project.manifest(name, {"lib": {"git": "https://example.invalid/lib.git", "commit": pin, "patches": patches}})
    return pin


def states(cli, upstream, target):
    result = cli("status", "--target", target, "--json", "--source", f"lib={upstream.path}")
    return [(p["id"], p["state"]) for u in result.json["upstreams"] for p in u["patches"]]


def edited_onto(tmp_path, cli, project, upstream):
    """A's edit checkout moved onto ``main``, where upstream rewrote line 18 (the context of fix's hunk): the
    moved fix is clean there and fuzz at the old pin. Returns the export's words and the checkout."""
    upstream.commit({"src/mod.py": lines_with({18: "upstream 18"})}, "upstream rewrites line 18")
    into = tmp_path / "edit"
    edit = cli(
        "edit", "--target", "a", "-u", "lib", "--into", str(into), "--onto", "main", "--source", f"lib={upstream.path}"
    )
    assert edit.code == 0, edit.out + edit.err
    return ["export", "--target", "a", "--upstream", "lib", "--from", str(into)], into


def refused_and_nothing_changed(cli, project, upstream, words, command, *watched):
    before, statuses = snapshot(project.root, *watched), states(cli, upstream, "b")
    result = cli(*words)
    assert result.code == 1, result.out + result.err
    assert (
        f"error: {command} would rewrite patches/lib/fix.patch, which target b lists too (lib at b's pin" in result.err
    )
    assert "hint: give target a its own copy with --own-copy (patches/lib/fix-a.patch" in result.err
    assert "Traceback" not in result.err
    assert snapshot(project.root, *watched) == before and states(cli, upstream, "b") == statuses
    return result


def test_export_onto_a_new_ref_refuses_to_rewrite_a_file_another_target_lists(tmp_path, cli, project, upstream):
    shared_fix(project, upstream)
    words, into = edited_onto(tmp_path, cli, project, upstream)
    assert states(cli, upstream, "b") == [("fix", "clean")]
    result = refused_and_nothing_changed(cli, project, upstream, words, "export", into / ".git/patchmgr-edit.json")
    assert ", or move b with it: the same command with --also-target b (same lib pin and series)" in result.err
    old = (project.root / "patches/lib/fix.patch").read_bytes()

    own = cli(*words, "--own-copy", "--json")
    assert own.code == 0, own.out + own.err
    assert own.json["copies"] == {"fix": "fix-a"} and own.json["removed"] == []
    assert (project.root / "patches/lib/fix.patch").read_bytes() == old  # b's file, byte for byte
    assert 'patches = ["fix-a"]' in (project.root / "manifests/a.toml").read_text()
    assert states(cli, upstream, "a") == [("fix-a", "clean")] and states(cli, upstream, "b") == [("fix", "clean")]
    lint = cli("lint")
    assert lint.code == 0, lint.out + lint.err
    again = cli(*words)  # the checkout's record names the copy now: nothing to say, nothing to refuse
    assert again.code == 0 and "unchanged fix-a" in again.out, again.out + again.err


def test_export_onto_a_new_ref_moves_a_target_of_the_same_series_along(tmp_path, cli, project, upstream):
    pin = shared_fix(project, upstream)
    words, _into = edited_onto(tmp_path, cli, project, upstream)
    result = cli(*words, "--also-target", "b")
    assert result.code == 0, result.out + result.err
    assert "target b takes the same change as a (the same lib pin and series)" in result.out + result.err
    for name in ("a", "b"):
        manifest = (project.root / f"manifests/{name}.toml").read_text()
        assert upstream.head() in manifest and pin not in manifest, name
        assert states(cli, upstream, name) == [("fix", "clean")], name


def test_also_target_takes_only_a_target_of_the_same_pin_and_series(tmp_path, cli, project, upstream):
    shared_fix(project, upstream, b_patches=("more", "fix"))
    words, into = edited_onto(tmp_path, cli, project, upstream)
    before = snapshot(project.root, into / ".git/patchmgr-edit.json")
    refused = cli(*words)
    assert refused.code == 1 and "b can move on its own afterwards" in refused.err, refused.err
    assert "--also-target" not in refused.err  # b lists another series: only its own copy is a way
    for other in ("b", "a", "nosuch"):
        wrong = cli(*words, "--also-target", other)
        assert wrong.code == 2 and "error:" in wrong.err and "hint:" in wrong.err, (other, wrong.err)
        assert "Traceback" not in wrong.err, wrong.err
    assert "target b lists lib at" in cli(*words, "--also-target", "b").err
    assert snapshot(project.root, into / ".git/patchmgr-edit.json") == before
    assert states(cli, upstream, "b") == [("more", "clean"), ("fix", "clean")]


def test_bump_refuses_to_rewrite_a_file_another_target_lists(cli, project, upstream):
    pin = shared_fix(project, upstream)
    upstream.commit({"src/mod.py": lines_with({}, insert_top=3)}, "upstream adds 3 lines on top")
    words = ["bump", "--target", "a", "--upstream", "lib", "--to", "main", "--source", f"lib={upstream.path}"]
    for dry in ((), ("--dry-run",)):
        refused_and_nothing_changed(cli, project, upstream, [*words, *dry], "bump")
    old = (project.root / "patches/lib/fix.patch").read_bytes()

    own = cli(*words, "--own-copy")
    assert own.code == 0, own.out + own.err
    assert "fix-a: target a's own copy of fix (patches/lib/fix-a.patch)" in own.out + own.err
    assert (project.root / "patches/lib/fix.patch").read_bytes() == old
    assert states(cli, upstream, "a") == [("fix-a", "clean")] and states(cli, upstream, "b") == [("fix", "clean")]
    assert pin in (project.root / "manifests/b.toml").read_text()


def test_bump_moves_a_target_of_the_same_series_along(cli, project, upstream):
    pin = shared_fix(project, upstream)
    upstream.commit({"src/mod.py": lines_with({}, insert_top=3)}, "upstream adds 3 lines on top")
    words = ["bump", "--target", "a", "--upstream", "lib", "--to", "main", "--source", f"lib={upstream.path}"]
    result = cli(*words, "--also-target", "b", "--json")
    assert result.code == 0, result.out + result.err
    assert result.json["also"] == ["b"] and result.json["copies"] == {}
    for name in ("a", "b"):
        manifest = (project.root / f"manifests/{name}.toml").read_text()
        assert upstream.head() in manifest and pin not in manifest, name
        assert states(cli, upstream, name) == [("fix", "clean")], name


def test_refresh_refuses_to_rewrite_a_file_another_target_lists(cli, project, upstream):
    shared_fix(project, upstream)
    upstream.commit({"src/mod.py": lines_with({}, insert_top=3)}, "upstream adds 3 lines on top")
    words = ["refresh", "--target", "a", "--upstream", "lib", "--to", "main", "--source", f"lib={upstream.path}"]
    for dry in ((), ("--dry-run",)):
        refused_and_nothing_changed(cli, project, upstream, [*words, *dry], "refresh")
    along = cli(*words, "--also-target", "b", "--dry-run", "--json")  # b takes the same change: not refused
    assert along.code == 0 and along.json["also"] == ["b"] and along.json["action"] == "dry-run", along.out
    old = (project.root / "patches/lib/fix.patch").read_bytes()
    own = cli(*words, "--own-copy", "--json")
    assert own.code == 0, own.out + own.err
    assert own.json["copies"] == {"fix": "fix-a"} and own.json["written"] == [
        str(project.root / "patches/lib/fix-a.patch")
    ]
    assert (project.root / "patches/lib/fix.patch").read_bytes() == old
    assert 'patches = ["fix-a"]' in (project.root / "manifests/a.toml").read_text()
    assert states(cli, upstream, "b") == [("fix", "clean")]


def test_refresh_refuses_to_rewrite_a_file_another_target_lists_through_a_link(cli, project, upstream):
    """Target b's upstream ``fork`` (the same code under another name) lists ``fix`` by a link to lib's file:
    rewriting lib's file for a rewrites b's patch as much as if b named it."""
    pin = upstream.head()
    project.add_patch("lib", "fix", upstream.make_patch(pin, {"src/mod.py": lines_with({20: "fixed 20"})}, "Fix"))
    (project.root / "patches/fork").mkdir()
    (project.root / "patches/fork/fix.patch").symlink_to("../lib/fix.patch")
    project.manifest("a", {"lib": {"git": "https://example.invalid/lib.git", "commit": pin, "patches": ["fix"]}})
    project.manifest("b", {"fork": {"git": "https://example.invalid/fork.git", "commit": pin, "patches": ["fix"]}})
    upstream.commit({"src/mod.py": lines_with({}, insert_top=3)}, "upstream adds 3 lines on top")
    before = snapshot(project.root)
    words = ["refresh", "--target", "a", "--upstream", "lib", "--to", "main", "--source", f"lib={upstream.path}"]
    result = cli(*words)
    assert result.code == 1, result.out + result.err
    assert (
        f"error: refresh would rewrite patches/lib/fix.patch, which target b lists too (lib at b's pin {pin[:12]})"
        in result.err
    )
    assert "fix the manifest" not in result.err and "Traceback" not in result.err
    assert snapshot(project.root) == before
