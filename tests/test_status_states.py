"""Every state of the engine, through `patchmgr status --json`, on real git repositories."""

from __future__ import annotations

from support.gitrepos import BASE_TEXT
from support.scenes import lines_with, pin_fixes, setup


def status(cli, upstream, *extra):
    return cli("status", "--target", "t", "--json", "--source", f"lib={upstream.path}", *extra)


def only_patch(result):
    doc = result.json
    assert doc["target"] == "t"
    (up,) = doc["upstreams"]
    return up, up["patches"]


def fix_after_upstream_commits(cli, project, upstream, mod_text, message, *, code, state):
    """``fix`` (line 20) pinned at the head; upstream then commits ``mod_text`` as src/mod.py: status at main
    exits ``code`` with fix in ``state``. Returns fix's entry."""
    pin_fixes(project, upstream, {"fix": {20: "fixed 20"}})
    upstream.commit({"src/mod.py": mod_text}, message)
    result = status(cli, upstream, "--against", "lib=main")
    _, (patch,) = only_patch(result)
    assert result.code == code, result.out + result.err
    assert patch["state"] == state
    return patch


def test_clean_at_the_pin(cli, project, upstream):
    pin = upstream.head()
    pin_fixes(project, upstream, {"fix": {20: "fixed 20"}})
    result = status(cli, upstream)
    up, patches = only_patch(result)
    assert result.code == 0
    assert up["commit"] == pin and up["available"]
    assert [(p["id"], p["state"]) for p in patches] == [("fix", "clean")]
    assert patches[0]["upstream_status"] == "Pending"


def test_offset_reports_how_far_the_hunk_moved(cli, project, upstream):
    patch = fix_after_upstream_commits(
        cli, project, upstream, lines_with({}, insert_top=3), "upstream adds 3 lines on top", code=0, state="offset"
    )
    assert patch["hunks"] == [{"file": "src/mod.py", "hunk": 1, "offset": 3, "fuzz": 0}]
    assert "+3 lines" in patch["detail"]


def test_fuzz_is_reported_and_needs_attention(cli, project, upstream):
    patch = fix_after_upstream_commits(
        cli, project, upstream, lines_with({17: "upstream changed 17"}), "touch outer context", code=1, state="fuzz"
    )
    assert patch["hunks"][0]["fuzz"] >= 1


def test_three_way_when_inner_context_moved(cli, project, upstream):
    pin = upstream.head()
    # one hunk changing lines 20 and 24, with 21-23 as inner context that fuzz cannot drop
    patch = upstream.make_patch(pin, {"src/mod.py": lines_with({20: "fixed 20", 24: "fixed 24"})}, "Fix")
    setup(project, upstream, {"fix": patch})
    upstream.commit({"src/mod.py": lines_with({22: "upstream changed 22"})}, "touch inner context")
    result = status(cli, upstream, "--against", "lib=main")
    _, (patch_doc,) = only_patch(result)
    assert result.code == 1
    assert patch_doc["state"] == "three-way"


def test_conflict_names_file_hunk_and_upstream_lines(cli, project, upstream):
    patch = fix_after_upstream_commits(
        cli,
        project,
        upstream,
        lines_with({20: "upstream rewrote 20", 21: "and 21"}),
        "rewrite",
        code=1,
        state="conflict",
    )
    conflict = patch["conflict"]
    assert conflict["file"] == "src/mod.py" and conflict["hunk"] == 1
    assert "upstream rewrote 20" in conflict["upstream_lines"]
    assert "src/mod.py hunk #1" in patch["detail"]


def test_upstream_when_the_change_landed(cli, project, upstream):
    fix_after_upstream_commits(
        cli, project, upstream, lines_with({20: "fixed 20"}), "upstream takes the fix", code=1, state="upstream"
    )


def test_deletion_only_patch_is_not_mistaken_for_upstream(cli, project, upstream):
    """rattler-build#2693: a deletion-only patch must be 'clean' where its lines are still there."""
    pin = upstream.head()
    without_20 = "".join(line for line in BASE_TEXT.splitlines(keepends=True) if line != "line 20\n")
    setup(project, upstream, {"drop": upstream.make_patch(pin, {"src/mod.py": without_20}, "Drop line 20")})
    _, (patch,) = only_patch(status(cli, upstream))
    assert patch["state"] == "clean"
    upstream.commit({"src/mod.py": without_20}, "upstream drops it too")
    _, (patch,) = only_patch(status(cli, upstream, "--against", "lib=main"))
    assert patch["state"] == "upstream"


def test_missing_when_the_file_is_gone(cli, project, upstream):
    patch = fix_after_upstream_commits(cli, project, upstream, None, "remove the module", code=1, state="missing")
    assert "src/mod.py" in patch["detail"]


def test_series_order_second_patch_builds_on_the_first(cli, project, upstream):
    pin = upstream.head()
    first = upstream.make_patch(pin, {"src/mod.py": lines_with({20: "fixed 20"})}, "First")
    upstream_with_first = upstream.commit({"src/mod.py": lines_with({20: "fixed 20"})}, "tmp: first applied")
    second = upstream.make_patch(upstream_with_first, {"src/mod.py": lines_with({20: "fixed 20 again"})}, "Second")
    git_reset(upstream, pin)
    setup(project, upstream, {"first": first, "second": second})
    result = status(cli, upstream)
    _, patches = only_patch(result)
    assert [(p["id"], p["state"]) for p in patches] == [("first", "clean"), ("second", "clean")]
    assert result.code == 0
    # the same patches in the wrong order: the second cannot apply on the bare pin
    project.manifest(
        "t", {"lib": {"git": "https://example.invalid/lib.git", "commit": pin, "patches": ["second", "first"]}}
    )
    _, patches = only_patch(status(cli, upstream))
    assert patches[0]["state"] == "conflict"


def test_created_and_deleted_files(cli, project, upstream):
    pin = upstream.head()
    patch = upstream.make_patch(pin, {"src/new.py": "print('new')\n", "README": None}, "Add and remove")
    setup(project, upstream, {"addrm": patch})
    _, (doc,) = only_patch(status(cli, upstream))
    assert doc["state"] == "clean"
    upstream.commit({"src/new.py": "print('new')\n", "README": None}, "upstream does the same")
    _, (doc,) = only_patch(status(cli, upstream, "--against", "lib=main"))
    assert doc["state"] == "upstream"


def test_no_newline_at_end_of_file(cli, project, upstream):
    upstream.commit({"src/tail.py": "a\nb\nc"}, "file without final newline")
    pin = upstream.head()
    setup(project, upstream, {"tail": upstream.make_patch(pin, {"src/tail.py": "a\nB\nc"}, "Tail")})
    _, (doc,) = only_patch(status(cli, upstream))
    assert doc["state"] == "clean"


def test_crlf_patch_does_not_match_lf_file(cli, project, upstream):
    pin = upstream.head()
    data = upstream.make_patch(pin, {"src/mod.py": lines_with({20: "fixed 20"})}, "Fix")
    head, _, diff = data.partition(b"diff --git")
    crlf = head + b"diff --git" + diff.replace(b"\n", b"\r\n")
    setup(project, upstream, {"crlf": crlf})
    _, (doc,) = only_patch(status(cli, upstream))
    assert doc["state"] == "conflict"


def test_status_needs_its_target_even_when_there_is_one(cli, project, upstream):
    pin_fixes(project, upstream, {"fix": {20: "x"}})
    result = cli("status", "--json", "--source", f"lib={upstream.path}")
    assert result.code == 2 and result.out == ""
    assert result.err.splitlines() == [
        "error: --target is required: status needs --target NAME",
        "hint: the project's targets: t (`patchmgr targets` lists them with their pins)",
    ]


def test_table_output_for_people(cli, project, upstream):
    pin = upstream.head()
    pin_fixes(project, upstream, {"fix": {20: "x"}})
    result = cli("status", "--target", "t", "--source", f"lib={upstream.path}")
    assert result.code == 0
    assert "fix" in result.out and "clean" in result.out and pin[:12] in result.out


def git_reset(upstream, commit):
    from support.gitrepos import git

    git(upstream.path, "reset", "-q", "--hard", commit)
