"""A project of several targets: --source/--against for an upstream the chosen target lacks is ignored with
a note, and only the chosen target's manifest must parse."""

from __future__ import annotations

from support.commands import move_args
from support.scenes import lines_with


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


def test_bump_notes_a_broken_other_manifest_without_failing(cli, project, upstream):
    two_targets(project, upstream, BROKEN)
    upstream.commit({"src/mod.py": lines_with({}, insert_top=3)}, "upstream adds 3 lines on top")
    result = cli("bump", "--target", "a", "--upstream", "lib", "--to", "main", "--source", f"lib={upstream.path}")
    assert result.code == 0, result.out + result.err
    assert "b (its manifest does not load)" in result.out
    assert upstream.head() in (project.root / "manifests/a.toml").read_text()
