"""The unpatched view smoke --unpatched tests (``io.files.linked_tree`` + ``targets.trees.put_back``): a copy
made of hard links where the file system allows, whose patched files are replaced with the pin's bytes, so that
the tree it was made from (the user's build) never changes; copies where links cannot be made. Real files, the
real CLI."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest
from support.smoke_scene import CPU_ONLY, DETECTS, FIXED, Scene, verdicts

from patchmgr.io import files
from patchmgr.io.files import linked_tree
from patchmgr.targets.trees import put_back


def make_tree(root: Path) -> Path:
    (root / "pkg" / "sub").mkdir(parents=True)
    (root / "pkg" / "mod.py").write_text("patched\n")
    (root / "pkg" / "sub" / "other.py").write_text("other\n")
    (root / "pkg" / "__pycache__").mkdir()
    (root / "pkg" / "__pycache__" / "mod.cpython-311.pyc").write_bytes(b"stale")
    (root / "pkg" / "alias.py").symlink_to("mod.py")
    return root


def test_a_linked_copy_shares_the_files_and_put_back_changes_the_copy_alone(tmp_path):
    source = make_tree(tmp_path / "checkout")
    copy = tmp_path / "view"
    linked_tree(source, copy, "__pycache__")
    assert (copy / "pkg" / "mod.py").stat().st_ino == (source / "pkg" / "mod.py").stat().st_ino  # a link, no copy
    assert not (copy / "pkg" / "__pycache__").exists()
    assert (copy / "pkg" / "alias.py").is_symlink() and os.readlink(copy / "pkg" / "alias.py") == "mod.py"
    put_back(copy / "pkg" / "mod.py", b"pinned\n")
    put_back(copy / "pkg" / "sub" / "other.py", None)  # a file the patches added: not there at the pin
    put_back(copy / "pkg" / "gone.py", b"deleted by a patch\n")
    assert (copy / "pkg" / "mod.py").read_bytes() == b"pinned\n"
    assert not (copy / "pkg" / "sub" / "other.py").exists()
    assert (copy / "pkg" / "gone.py").read_bytes() == b"deleted by a patch\n"
    assert (source / "pkg" / "mod.py").read_text() == "patched\n"  # written beside the link, never through it
    assert (source / "pkg" / "sub" / "other.py").read_text() == "other\n"
    assert not (source / "pkg" / "gone.py").exists()


def test_put_back_on_a_link_in_the_view_replaces_the_link_not_what_it_points_to(tmp_path):
    source = make_tree(tmp_path / "checkout")
    copy = tmp_path / "view"
    linked_tree(source, copy)
    put_back(copy / "pkg" / "alias.py", b"pinned alias\n")
    assert not (copy / "pkg" / "alias.py").is_symlink()
    assert (copy / "pkg" / "mod.py").read_text() == (source / "pkg" / "mod.py").read_text() == "patched\n"


def test_where_links_cannot_be_made_the_files_are_copied_and_links_tried_once(tmp_path, monkeypatch):
    source = make_tree(tmp_path / "checkout")
    tries = []

    def cross_device(*args, **kwargs):
        tries.append(args)
        raise OSError(errno.EXDEV, "Invalid cross-device link")

    monkeypatch.setattr(files.os, "link", cross_device)
    copy = tmp_path / "view"
    linked_tree(source, copy, "__pycache__")
    assert len(tries) == 1
    assert (copy / "pkg" / "mod.py").stat().st_ino != (source / "pkg" / "mod.py").stat().st_ino
    assert (copy / "pkg" / "sub" / "other.py").read_text() == "other\n"


@pytest.fixture
def scene(tmp_path, project, cli, monkeypatch) -> Scene:
    import patchmgr.smoke.runner

    monkeypatch.setattr(patchmgr.smoke.runner, "available_devices", lambda python: dict(CPU_ONLY))
    return Scene(tmp_path, project, cli).one_patch_applied(DETECTS)


def test_smoke_unpatched_leaves_the_build_patched(scene):
    built = scene.into / "lib" / "lib" / "calc.py"
    code, doc = scene.smoke_json("--unpatched")
    assert (code, verdicts(doc)["fix-add"][0]) == (0, "proven")  # the red check ran on the pin's add
    assert built.read_text() == FIXED
    code, doc = scene.smoke_json()
    assert (code, verdicts(doc)["fix-add"][0]) == (0, "proven")
    assert scene.cli("verify", "--target", "t", "--into", str(scene.into)).code == 0
