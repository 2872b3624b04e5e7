"""init and add: start a project in an empty folder, and turn changes into documented patches of its series."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from support.gitrepos import BASE_TEXT, UpstreamRepo, git
from support.snapshot import snapshot

import patchmgr
from patchmgr.cli import main
from patchmgr.model.dep3_edit import today
from patchmgr.model.patchfile import read_patch

URL = "https://example.com/org/My-Lib.git"
ADD = ("add", "--target", "main", "--upstream", "my-lib")
FIXED = BASE_TEXT.replace("line 10\n", "line 10 fixed\n")
WHY = "line 10 came out wrong, so every run that read it failed with a bad value at the end."


def run(capsys, *args: str):
    capsys.readouterr()
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture
def lib(tmp_path) -> UpstreamRepo:
    """An upstream released as v1.2.0, then moved on."""
    repo = UpstreamRepo(tmp_path / "my-lib")
    repo.commit({"src/mod.py": BASE_TEXT, "README": "upstream\n"}, "initial")
    git(repo.path, "tag", "v1.2.0")
    repo.commit({"README": "upstream, later\n"}, "later")
    return repo


@pytest.fixture
def started(tmp_path, capsys, lib):
    """A project made by init in an empty folder: (root, a function running patchmgr there)."""
    root = tmp_path / "proj"
    root.mkdir()

    def pm(*args: str, source: bool = True):
        extra = ["--source", f"my-lib={lib.path}"] if source else []
        return run(capsys, *args, *extra, "--root", str(root))

    code, out, err = pm("init", "--target", "main", "--git", URL, "--pin", "v1.2.0")
    assert code == 0, out + err
    return root, pm


def clone_with(tmp_path, lib: UpstreamRepo, *changes: tuple[str, str, str]):
    """A clone of ``lib`` at v1.2.0 with a commit per change (file text, subject, body); its folder and commits."""
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(lib.path), str(clone))
    git(clone, "checkout", "-q", "-b", "fix", "v1.2.0")
    commits = []
    for text, subject, body in changes:
        (clone / "src/mod.py").write_text(text)
        git(clone, "commit", "-q", "-a", "-m", f"{subject}\n\n{body}")
        commits.append(git(clone, "rev-parse", "HEAD"))
    return clone, commits


def write_real_test(root, name="test_fix_line_10.py"):
    (root / "tests/smoke/my-lib" / name).write_text("def test_it():\n    assert True\n")


def test_init_in_an_empty_folder_pins_the_full_commit_and_the_release_version(started, lib):
    root, pm = started
    tag_commit = git(lib.path, "rev-parse", "v1.2.0^{commit}")
    files = sorted(
        str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and ".patchmgr-state" not in p.parts
    )
    assert files == [
        ".gitignore",
        ".pre-commit-config.yaml",
        "manifests/main.toml",
        "patches/my-lib/.gitkeep",
        "tests/smoke/my-lib/conftest.py",
    ]
    manifest = (root / "manifests/main.toml").read_text()
    assert "[upstreams.my-lib]" in manifest
    assert f'commit = "{tag_commit}"  # v1.2.0' in manifest
    assert 'version = "1.2.0"' in manifest and f'git = "{URL}"' in manifest and "patches = []" in manifest
    assert "entry: patchmgr lint" in (root / ".pre-commit-config.yaml").read_text()
    assert (root / ".gitignore").read_text().splitlines()[-1] == ".patchmgr.local.toml"  # this machine's sources
    assert "PATCHMGR_SMOKE_ROOT" in (root / "tests/smoke/my-lib/conftest.py").read_text()
    assert pm("lint", source=False)[0] == 0
    code, out, err = pm("status", "--target", "main", "--json")
    assert code == 0, out + err


def test_init_names_the_upstream_and_leaves_version_out_at_a_branch(tmp_path, capsys, lib):
    root = tmp_path / "proj"
    root.mkdir()
    code, out, err = run(
        capsys, "init", "--target", "dev", "--git", URL, "--pin", "main", "--upstream", "core",
        "--source", f"core={lib.path}", "--json", "--root", str(root),
    )  # fmt: skip
    assert code == 0, out + err
    doc = json.loads(out)
    assert doc["commit"] == lib.head() and doc["version"] is None and doc["upstream"] == "core"
    assert doc["source"] == f"git {lib.path}"
    manifest = (root / "manifests/dev.toml").read_text()
    assert "version" not in manifest and "[upstreams.core]" in manifest and "# main" in manifest


def test_a_second_target_keeps_the_files_the_first_wrote(started, lib):
    root, pm = started
    before = snapshot(root / "tests", root / ".pre-commit-config.yaml", root / ".gitignore", root / "patches")
    code, out, err = pm("init", "--target", "other", "--git", URL, "--pin", "main")
    assert code == 0, out + err
    assert "kept      .pre-commit-config.yaml" in out and "wrote     manifests/other.toml" in out
    assert snapshot(root / "tests", root / ".pre-commit-config.yaml", root / ".gitignore", root / "patches") == before
    assert pm("lint", source=False)[0] == 0


def test_init_refuses_an_existing_file_and_writes_nothing(tmp_path, capsys, lib):
    root = tmp_path / "proj"
    (root / "tests/smoke/my-lib").mkdir(parents=True)
    (root / "tests/smoke/my-lib/conftest.py").write_text("# mine\n")
    before = snapshot(root, exact=True)
    code, out, err = run(
        capsys, "init", "--target", "main", "--git", URL, "--pin", "v1.2.0",
        "--source", f"my-lib={lib.path}", "--root", str(root),
    )  # fmt: skip
    assert code == 2
    assert "conftest.py exists; nothing was written" in err and "hint:" in err
    assert snapshot(root, exact=True) == before


def test_init_refuses_a_local_path_as_the_manifests_url(tmp_path, capsys, lib):
    root = tmp_path / "proj"
    root.mkdir()
    code, out, err = run(
        capsys, "init", "--target", "main", "--git", str(lib.path), "--pin", "v1.2.0", "--root", str(root)
    )
    assert code == 2 and "--source" in err
    assert list(root.iterdir()) == []


FORGED = "for CI\n  my-lib  pin 0123456789ab (9.9.9)  0 patches  https://example.com/forged.git"


def test_a_description_is_one_line_init_refuses_a_line_break_and_targets_shows_one(started, lib):
    root, pm = started
    before = snapshot(root, exact=True)
    code, out, err = pm("init", "--target", "other", "--git", URL, "--pin", "v1.2.0", "--description", FORGED)
    assert code == 2 and out == "" and "--description" in err and "(U+000A); it is one line" in err, out + err
    assert snapshot(root, exact=True) == before
    # a manifest written by hand may hold any text there: `targets` still shows each target as its own lines
    manifest = root / "manifests/main.toml"
    manifest.write_text(
        manifest.read_text().replace('name = "main"\n', f'name = "main"\ndescription = """{FORGED}"""\n')
    )
    code, out, err = pm("targets", source=False)
    assert code == 0, out + err
    assert out.splitlines() == [
        "main  for CI\\x0a  my-lib  pin 0123456789ab (9.9.9)  0 patches  https://example.com/forged.git",
        f"  my-lib  pin {git(lib.path, 'rev-parse', 'v1.2.0^{commit}')[:12]} (1.2.0)  0 patches  {URL}",
    ]


def test_add_from_a_commit_of_a_clone_documents_lists_and_stubs_it(tmp_path, started, lib):
    root, pm = started
    clone, (commit,) = clone_with(tmp_path, lib, (FIXED, "Fix line 10", WHY))
    code, out, err = pm(*ADD, "fix-line-10", "--commit", "HEAD", "--repo", str(clone))
    assert code == 0, out + err
    assert "added     fix-line-10: patches/my-lib/fix-line-10.patch (clean at the pin" in out  # as lint names it
    path = root / "patches/my-lib/fix-line-10.patch"
    patch = read_patch(path, "my-lib", "fix-line-10")
    assert patch.subject == "Fix line 10"
    assert patch.field("Author") == "Upstream Dev <dev@upstream.example>"
    assert patch.field("Origin") == f"commit {commit}"
    assert patch.field("Upstream-Status") == "Pending"
    assert patch.field("Last-Update") == today()
    assert patch.field("Smoke-Test") == "tests/smoke/my-lib/test_fix_line_10.py"
    assert WHY in patch.data.decode()
    assert 'patches = ["fix-line-10"]' in (root / "manifests/main.toml").read_text()
    stub = root / "tests/smoke/my-lib/test_fix_line_10.py"
    assert "pytest.fail(" in stub.read_text()
    code, out, err = pm("lint", source=False)
    assert code == 1 and "is the stub patchmgr add wrote" in out + err
    write_real_test(root)
    code, out, err = pm("lint", source=False)
    assert code == 0, out + err
    code, out, err = pm("status", "--target", "main", "--json")
    assert code == 0, out + err
    assert [(p["id"], p["state"]) for u in json.loads(out)["upstreams"] for p in u["patches"]] == [
        ("fix-line-10", "clean")
    ]


def test_the_stub_fails_until_it_is_written(tmp_path, started, lib):
    root, pm = started
    clone, _ = clone_with(tmp_path, lib, (FIXED, "Fix line 10", WHY))
    assert pm(*ADD, "fix-line-10", "--commit", "HEAD", "--repo", str(clone))[0] == 0
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/smoke/my-lib/test_fix_line_10.py"],
        cwd=root,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(Path(patchmgr.__file__).parent.parent), "PATCHMGR_SMOKE_ROOT": str(root)},
    )
    assert done.returncode == 1 and "write the smoke test of fix-line-10" in done.stdout


def test_add_from_a_range_makes_one_patch_of_its_commits(tmp_path, started, lib):
    root, pm = started
    twice = FIXED.replace("line 20\n", "line 20 fixed\n")
    clone, (first, second) = clone_with(
        tmp_path, lib, (FIXED, "Fix line 10", WHY), (twice, "Fix line 20 too", "The same bug, twenty lines on.")
    )
    base = git(clone, "rev-parse", "v1.2.0^{commit}")
    code, out, err = pm(*ADD, "fix-lines", "--commit", f"{base}..{second}", "--repo", str(clone))
    assert code == 0, out + err
    patch = read_patch(root / "patches/my-lib/fix-lines.patch", "my-lib", "fix-lines")
    assert patch.subject == "Fix line 10"
    assert "Fix line 20 too" in patch.data.decode() and "twenty lines on" in patch.data.decode()
    assert patch.field("Origin") == f"commits {base}..{second}"
    added = [line for line in patch.data.decode().splitlines() if line.startswith("+") and not line.startswith("+++")]
    assert added == ["+line 10 fixed", "+line 20 fixed"]
    write_real_test(root, "test_fix_lines.py")
    assert pm("lint", source=False)[0] == 0
    assert pm("status", "--target", "main")[0] == 0


def test_add_from_a_diff_file_needs_its_origin_and_gets_git_full_index_lines(tmp_path, started, lib):
    root, pm = started
    old, new = tmp_path / "a/src", tmp_path / "b/src"
    old.mkdir(parents=True), new.mkdir(parents=True)
    (old / "mod.py").write_text(BASE_TEXT)
    (new / "mod.py").write_text(FIXED)
    done = subprocess.run(["diff", "-u", "a/src/mod.py", "b/src/mod.py"], cwd=tmp_path, capture_output=True, text=True)
    diff = tmp_path / "fix.diff"
    diff.write_text(f"Description: Fix line 10\n {WHY}\n---\n" + done.stdout)
    args = (*ADD, "fix-line-10", "--diff", str(diff))
    before = snapshot(root)
    code, out, err = pm(*args)
    assert code == 2 and "--origin" in err and snapshot(root) == before
    code, out, err = pm(*args, "--origin", "vendor")
    assert code == 0, out + err
    text = (root / "patches/my-lib/fix-line-10.patch").read_text()
    assert text.startswith(f"Description: Fix line 10\n {WHY}\nOrigin: vendor\n")
    assert "\nindex " in text and "diff --git a/src/mod.py b/src/mod.py" in text
    write_real_test(root)
    code, out, err = pm("lint", source=False)
    assert code == 0, out + err
    assert pm("status", "--target", "main")[0] == 0


def test_add_from_an_edit_checkout_takes_its_new_commit_and_export_keeps_the_file(tmp_path, started, lib):
    root, pm = started
    clone, _ = clone_with(tmp_path, lib, (FIXED, "Fix line 10", WHY))
    assert pm(*ADD, "fix-line-10", "--commit", "HEAD", "--repo", str(clone))[0] == 0
    into = tmp_path / "work"
    code, out, err = pm("edit", "--target", "main", "--upstream", "my-lib", "--into", str(into))
    assert code == 0, out + err
    (into / "src/mod.py").write_text(FIXED.replace("line 30\n", "line 30 fixed\n"))
    git(
        into, "commit", "-q", "-a", "-m", "Fix line 30\n\nLine 30 has the same bug, and the runs that read it fail too."
    )
    code, out, err = pm(*ADD, "fix-line-30", "--from-edit", str(into))
    assert code == 0, out + err
    assert 'patches = ["fix-line-10", "fix-line-30"]' in (root / "manifests/main.toml").read_text()
    patch = read_patch(root / "patches/my-lib/fix-line-30.patch", "my-lib", "fix-line-30")
    assert patch.subject == "Fix line 30" and patch.field("Origin") == f"commit {git(into, 'rev-parse', 'HEAD')}"
    record = json.loads((into / ".git/patchmgr-edit.json").read_text())
    assert [(p["id"], p["commit"]) for p in record["patches"]][-1] == ("fix-line-30", git(into, "rev-parse", "HEAD"))
    before = snapshot(root)
    code, out, err = pm("export", "--target", "main", "--upstream", "my-lib", "--from", str(into), source=False)
    assert code == 0, out + err
    assert snapshot(root) == before
    assert pm("status", "--target", "main")[0] == 0


def test_add_refuses_a_patch_that_does_not_apply_and_writes_nothing(tmp_path, started, lib):
    root, pm = started
    clone, _ = clone_with(tmp_path, lib, (FIXED, "Fix line 10", WHY))
    assert pm(*ADD, "fix-line-10", "--commit", "HEAD", "--repo", str(clone))[0] == 0
    # a change made on the pin without the series: it rewrites the line the series already changed
    other = FIXED.replace("line 10 fixed\n", "line 10 other\n").replace("line 10\n", "line 10 other\n")
    git(clone, "checkout", "-q", "-b", "other", "v1.2.0")
    (clone / "src/mod.py").write_text(other)
    git(clone, "commit", "-q", "-a", "-m", "Rewrite line 10\n\nAnother take on line 10.")
    before = snapshot(root, exact=True)
    code, out, err = pm(*ADD, "other", "--commit", "HEAD", "--repo", str(clone))
    assert code == 2
    assert "does not apply exactly" in err and "conflict" in err and "nothing was written" in err
    assert snapshot(root, exact=True) == before


def test_add_refuses_an_id_the_series_has(tmp_path, started, lib):
    root, pm = started
    clone, _ = clone_with(tmp_path, lib, (FIXED, "Fix line 10", WHY))
    args = (*ADD, "fix-line-10", "--commit", "HEAD", "--repo", str(clone))
    assert pm(*args)[0] == 0
    code, out, err = pm(*args)
    assert code == 2 and "fix-line-10" in err


def test_add_from_a_patch_mail_keeps_its_headers_and_sets_the_fields_apart(tmp_path, started, lib):
    root, pm = started
    clone, _ = clone_with(tmp_path, lib, (FIXED, "Fix line 10", WHY))
    mail = tmp_path / "fix.patch"
    mail.write_text(git(clone, "format-patch", "-1", "--stdout", "--full-index", "HEAD") + "\n")
    code, out, err = pm(*ADD, "fix-line-10", "--diff", str(mail), "--origin", "https://example.com/org/My-Lib/pull/7")
    assert code == 0, out + err
    patch = read_patch(root / "patches/my-lib/fix-line-10.patch", "my-lib", "fix-line-10")
    assert patch.subject == "Fix line 10" and patch.author == "Upstream Dev <dev@upstream.example>"
    assert f"{WHY}\n\nOrigin: https://example.com/org/My-Lib/pull/7\nUpstream-Status: Pending\n" in patch.data.decode()
    write_real_test(root)
    assert pm("lint", source=False)[0] == 0
    assert pm("status", "--target", "main")[0] == 0
