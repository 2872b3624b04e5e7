"""`status` and `apply --into` agree (issue 12), and a failed apply leaves nothing behind.

Each upstream here has something that a plain `git add` would treat differently from what the
engine computes: a created file the upstream's .gitignore ignores, a submodule, a
`working-tree-encoding`, `eol`/`text` rules. Status and apply must give the same verdict: both
fine, with the checkout's committed blobs exactly the bytes status computed and verify passing, or
both refusing for the same reason. A checkout build that fails says its real cause (the disk hint
only for a full disk) and removes the --into folder it made; verify writes no byte.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from support.gitrepos import detached_at, format_patch_of_head, git, write_files
from support.scenes import lines_with
from support.snapshot import snapshot

URL = "https://example.invalid/lib.git"
FIELDS = "Why: our runs need it.\n\nOrigin: vendor\nUpstream-Status: Pending\n"


def commit_raw(upstream, files: dict[str, bytes | None], message: str) -> str:
    """Commit ``files`` as bytes (None: delete), ignored ones too (``git add --force``)."""
    write_files(upstream.path, files)
    if files:  # only these: `add -A` would renormalise other files under a new .gitattributes rule
        git(upstream.path, "add", "--all", "--force", "--", *files)
    git(upstream.path, "commit", "-q", "--allow-empty", "-m", message)
    return upstream.head()


def raw_patch(upstream, base: str, files: dict[str, bytes | None], subject: str) -> tuple[bytes, str]:
    """A format-patch of ``files`` committed on ``base``, and that commit (its blobs are what apply must commit)."""
    with detached_at(upstream.path, base, force=True):
        commit = commit_raw(upstream, files, f"{subject}\n\n{FIELDS}")
        return format_patch_of_head(upstream.path), commit


def apply_args(upstream, into: Path, *extra: str) -> list[str]:
    """``apply`` of target ``t`` into ``into``, upstream ``lib`` read from ``upstream``."""
    return ["apply", "--target", "t", "--into", str(into), "--source", f"lib={upstream.path}", *extra]


def write_target(project, pin: str, patch: bytes) -> None:
    project.add_patch("lib", "fix", patch)
    project.manifest("t", {"lib": {"git": URL, "commit": pin, "patches": ["fix"]}})


def status(cli, upstream, *extra: str):
    result = cli("status", "--target", "t", "--json", "--source", f"lib={upstream.path}", *extra)
    assert "Traceback" not in result.out + result.err
    return result


def apply(cli, upstream, into: Path, *extra: str):
    result = cli("apply", "--target", "t", "--into", str(into), "--json", "--source", f"lib={upstream.path}", *extra)
    assert "Traceback" not in result.out + result.err
    return result


def verdicts(result) -> list[tuple[str, str, str | None]]:
    return [
        (p["id"], p["state"], (p.get("conflict") or {}).get("reason"))
        for u in result.json["upstreams"]
        for p in u["patches"]
    ]


def assert_agree_and_exact(cli, upstream, into: Path, commit: str, paths: list[str]) -> None:
    """status: clean; apply: applied, each path's committed blob the one of ``commit``; verify: fine."""
    checked = status(cli, upstream)
    assert checked.code == 0 and verdicts(checked) == [("fix", "clean", None)], checked.out + checked.err
    applied = apply(cli, upstream, into)
    assert applied.code == 0 and applied.json["action"] == "applied", applied.out + applied.err
    checkout = into / "lib"
    ledger = json.loads((into / "patchmgr-ledger.json").read_text())
    files = ledger["upstreams"][0]["files"]
    for path in paths:
        wanted = git(upstream.path, "rev-parse", f"{commit}:{path}")
        assert git(checkout, "rev-parse", f"HEAD:{path}") == wanted, path
        blob = subprocess.run(
            ["git", "cat-file", "blob", wanted], cwd=upstream.path, capture_output=True, check=True
        ).stdout
        assert files[path] == hashlib.sha256(blob).hexdigest(), path  # what the engine computed
    # the commit holds exactly the patch's files
    assert git(checkout, "diff", "--name-only", "HEAD~1", "HEAD").split() == sorted(paths)
    assert git(checkout, "status", "--porcelain") == ""
    verified = cli("verify", "--target", "t", "--into", str(into))
    assert verified.code == 0, verified.out + verified.err


# -- status and apply agree -----------------------------------------------------
def test_created_file_that_gitignore_ignores(tmp_path, cli, upstream, project):
    pin = commit_raw(upstream, {".gitignore": b"generated/\n*.log\n"}, "ignore generated files")
    mail, commit = raw_patch(
        upstream,
        pin,
        {"generated/table.py": b"TABLE = 1\n", "notes.log": b"kept\n", "src/mod.py": lines_with({3: "three"}).encode()},
        "Add the table",
    )
    write_target(project, pin, mail)
    assert_agree_and_exact(cli, upstream, tmp_path / "build", commit, ["generated/table.py", "notes.log", "src/mod.py"])
    assert (tmp_path / "build" / "lib" / "generated" / "table.py").read_bytes() == b"TABLE = 1\n"


def test_working_tree_encoding(tmp_path, cli, upstream, project):
    pin = commit_raw(
        upstream,
        {".gitattributes": b"*.txt working-tree-encoding=UTF-16\n", "names.txt": "alpha\nbeta\n".encode("utf-16")},
        "names in UTF-16",
    )
    assert git(upstream.path, "show", f"{pin}:names.txt") == "alpha\nbeta"  # the blob is UTF-8
    mail, commit = raw_patch(upstream, pin, {"names.txt": "alpha\nbeta\ngamma\n".encode("utf-16")}, "Add gamma")
    write_target(project, pin, mail)
    into = tmp_path / "build"
    assert_agree_and_exact(cli, upstream, into, commit, ["names.txt"])
    # the work tree holds the file as any checkout does: in the encoding the upstream asks for
    assert (into / "lib" / "names.txt").read_bytes().decode("utf-16") == "alpha\nbeta\ngamma\n"


def test_eol_crlf_rule(tmp_path, cli, upstream, project):
    pin = commit_raw(upstream, {".gitattributes": b"*.txt text eol=crlf\n", "data.txt": b"one\ntwo\n"}, "crlf")
    mail, commit = raw_patch(upstream, pin, {"data.txt": b"one\ntwo\nthree\n"}, "Add three")
    write_target(project, pin, mail)
    into = tmp_path / "build"
    assert_agree_and_exact(cli, upstream, into, commit, ["data.txt"])
    assert (into / "lib" / "data.txt").read_bytes() == b"one\r\ntwo\r\nthree\r\n"


def test_text_rule_over_a_blob_with_crlf(tmp_path, cli, upstream, project):
    """A blob committed with CRLF before a `text` rule: `git add` would normalise it, status does not."""
    crlf = commit_raw(upstream, {"data.txt": b"one\r\ntwo\r\n"}, "crlf blob")
    pin = commit_raw(upstream, {".gitattributes": b"*.txt text eol=lf\n"}, "text rule")
    mail, _ = raw_patch(upstream, crlf, {"data.txt": b"one\r\ntwo\r\nthree\r\n"}, "Add three")
    write_target(project, pin, mail)
    into = tmp_path / "build"
    checked = status(cli, upstream)
    assert checked.code == 0 and verdicts(checked) == [("fix", "clean", None)], checked.out + checked.err
    applied = apply(cli, upstream, into)
    assert applied.code == 0, applied.out + applied.err
    blob = git(into / "lib", "cat-file", "blob", "HEAD:data.txt")
    assert (
        subprocess.run(
            ["git", "cat-file", "blob", "HEAD:data.txt"], cwd=into / "lib", capture_output=True, check=True
        ).stdout
        == b"one\r\ntwo\r\nthree\r\n"
    ), blob
    verified = cli("verify", "--target", "t", "--into", str(into))
    assert verified.code == 0, verified.out + verified.err


@pytest.mark.parametrize(
    "path, reason",
    [
        ("sub/new.py", "sub is a submodule upstream: patchmgr does not patch inside submodules"),
        ("sub/deep/new.py", "sub is a submodule upstream: patchmgr does not patch inside submodules"),
    ],
)
def test_file_inside_a_submodule(tmp_path, cli, upstream, project, path, reason):
    other = upstream.path.parent / "other"
    other.mkdir()
    git(other, "init", "-q", "-b", "main")
    git(other, "commit", "-q", "--allow-empty", "-m", "other")
    gitlink = git(other, "rev-parse", "HEAD")
    (upstream.path / ".gitmodules").write_text('[submodule "sub"]\n\tpath = sub\n\turl = ../other\n')
    git(upstream.path, "add", ".gitmodules")
    git(upstream.path, "update-index", "--add", "--cacheinfo", f"160000,{gitlink},sub")
    git(upstream.path, "commit", "-q", "-m", "add a submodule")
    pin = upstream.head()
    mail = (
        b"Subject: [PATCH] Add a file in the submodule\n\n"
        + FIELDS.encode()
        + b"---\n"
        + f"diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n".encode()
        + b"@@ -0,0 +1 @@\n+x = 1\n"
    )
    write_target(project, pin, mail)
    checked = status(cli, upstream)
    assert checked.code == 1 and verdicts(checked) == [("fix", "conflict", reason)], checked.out
    into = tmp_path / "build"
    applied = apply(cli, upstream, into)
    assert applied.code == 1 and applied.json["action"] == "refused"
    assert verdicts(applied) == verdicts(checked)
    assert not into.exists()


# -- a failed or refused apply leaves nothing behind -------------------------------
def test_full_disk_during_the_build_removes_the_new_folder(tmp_path, cli, upstream, project, disk):
    if not disk.tmpfs:
        pytest.skip("needs a tmpfs (root) to fill the disk under the checkout build")
    upstream.commit({"big.bin": os.urandom(3 << 20).hex()}, "a large file")  # 6 MiB: more than is left
    mail = upstream.make_patch(upstream.head(), {"src/mod.py": lines_with({20: "fixed 20"})}, "Fix")
    write_target(project, upstream.head(), mail)
    into = disk.root / "new" / "build"
    result = cli(*apply_args(upstream, into))
    assert result.code == 1 and "Traceback" not in result.err, result.err
    lines = result.err.strip().splitlines()
    assert len(lines) == 2 and lines[0].startswith("error: "), result.err
    assert lines[1] == "hint: free some space on that disk, then run apply again", result.err
    assert not (disk.root / "new").exists()
    assert sorted(p.name for p in disk.root.iterdir()) == []


def test_full_disk_at_the_first_commit_removes_the_new_folder(tmp_path, cli, upstream, project, disk):
    if not disk.tmpfs:
        pytest.skip("needs a tmpfs (root) to fill the disk under the checkout build")
    from support.reliability import start

    mail = upstream.make_patch(upstream.head(), {"src/mod.py": lines_with({20: "fixed 20"})}, "Fix")
    write_target(project, upstream.head(), mail)
    into = disk.root / "build"
    marker = tmp_path / "paused"
    # paused after the fetch of the pin (step 1), the disk fills before the series is committed and checked out
    child = start(
        [*apply_args(upstream, into), "--root", str(project.root)],
        {"PATCHMGR_FAULT_PAUSE_AT": "1:60", "PATCHMGR_FAULT_PAUSED": str(marker)},
    )
    while not marker.exists() and not child.finished():
        time.sleep(0.005)
    assert marker.exists()
    disk.fill()
    marker.unlink()
    code, output = child.wait()
    disk.free()
    assert code == 1 and "Traceback" not in output, output
    assert "hint: free some space on that disk, then run apply again" in output, output
    assert not into.exists()


def test_a_source_that_lacks_a_blob_says_so(tmp_path, cli, upstream, project):
    upstream.commit({"docs/guide.md": "a guide\n"}, "a guide")
    pin = upstream.head()
    write_target(project, pin, upstream.make_patch(pin, {"src/mod.py": lines_with({20: "fixed 20"})}, "Fix"))
    mirror = tmp_path / "mirror"
    shutil.copytree(upstream.path, mirror)
    git(mirror, "config", "uploadpack.allowFilter", "true")
    git(mirror, "config", "uploadpack.allowAnySHA1InWant", "true")
    guide = git(mirror, "rev-parse", f"{pin}:docs/guide.md")
    (mirror / ".git" / "objects" / guide[:2] / guide[2:]).unlink()  # the mirror lost the guide's blob
    into = tmp_path / "build"
    source = f"lib=file://{mirror}"
    checked = cli("status", "--target", "t", "--source", source)
    assert checked.code == 0, checked.out + checked.err  # the patch needs only src/mod.py
    result = cli("apply", "--target", "t", "--into", str(into), "--source", source)
    lines = result.err.strip().splitlines()
    assert result.code == 1 and len(lines) == 2, result.err
    assert "free some space" not in result.err
    assert lines[1].startswith("hint: the source lacks files of that commit"), result.err
    assert not into.exists()


@pytest.mark.parametrize("existing", [False, True], ids=["new folder", "empty folder"])
def test_build_failure_names_its_cause_not_the_disk(tmp_path, cli, upstream, project, monkeypatch, existing):
    """A git failure in the build that is not the disk gets no disk hint, and leaves DIR as it was."""
    from patchmgr.model.errors import GitError
    from patchmgr.targets import build as checkout

    write_target(
        project,
        upstream.head(),
        upstream.make_patch(upstream.head(), {"src/mod.py": lines_with({20: "fixed 20"})}, "Fix"),
    )

    def broken(*args, **kwargs):
        raise GitError("git commit: unable to auto-detect email address", "see git's message above")

    monkeypatch.setattr(checkout, "_commit", broken)  # one commit at a time
    monkeypatch.setattr(checkout, "commit_series", broken)  # the series at once (io/git_commits.py)
    into = tmp_path / "build"
    if existing:
        into.mkdir()
    result = cli(*apply_args(upstream, into))
    lines = result.err.strip().splitlines()
    assert result.code == 1 and len(lines) == 2, result.err
    assert "unable to auto-detect email address" in lines[0]
    assert lines[1] == "hint: fix the cause above, then run apply again"
    assert (list(into.iterdir()) == []) if existing else not into.exists()


@pytest.mark.parametrize("existing", [False, True], ids=["new folder", "empty folder"])
@pytest.mark.parametrize("dry_run", [False, True], ids=["refused", "dry run"])
def test_refused_or_dry_run_makes_nothing(tmp_path, cli, upstream, project, existing, dry_run):
    pin = upstream.head()
    patch = upstream.make_patch(pin, {"src/mod.py": lines_with({20: "fixed 20"})}, "Fix")
    if not dry_run:
        pin = upstream.commit({"src/mod.py": None}, "drop mod.py")  # the patch is `missing` there
    write_target(project, pin, patch)
    into = tmp_path / "new" / "build"
    if existing:
        into.mkdir(parents=True)
    result = cli(*apply_args(upstream, into, *(["--dry-run"] if dry_run else [])))
    assert result.code == (0 if dry_run else 1), result.out + result.err
    assert (list(into.iterdir()) == []) if existing else not (tmp_path / "new").exists()


@pytest.mark.parametrize("where", ["root", "manifests", "patches", "patches/lib/build"])
def test_into_inside_the_project_is_bad_input(tmp_path, cli, upstream, project, where):
    write_target(
        project,
        upstream.head(),
        upstream.make_patch(upstream.head(), {"src/mod.py": lines_with({20: "fixed 20"})}, "Fix"),
    )
    into = project.root if where == "root" else project.root / where
    before = snapshot(project.root, exact=True)
    result = cli(*apply_args(upstream, into))
    assert result.code == 2 and result.err.startswith("error: --into "), result.err
    assert snapshot(project.root, exact=True) == before


def test_edit_into_a_folder_in_use_is_bad_input(tmp_path, cli, upstream, project):
    write_target(
        project,
        upstream.head(),
        upstream.make_patch(upstream.head(), {"src/mod.py": lines_with({20: "fixed 20"})}, "Fix"),
    )
    into = tmp_path / "work"
    into.mkdir()
    (into / "x").write_text("x")
    result = cli("edit", "--target", "t", "--upstream", "lib", "--into", str(into), "--source", f"lib={upstream.path}")
    assert result.code == 2 and "not an empty folder" in result.err, result.err


# -- verify writes nothing ------------------------------------------------------
def test_verify_leaves_the_index_byte_identical(tmp_path, cli, upstream, project):
    write_target(
        project,
        upstream.head(),
        upstream.make_patch(upstream.head(), {"src/mod.py": lines_with({20: "fixed 20"})}, "Fix"),
    )
    into = tmp_path / "build"
    assert apply(cli, upstream, into).code == 0
    checkout = into / "lib"
    # a stat change git would refresh into the index (the content is the same)
    for name in ("src/mod.py", "README"):
        os.utime(checkout / name, (1_000_000_000, 1_000_000_000))
    before = snapshot(into, exact=True)
    verified = cli("verify", "--target", "t", "--into", str(into))
    assert verified.code == 0, verified.out + verified.err
    assert snapshot(into, exact=True) == before
    assert re.search(r"verified", verified.out)
