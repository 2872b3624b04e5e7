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

import os
import subprocess
from pathlib import Path

import pytest
from support.bad_inputs import HUNK, MALFORMED, PIN, Scene, assert_one_error, good_patch, hand_diff, manifest
from support.gitrepos import BASE_TEXT, git
from support.scenes import lines_with


# -- patches that must not parse (support/bad_inputs.MALFORMED): exit 2, one error naming file and line --
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
        with pytest.raises(subprocess.CalledProcessError):
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


def link_retargeted(scene: Scene, header: bytes = b"") -> bytes:
    """A diff of the link ``evil`` itself (its target is its text), as git diff writes one."""
    target = str(scene.outside / "target.txt").encode()
    return hand_diff(
        "evil",
        b"@@ -1 +1 @@\n-"
        + target
        + b"\n\\ No newline at end of file\n+"
        + target
        + b".new\n\\ No newline at end of file\n",
        header,
    )


def test_patching_a_link_itself_retargets_the_link_as_git_does(scene):
    """git apply changes a link's target (its text) and never writes through it: the link stays a link, nothing
    outside the tree is touched (tests/test_patch_bytes.py compares the applied tree with git apply's)."""
    pin = with_links(scene)
    scene.patch(link_retargeted(scene), pin)
    verdict(scene, "clean", code=0)
    assert (scene.outside / "target.txt").read_text() == "outside the tree\n"


def test_patching_a_link_as_a_regular_file_is_refused_as_git_refuses_it(scene):
    pin = with_links(scene)
    scene.patch(link_retargeted(scene, b"index 1234567..abcdef0 100644\n"), pin)
    refused = subprocess.run(
        ["git", "apply", "--check", "-"],
        cwd=scene.upstream.path,
        input=scene.project.root.joinpath("patches/lib/bad.patch").read_bytes(),
        capture_output=True,
    )
    assert refused.returncode == 1 and b"evil: wrong type" in refused.stderr
    verdict(scene, "conflict", "git apply refuses it too (wrong type)")


# -- manifests: exit 2 and one error naming the manifest and the key ------------


BAD_MANIFESTS = [
    ("unterminated string", '[target]\nname = "t\n', "invalid TOML"),
    ("duplicate key", manifest() + f'commit = "{PIN}"\n', "invalid TOML"),
    ("missing target name", "[target]\n", "at key target.name: missing"),
    ("unknown top-level key", manifest() + "[colour]\nred = 1\n", "at key colour: unknown key"),
    ("unknown upstream key", manifest('branches = "main"\n'), "at key upstreams.lib.branches: unknown key"),
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
    assert_one_error(scene.status(), 2, "manifests/t.toml:1: not UTF-8 text (byte 0xff)")


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
