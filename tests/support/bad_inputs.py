"""The corpus of malformed patches (``MALFORMED``), and the scene every bad input runs in
(tests/test_bad_inputs*.py): a project, its upstream, a folder outside the tree and an `apply --into`
folder that holds an earlier apply, hashed before and after each run. Also the files that are no file
to read (``BAD_FILE_KINDS``: a FIFO, a device, a folder, a socket, one past the size bound).

A pytest plugin (tests/conftest.py registers it): the fixtures ``earlier_apply`` and ``scene``."""

from __future__ import annotations

import contextlib
import errno
import os
import re
import shutil
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from patchmgr.cli import main
from support.gitrepos import BASE_TEXT, Project, UpstreamRepo
from support.scenes import lines_with
from support.snapshot import snapshot

URL = "https://example.invalid/lib.git"


PIN = "a" * 40


@pytest.fixture(scope="module")
def earlier_apply(tmp_path_factory) -> Path:
    """A folder that an earlier, successful `apply --into` wrote: failed runs must leave it as it is."""
    root = tmp_path_factory.mktemp("earlier")
    upstream = UpstreamRepo(root / "upstream")
    pin = upstream.commit({"src/mod.py": BASE_TEXT, "README": "upstream\n"}, "initial")
    project = Project(root / "project")
    project.add_patch("lib", "fix", upstream.make_patch(pin, {"src/mod.py": lines_with({5: "five"})}, "Five"))
    project.manifest("t", {"lib": {"git": URL, "commit": pin, "patches": ["fix"]}})
    with pytest.MonkeyPatch.context() as env:
        env.setenv("PATCHMGR_CACHE", str(root / "cache"))
        env.setenv("GIT_CONFIG_GLOBAL", os.devnull)
        code = main(
            [
                "apply",
                "--target",
                "t",
                "--into",
                str(root / "build"),
                "--source",
                f"lib={upstream.path}",
                "--root",
                str(project.root),
            ]
        )
    assert code == 0
    return root / "build"


@dataclass
class Scene:
    tmp: Path
    upstream: UpstreamRepo
    project: Project
    cli: Callable
    into: Path
    outside: Path

    @property
    def pin(self) -> str:
        return self.upstream.head()

    def patch(self, data: bytes, pin: str | None = None) -> None:
        self.project.add_patch("lib", "bad", data)
        self.project.manifest("t", {"lib": {"git": URL, "commit": pin or self.pin, "patches": ["bad"]}})

    def run(self, *args: str):
        """Run a command; fail the test if it changed any byte on disk."""
        roots = (self.project.root, self.upstream.path, self.into, self.outside)
        before = snapshot(*roots, exact=True)
        result = self.cli(*args)
        assert "Traceback" not in result.out + result.err
        after = snapshot(*roots, exact=True)
        changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
        assert not changed, f"{args} changed {changed}"
        return result

    def status(self, *extra: str):
        return self.run("status", "--target", "t", "--json", "--source", f"lib={self.upstream.path}", *extra)

    def apply(self, *extra: str):
        return self.run(
            "apply",
            "--target",
            "t",
            "--into",
            str(self.into),
            "--json",
            "--source",
            f"lib={self.upstream.path}",
            *extra,
        )


@pytest.fixture
def scene(tmp_path, upstream, project, cli, earlier_apply) -> Scene:
    into = tmp_path / "build"
    shutil.copytree(earlier_apply, into, symlinks=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "target.txt").write_text("outside the tree\n")
    return Scene(tmp_path, upstream, project, cli, into, outside)


def assert_one_error(result, code: int, *needles: str) -> None:
    """Exit ``code``, nothing on stdout, and on stderr exactly one error line and one hint line."""
    lines = result.err.strip().splitlines()
    assert result.code == code, result.err
    assert result.out == ""
    assert len(lines) == 2 and lines[0].startswith("error: ") and lines[1].startswith("hint: "), result.err
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])


def good_patch(scene: Scene) -> bytes:
    return scene.upstream.make_patch(scene.pin, {"src/mod.py": lines_with({20: "fixed 20"})}, "Fix")


def manifest(body: str = "", commit: str = PIN, git_url: str = URL, name: str = "t") -> str:
    return f'[target]\nname = "{name}"\n[upstreams.lib]\ngit = "{git_url}"\ncommit = "{commit}"\n{body}'


HUNK = b"@@ -17,7 +17,7 @@"


def hand_diff(name: str, body: bytes, header: bytes = b"") -> bytes:
    """A hand-written git diff of ``name``, as the patches written by many hands are."""
    n = name.encode()
    return (
        b"Subject: hand-made\n\ndiff --git a/"
        + n
        + b" b/"
        + n
        + b"\n"
        + header
        + b"--- a/"
        + n
        + b"\n+++ b/"
        + n
        + b"\n"
        + body
    )


# -- patches that must not parse, each with what the refusal says -------------------------------------
MALFORMED: list[tuple[str, Callable[[bytes], bytes], str]] = [
    ("truncated hunk", lambda p: p.replace(b" line 22\n line 23\n", b""), "does not match its line counts"),
    ("truncated file", lambda p: p[: p.index(b"+fixed 20\n") + 10], "the patch ends"),
    ("hunk counts too large", lambda p: p.replace(HUNK, b"@@ -17,9 +17,9 @@"), "does not match its line counts"),
    ("hunk counts too small", lambda p: p.replace(HUNK, b"@@ -17,5 +17,5 @@"), "' line 22' is outside any hunk"),
    ("removed line after the counted hunk", lambda p: p + b"-line 24\n", "'-line 24' is outside any hunk"),
    ("hunk header with letters", lambda p: p.replace(HUNK, b"@@ -17,x +17,7 @@"), "bad hunk header"),
    ("hunk header with negative count", lambda p: p.replace(HUNK, b"@@ -17,-7 +17,7 @@"), "bad hunk header"),
    ("hunk lines without a header", lambda p: re.sub(rb"(?m)^@@ .*\n", b"", p), "' line 17' is outside any hunk"),
    ("line without its marker", lambda p: p.replace(b" line 18\n", b"line 18\n"), "is not a hunk line"),
    ("file section without hunks", lambda p: p[: p.index(HUNK)], "src/mod.py changes nothing"),
    ("empty patch", lambda p: b"", "holds no diff"),
    ("whitespace-only patch", lambda p: b"\n  \n\t\n", "holds no diff"),
    ("message without a diff", lambda p: p[: p.index(b"diff --git")], "holds no diff"),
    (
        "no-newline marker outside a hunk",
        lambda p: p.replace(b"+++ b/src/mod.py\n", b"+++ b/src/mod.py\n\\ No newline at end of file\n"),
        "is outside any hunk",
    ),
    ("two commits in one file", lambda p: p + p, "holds a second commit"),
    (
        "plain diff's binary note alone",
        lambda p: b"--- a/logo.png\n+++ b/logo.png\nBinary files a/logo.png and b/logo.png differ\n",
        "changes nothing (no hunks)",
    ),
    (
        "corrupt git binary patch",
        lambda p: (
            b"diff --git a/logo.png b/logo.png\nindex 1234567..abcdef0 100644\n"
            b"GIT binary patch\nliteral 3\nKcmZ?wdHF00\n\nliteral 0\nHcmV?d00001\n\n"
        ),
        "corrupt binary patch",
    ),
    (
        "mode that is neither a file nor a link",
        lambda p: p.replace(b"index ", b"old mode 100644\nnew mode 040000\nindex "),
        "invalid mode 040000",
    ),
    (
        "submodule",
        lambda p: (
            b"diff --git a/sub b/sub\nindex 1111111..2222222 160000\n--- a/sub\n+++ b/sub\n"
            b"@@ -1 +1 @@\n-Subproject commit 1111111\n+Subproject commit 2222222\n"
        ),
        "sub is a submodule",
    ),
    (
        "copy",
        lambda p: p.replace(
            b"diff --git a/src/mod.py b/src/mod.py\n",
            b"diff --git a/src/mod.py b/src/copy.py\nsimilarity index 90%\ncopy from src/mod.py\ncopy to src/copy.py\n",
        ).replace(b"+++ b/src/mod.py", b"+++ b/src/copy.py"),
        "copies are not supported",
    ),
    (
        "rename from a path other than the diff's",
        lambda p: p.replace(
            b"diff --git a/src/mod.py b/src/mod.py\n",
            b"diff --git a/src/mod.py b/src/new.py\nsimilarity index 90%\n"
            b"rename from src/other.py\nrename to src/new.py\n",
        ).replace(b"+++ b/src/mod.py", b"+++ b/src/new.py"),
        "'rename from src/other.py' disagrees",
    ),
    (
        "rename from outside the tree",
        lambda p: p.replace(
            b"diff --git a/src/mod.py b/src/mod.py\n",
            b"diff --git a/src/mod.py b/src/new.py\nsimilarity index 90%\n"
            b"rename from ../../etc/passwd\nrename to src/new.py\n",
        ).replace(b"+++ b/src/mod.py", b"+++ b/src/new.py"),
        "'../../etc/passwd' leaves the upstream tree",
    ),
    ("parent folder in the path", lambda p: p.replace(b"src/mod.py", b"../mod.py"), "'../mod.py' leaves"),
    ("parent folder inside the path", lambda p: p.replace(b"src/mod.py", b"src/../../mod.py"), "leaves"),
    (
        "absolute path, plain diff",
        lambda p: b"--- /etc/hosts\n+++ /etc/hosts\n@@ -1 +1 @@\n-a\n+b\n",
        "'/etc/hosts' leaves the upstream tree",
    ),
    (
        "absolute path after the prefix",
        lambda p: p.replace(b"a/src/mod.py", b"a//tmp/mod.py").replace(b"b/src/mod.py", b"b//tmp/mod.py"),
        "'/tmp/mod.py' leaves",
    ),
    ("home-relative path", lambda p: p.replace(b"src/mod.py", b"~/mod.py"), "'~/mod.py' leaves"),
    ("path into .git", lambda p: hand_diff(".git/config", b"@@ -1 +1 @@\n-a\n+b\n"), "inside a .git folder"),
    (
        "path into .GIT, any case",
        lambda p: hand_diff("sub/.GIT/hooks/pre-commit", b"@@ -0,0 +1 @@\n+x\n"),
        "inside a .git folder",
    ),
    (
        "created file without 'new file mode'",
        lambda p: hand_diff("new.py", b"@@ -0,0 +1 @@\n+x\n").replace(b"--- a/new.py", b"--- /dev/null"),
        "'--- /dev/null' and '+++ b/new.py' disagree",
    ),
    (
        "'---' naming another file than 'diff --git'",
        lambda p: p.replace(b"--- a/src/mod.py", b"--- a/src/other.py"),
        "'--- a/src/other.py' and '+++ b/src/mod.py' disagree",
    ),
    (
        "/dev/null on both sides",
        lambda p: (
            b"Subject: hand-made\n\ndiff --git a/x.py b/x.py\nnew file mode 100644\n"
            b"deleted file mode 100644\n--- /dev/null\n+++ /dev/null\n@@ -0,0 +1 @@\n+x\n"
        ),
        "/dev/null on both sides",
    ),
    (
        "quoted path with a newline",
        lambda p: p.replace(b"a/src/mod.py", b'"a/src/mo\\nd.py"').replace(b"b/src/mod.py", b'"b/src/mo\\nd.py"'),
        "holds a control character",
    ),
]


# -- files no reader may read: not a regular file, or larger than the bound -----------------------------
BAD_FILE_KINDS = ("fifo", "device", "folder", "socket", "too large")


def put_bad_file(path: Path, kind: str, limit: int) -> None:
    """Put at ``path`` (replacing what is there) a file of ``kind``; ``too large``: a regular file of ``limit``
    plus one bytes (sparse: no disk is filled); ``device``: a link to /dev/zero, which a reader follows."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif os.path.lexists(path):
        path.unlink()
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "device":
        path.symlink_to("/dev/zero")
    elif kind == "folder":
        path.mkdir()
    elif kind == "socket":
        with contextlib.chdir(path.parent), socket.socket(socket.AF_UNIX) as bound:  # a short name to bind
            bound.bind(path.name)
    elif kind == "too large":
        with open(path, "wb") as handle:
            handle.truncate(limit + 1)
    else:
        raise AssertionError(kind)


@contextlib.contextmanager
def fifo_unblocked(path: Path, after: float = 10.0) -> Iterator[list[float]]:
    """While the block runs, a FIFO at ``path`` that a reader still waits on after ``after`` seconds is opened
    for writing and closed, so that a run blocked on it goes on (reading nothing) instead of hanging the
    suite; the list it yields gets the time of each such rescue (a run that needed one failed already)."""
    rescued: list[float] = []
    done = threading.Event()
    start = time.monotonic()

    def watch() -> None:
        while not done.wait(0.2):
            if time.monotonic() - start < after or not path.exists() or not path.is_fifo():
                continue
            try:
                fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)  # ENXIO while no one opened it for reading
            except OSError as exc:
                if exc.errno != errno.ENXIO:
                    return
                continue
            os.close(fd)
            rescued.append(time.monotonic() - start)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        yield rescued
    finally:
        done.set()
        watcher.join()
