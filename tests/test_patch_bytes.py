"""Patches are bytes (issue 40, item 1): each shape made for real in a git repository in a temporary folder,
checked with `status`, applied with `apply` and compared with what `git apply` (and GNU patch, which
dpkg-source runs, for plain diffs) makes of the same patch on the same commit: the same tree, byte for byte,
modes and links included. Text that is not UTF-8 is only shown escaped (``\\xe9``)."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from support.gitrepos import UpstreamRepo, detached_at, git, git_bytes, plain_git

URL = "https://example.invalid/lib.git"
LATIN1 = b"/* caf\xe9 cr\xe8me */\nint main(void)\n{\n\treturn 0;\n}\n"


def commit_patch(repo: UpstreamRepo, base: str, change: Callable[[Path], None], message: bytes) -> bytes:
    """``git format-patch --binary`` of ``change`` (a function of the work tree) committed on ``base``."""
    with detached_at(repo.path, base, force=True):
        change(repo.path)
        git(repo.path, "add", "-A")
        git_bytes(repo.path, "commit", "-q", "--allow-empty", "-F", "-", input=message)
        return git_bytes(
            repo.path, "format-patch", "-1", "--stdout", "--zero-commit", "--full-index", "--binary", "HEAD"
        )


def git_apply_tree(repo: UpstreamRepo, base: str, patch: bytes, tmp: Path) -> str:
    """The tree `git apply --cached` makes of ``patch`` on ``base``, in an index of its own."""
    env = {"GIT_INDEX_FILE": str(tmp / "git-apply.index")}
    for args in (("read-tree", base), ("apply", "--cached", "-")):
        done = plain_git(repo.path, *args, env=env, input=patch)
        assert done.returncode == 0, done.stderr
    return plain_git(repo.path, "write-tree", env=env).stdout.decode().strip()


class Bytes:
    """A project with one patch `p` of upstream `lib` at ``pin``, run through the real command line."""

    def __init__(self, tmp: Path, upstream: UpstreamRepo, project, cli) -> None:
        self.tmp, self.upstream, self.project, self.cli = tmp, upstream, project, cli

    def use(self, patch: bytes, pin: str) -> None:
        self.project.add_patch("lib", "p", patch)
        self.project.manifest("t", {"lib": {"git": URL, "commit": pin, "patches": ["p"]}})

    def status(self):
        return self.cli("status", "--target", "t", "--json", "--source", f"lib={self.upstream.path}")

    def apply(self) -> Path:
        into = self.tmp / "build"
        shutil.rmtree(into, ignore_errors=True)
        done = self.cli("apply", "--target", "t", "--into", str(into), "--source", f"lib={self.upstream.path}")
        assert done.code == 0, done.out + done.err
        return into / "lib"

    def same_as_git_apply(self, patch: bytes, pin: str) -> Path:
        """``patch`` at ``pin``: clean in `status`, and `apply` makes git apply's tree, its work tree checked out."""
        self.use(patch, pin)
        status = self.status()
        assert status.code == 0, status.out + status.err
        (checked,) = status.json["upstreams"][0]["patches"]
        assert checked["state"] == "clean", checked
        checkout = self.apply()
        assert git(checkout, "rev-parse", "HEAD^{tree}") == git_apply_tree(self.upstream, pin, patch, self.tmp)
        assert git(checkout, "status", "--porcelain") == ""  # the work tree is the tree: modes and links written
        return checkout


@pytest.fixture
def scene(tmp_path, upstream, project, cli) -> Bytes:
    return Bytes(tmp_path, upstream, project, cli)


def write(name: str, data: bytes) -> Callable[[Path], None]:
    def change(root: Path) -> None:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)

    return change


# -- text that is not UTF-8 ------------------------------------------------------------------------
def test_latin1_patch_checks_applies_and_shows_its_bytes_escaped(scene):
    pin = scene.upstream.commit({"src/latin.c": LATIN1}, "latin-1 source")
    patch = commit_patch(
        scene.upstream,
        pin,
        write("src/latin.c", LATIN1.replace(b"return 0;", b"return 1; /* \xe0 la carte */")),
        "Return 1 \xe0 la carte\n\nWhy: the caller reads 1 as success here.\n".encode("latin-1"),
    )
    assert b"\xe0 la carte" in patch and b"\xe9" in patch  # the patch itself is Latin-1, not UTF-8
    checkout = scene.same_as_git_apply(patch, pin)
    assert (checkout / "src/latin.c").read_bytes() == LATIN1.replace(b"return 0;", b"return 1; /* \xe0 la carte */")
    listed = scene.cli("status", "--target", "t", "--source", f"lib={scene.upstream.path}")
    assert listed.code == 0 and "Traceback" not in listed.err
    shown = scene.cli("lint")
    assert "Traceback" not in shown.out + shown.err


def test_plain_latin1_diff_applies_as_gnu_patch_applies_it(scene, tmp_path):
    """A Debian-style plain diff (DEP-3 fields, ``diff -u`` output) of a Latin-1 file: what dpkg-source's
    `patch -p1` makes, and git apply too."""
    if shutil.which("patch") is None:
        pytest.skip("GNU patch is not installed")
    pin = scene.upstream.commit({"src/latin.c": LATIN1}, "latin-1 source")
    new = LATIN1.replace(b"caf\xe9", b"th\xe9")
    patch = (
        b"Description: th\xe9, not caf\xe9\n the comment names the drink we serve.\n"
        b"Author: Ren\xe9 <rene@example.org>\n"
        b"Forwarded: not-needed\n\n--- a/src/latin.c\n+++ b/src/latin.c\n@@ -1,3 +1,3 @@\n-"
        + LATIN1.split(b"\n")[0]
        + b"\n+"
        + new.split(b"\n")[0]
        + b"\n int main(void)\n {\n"
    )
    checkout = scene.same_as_git_apply(patch, pin)
    pristine = tmp_path / "pristine"
    git(scene.upstream.path, "worktree", "add", "-q", "--detach", str(pristine), pin)
    done = subprocess.run(["patch", "-p1", "--quiet"], cwd=pristine, input=patch, capture_output=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (checkout / "src/latin.c").read_bytes() == (pristine / "src/latin.c").read_bytes() == new
    moved = scene.upstream.commit({"src/latin.c": LATIN1.replace(b"caf\xe9", b"caf\xe8")}, "another accent")
    scene.use(patch, moved)
    shown = scene.status()
    (checked,) = shown.json["upstreams"][0]["patches"]
    assert checked["state"] == "conflict" and "caf\\xe9 cr\\xe8me" in checked["detail"], checked
    table = scene.cli("status", "--target", "t", "--source", f"lib={scene.upstream.path}")
    assert table.code == 1 and "caf\\xe9 cr\\xe8me" in table.out  # shown escaped: never dropped or replaced


def test_nul_byte_patch_applies_as_git_applies_it(scene):
    """A text diff holding a NUL byte (``git diff --text`` of a file with one): git apply takes it."""
    pin = scene.upstream.commit({"data/table.txt": b"alpha\x00one\nbeta\ngamma\n"}, "a table with a NUL")
    with detached_at(scene.upstream.path, pin, force=True):
        (scene.upstream.path / "data/table.txt").write_bytes(b"alpha\x00two\nbeta\ngamma\n")
        diff = git_bytes(scene.upstream.path, "diff", "--text", "--full-index")
        git(scene.upstream.path, "checkout", "--", ".")
    patch = b"Subject: [PATCH] Two, not one\n\nWhy: the table's first entry counts two items.\n\n" + diff
    assert b"\x00" in patch
    checkout = scene.same_as_git_apply(patch, pin)
    assert (checkout / "data/table.txt").read_bytes() == b"alpha\x00two\nbeta\ngamma\n"


def test_latin1_patch_exports_byte_identically(scene, tmp_path):
    pin = scene.upstream.commit({"src/latin.c": LATIN1}, "latin-1 source")
    patch = commit_patch(
        scene.upstream,
        pin,
        write("src/latin.c", LATIN1.replace(b"return 0;", b"return 2;")),
        "Return 2 for cr\xe8me\n\nWhy: the caller reads 2 as success here.\n".encode("latin-1"),
    )
    scene.use(patch, pin)
    edit = tmp_path / "edit"
    source = f"lib={scene.upstream.path}"
    done = scene.cli("edit", "--target", "t", "--upstream", "lib", "--into", str(edit), "--source", source)
    assert done.code == 0, done.out + done.err
    done = scene.cli("export", "--target", "t", "--upstream", "lib", "--from", str(edit))
    assert done.code == 0, done.out + done.err
    assert (scene.project.root / "patches/lib/p.patch").read_bytes() == patch


# -- git's binary diffs, modes and links -------------------------------------------------------------
def noise(size: int, seed: int) -> bytes:
    """Bytes that do not compress (git writes them as a literal) but repeat (a small change is a delta)."""
    import random

    return random.Random(seed).randbytes(size)


BLOB = noise(6000, 1)


def chmod(name: str, mode: int) -> Callable[[Path], None]:
    return lambda root: (root / name).chmod(mode)


def executable(name: str, data: bytes) -> Callable[[Path], None]:
    def change(root: Path) -> None:
        write(name, data)(root)
        chmod(name, 0o755)(root)

    return change


def symlink(name: str, target: str) -> Callable[[Path], None]:
    def change(root: Path) -> None:
        if (root / name).is_symlink() or (root / name).exists():
            (root / name).unlink()
        os.symlink(target, root / name)

    return change


SHAPES: dict[str, tuple[dict[str, bytes], Callable[[Path], None], str]] = {
    "binary literal": ({}, write("assets/logo.bin", BLOB), "literal"),
    "binary delta": (
        {"assets/logo.bin": BLOB},
        write("assets/logo.bin", BLOB[:3000] + b"\x00patched\x00" + BLOB[3000:]),
        "delta",
    ),
    "chmod +x": ({"tools/run.sh": b"#!/bin/sh\necho run\n"}, chmod("tools/run.sh", 0o755), "new mode 100755"),
    "new executable file": (
        {},
        lambda root: (write("tools/go.sh", b"#!/bin/sh\n")(root), chmod("tools/go.sh", 0o755)(root)),
        "new file mode 100755",
    ),
    "symlink added": ({"docs/guide.txt": b"guide\n"}, symlink("GUIDE", "docs/guide.txt"), "new file mode 120000"),
    "symlink changed": ({"a.txt": b"a\n", "b.txt": b"b\n"}, symlink("current", "b.txt"), "120000"),
    "binary deleted": ({"assets/logo.bin": BLOB}, lambda root: (root / "assets/logo.bin").unlink(), "deleted file"),
    "file becomes a link": ({"conf.txt": b"x\n", "real.txt": b"y\n"}, symlink("conf.txt", "real.txt"), "120000"),
}


@pytest.mark.parametrize("shape", SHAPES)
def test_shape_applies_as_git_applies_it(scene, shape):
    files, change, marker = SHAPES[shape]
    if shape == "symlink changed":
        scene.upstream.commit(files, "two files")
        symlink("current", "a.txt")(scene.upstream.path)
        git(scene.upstream.path, "add", "-A")
        git(scene.upstream.path, "commit", "-q", "-m", "a link")
        pin = scene.upstream.head()
    else:
        pin = scene.upstream.commit(files, "the files the change starts from") if files else scene.upstream.head()
    patch = commit_patch(scene.upstream, pin, change, f"{shape}\n\nWhy: the build needs it so.\n".encode())
    assert marker.encode() in patch
    checkout = scene.same_as_git_apply(patch, pin)
    done = scene.cli("verify", "--target", "t", "--into", str(checkout.parent))
    assert done.code == 0, done.out + done.err


def test_binary_patch_on_other_bytes_is_refused_with_gits_reason(scene):
    pin = scene.upstream.commit({"assets/logo.bin": BLOB}, "a logo")
    patch = commit_patch(
        scene.upstream, pin, write("assets/logo.bin", BLOB[:100] + b"!" + BLOB[101:]), b"Touch up\n\nWhy: a pixel.\n"
    )
    moved = scene.upstream.commit({"assets/logo.bin": BLOB[::-1]}, "another logo")
    refused = plain_git(scene.upstream.path, "apply", "--check", "-", input=patch)
    assert refused.returncode == 1
    scene.use(patch, moved)
    status = scene.status()
    (checked,) = status.json["upstreams"][0]["patches"]
    assert checked["state"] == "conflict", checked
    reason = checked["detail"].split("git apply refuses it too: ")[1]
    assert reason in refused.stderr.decode(), (reason, refused.stderr)


def test_binary_change_already_upstream_is_upstream(scene):
    pin = scene.upstream.commit({"assets/logo.bin": BLOB}, "a logo")
    new = BLOB[:100] + b"!" + BLOB[101:]
    patch = commit_patch(scene.upstream, pin, write("assets/logo.bin", new), b"Touch up\n\nWhy: a pixel.\n")
    scene.use(patch, scene.upstream.commit({"assets/logo.bin": new}, "upstream took it"))
    (checked,) = scene.status().json["upstreams"][0]["patches"]
    assert checked["state"] == "upstream", checked


@pytest.mark.parametrize("shape", ["binary delta", "chmod +x", "symlink added"])
def test_reworded_shape_exports_gits_own_diff(scene, tmp_path, shape):
    """`export` of an edit checkout whose commit was reworded writes the diff git format-patch --binary writes
    of it: the same diff part as the patch it came from (a binary change kept as data, modes and links kept)."""
    files, change, _ = SHAPES[shape]
    pin = scene.upstream.commit(files, "the files the change starts from") if files else scene.upstream.head()
    patch = commit_patch(scene.upstream, pin, change, f"{shape}\n\nWhy: the build needs it so.\n".encode())
    scene.use(patch, pin)
    edit = tmp_path / "edit"
    done = scene.cli(
        "edit", "--target", "t", "--upstream", "lib", "--into", str(edit), "--source", f"lib={scene.upstream.path}"
    )
    assert done.code == 0, done.out + done.err
    git(edit, "commit", "-q", "--amend", "-m", f"{shape}, reworded\n\nWhy: the build needs it so, still.\n")
    done = scene.cli("export", "--target", "t", "--upstream", "lib", "--from", str(edit))
    assert done.code == 0, done.out + done.err
    exported = (scene.project.root / "patches/lib/p.patch").read_bytes()
    assert b"reworded" in exported
    diff_part = slice(patch.index(b"\ndiff --git "), patch.rindex(b"\n-- \n"))
    assert exported[exported.index(b"\ndiff --git ") :].startswith(patch[diff_part])


def test_add_of_a_binary_commit_keeps_its_data(scene):
    """`add --commit` of a commit that changes a binary file writes a patch that holds the data (git diff
    --binary), and that patch applies as git applies the commit's own format-patch."""
    pin = scene.upstream.commit(SHAPES["binary delta"][0], "a logo")
    with detached_at(scene.upstream.path, pin, force=True):
        SHAPES["binary delta"][1](scene.upstream.path)
        git(scene.upstream.path, "commit", "-qam", "Touch up the logo")
        commit = scene.upstream.head()
        mail = git_bytes(scene.upstream.path, "format-patch", "-1", "--stdout", "--full-index", "--binary", commit)
    scene.project.manifest("t", {"lib": {"git": URL, "commit": pin, "patches": []}})
    source = f"lib={scene.upstream.path}"
    done = scene.cli(
        "add",
        "p",
        "--target",
        "t",
        "--upstream",
        "lib",
        "--commit",
        commit,
        "--repo",
        str(scene.upstream.path),
        "--source",
        source,
    )
    assert done.code == 0, done.out + done.err
    added = (scene.project.root / "patches/lib/p.patch").read_bytes()
    assert b"GIT binary patch" in added
    checkout = scene.apply()
    assert git(checkout, "rev-parse", "HEAD^{tree}") == git_apply_tree(scene.upstream, pin, mail, scene.tmp)


# -- empty commits -------------------------------------------------------------------------------------
def empty_commit(repo: UpstreamRepo, base: str) -> str:
    with detached_at(repo.path, base, force=True):
        git(repo.path, "commit", "-q", "--allow-empty", "-m", "Mark the release\n\nWhy: the changelog tool needs it.")
        return repo.head()


def test_empty_commit_patch_is_skipped_with_a_note(scene):
    """git format-patch --always of an empty commit: status checks the series with it skipped and says so (git
    apply has nothing to apply in it), and apply applies the rest."""
    pin = scene.upstream.head()
    commit = empty_commit(scene.upstream, pin)
    mail = git_bytes(scene.upstream.path, "format-patch", "--always", "-1", "--stdout", "--zero-commit", commit)
    assert b"diff --git" not in mail
    done = plain_git(scene.upstream.path, "apply", "--check", "-", input=mail)
    assert done.returncode == 128 and b"No valid patches in input" in done.stderr
    fix = commit_patch(scene.upstream, pin, write("README", b"upstream, patched\n"), b"Patch the README\n\nWhy: x.\n")
    scene.project.add_patch("lib", "empty", mail)
    scene.project.add_patch("lib", "fix", fix)
    scene.project.manifest("t", {"lib": {"git": URL, "commit": pin, "patches": ["empty", "fix"]}})
    status = scene.status()
    assert status.code == 0, status.out + status.err
    empty, fixed = status.json["upstreams"][0]["patches"]
    assert empty["state"] == "clean" and "an empty commit: it changes no file, so it is skipped" in empty["detail"]
    assert fixed["state"] == "clean"
    checkout = scene.apply()
    assert git(checkout, "rev-parse", "HEAD^{tree}") == git_apply_tree(scene.upstream, pin, fix, scene.tmp)


def add_commit(scene: Bytes, revision: str):
    return scene.cli(
        "add",
        "p",
        "--target",
        "t",
        "--upstream",
        "lib",
        "--commit",
        revision,
        "--repo",
        str(scene.upstream.path),
        "--source",
        f"lib={scene.upstream.path}",
    )


def test_add_of_an_empty_commit_skips_it_with_a_note(scene):
    pin = scene.upstream.head()
    commit = empty_commit(scene.upstream, pin)
    assert git_bytes(scene.upstream.path, "format-patch", "-1", "--stdout", commit) == b""  # git leaves it out too
    scene.project.manifest("t", {"lib": {"git": URL, "commit": pin, "patches": []}})
    manifest = (scene.project.root / "manifests/t.toml").read_bytes()
    done = add_commit(scene, commit)
    assert done.code == 0, done.out + done.err
    assert f"skipped the empty commit {commit[:12]}: it changes no file; nothing was added" in done.out + done.err
    assert not (scene.project.root / "patches/lib/p.patch").exists()
    assert (scene.project.root / "manifests/t.toml").read_bytes() == manifest


def test_add_of_a_range_skips_its_empty_commit_with_a_note(scene):
    pin = scene.upstream.head()
    with detached_at(scene.upstream.path, pin, force=True):
        git(scene.upstream.path, "commit", "-q", "--allow-empty", "-m", "Mark the release")
        empty = scene.upstream.head()
        write("README", b"upstream, patched\n")(scene.upstream.path)
        git(scene.upstream.path, "commit", "-qam", "Patch the README\n\nWhy: the README names the wrong tool.")
        tip = scene.upstream.head()
    series = git_bytes(scene.upstream.path, "format-patch", "--stdout", f"{pin}..{tip}")
    assert b"Mark the release" not in series  # git format-patch leaves the empty commit out
    scene.project.manifest("t", {"lib": {"git": URL, "commit": pin, "patches": []}})
    done = add_commit(scene, f"{pin}..{tip}")
    assert done.code == 0, done.out + done.err
    assert f"skipped the empty commit {empty[:12]}: it changes no file" in done.out + done.err
    added = (scene.project.root / "patches/lib/p.patch").read_bytes()
    assert b"Mark the release" not in added and b"Patch the README" in added
    checkout = scene.apply()
    assert git(checkout, "rev-parse", "HEAD^{tree}") == git_apply_tree(scene.upstream, pin, series, scene.tmp)


def test_import_skips_an_empty_commit_with_a_note(tmp_path, cli, project):
    """An image repository's series.conf whose patch for one upstream is an empty commit (git format-patch
    --always): that upstream's patch is skipped with a note, the other imported; git am stops at it."""
    from support.monolith import MONOLITH, dirty_diff, three_file_upstream
    from support.monolith import URL as MONOLITH_URL

    lib = three_file_upstream(tmp_path, "Megatron-Bridge")
    tool = UpstreamRepo(tmp_path / "MindSpeed")
    pin = tool.commit({"tool.py": "tool = 1\n"}, "tool initial")
    commit = empty_commit(tool, pin)
    mail = git_bytes(tool.path, "format-patch", "--always", "-1", "--stdout", "--zero-commit", commit)
    folder = tmp_path / "team" / "docker"
    folder.mkdir(parents=True)
    (folder / "megatron-bridge.patch").write_bytes(dirty_diff(lib, lib.head(), MONOLITH))
    (folder / "mindspeed.patch").write_bytes(mail)
    (folder / "series.conf").write_text(
        "/ws/Megatron-Bridge|megatron-bridge.patch|docker/megatron-bridge.patch\n"
        "/ws/MindSpeed|mindspeed.patch|docker/mindspeed.patch\n"
    )
    (tmp_path / "team" / "Dockerfile").write_text(
        f"RUN git clone {MONOLITH_URL.format('Megatron-Bridge')} /ws/Megatron-Bridge && "
        f"git -C /ws/Megatron-Bridge checkout {lib.head()}\n"
        f"RUN git clone {MONOLITH_URL.format('MindSpeed')} /ws/MindSpeed && git -C /ws/MindSpeed checkout {pin}\n"
    )
    sources = ["--source", f"megatron-bridge={lib.path}", "--source", f"mindspeed={tool.path}"]
    done = cli(
        "import",
        str(folder / "series.conf"),
        "--target",
        "npu",
        "--dockerfile",
        str(tmp_path / "team/Dockerfile"),
        *sources,
    )
    assert done.code == 0, done.out + done.err
    assert "mindspeed.patch is an empty commit: it changes no file, so it is skipped" in done.out + done.err
    manifest = (project.root / "manifests/npu.toml").read_text()
    assert "[upstreams.megatron-bridge]" in manifest and "mindspeed" not in manifest


def test_a_link_into_an_installed_environment_is_one_clear_refusal(tiny, cli):
    """`apply --python` writes files through the distribution's RECORD: a link a patch makes is refused, nothing
    written (a checkout gets it, as git apply makes it: test_shape_applies_as_git_applies_it)."""
    from support.snapshot import snapshot

    patch = commit_patch(tiny.repo, tiny.pin, symlink("tinydist/alias.py", "core.py"), b"Alias\n\nWhy: old name.\n")
    tiny.project.add_patch("tinydist", "fix-1", patch)
    spec = {"git": URL, "commit": tiny.pin, "version": "1.0", "pypi": "tinydist", "patches": ["fix-1"]}
    tiny.project.manifest("t", {"tinydist": spec})
    before = snapshot(tiny.venv)
    done = cli("apply", *tiny.src())
    assert done.code == 1 and "Traceback" not in done.err, done.out + done.err
    assert "a patch makes tinydist/alias.py a symbolic link, which an installed environment does not hold" in done.err
    assert snapshot(tiny.venv) == before


def test_an_index_line_mode_other_than_the_files_keeps_the_files_mode_as_git_does(scene):
    """A patch made where the file was 100644, applied where upstream made it executable: git apply warns and
    keeps 100755 (the index line's mode is the old side's only). A guard of the mode rules, not a fix."""
    base = scene.upstream.commit({"tools/run.sh": b"#!/bin/sh\necho run\n"}, "a script")
    patch = commit_patch(scene.upstream, base, write("tools/run.sh", b"#!/bin/sh\necho ran\n"), b"Ran\n\nWhy: x.\n")
    assert b"100644\n" in patch
    scene.upstream.path.joinpath("tools/run.sh").chmod(0o755)
    git(scene.upstream.path, "commit", "-qam", "executable")
    checkout = scene.same_as_git_apply(patch, scene.upstream.head())
    assert git(checkout, "ls-files", "-s", "tools/run.sh").startswith("100755 ")
