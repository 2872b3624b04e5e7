"""Quilt series in and out (issue 40, items 2 and 4): ``import DIR/series`` reads a series as quilt reads it
(comments, blank lines, ``-pN``, subfolders), keeps each patch's header byte for byte and checks each patch on
top of the ones before; ``export --format quilt`` writes it back. Every result is compared with real quilt
(``quilt series``, ``quilt push -a`` on the pristine upstream), never with expectations written here."""

from __future__ import annotations

import subprocess
import tomllib
from pathlib import Path

from support.gitrepos import UpstreamRepo, git
from support.quilt_tool import files_of, need_quilt, pristine, quilt_push_all, quilt_series

from patchmgr.model.quilt_series import parse_series

APP = "".join(f"app line {n}\n" for n in range(1, 31))
OTHER = "".join(f"other line {n}\n" for n in range(1, 21))
SERIES = (
    "# the Debian patches of app\n\nfirst.patch\nfixes/second.diff -p1   # needs first\n\n  third.patch -p0\n"
    "#off.patch\n"
)

FIRST_HEADER = (
    "Description: Count from zero in the banner\n"
    " The banner said 'line 1' where users expect 'line 0'.\n"
    " .\n"
    " Kept in Debian until upstream decides.\n"
    "Author: Ann Example <ann@example.org>\n"
    "Forwarded: not-needed\n"
    "Last-Update: 2026-01-02\n"
    "\n"
)
SECOND_HEADER = (
    "From: Bob Example <bob@example.org>\nSubject: Say why line 3 changed\n\n"
    "Free text that quilt keeps, and so must patchmgr.\n\nBug-Debian: https://bugs.debian.org/1\n---\n"
)
THIRD_HEADER = "## DP: Fix the other file (a dpatch-style header)\n##\n## DP: kept as it is\n\n"


def _diff(root: Path, name: str, old: str, new: str, labels: tuple[str, str]) -> bytes:
    """``diff -u`` of two versions of a file, labelled as a patch for -p1 or -p0 names them."""
    (root / "old").write_text(old)
    (root / "new").write_text(new)
    done = subprocess.run(
        ["diff", "-u", "--label", labels[0], "--label", labels[1], "old", "new"], cwd=root, capture_output=True
    )
    assert done.returncode == 1, done.stderr
    return done.stdout


def quilt_folder(tmp_path: Path) -> tuple[UpstreamRepo, str, Path]:
    """An upstream at a release, and a Debian-style patches folder for it: three patches, the second needing
    the first, the third written for -p0 in a subfolder-less name; a series with comments and blank lines."""
    repo = UpstreamRepo(tmp_path / "app")
    pin = repo.commit({"src/app.txt": APP, "src/other.txt": OTHER}, "release 1.0")
    git(repo.path, "tag", "v1.0")
    work = tmp_path / "work"
    work.mkdir()
    after_first = APP.replace("app line 1\n", "app line 0\n")
    after_second = after_first.replace("app line 3\n", "app line three\n").replace("app line 0\n", "app line zero\n")
    patches = tmp_path / "debian" / "patches"
    (patches / "fixes").mkdir(parents=True)
    (patches / "series").write_text(SERIES)
    first = _diff(work, "src/app.txt", APP, after_first, ("a/src/app.txt", "b/src/app.txt"))
    (patches / "first.patch").write_bytes(FIRST_HEADER.encode() + first)
    second = _diff(work, "src/app.txt", after_first, after_second, ("a/src/app.txt", "b/src/app.txt"))
    (patches / "fixes" / "second.diff").write_bytes(SECOND_HEADER.encode() + second)
    other = OTHER.replace("other line 7\n", "other line seven\n")
    third = _diff(work, "src/other.txt", OTHER, other, ("src/other.txt.orig", "src/other.txt"))
    (patches / "third.patch").write_bytes(THIRD_HEADER.encode() + third)
    return repo, pin, patches


def _import(cli, patches: Path, repo: UpstreamRepo, target: str = "deb", *more: str):
    return cli(
        "import", "--target", target, str(patches), "--upstream", "app", "--git", "app=https://example.org/app.git",
        "--pin", "app=v1.0", "--source", f"app={repo.path}", *more,
    )  # fmt: skip


def test_the_series_is_read_as_quilt_reads_it(tmp_path):
    _, _, patches = quilt_folder(tmp_path)
    entries = parse_series((patches / "series").read_text(), "series").entries
    assert [e.name for e in entries] == quilt_series(patches)
    assert [e.id for e in entries] == ["first", "fixes-second", "third"]


def test_import_keeps_order_and_headers_and_applies_as_quilt_push_does(tmp_path, cli, project):
    need_quilt()
    repo, pin, patches = quilt_folder(tmp_path)
    result = _import(cli, patches, repo)
    assert result.code == 0, result.out + result.err
    manifest = tomllib.loads((project.root / "manifests" / "deb.toml").read_text())
    assert manifest["target"]["lint-profile"] == "dep3"
    assert manifest["upstreams"]["app"]["patches"] == ["first", "fixes-second", "third"]
    assert manifest["upstreams"]["app"]["commit"] == pin
    held = project.root / "patches" / "app"
    # -p1 patches byte for byte; the -p0 one with its header byte for byte (only its names made -p1 names)
    assert (held / "first.patch").read_bytes() == (patches / "first.patch").read_bytes()
    assert (held / "fixes-second.patch").read_bytes() == (patches / "fixes" / "second.diff").read_bytes()
    assert (held / "third.patch").read_bytes().startswith(THIRD_HEADER.encode())
    assert "TODO" not in "".join(p.read_text() for p in held.iterdir())
    linted = cli("lint")  # the DEP-3 profile: the dpatch-only header is no DEP-3 header, the other two are
    assert linted.code == 1
    named = {Path(line.split(":", 1)[0]).name for line in linted.out.splitlines() if ".patch:" in line}
    assert named == {"third.patch"}, linted.out
    applied = cli("apply", "--target", "deb", "--into", str(tmp_path / "build"), "--source", f"app={repo.path}")
    assert applied.code == 0, applied.out + applied.err
    quilted = pristine(repo.path, pin, tmp_path / "quilted")
    quilt_push_all(quilted, patches)
    assert files_of(tmp_path / "build" / "app") == files_of(quilted)


def test_export_quilt_is_what_quilt_pushes_and_imports_back_byte_for_byte(tmp_path, cli, project):
    need_quilt()
    repo, pin, patches = quilt_folder(tmp_path)
    assert _import(cli, patches, repo).code == 0
    out = tmp_path / "out" / "patches"
    exported = cli("export", "--target", "deb", "--format", "quilt", "--into", str(out), "--source", f"app={repo.path}")
    assert exported.code == 0, exported.out + exported.err
    assert quilt_series(out) == ["first.patch", "fixes-second.patch", "third.patch"]
    quilted = pristine(repo.path, pin, tmp_path / "quilted")
    quilt_push_all(quilted, out)
    assert cli("apply", "--target", "deb", "--into", str(tmp_path / "build"), "--source", f"app={repo.path}").code == 0
    assert files_of(tmp_path / "build" / "app") == files_of(quilted)
    again = _import(cli, out, repo, "again")
    assert again.code == 0, again.out + again.err
    # one patch file per id, shared by both targets: the import back wrote nothing new and changed nothing
    manifest = tomllib.loads((project.root / "manifests" / "again.toml").read_text())
    assert manifest["upstreams"]["app"]["patches"] == ["first", "fixes-second", "third"]
    held = project.root / "patches" / "app"
    assert {p.name: p.read_bytes() for p in out.glob("*.patch")} == {p.name: p.read_bytes() for p in held.iterdir()}


def test_a_patch_that_needs_one_left_out_of_the_series_refuses_the_import_and_writes_nothing(tmp_path, cli, project):
    repo, _, patches = quilt_folder(tmp_path)
    (patches / "series").write_text("fixes/second.diff\nthird.patch -p0\n")
    result = _import(cli, patches, repo)
    assert result.code == 2
    assert "fixes-second is" in result.err and "nothing was written" in result.err
    assert "Traceback" not in result.err
    assert not list((project.root / "manifests").iterdir())


def test_bad_series_lines_are_one_clear_error_each(tmp_path, cli, project):
    repo, _, patches = quilt_folder(tmp_path)
    for text, said in (
        ("first.patch -R\n", "applied reversed (-R)"),
        ("first.patch --fuzz=3\n", "not one patchmgr follows"),
        ("missing.patch\n", "is not in"),
        ("../first.patch\n", "not a file inside the series' folder"),
        ("# nothing\n\n", "lists no patches"),
    ):
        (patches / "series").write_text(text)
        result = _import(cli, patches, repo)
        assert result.code == 2, (text, result.out, result.err)
        assert said in result.err, (text, result.err)
        assert "Traceback" not in result.err
    assert not list((project.root / "manifests").iterdir())
    (patches / "series").write_text(SERIES)
    no_pin = cli("import", "--target", "deb", str(patches), "--upstream", "app", "--git", "app=https://x.org/app.git")
    assert no_pin.code == 2 and "--pin app=REF" in no_pin.err
