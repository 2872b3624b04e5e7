"""matrix: patches by upstream release tags, on a real git upstream whose tags move a patch through its states."""

from __future__ import annotations

import re

from support.commands import matrix
from support.gitrepos import git, plain_git
from support.scenes import guarded_fix, lines_with, setup, tagged_upstream


def status_against(cli, upstream, ref: str):
    """``status --json`` of target ``t`` against ``ref``: what a matrix column must agree with."""
    return cli("status", "--target", "t", "--json", "--source", f"lib={upstream.path}", "--against", f"lib={ref}")


def test_json_grid_has_every_release_tag_since_the_pin_and_the_tip(cli, project, upstream):
    pin, (moved, broke, absorbed) = tagged_upstream(project, upstream)
    result = matrix(cli, upstream, "--json")
    doc = result.json
    assert doc["command"] == "matrix" and doc["target"] == "t" and doc["notes"] == []
    # the newest release (v2.0.0) has fix upstream, where it no longer applies: exit 1, as status says there
    assert result.code == 1 and doc["ok"] is False and doc["html"] is None
    (lib,) = doc["upstreams"]
    assert [(c["kind"], c["name"]) for c in lib["columns"]] == [
        ("pin", "v0.9.0"),
        ("tag", "v1.0.0"),
        ("tag", "v1.1.0"),
        ("tag", "v1.2.0"),
        ("tag", "v2.0.0"),
        ("tip", "main"),
    ]
    assert lib["columns"][0]["commit"] == pin and lib["columns"][-1]["commit"] == upstream.head()
    assert lib["columns"][3]["commit"] == broke  # the annotated tag, peeled
    fix, other = lib["patches"]
    assert [c["state"] for c in fix["cells"]] == ["clean", "clean", "offset", "conflict", "upstream", "upstream"]
    assert [c["state"] for c in other["cells"]] == ["clean"] * 6
    assert fix["cells"][2]["detail"] == "src/mod.py: hunk #1 +3 lines"
    assert fix["cells"][3]["detail"].startswith("src/mod.py hunk #1")
    assert "reverse of the patch applies" in fix["cells"][4]["detail"]
    # the first change: toward the first column where it stops applying (v1.2.0), the commit that broke it
    changed = fix["changed"]
    assert (changed["column"], changed["state"], changed["commit"]) == ("v1.2.0", "conflict", broke)
    assert changed["pr"] == 1234 and changed["subject"] == "refactor: rewrite line 20 (#1234)"
    assert other["changed"] is None
    assert lib["verdict_column"] == "v2.0.0" and lib["ok"] is False


def test_cells_agree_with_status_against_each_tag(cli, project, upstream):
    tagged_upstream(project, upstream)
    doc = matrix(cli, upstream, "--json").json
    (lib,) = doc["upstreams"]
    for index, column in enumerate(lib["columns"][1:], start=1):
        status = status_against(cli, upstream, column["name"])
        states = [p["state"] for p in status.json["upstreams"][0]["patches"]]
        assert states == [p["cells"][index]["state"] for p in lib["patches"]], column


def test_exit_code_follows_the_newest_release(cli, project, upstream):
    tagged_upstream(project, upstream)
    assert matrix(cli, upstream).code == 1  # fix is upstream at v2.0.0: drop it (bump), as status says
    ok = matrix(cli, upstream, "--refs", "v1.[01].*", "--json")
    assert ok.code == 0 and ok.json["ok"] is True
    assert [c["name"] for c in ok.json["upstreams"][0]["columns"]] == ["v0.9.0", "v1.0.0", "v1.1.0", "main"]


def test_terminal_grid_names_columns_states_and_the_breaking_commit(cli, project, upstream):
    _pin, (_moved, broke, _absorbed) = tagged_upstream(project, upstream)
    result = matrix(cli, upstream)
    out = result.out
    for header in ("pin v0.9.0", "v1.0.0", "v1.1.0", "v1.2.0", "v2.0.0", "main (tip)", "first change"):
        assert header in out, header
    fix_line = next(line for line in out.splitlines() if line.startswith("│ fix"))
    assert [cell.strip() for cell in fix_line.split("│")[2:8]] == [
        "clean",
        "clean",
        "offset",
        "conflict",
        "upstream",
        "upstream",
    ]
    assert f"conflict since {broke[:12]}" in out and "refactor: rewrite line 20 (#1234)" in out
    other_line = next(line for line in out.splitlines() if line.startswith("│ other"))
    assert "unchanged" in other_line
    assert "legend:" in out and "guard broken" in out


def test_refs_pattern_and_since(cli, project, upstream):
    tagged_upstream(project, upstream)
    pre = matrix(cli, upstream, "--refs", "v2*", "--json").json["upstreams"][0]
    assert [c["name"] for c in pre["columns"]] == ["v0.9.0", "v2.0.0", "v2.1.0rc1", "main"]
    since = matrix(cli, upstream, "--since", "v1.1.0", "--json").json["upstreams"][0]
    assert [c["name"] for c in since["columns"]] == ["v0.9.0", "v1.2.0", "v2.0.0", "main"]
    every = matrix(cli, upstream, "--refs", "v*", "--json").json["upstreams"][0]
    # the pin's own tag is the pin column, not a second one
    assert [c["name"] for c in every["columns"]] == [
        "v0.9.0",
        "v1.0.0",
        "v1.1.0",
        "v1.2.0",
        "v2.0.0",
        "v2.1.0rc1",
        "main",
    ]
    none = matrix(cli, upstream, "--refs", "release-*", "--json").json["upstreams"][0]
    assert [c["kind"] for c in none["columns"]] == ["pin", "tip"]
    assert none["notes"] == ["no tag of lib matches 'release-*'"]


def dated_commit(upstream, day: int, message: str, tag: str, branch_from: str | None = None) -> str:
    """A commit on ``main`` (or on a side branch from ``branch_from``) committed on day ``day`` of 2026, tagged."""
    date = {
        "GIT_AUTHOR_DATE": f"2026-02-{day:02d}T00:00:00+00:00",
        "GIT_COMMITTER_DATE": f"2026-02-{day:02d}T00:00:00+00:00",
    }
    tree = git(upstream.path, "rev-parse", "HEAD^{tree}")
    parent = branch_from or upstream.head()
    made = plain_git(upstream.path, "commit-tree", tree, "-p", parent, "-m", message, env=date).stdout.decode().strip()
    if branch_from is None:
        git(upstream.path, "update-ref", "refs/heads/main", made)
    git(upstream.path, "tag", tag, made)
    return made


def released_around_the_pin(project, upstream) -> str:
    """v0.8.0 (day 1) and v0.9.0rc1 (day 2) before the pin v0.9.0 (day 3); v0.8.1 on a side branch of v0.8.0 but
    released after the pin (day 5); v1.0.0rc1 (day 4), v1.0.0 (day 6), v0.9.1 (day 7) after it. Returns the pin."""
    old = dated_commit(upstream, 1, "release 0.8.0", "v0.8.0")
    dated_commit(upstream, 2, "0.9.0 candidate", "v0.9.0rc1")
    pin = dated_commit(upstream, 3, "release 0.9.0", "v0.9.0")
    setup(project, upstream, {"other": upstream.make_patch(pin, {"README": "upstream, patched\n"}, "Readme")})
    dated_commit(upstream, 4, "1.0.0 candidate", "v1.0.0rc1")
    dated_commit(upstream, 5, "0.8 maintenance (#5)", "v0.8.1", branch_from=old)
    dated_commit(upstream, 6, "release 1.0.0", "v1.0.0")
    dated_commit(upstream, 7, "0.9 fix after 1.0", "v0.9.1")
    return pin


def test_refs_leaves_out_tags_older_than_the_pin_unless_asked(cli, project, upstream):
    released_around_the_pin(project, upstream)
    names = lambda *args: [c["name"] for c in matrix(cli, upstream, *args, "--json").json["upstreams"][0]["columns"]]  # noqa: E731
    # newer than the pin by version, in time order (commit date): v0.9.1 after v1.0.0, as it was made
    assert names("--refs", "v*") == ["v0.9.0", "v1.0.0rc1", "v1.0.0", "v0.9.1", "main"]
    assert names("--refs", "v0.*") == ["v0.9.0", "v0.9.1", "main"]
    older = names("--refs", "v0.*", "--include-older")  # every match, the pin in its place in time
    assert older == ["v0.8.0", "v0.9.0rc1", "v0.9.0", "v0.8.1", "v0.9.1", "main"]
    # --refs and --since together: the matching tags newer than the --since tag
    assert names("--refs", "v1*", "--since", "v1.0.0rc1") == ["v0.9.0", "v1.0.0", "main"]
    # --since an older tag: the tags since it, the older ones before the pin column, never after it
    assert names("--since", "v0.8.0") == ["v0.9.0", "v0.8.1", "v1.0.0", "v0.9.1", "main"]
    assert names("--since", "v0.8.0", "--refs", "v0.*") == ["v0.9.0rc1", "v0.9.0", "v0.8.1", "v0.9.1", "main"]
    doc = matrix(cli, upstream, "--since", "v0.8.0", "--refs", "v0.*", "--json").json["upstreams"][0]
    assert doc["verdict_column"] == "v0.9.1"  # decided after the pin, never by an older tag


def test_since_a_commit_without_versions_compares_by_ancestry(cli, project, upstream):
    _pin, (moved, _broke, _absorbed) = tagged_upstream(project, upstream)
    doc = matrix(cli, upstream, "--since", moved, "--json").json["upstreams"][0]
    # v1.1.0 is the commit itself (contained): the tags after it
    assert [c["name"] for c in doc["columns"]] == ["v0.9.0", "v1.2.0", "v2.0.0", "main"]


def test_a_release_tag_decides_even_when_refs_selects_a_newer_pre_release(cli, project, upstream):
    tagged_upstream(project, upstream)
    doc = matrix(cli, upstream, "--refs", "v2*", "--json").json["upstreams"][0]
    assert [c["name"] for c in doc["columns"]][1:-1] == ["v2.0.0", "v2.1.0rc1"]
    assert doc["verdict_column"] == "v2.0.0"


def test_since_by_history_leaves_out_a_tag_of_an_older_release_branch(cli, project, upstream):
    """No version to compare with: a tag the start does not contain is "since" it only when it is not older
    (a maintenance release of an old branch, tagged before the start, is not)."""
    import os
    import subprocess

    from support.gitrepos import GIT_ENV

    pin, (moved, _broke, _absorbed) = tagged_upstream(project, upstream)
    older = {
        **os.environ,
        **GIT_ENV,
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_AUTHOR_DATE": "2025-06-01T00:00:00+00:00",
        "GIT_COMMITTER_DATE": "2025-06-01T00:00:00+00:00",
    }
    tree = git(upstream.path, "rev-parse", f"{pin}^{{tree}}")
    side = subprocess.run(
        ["git", "commit-tree", tree, "-p", pin, "-m", "backport to 0.9 (#5)"],
        cwd=upstream.path,
        env=older,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    git(upstream.path, "tag", "v0.9.1", side)
    doc = matrix(cli, upstream, "--since", moved, "--json").json["upstreams"][0]
    assert [c["name"] for c in doc["columns"]] == ["v0.9.0", "v1.2.0", "v2.0.0", "main"]


def test_html_file_is_written_with_every_row_and_column(cli, project, upstream, tmp_path):
    tagged_upstream(project, upstream)
    page = tmp_path / "out" / "matrix.html"
    page.parent.mkdir()
    result = matrix(cli, upstream, "--html", str(page), "--json")
    assert result.code == 1 and result.json["html"] == str(page)
    text = page.read_text()
    assert text.startswith("<!DOCTYPE html>") and text.count('<tr data-patch="') == 2
    assert len(re.findall(r'<td id="c-0-\d-\d" class="cell ', text)) == 12
    assert "refactor: rewrite line 20 (#1234)" in text
    # self-contained: nothing is fetched from anywhere
    for fetches in ("<link", "src=", "@import", "url(", "http://", "https://"):
        assert fetches not in text, fetches


def test_bad_input_is_exit_2_and_writes_nothing(cli, project, upstream, tmp_path):
    tagged_upstream(project, upstream)
    page = tmp_path / "m.html"
    cases = [
        (["--upstream", "nope"], "no upstream 'nope'"),
        (["--since", "v9.9.9"], "has no ref 'v9.9.9'"),
        (["--since", "bad..ref"], "is not a valid git ref"),
    ]
    for args, message in cases:
        result = matrix(cli, upstream, *args, "--html", str(page))
        assert result.code == 2, (args, result.err)
        assert "error: " in result.err and message in result.err, result.err
        assert "Traceback" not in result.err and result.out == ""
        assert not page.exists()
    folder = matrix(cli, upstream, "--html", str(tmp_path))
    assert folder.code == 2 and "is a folder" in folder.err
    missing = matrix(cli, upstream, "--html", str(tmp_path / "no" / "such" / "m.html"))
    assert missing.code == 2 and "does not exist" in missing.err
    assert cli("matrix").code == 2 and "--target is required" in cli("matrix").err


def test_a_broken_guard_shows_in_its_cell_and_names_the_commit(cli, project, upstream):
    guarded_fix(project, upstream, 20, "fixed 20", "Fix line 20", r"absent /legacy\.call\(/ in src/mod.py")
    upstream.commit({"docs.txt": "one\n"}, "docs")
    git(upstream.path, "tag", "v1.0.0")
    culprit = upstream.commit({"src/mod.py": lines_with({5: "legacy.call()"})}, "bring back the legacy call (#9)")
    git(upstream.path, "tag", "v1.1.0")
    result = matrix(cli, upstream, "--refs", "v1.*", "--json")
    assert result.code == 1, result.err  # applies cleanly at v1.1.0, but its guard breaks there
    (fix,) = result.json["upstreams"][0]["patches"]
    assert [(c["state"], c["guards_hold"]) for c in fix["cells"]] == [
        ("clean", True),
        ("clean", True),
        ("clean", False),
        ("clean", False),
    ]
    assert fix["cells"][2]["guards"][0]["offenses"] == ["src/mod.py:5: legacy.call()"]
    changed = fix["changed"]
    assert (changed["column"], changed["commit"], changed["pr"]) == ("v1.1.0", culprit, 9)
    assert changed["guards_broken"] and "legacy" in changed["guards_broken"][0]
    out = matrix(cli, upstream, "--refs", "v1.*").out
    assert "clean, guard broken" in out and f"since {culprit[:12]}" in out


def test_an_unreachable_upstream_is_reported_and_the_others_still_shown(cli, project, upstream, tmp_path):
    tagged_upstream(project, upstream)
    manifest = project.root / "manifests" / "t.toml"
    manifest.write_text(
        manifest.read_text() + '[upstreams.gone]\ngit = "https://example.invalid/gone.git"\n'
        f'commit = "{"1" * 40}"\npatches = []\n'
    )
    page = tmp_path / "m.html"
    result = cli(
        "matrix",
        "--target",
        "t",
        "--source",
        f"lib={upstream.path}",
        "--source",
        f"gone={tmp_path / 'no-such-clone'}",
        "--html",
        str(page),
        "--json",
    )
    assert result.code == 1, result.err
    lib, gone = result.json["upstreams"]
    assert lib["available"] and len(lib["patches"]) == 2
    assert not gone["available"] and "no-such-clone" in gone["error"] and gone["columns"] == []
    assert "unavailable, no source could provide it" in page.read_text()
    text = cli(
        "matrix", "--target", "t", "--source", f"lib={upstream.path}", "--source", f"gone={tmp_path / 'no-such-clone'}"
    ).out
    assert "gone: unavailable" in text and "pin v0.9.0" in text


def test_a_carrying_commit_is_named_in_every_column_as_status_names_it(cli, project, upstream):
    pin = upstream.head()
    setup(project, upstream, {"fix": upstream.make_patch(pin, {"src/mod.py": lines_with({20: "fixed 20"})}, "Fix")})
    carrier = upstream.commit({"src/mod.py": lines_with({20: "fixed 20"})}, "Take the vendor fix (#77)")
    git(upstream.path, "tag", "v1.0.0")
    # later upstream work edits the same lines: the patch's reverse no longer applies, the carrier stays
    upstream.commit(
        {"src/mod.py": lines_with({19: "reworked 19", 20: "fixed 20 better", 21: "reworked 21"})}, "rework the fix"
    )
    git(upstream.path, "tag", "v1.1.0")
    upstream.commit({"docs.txt": "tip\n"}, "docs")
    doc = matrix(cli, upstream, "--refs", "v1.*", "--json").json
    (fix,) = doc["upstreams"][0]["patches"]
    assert [c["state"] for c in fix["cells"]] == ["clean", "upstream", "upstream", "upstream"]
    assert [c.get("carrier") for c in fix["cells"]] == [None, carrier, carrier, carrier]
    for cell in fix["cells"][1:]:
        status = status_against(cli, upstream, cell["column"])
        (expected,) = status.json["upstreams"][0]["patches"]
        assert (cell["state"], cell["detail"], cell["carrier"]) == (
            expected["state"],
            expected["detail"],
            expected["carrier"],
        ), cell["column"]
    assert (fix["changed"]["commit"], fix["changed"]["carrier"], fix["changed"]["pr"]) == (carrier, True, 77)


def test_status_at_the_newest_release_checks_what_the_matrix_decides_on(cli, project, upstream):
    _pin, (_moved, _broke, absorbed) = tagged_upstream(project, upstream)
    source = ["--source", f"lib={upstream.path}"]
    result = cli("status", "--target", "t", "--newest-release", *source, "--json")
    assert result.code == 1, result.out + result.err
    (up,) = result.json["upstreams"]
    assert up["ref"] == "v2.0.0" and up["commit"] == absorbed  # v2.1.0rc1 is a pre-release
    assert {r["id"]: r["state"] for r in up["patches"]} == {"fix": "upstream", "other": "clean"}
    assert up["notes"][0].startswith("checked at v2.0.0 (") and up["chosen_by"] == "newest release (track = releases)"
    grid = matrix(cli, upstream, "--json").json["upstreams"][0]
    assert grid["verdict_column"] == "v2.0.0"
    # an --against ref still wins for its upstream
    pinned = cli("status", "--target", "t", "--newest-release", "--against", "lib=v1.0.0", *source, "--json")
    assert pinned.code == 0 and pinned.json["upstreams"][0]["ref"] == "v1.0.0"


def test_with_no_release_newer_than_the_pin_the_pin_decides_and_the_tip_is_only_shown(cli, project, upstream):
    """Followed by its releases (track = releases, the default), an upstream that has released nothing since the
    pin is judged at the pin, in matrix as in status --newest-release; its branch's unreleased work is shown."""
    fix = upstream.make_patch(upstream.head(), {"src/mod.py": lines_with({20: "fixed 20"})}, "Fix line 20")
    pin = setup(project, upstream, {"fix": fix})
    git(upstream.path, "tag", "v1.0.0")
    upstream.commit({"src/mod.py": lines_with({20: "rewritten 20"})}, "refactor: rewrite line 20")
    result = matrix(cli, upstream, "--json")
    (lib,) = result.json["upstreams"]
    assert [c["state"] for c in lib["patches"][0]["cells"]] == ["clean", "conflict"]
    assert result.code == 0 and lib["verdict_column"] == "v1.0.0" and lib["ok"] is True, result.out
    text = matrix(cli, upstream).out
    assert (
        "refs: main (tip): tip of main, the branch its source's HEAD names; "
        "pin v1.0.0 decides the verdict: no release is newer than the pin (track = releases)\n"
    ) in text
    status = cli("status", "--target", "t", "--newest-release", "--source", f"lib={upstream.path}", "--json")
    (up,) = status.json["upstreams"]
    assert status.code == 0 and up["commit"] == pin and up["patches"][0]["state"] == "clean", status.out
    # followed by its branch, the same upstream is judged at the tip, by both
    project.manifest(
        "t", {"lib": {"git": "https://example.invalid/lib.git", "commit": pin, "patches": ["fix"], "track": "branch"}}
    )
    branch = matrix(cli, upstream, "--json")
    assert branch.code == 1 and branch.json["upstreams"][0]["verdict_column"] == "main"
    status = cli("status", "--target", "t", "--newest-release", "--source", f"lib={upstream.path}", "--json")
    assert status.code == 1 and status.json["upstreams"][0]["patches"][0]["state"] == "conflict", status.out


def test_status_at_the_newest_release_is_unavailable_when_tags_cannot_be_listed(cli, project, upstream, tmp_path):
    tagged_upstream(project, upstream)
    assert cli("status", "--target", "t", "--source", f"lib={upstream.path}").code == 0  # the pin is cached now
    gone = tmp_path / "gone"
    upstream.path.rename(gone)
    result = cli("status", "--target", "t", "--newest-release", "--source", f"lib={upstream.path}", "--json")
    assert result.code == 1, result.out + result.err
    (up,) = result.json["upstreams"]
    assert up["error"] and "its newest release cannot be found" in up["error"], up
    assert not up["patches"]  # not checked at the pin in its place
