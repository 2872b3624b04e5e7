"""Quilt series in and out (issue 40, items 2 and 4): ``import DIR/series`` reads a series as quilt reads it
(comments, blank lines, ``-pN``, subfolders), keeps each patch's header byte for byte and checks each patch on
top of the ones before; ``export --format quilt`` writes it back. Every result is compared with real quilt
(``quilt series``, ``quilt push -a`` on the pristine upstream), never with expectations written here."""

from __future__ import annotations

import subprocess
import tomllib
from pathlib import Path

from support.gitrepos import UpstreamRepo, git
from support.quilt_tool import dpkg_source_build, files_of, need_quilt, pristine, quilt_push_all, quilt_series

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


def _export(cli, repo: UpstreamRepo, out: Path, target: str = "deb"):
    return cli("export", "--target", target, "--format", "quilt", "--into", str(out), "--source", f"app={repo.path}")


def test_export_quilt_gives_the_series_back_as_it_was_and_imports_back_byte_for_byte(tmp_path, cli, project):
    need_quilt()
    repo, pin, patches = quilt_folder(tmp_path)
    assert _import(cli, patches, repo).code == 0
    out = tmp_path / "out" / "patches"
    exported = _export(cli, repo, out)
    assert exported.code == 0, exported.out + exported.err
    assert "the series it was imported from" in exported.out
    assert quilt_series(out) == quilt_series(patches)
    # the series as it was: comments, blank lines, subfolders and .diff names; only the -p0 of the one patch
    # written for -p0 is gone, for that patch holds git's -p1 names since the import
    assert (out / "series").read_text() == SERIES.replace("third.patch -p0", "third.patch")
    unchanged = set(files_of(patches)) - {"series", "third.patch"}
    assert {n: d for n, d in files_of(out).items() if n in unchanged} == {n: files_of(patches)[n] for n in unchanged}
    quilted = pristine(repo.path, pin, tmp_path / "quilted")
    quilt_push_all(quilted, out)
    assert cli("apply", "--target", "deb", "--into", str(tmp_path / "build"), "--source", f"app={repo.path}").code == 0
    assert files_of(tmp_path / "build" / "app") == files_of(quilted)
    again = _import(cli, out, repo, "again")
    assert again.code == 0, again.out + again.err
    # one patch file per id, shared by both targets: the import back wrote no new patch and changed none
    manifest = tomllib.loads((project.root / "manifests" / "again.toml").read_text())
    assert manifest["upstreams"]["app"]["patches"] == ["first", "fixes-second", "third"]
    held = project.root / "patches" / "app"
    for entry in parse_series((out / "series").read_text(), "series").entries:
        assert (held / f"{entry.id}.patch").read_bytes() == (out / entry.name).read_bytes()
    assert _export(cli, repo, tmp_path / "again", "again").code == 0
    assert files_of(tmp_path / "again") == files_of(out)


def test_a_series_without_pn_comes_back_as_the_same_folder_byte_for_byte(tmp_path, cli, project):
    need_quilt()
    repo, _, patches = quilt_folder(tmp_path)
    (patches / "third.patch").unlink()
    (patches / "series").write_text(
        "# the Debian patches of app\n\nfirst.patch\n\tfixes/second.diff -p1 # on first\n#off\n"
    )
    assert _import(cli, patches, repo).code == 0
    out = tmp_path / "out"
    assert _export(cli, repo, out).code == 0
    assert files_of(out) == files_of(patches)


def test_the_series_follows_the_manifest_a_patch_dropped_or_added_since(tmp_path, cli, project):
    need_quilt()
    repo, pin, patches = quilt_folder(tmp_path)
    assert _import(cli, patches, repo).code == 0
    manifest = project.root / "manifests" / "deb.toml"
    manifest.write_text(manifest.read_text().replace('"third",', "").replace('"third"', ""))
    (project.root / "patches" / "app" / "third.patch").unlink()
    work = tmp_path / "later"
    work.mkdir()
    fix = tmp_path / "later.diff"
    header = "Description: Say line 20 in words\nAuthor: Eve Example <eve@example.org>\n---\n"
    fix.write_bytes(header.encode() + _diff(work, "", APP, APP.replace("app line 20\n", "app line twenty\n"),
                                           ("a/src/app.txt", "b/src/app.txt")))  # fmt: skip
    added = cli(
        "add", "later", "--target", "deb", "--upstream", "app", "--diff", str(fix), "--source", f"app={repo.path}"
    )
    assert added.code == 0, added.out + added.err
    out = tmp_path / "out"
    assert _export(cli, repo, out).code == 0
    listed = tomllib.loads(manifest.read_text())["upstreams"]["app"]["patches"]
    assert [parse_series((out / "series").read_text(), "s").entries[n].id for n in range(len(listed))] == listed
    assert quilt_series(out) == ["first.patch", "fixes/second.diff", "later.patch"]
    kept_lines = [line for line in SERIES.splitlines() if "third.patch" not in line]
    assert (out / "series").read_text().splitlines() == [*kept_lines, "later.patch"]
    quilted = pristine(repo.path, pin, tmp_path / "quilted")
    quilt_push_all(quilted, out)
    assert cli("apply", "--target", "deb", "--into", str(tmp_path / "build"), "--source", f"app={repo.path}").code == 0
    assert files_of(tmp_path / "build" / "app") == files_of(quilted)


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


def test_import_of_a_series_says_patches_and_what_becomes_of_an_existing_targets_lint_profile(tmp_path, cli, project):
    repo, _, patches = quilt_folder(tmp_path)
    new = _import(cli, patches, repo)
    assert new.code == 0, new.out + new.err
    assert "imported 3 patch(es) of 1 upstream(s) into target deb" in new.out and "piece" not in new.out, new.out
    assert "lint-profile" not in new.out + new.err  # a new target: the manifest says it, nothing to tell
    made = cli("init", "--target", "old", "--git", "https://example.org/app.git", "--pin", "v1.0", "--source",
               f"app={repo.path}")  # fmt: skip
    assert made.code == 0, made.out + made.err
    into_old = _import(cli, patches, repo, "old")
    assert into_old.code == 0, into_old.out + into_old.err
    said = into_old.out + into_old.err
    assert 'target old named no lint-profile: it gets lint-profile = "dep3"' in said, said
    manifest = tomllib.loads((project.root / "manifests" / "old.toml").read_text())
    assert manifest["target"]["lint-profile"] == "dep3"
    assert cli("init", "--target", "kept", "--git", "https://example.org/app.git", "--pin", "v1.0", "--source",
               f"app={repo.path}").code == 0  # fmt: skip
    path = project.root / "manifests" / "kept.toml"
    path.write_text(path.read_text().replace("[target]\n", '[target]\nlint-profile = "strict"\n', 1))
    into_kept = _import(cli, patches, repo, "kept")
    assert into_kept.code == 0, into_kept.out + into_kept.err
    assert 'target kept keeps lint-profile = "strict"' in into_kept.out + into_kept.err
    assert tomllib.loads(path.read_text())["target"]["lint-profile"] == "strict"


def _one_patch_series(tmp_path: Path, old: str, new: str) -> tuple[UpstreamRepo, str, Path]:
    """An upstream at v1.0 and a series of one patch, ``diff -u`` of ``old`` and ``new`` as src/app.txt."""
    repo = UpstreamRepo(tmp_path / "app")
    pin = repo.commit({"src/app.txt": APP, "src/other.txt": OTHER}, "release 1.0")
    git(repo.path, "tag", "v1.0")
    patches = tmp_path / "debian" / "patches"
    patches.mkdir(parents=True)
    (patches / "series").write_text("moved.patch\n")
    header = b"Description: Say line 10 in words\nAuthor: Ann Example <ann@example.org>\n---\n"
    work = tmp_path / "work"
    work.mkdir()
    (patches / "moved.patch").write_bytes(header + _diff(work, "", old, new, ("a/src/app.txt", "b/src/app.txt")))
    return repo, pin, patches


def test_a_patch_quilt_pushes_only_with_fuzz_is_refused_as_dpkg_source_refuses_it(tmp_path, cli, project):
    need_quilt()
    # made where the hunk's first context line read otherwise: patch takes it with fuzz 1, and only so
    old = APP.replace("app line 7\n", "app line seven\n")
    repo, pin, patches = _one_patch_series(tmp_path, old, old.replace("app line 10\n", "app line ten\n"))
    pushed = quilt_push_all(pristine(repo.path, pin, tmp_path / "quilted"), patches)
    assert "with fuzz 1" in pushed.stdout, pushed.stdout
    built = dpkg_source_build(pristine(repo.path, pin, tmp_path / "tree"), patches, tmp_path / "dpkg")
    assert built.returncode != 0 and "fuzz" in built.stdout + built.stderr, built.stdout + built.stderr
    result = _import(cli, patches, repo)
    assert result.code == 2, result.out + result.err
    assert "moved applies only with fuzz (src/app.txt: hunk #1 fuzz 1)" in result.err, result.err
    assert "dpkg-source -x refuses it" in result.err and "quilt refresh" in result.err, result.err
    assert "Traceback" not in result.err
    assert not list((project.root / "manifests").iterdir()) and not list((project.root / "patches").iterdir())


def test_a_patch_at_an_offset_is_taken_as_dpkg_source_takes_it_and_kept_as_it_is(tmp_path, cli, project):
    need_quilt()
    old = "added 1\nadded 2\nadded 3\n" + APP  # made on a file three lines longer at its top: an offset at the pin
    repo, pin, patches = _one_patch_series(tmp_path, old, old.replace("app line 10\n", "app line ten\n"))
    built = dpkg_source_build(pristine(repo.path, pin, tmp_path / "tree"), patches, tmp_path / "dpkg")
    assert built.returncode == 0, built.stdout + built.stderr
    result = _import(cli, patches, repo)
    assert result.code == 0, result.out + result.err
    assert "offset" in result.out and "kept as it is" in result.out, result.out
    assert (project.root / "patches" / "app" / "moved.patch").read_bytes() == (patches / "moved.patch").read_bytes()
    assert cli("apply", "--target", "deb", "--into", str(tmp_path / "build"), "--source", f"app={repo.path}").code == 0
    quilted = pristine(repo.path, pin, tmp_path / "quilted")
    quilt_push_all(quilted, patches)
    assert files_of(tmp_path / "build" / "app") == files_of(quilted)


def test_a_kept_series_in_the_way_or_broken_is_one_clear_error_and_nothing_is_written(tmp_path, cli, project):
    repo, _, patches = quilt_folder(tmp_path)
    kept = project.root / "patches" / "app" / "deb.series"
    kept.parent.mkdir(parents=True)
    kept.write_text("other.patch\n")
    refused = _import(cli, patches, repo)
    assert refused.code == 2 and "patches/app/deb.series exists and holds another series" in refused.err, refused.err
    assert "Traceback" not in refused.err and not list((project.root / "manifests").iterdir())
    assert kept.read_text() == "other.patch\n"
    kept.unlink()
    assert _import(cli, patches, repo).code == 0
    kept.write_text(kept.read_text().replace("first.patch", "first.patch -R"))  # edited by hand, wrongly
    out = tmp_path / "out"
    broken = _export(cli, repo, out)
    assert broken.code == 2 and f"{kept}:3: first.patch is applied reversed (-R)" in broken.err, broken.err
    assert "Traceback" not in broken.err and not out.exists()
