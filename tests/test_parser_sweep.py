"""Patches git itself writes (format-patch, git diff, diff -ruN), each checked against `git apply --check`.

Issue 12: valid diffs read as malformed or missing, a -U0 hunk refused for a
false reason, a Date or a path that status passes and apply then trips on,
and a file created where a folder is. Every case runs the real CLI on a real
git upstream and says what git says about the same bytes.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from support.gitrepos import BASE_TEXT, GIT_ENV, UpstreamRepo, git, git_bytes, plain_git
from support.memory_tree import FilesAndFolders

from patchmgr.engine.classify import check_patch
from patchmgr.engine.results import State
from patchmgr.model.patchfile import parse_patch

FIELDS = "Origin: vendor\nUpstream-Status: Pending"


def git_apply_check(repo: Path, patch: bytes, *extra: str) -> subprocess.CompletedProcess:
    """`git apply --check` of ``patch`` in a work tree of ``repo`` (its HEAD), as a user would run it."""
    return plain_git(repo, "apply", "--check", *extra, "-", input=patch)


def git_apply_writes(repo: Path, patch: bytes) -> subprocess.CompletedProcess:
    """A real `git apply` of ``patch`` in ``repo``'s work tree, which is put back afterwards."""
    try:
        return plain_git(repo, "apply", "-", input=patch)
    finally:
        git(repo, "checkout", "-q", "--", ".")
        git(repo, "clean", "-qfd")


def git_applied(repo: Path, patch: bytes, path: str) -> bytes:
    """The bytes git apply writes for ``path`` (the work tree is put back afterwards)."""
    git(repo, "apply", "-", input=patch)
    try:
        return (repo / path).read_bytes()
    finally:
        git(repo, "checkout", "-q", "--", ".")
        git(repo, "clean", "-qfd")


def setup(project, upstream: UpstreamRepo, patches: dict[str, bytes]) -> str:
    pin = upstream.head()
    for patch_id, data in patches.items():
        project.add_patch("lib", patch_id, data)
    project.manifest("t", {"lib": {"git": "https://example.invalid/lib.git", "commit": pin, "patches": list(patches)}})
    return pin


def status(cli, upstream: UpstreamRepo):
    return cli("status", "--target", "t", "--json", "--source", f"lib={upstream.path}")


def apply_into(cli, upstream: UpstreamRepo, into: Path):
    return cli("apply", "--target", "t", "--into", str(into), "--source", f"lib={upstream.path}")


def clean_and_applied(cli, upstream: UpstreamRepo, into: Path) -> None:
    """Status calls the one patch clean, and apply builds ``into`` with it."""
    result = status(cli, upstream)
    assert result.code == 0, result.out + result.err
    assert only_state(result)["state"] == "clean"
    applied = apply_into(cli, upstream, into)
    assert applied.code == 0, applied.out + applied.err


def only_state(result) -> dict:
    (up,) = result.json["upstreams"]
    (patch,) = up["patches"]
    return patch


# -- lines with characters str.splitlines splits at ----------------------------------
ODD = {
    "form feed": "\x0c",
    "vertical tab": "\x0b",
    "lone CR": "\r",
    "U+0085": "\u0085",
    "U+2028": "\u2028",
    "file separator": "\x1c",
}


@pytest.mark.parametrize("name", list(ODD))
def test_lines_with_characters_splitlines_splits_at(cli, project, tmp_path, name):
    char = ODD[name]
    upstream = UpstreamRepo(tmp_path / "upstream")
    lines = [f"line {i}\n" for i in range(1, 21)]
    lines[4] = f"page{char}break {char}here\n"
    lines[9] = f"{char}\n"
    base = upstream.commit({"src/mod.py": "".join(lines).encode()}, "initial")
    changed = list(lines)
    changed[5] = f"fixed 6 {char}too\n"
    changed[10] = "fixed 11\n"
    patch = upstream.make_patch(
        base, {"src/mod.py": "".join(changed).encode()}, f"Fix lines near a {name}", "Why: keeps our runs correct."
    )
    assert git_apply_check(upstream.path, patch).returncode == 0
    setup(project, upstream, {"fix": patch})

    into = tmp_path / "build"
    clean_and_applied(cli, upstream, into)
    assert (into / "lib" / "src/mod.py").read_bytes() == git_applied(upstream.path, patch, "src/mod.py")
    assert (into / "lib" / "src/mod.py").read_bytes() == "".join(changed).encode()


# -- plain diffs ------------------------------------------------------------------------
def plain_upstream(tmp_path) -> UpstreamRepo:
    upstream = UpstreamRepo(tmp_path / "upstream")
    upstream.commit({"x.py": BASE_TEXT, "pkg/util.py": BASE_TEXT, "gone.py": "bye\n"}, "initial")
    return upstream


def test_diff_ruN_plain_diff_is_clean_and_applies(cli, project, tmp_path):
    upstream = plain_upstream(tmp_path)
    old, new = tmp_path / "old", tmp_path / "new"
    for folder in (old, new):
        (folder / "pkg").mkdir(parents=True)
        (folder / "x.py").write_text(BASE_TEXT)
        (folder / "pkg/util.py").write_text(BASE_TEXT)
    (old / "gone.py").write_text("bye\n")
    (new / "x.py").write_text(BASE_TEXT.replace("line 7\n", "fixed 7\n"))
    (new / "pkg/util.py").write_text(BASE_TEXT.replace("line 30\n", "fixed 30\nadded 30b\n"))
    (new / "pkg/added.py").write_text("print('new')\n")
    done = subprocess.run(["diff", "-ruN", "old", "new"], cwd=tmp_path, capture_output=True)
    assert done.returncode == 1, done.stderr
    patch = (
        b"Description: fix x.py and pkg/util.py, add pkg/added.py, remove gone.py\n"
        b"Origin: vendor\nUpstream-Status: Pending\n\n" + done.stdout
    )
    assert b"--- old/x.py\t" in patch and b"--- old/pkg/added.py\t1970-01-01" in patch
    assert git_apply_check(upstream.path, patch).returncode == 0
    setup(project, upstream, {"fix": patch})

    parsed = parse_patch(patch, Path("fix.patch"))
    assert {(d.old_path, d.new_path) for d in parsed.files} == {
        ("x.py", "x.py"),
        ("pkg/util.py", "pkg/util.py"),
        (None, "pkg/added.py"),
        ("gone.py", None),
    }
    into = tmp_path / "build"
    clean_and_applied(cli, upstream, into)
    for name in ("x.py", "pkg/util.py", "pkg/added.py"):
        assert (into / "lib" / name).read_bytes() == (new / name).read_bytes(), name
    assert not (into / "lib" / "gone.py").exists()


@pytest.mark.parametrize(
    "old_name, new_name, shown",
    [
        ("a/x.py.orig", "b/x.py", "x.py"),  # the backup copy's name: git takes the shorter one
        ("old/x.py", "new/x.py.new", "x.py"),
        ("x.py", "x.py", "x.py"),  # no folder in the names: git strips none
        ("a/pkg/util.py", "b/pkg/util.py", "pkg/util.py"),
    ],
)
def test_plain_diff_names_as_git_reads_them(cli, project, tmp_path, old_name, new_name, shown):
    upstream = plain_upstream(tmp_path)
    patch = (
        f"Description: fix line 7\nOrigin: vendor\nUpstream-Status: Pending\n\n"
        f"--- {old_name}\t2026-01-01 00:00:00.000000000 +0000\n+++ {new_name}\t2026-01-02 00:00:00 +0000\n"
        "@@ -6,3 +6,3 @@\n line 6\n-line 7\n+fixed 7\n line 8\n"
    ).encode()
    check = git_apply_check(upstream.path, patch, "-v")
    assert check.returncode == 0 and f"Checking patch {shown}...".encode() in check.stderr, check.stderr
    (diff,) = parse_patch(patch, Path("fix.patch")).files
    assert (diff.old_path, diff.new_path) == (shown, shown)
    setup(project, upstream, {"fix": patch})
    result = status(cli, upstream)
    assert result.code == 0, result.out + result.err
    assert only_state(result)["state"] == "clean"


# -- -U0 -------------------------------------------------------------------------------------
def u0_patch(upstream: UpstreamRepo, base: str, text: str) -> bytes:
    (upstream.path / "src/mod.py").write_text(text)
    try:
        return git_bytes(upstream.path, "diff", "-U0", "--full-index")
    finally:
        git(upstream.path, "checkout", "-q", "--", ".")


@pytest.mark.parametrize(
    "case, change",
    [
        ("change in the middle", lambda lines: lines.__setitem__(19, "fixed 20\n")),
        ("insert in the middle", lambda lines: lines.insert(19, "inserted\n")),
        ("delete in the middle", lambda lines: lines.__delitem__(19)),
        ("change of the last line", lambda lines: lines.__setitem__(39, "fixed 40\n")),
        ("change of the first line", lambda lines: lines.__setitem__(0, "fixed 1\n")),
    ],
)
def test_unidiff_zero_gets_git_apply_checks_verdict_and_the_real_reason(cli, project, upstream, case, change):
    """Without --unidiff-zero git anchors a hunk with no context after it at the file's end (and one
    starting at line 1 at the beginning); `git apply --check` says only "patch does not apply"."""
    lines = BASE_TEXT.splitlines(keepends=True)
    change(lines)
    body = u0_patch(upstream, upstream.head(), "".join(lines))
    patch = f"Description: {case}\n{FIELDS}\n\n".encode() + body
    git_ok = git_apply_check(upstream.path, patch).returncode == 0
    setup(project, upstream, {"fix": patch})
    result = status(cli, upstream)
    doc = only_state(result)
    assert (doc["state"] in ("clean", "offset")) == git_ok, (case, doc)
    assert result.code == (0 if git_ok else 1)
    if case == "insert in the middle":
        # git --check accepts it, anchored at the end: the line goes after line 40, as git apply puts it,
        # and the offset says how far that is from where the patch has it
        assert doc["state"] == "offset" and "+21 lines" in doc["detail"], doc
    if not git_ok:
        assert doc["state"] == "conflict"
        assert "no context lines (a -U0 diff)" in doc["detail"] and "--unidiff-zero" in doc["detail"], doc["detail"]
        assert "not in the upstream file" not in doc["detail"]


# -- the Date header ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    "date, problem",
    [
        ("garbage", "cannot be read as a date"),
        ("Thu, 1 Jan 99999 00:00:00 +0000", "from 1970 to 2099"),
        ("Fri, 1 Jan 2100 00:00:00 +0000", "outside the years git records"),
    ],
)
def test_bad_date_is_refused_alike_by_status_and_apply(cli, project, upstream, tmp_path, date, problem):
    patch = upstream.make_patch(upstream.head(), {"src/mod.py": BASE_TEXT.replace("line 9\n", "fixed 9\n")}, "Fix")
    good = "Date: Thu, 1 Jan 2026 00:00:00 +0000"
    assert good.encode() in patch
    patch = patch.replace(good.encode(), f"Date: {date}".encode())
    # git would not commit with it either
    env = {**os.environ, **GIT_ENV, "GIT_AUTHOR_DATE": date}
    assert (
        subprocess.run(
            ["git", "commit-tree", "HEAD^{tree}", "-m", "x"], cwd=upstream.path, env=env, capture_output=True
        ).returncode
        != 0
    )
    setup(project, upstream, {"fix": patch})
    results = [status(cli, upstream), apply_into(cli, upstream, tmp_path / "build")]
    for result in results:
        assert result.code == 2, result.out + result.err
        assert "patches/lib/fix.patch:3: the Date header" in result.err and repr(date) in result.err, result.err
        assert problem in result.err and len(result.err.strip().splitlines()) == 2  # the error and its hint
    assert not (tmp_path / "build" / "lib").exists()
    assert cli("lint").code != 0


def test_good_dates_still_pass(upstream):
    patch = upstream.make_patch(upstream.head(), {"src/mod.py": BASE_TEXT.replace("line 9\n", "fixed 9\n")}, "Fix")
    for date in ("Thu, 1 Jan 2026 00:00:00 +0000", "Mon, 31 Dec 2099 12:00:00 -0500", "2026-01-01T10:00:00+02:00"):
        assert (
            parse_patch(
                patch.replace(b"Date: Thu, 1 Jan 2026 00:00:00 +0000", f"Date: {date}".encode()), Path("x.patch")
            ).date
            == date
        )


# -- paths git reads as pathspec magic ---------------------------------------------------------
def test_path_git_reads_as_pathspec_magic_is_refused(cli, project, upstream, tmp_path):
    patch = (
        f"Description: add a file\n{FIELDS}\n\n"
        "diff --git a/:/top b/:/top\nnew file mode 100644\n--- /dev/null\n+++ b/:/top\n@@ -0,0 +1 @@\n+x\n"
    )
    setup(project, upstream, {"fix": patch.encode()})
    for result in (status(cli, upstream), apply_into(cli, upstream, tmp_path / "build")):
        assert result.code == 2, result.out + result.err
        assert "patches/lib/fix.patch" in result.err and "':/top'" in result.err and "pathspec magic" in result.err


# -- a file where a folder is, a folder where a file is ------------------------------------------
# git 2.39's `apply --check` passes both (check_to_create takes a folder, or a file above the path,
# as "not there"); the real `git apply` then fails with "unable to write file". patchmgr gives
# the verdict of the real apply, with the reason, at status time.
def test_creating_a_file_under_an_upstream_file_is_a_conflict(cli, project, upstream):
    """The patch creates README/notes.txt; README is a file upstream."""
    pin = upstream.head()
    git(upstream.path, "checkout", "-q", "--detach", pin)
    git(upstream.path, "rm", "-q", "README")
    notes = "README/notes.txt"
    upstream.commit({notes: "notes\n"}, "Add notes\n\nWhy: notes.\n\n" + FIELDS)
    patch = git_bytes(
        upstream.path, "format-patch", "-1", "--stdout", "--zero-commit", "--full-index", "HEAD", "--", notes
    )
    git(upstream.path, "checkout", "-q", "main")
    assert git_apply_check(upstream.path, patch).returncode == 0
    assert b"unable to write file 'README/notes.txt'" in git_apply_writes(upstream.path, patch).stderr
    setup(project, upstream, {"fix": patch})
    result = status(cli, upstream)
    doc = only_state(result)
    assert result.code == 1 and doc["state"] == "conflict", doc
    assert "README is a file upstream, not a folder" in doc["detail"]


def test_creating_a_file_where_a_folder_is_is_a_conflict_in_the_engine(upstream):
    patch = (
        f"Description: add pkg\n{FIELDS}\n\n"
        "diff --git a/pkg b/pkg\nnew file mode 100644\n--- /dev/null\n+++ b/pkg\n@@ -0,0 +1 @@\n+x\n"
    ).encode()
    (upstream.path / "pkg").mkdir()
    (upstream.path / "pkg" / "m.py").write_text("m\n")
    git(upstream.path, "add", "-A")
    git(upstream.path, "commit", "-q", "-m", "pkg")
    assert git_apply_check(upstream.path, patch).returncode == 0
    assert b"unable to write file 'pkg'" in git_apply_writes(upstream.path, patch).stderr
    result = check_patch(parse_patch(patch, Path("fix.patch")), FilesAndFolders({"pkg/m.py": b"m\n"}))
    assert result.state is State.CONFLICT
    assert "it is a folder upstream" in result.detail


def test_creating_a_file_where_a_folder_is_is_a_conflict(cli, project, upstream):
    (upstream.path / "pkg").mkdir()
    (upstream.path / "pkg" / "m.py").write_text("m\n")
    upstream.commit({}, "pkg")
    patch = (
        f"Description: add pkg\n{FIELDS}\n\n"
        "diff --git a/pkg b/pkg\nnew file mode 100644\n--- /dev/null\n+++ b/pkg\n@@ -0,0 +1 @@\n+x\n"
    ).encode()
    assert b"unable to write file 'pkg'" in git_apply_writes(upstream.path, patch).stderr
    setup(project, upstream, {"fix": patch})
    doc = only_state(status(cli, upstream))
    assert doc["state"] == "conflict" and "folder" in doc["detail"], doc
