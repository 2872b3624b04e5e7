"""A corpus of bad inputs, each run through the real command line.

Every case asserts three things: the exit code (1: the check ran and found
trouble; 2: bad input), what is said (one `error:` line naming what is wrong
and where, plus one `hint:` line, and never a traceback; or, for a patch that
parses but cannot apply, a sane verdict), and that no byte changed on disk:
the project, the upstream repository, a folder outside the tree, and an
`apply --into` folder that already holds an earlier apply are hashed, file by
file, before and after.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from gitrepos import BASE_TEXT, Project, UpstreamRepo, git
from test_status_states import lines_with

from patchmgr.cli.app import main

URL = "https://example.invalid/lib.git"
PIN = "a" * 40


# -- the scene every case runs in ---------------------------------------------
def snapshot(*roots: Path) -> dict[str, str]:
    """Every file, link and folder under ``roots``: a content hash, a link target, or a folder mark."""
    seen: dict[str, str] = {}
    for root in roots:
        if not root.exists():
            seen[str(root)] = "absent"
            continue
        for folder, dirs, files in os.walk(root):
            seen[folder] = "dir"
            for name in dirs + files:
                path = os.path.join(folder, name)
                if os.path.islink(path):
                    seen[path] = "link:" + os.readlink(path)
                elif name in files:
                    seen[path] = hashlib.sha256(Path(path).read_bytes()).hexdigest()
    return seen


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
        before = snapshot(*roots)
        result = self.cli(*args)
        assert "Traceback" not in result.out + result.err
        after = snapshot(*roots)
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


# -- patches that must not parse: exit 2, one error naming the file and line ----
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
    ("latin-1 byte", lambda p: p.replace(b"+fixed 20", b"+fix\xe9 20"), "not UTF-8 text (byte 0xe9)"),
    ("NUL byte", lambda p: p.replace(b"+fixed 20", b"+fixed\x0020"), "holds a NUL byte"),
    (
        "binary diff",
        lambda p: hand_diff("logo.png", b"", b"index 1234567..abcdef0 100644\n").replace(
            b"--- a/logo.png\n+++ b/logo.png\n", b"Binary files a/logo.png and b/logo.png differ\n"
        ),
        "binary change",
    ),
    (
        "git binary patch",
        lambda p: (
            b"diff --git a/logo.png b/logo.png\nindex 1234567..abcdef0 100644\n"
            b"GIT binary patch\nliteral 3\nKcmZ?wdHF00\n\nliteral 0\nHcmV?d00001\n\n"
        ),
        "binary change to logo.png",
    ),
    (
        "mode change",
        lambda p: p.replace(b"index ", b"old mode 100644\nnew mode 100755\nindex "),
        "mode changes are not supported",
    ),
    (
        "new executable file",
        lambda p: (
            b"diff --git a/run.sh b/run.sh\nnew file mode 100755\n"
            b"--- /dev/null\n+++ b/run.sh\n@@ -0,0 +1 @@\n+echo hi\n"
        ),
        "creates run.sh with mode 100755",
    ),
    (
        "new symbolic link",
        lambda p: (
            b"diff --git a/link b/link\nnew file mode 120000\n--- /dev/null\n+++ b/link\n"
            b"@@ -0,0 +1 @@\n+/etc/passwd\n\\ No newline at end of file\n"
        ),
        "link is a symbolic link (mode 120000)",
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


@pytest.mark.parametrize("mutate, expected", [case[1:] for case in MALFORMED], ids=[c[0] for c in MALFORMED])
def test_malformed_patch(scene, mutate, expected):
    scene.patch(mutate(good_patch(scene)))
    for result in (scene.status(), scene.apply()):
        assert_one_error(result, 2, "patches/lib/bad.patch", expected)
    lint = scene.run("lint")
    assert lint.code == 1 and "bad.patch" in lint.out and expected in lint.out


def test_error_names_the_line(scene):
    data = good_patch(scene)
    scene.patch(data.replace(b" line 18\n", b"line 18\n"))
    hunk_line = data[: data.index(HUNK)].count(b"\n") + 1
    assert_one_error(scene.status(), 2, f"patches/lib/bad.patch:{hunk_line}: malformed diff")


# -- patches that parse but do not apply: a sane verdict, apply refused -------
def verdict(scene: Scene, state: str, detail: str = "", code: int = 1) -> None:
    status = scene.status()
    assert status.code == code, status.err
    (patch,) = status.json["upstreams"][0]["patches"]
    assert patch["state"] == state, patch
    assert detail in patch["detail"], patch["detail"]
    if code:
        applied = scene.apply()
        assert applied.code == 1 and applied.json["action"] == "refused"


def test_fake_index_still_classifies_and_lint_flags_it(scene):
    fake = b"index 1234567..abcdef0 100644"
    data = good_patch(scene)
    scene.patch(data[: data.index(b"index ")] + fake + data[data.index(b" 100644\n") + 7 :])
    verdict(scene, "clean", code=0)
    lint = scene.run("lint")
    assert lint.code == 1 and "index lines lack full 40-hex blob ids" in lint.out


def test_fake_index_under_drift_is_a_conflict_not_a_three_way_merge(scene):
    data = good_patch(scene)
    data = data[: data.index(b"index ")] + b"index 1234567..abcdef0 100644" + data[data.index(b" 100644\n") + 7 :]
    scene.upstream.commit({"src/mod.py": lines_with({19: "upstream 19"})}, "drift")
    scene.patch(data)
    verdict(scene, "conflict", "src/mod.py hunk #1")


def test_abbreviated_index_classifies_and_lint_flags_it(scene):
    data = good_patch(scene)
    full = data[data.index(b"index ") + 6 : data.index(b" 100644\n")]
    old, new = full.split(b"..")
    scene.patch(data.replace(full, old[:7] + b".." + new[:7]))
    verdict(scene, "clean", code=0)
    # under drift, the abbreviated preimage id may still resolve: a 3-way merge is reported, never applied
    scene.upstream.commit({"src/mod.py": lines_with({19: "upstream 19"})}, "drift")
    scene.patch(data.replace(full, old[:7] + b".." + new[:7]), pin=scene.pin)
    status = scene.status()
    assert status.code == 1
    assert status.json["upstreams"][0]["patches"][0]["state"] in ("three-way", "conflict")
    assert scene.apply().json["action"] == "refused"
    lint = scene.run("lint")
    assert lint.code == 1 and "index lines lack full 40-hex blob ids" in lint.out


def test_patch_without_final_newline_classifies_and_lint_flags_it(scene):
    scene.patch(good_patch(scene).rstrip(b"\n"))
    verdict(scene, "clean", code=0)
    lint = scene.run("lint")
    assert lint.code == 1 and "no newline at the end of the file" in lint.out


def test_missing_trailing_context_anchors_at_the_end_like_git(scene):
    # without trailing context a hunk must match at the file's end (git's rule), and it is not
    # there: only with a context line dropped (fuzz) does it fit, so it is not applied
    scene.patch(good_patch(scene).replace(HUNK, b"@@ -17,4 +17,4 @@").replace(b" line 21\n line 22\n line 23\n", b""))
    verdict(scene, "fuzz", "fuzz 1")
    (scene.upstream.path / "p.patch").write_bytes((scene.project.root / "patches/lib/bad.patch").read_bytes())
    try:
        with pytest.raises(Exception):
            git(scene.upstream.path, "apply", "--check", "p.patch")
    finally:
        (scene.upstream.path / "p.patch").unlink()


def test_crlf_patch_against_lf_file(scene):
    scene.patch(good_patch(scene).replace(b"\n", b"\r\n"))
    verdict(scene, "conflict", "src/mod.py hunk #1")


def test_lf_patch_against_crlf_file(scene):
    data = good_patch(scene)
    scene.upstream.commit({"src/mod.py": BASE_TEXT.replace("\n", "\r\n")}, "CRLF upstream")
    scene.patch(data)
    verdict(scene, "conflict", "src/mod.py hunk #1")


def test_crlf_patch_against_crlf_file_is_clean(scene):
    crlf = BASE_TEXT.replace("\n", "\r\n")
    pin = scene.upstream.commit({"src/mod.py": crlf}, "CRLF upstream")
    scene.patch(scene.upstream.make_patch(pin, {"src/mod.py": crlf.replace("line 20\r\n", "fixed 20\r\n")}, "Fix"))
    verdict(scene, "clean", code=0)


def test_rename_onto_an_existing_file(scene):
    scene.patch(
        scene.upstream.make_patch(scene.pin, {"src/mod.py": None, "src/moved.py": BASE_TEXT}, "Move").replace(
            b"src/moved.py", b"README"
        )
    )
    verdict(scene, "conflict", "README: the rename's target already exists")


def test_rename_of_a_file_gone_upstream(scene):
    data = scene.upstream.make_patch(scene.pin, {"src/mod.py": None, "src/moved.py": BASE_TEXT}, "Move")
    assert b"rename from src/mod.py" in data
    scene.upstream.commit({"src/mod.py": None}, "upstream removes mod.py")
    scene.patch(data)
    verdict(scene, "missing", "src/mod.py")


def test_deletion_of_a_file_changed_upstream(scene):
    data = scene.upstream.make_patch(scene.pin, {"src/mod.py": None}, "Delete")
    scene.upstream.commit({"src/mod.py": BASE_TEXT + "line 41\n"}, "upstream grows mod.py")
    scene.patch(data)
    verdict(scene, "conflict", "src/mod.py")


def new_file(name: str, body: bytes = b"@@ -0,0 +1 @@\n+mine\n") -> bytes:
    return hand_diff(name, body, b"new file mode 100644\n").replace(b"--- a/" + name.encode(), b"--- /dev/null")


def test_creating_a_file_that_exists(scene):
    scene.patch(new_file("README"))
    verdict(scene, "conflict", "README: the patch creates it, but it already exists")


def test_creating_a_file_under_a_file(scene):
    scene.patch(new_file("README/notes.txt"))
    verdict(scene, "conflict", "README is a file upstream, not a folder")


# -- symbolic links: a patch never reaches through one ----------------------------
def with_links(scene: Scene) -> str:
    """An upstream with a link to a folder inside, one to a folder outside, and one to a file outside."""
    os.symlink("src", scene.upstream.path / "inside")
    os.symlink(os.path.relpath(scene.outside, scene.upstream.path), scene.upstream.path / "vendor")
    os.symlink(str(scene.outside / "target.txt"), scene.upstream.path / "evil")
    git(scene.upstream.path, "add", "-A")
    git(scene.upstream.path, "commit", "-q", "-m", "links")
    return scene.upstream.head()


def test_modifying_a_file_through_a_linked_folder(scene):
    pin = with_links(scene)
    scene.patch(good_patch(scene).replace(b"src/mod.py", b"inside/mod.py"), pin)
    verdict(scene, "conflict", "inside is a symbolic link upstream")


def test_creating_a_file_through_a_link_that_leaves_the_tree(scene):
    pin = with_links(scene)
    scene.patch(new_file("vendor/pwned.py"), pin)
    verdict(scene, "conflict", "vendor is a symbolic link upstream")
    assert sorted(p.name for p in scene.outside.iterdir()) == ["target.txt"]


def test_patching_a_link_itself(scene):
    pin = with_links(scene)
    target = str(scene.outside / "target.txt").encode()
    scene.patch(
        hand_diff(
            "evil",
            b"@@ -1 +1 @@\n-"
            + target
            + b"\n\\ No newline at end of file\n+"
            + target
            + b".new\n\\ No newline at end of file\n",
        ),
        pin,
    )
    verdict(scene, "conflict", "it is a symbolic link upstream")


# -- manifests: exit 2 and one error naming the manifest and the key ------------
def manifest(body: str = "", commit: str = PIN, git_url: str = URL, name: str = "t") -> str:
    return f'[target]\nname = "{name}"\n[upstreams.lib]\ngit = "{git_url}"\ncommit = "{commit}"\n{body}'


BAD_MANIFESTS = [
    ("unterminated string", '[target]\nname = "t\n', "invalid TOML"),
    ("duplicate key", manifest() + f'commit = "{PIN}"\n', "invalid TOML"),
    ("missing target name", "[target]\n", "at key target.name: missing"),
    ("unknown top-level key", manifest() + "[colour]\nred = 1\n", "at key colour: unknown key"),
    ("unknown upstream key", manifest('branch = "main"\n'), "at key upstreams.lib.branch: unknown key"),
    (
        "upstream that is not a table",
        '[target]\nname = "t"\n[upstreams]\nlib = "x"\n',
        "upstreams.lib: must be a table",
    ),
    ("short pin", manifest(commit="abc1234"), "'abc1234' is not a full commit id"),
    ("non-hex pin", manifest(commit="z" * 40), "is not a full commit id"),
    ("upper-case pin", manifest(commit="A" * 40), "40 lower-case hex digits"),
    ("pin that is a number", manifest().replace(f'"{PIN}"', "123"), "commit: must be a non-empty string"),
    ("patches that are not a list", manifest('patches = "fix"\n'), "patches: must be a list of strings"),
    ("URL that is an option", manifest(git_url="--upload-pack=touch /tmp/pwned"), "looks like a command-line option"),
    ("ext:: mirror", manifest('mirrors = ["ext::sh -c touch% /tmp/pwned"]\n'), "mirrors[0]: the ext:: transport"),
    ("file:: transport", manifest(git_url="file::/srv/git/lib"), "the file:: transport helper is refused"),
    (
        "ssh host that is an option",
        manifest(git_url="ssh://-oProxyCommand=touch%20pwned/lib"),
        "names a host that looks like a command-line option",
    ),
    ("name that differs from the file", manifest(name="other"), "'other' differs from the file name 't'"),
]


@pytest.mark.parametrize("text, expected", [case[1:] for case in BAD_MANIFESTS], ids=[c[0] for c in BAD_MANIFESTS])
def test_bad_manifest(scene, text, expected):
    (scene.project.root / "manifests/t.toml").write_text(text)
    for result in (scene.status(), scene.apply()):
        assert_one_error(result, 2, "manifests/t.toml", expected)


def test_manifest_that_is_not_utf8(scene):
    (scene.project.root / "manifests/t.toml").write_bytes(manifest().encode().replace(b"t", b"\xff", 1))
    assert_one_error(scene.status(), 2, "manifests/t.toml: not UTF-8")


# -- command-line options: exit 2 and one error naming the option ---------------
BAD_OPTIONS = [
    ("ext:: source", ["--source", "lib=ext::sh -c touch% pwned"], "the ext:: transport runs commands"),
    ("source that is an option", ["--source", "lib=--upload-pack=touch pwned"], "looks like a command-line option"),
    ("ref that is an option", ["--against", "lib=--output=/tmp/pwned"], "'--output=/tmp/pwned' is not a valid git ref"),
    ("source for an unknown upstream", ["--source", "other=/tmp"], "no upstream 'other' in target t"),
    ("ref for an unknown upstream", ["--against", "other=main"], "no upstream 'other' in target t"),
]


@pytest.mark.parametrize("args, expected", [case[1:] for case in BAD_OPTIONS], ids=[c[0] for c in BAD_OPTIONS])
def test_bad_option(scene, args, expected):
    scene.patch(good_patch(scene))
    result = scene.run("status", "--target", "t", *args)
    assert_one_error(result, 2, expected)
    assert not Path("pwned").exists() and not Path("/tmp/pwned").exists()


# -- sources: exit 1, the upstream reported unavailable, apply refused ------------
def test_unreachable_source(scene):
    scene.patch(good_patch(scene))
    for args in (["--source", f"lib={scene.tmp / 'nowhere'}"], ["--source", "lib=https://127.0.0.1:9/lib.git"]):
        status = scene.run("status", "--target", "t", "--json", *args)
        assert status.code == 1
        (upstream,) = status.json["upstreams"]
        assert upstream["available"] is False and upstream["error"].startswith("cannot get lib at ")
        applied = scene.run("apply", "--target", "t", "--into", str(scene.into), "--json", *args)
        assert applied.code == 1 and applied.json["action"] == "refused"


def test_pin_the_source_does_not_have(scene):
    scene.patch(good_patch(scene), pin="0123456789" * 4)
    status = scene.status()
    assert status.code == 1
    assert "does not have commit 0123456789" in status.json["upstreams"][0]["error"]
    assert scene.apply().json["action"] == "refused"


# -- supported changes, for contrast: renames and deletions apply ---------------
def test_rename_and_deletion_apply(scene, tmp_path):
    data = scene.upstream.make_patch(
        scene.pin, {"src/mod.py": None, "src/moved.py": lines_with({20: "moved"}), "README": None}, "Move and delete"
    )
    scene.patch(data)
    into = tmp_path / "fresh"
    result = scene.cli("apply", "--target", "t", "--into", str(into), "--source", f"lib={scene.upstream.path}")
    assert result.code == 0, result.out + result.err
    assert not (into / "lib/src/mod.py").exists() and not (into / "lib/README").exists()
    assert (into / "lib/src/moved.py").read_text() == lines_with({20: "moved"})
    assert scene.cli("verify", "--target", "t", "--into", str(into)).code == 0
