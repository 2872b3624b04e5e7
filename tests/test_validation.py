"""Each manifest and command-line error: one clear message naming the file and key, exit 2, no traceback."""

from __future__ import annotations

import pytest
from support.gitrepos import BASE_TEXT
from support.scenes import lines_with

PIN = "a" * 40


def write_manifest(project, text: str) -> None:
    (project.root / "manifests" / "t.toml").write_text(text)


def valid(project, body: str = "", patches: str = "[]") -> str:
    return f"""[target]
name = "t"
[upstreams.lib]
git = "https://example.invalid/lib.git"
commit = "{PIN}"
patches = {patches}
{body}"""


@pytest.mark.fast
@pytest.mark.parametrize(
    "text, expected",
    [
        ("[target\nname=", "invalid TOML"),
        ('[target]\nname = "t"\ncolour = "red"\n', "at key target.colour: unknown key"),
        ('[target]\nname = "other"\n', "at key target.name: 'other' differs from the file name 't'"),
        ('[upstreams.lib]\ncommit = "' + PIN + '"\n', "missing [target] table"),
        (valid(None, 'branches = "main"'), "at key upstreams.lib.branches: unknown key"),
        (valid(None, 'track = "nightly"'), "at key upstreams.lib.track: 'nightly' is not one of releases, prereleases"),
        (valid(None, "track = 3"), "at key upstreams.lib.track: must be a non-empty string"),
        (valid(None, 'branch = "ma in"'), "at key upstreams.lib.branch: 'ma in' is not a branch name: it holds ' '"),
        (valid(None, 'branch = "-x"'), "at key upstreams.lib.branch: '-x' is not a branch name"),
        (valid(None, 'tag-pattern = ""'), "at key upstreams.lib.tag-pattern: must be a non-empty string"),
        (valid(None, "tag-pattern = '^v\\d+'"), "tag-pattern: '^v\\d+' can match no tag: it holds ^, which no"),
        (valid(None, "tag-pattern = 'v2.*$'"), "tag-pattern: 'v2.*$' can match no tag: it ends in $, which ends"),
        (valid(None, 'tag-pattern = "v 2*"'), "tag-pattern: 'v 2*' can match no tag: it holds a space"),
        (valid(None).replace(PIN, "abc123"), "at key upstreams.lib.commit: 'abc123' is not a full commit id"),
        (valid(None).replace(PIN, "g" * 40), "is not a full commit id"),
        (valid(None).replace(f'commit = "{PIN}"\n', ""), "at key upstreams.lib.commit: missing"),
        (valid(None, 'version = "not a version"'), "upstreams.lib.version: 'not a version' is not a PEP 440"),
        (valid(None, patches='["nope"]'), "upstreams.lib.patches[0]: patch file"),
        (valid(None, patches='["../escape"]'), "is not a patch id"),
        (
            valid(None).replace("https://example.invalid/lib.git", "--upload-pack=touch /tmp/x"),
            "looks like a command-line option",
        ),
        (
            valid(None).replace("https://example.invalid/lib.git", "ext::sh -c touch% /tmp/pwned"),
            "the ext:: transport runs commands",
        ),
        (valid(None).replace("https://example.invalid/lib.git", "file:///etc"), "is not an https://"),
        (valid(None, 'package-root = "../x"'), "package-root: '../x' leaves the repository"),
        ('[target]\nname = "t"\n[upstreams.Bad_Name]\ncommit = "' + PIN + '"\n', "an upstream name is lower-case"),
        (valid(None).replace('git = "https://example.invalid/lib.git"\n', ""), "no source"),
    ],
)
def test_manifest_errors(cli, project, text, expected):
    write_manifest(project, text)
    result = cli("status", "--target", "t")
    assert result.code == 2
    assert expected in result.err
    assert "manifests/t.toml" in result.err
    assert "Traceback" not in result.err + result.out
    assert "hint:" in result.err


@pytest.mark.fast
def test_duplicate_patch_id(cli, project):
    project.add_patch("lib", "fix", b"")
    write_manifest(project, valid(project, patches='["fix", "fix"]'))
    result = cli("status", "--target", "t")
    assert result.code == 2
    assert "upstreams.lib.patches[1]: duplicate patch id 'fix'" in result.err


@pytest.mark.parametrize(
    "args, expected",
    [
        (["status", "--target", "nope"], "no target 'nope'"),
        (["status", "--target", "t", "--source", "lib"], "is not NAME=LOCATION"),
        (["status", "--target", "t", "--source", "other=/tmp"], "no upstream 'other'"),
        (["status", "--target", "t", "--against", "lib"], "is not NAME=REF"),
        (["status", "--target", "t", "--against", "lib=--upload-pack=x"], "is not a valid git ref"),
        (["apply", "--target", "t"], "apply needs --into"),
        (["verify", "--target", "t"], "verify needs --into"),
        (["apply", "--into", "x"], "--target is required"),
        (["status", "--bogus"], "error: no such option: --bogus\nhint: `patchmgr status --help` lists its options"),
    ],
)
def test_usage_errors(cli, project, upstream, args, expected):
    write_manifest(project, valid(project))
    result = cli(*args)
    assert result.code == 2, result.err
    assert expected in result.err
    assert "Traceback" not in result.err


@pytest.mark.fast
def test_no_manifests_folder(tmp_path, capsys):
    from patchmgr.cli import main

    assert main(["status", "--root", str(tmp_path)]) == 2
    assert "has no manifests/ folder" in capsys.readouterr().err


def test_malformed_patch_is_named(cli, project, upstream):
    pin = upstream.head()
    data = upstream.make_patch(pin, {"src/mod.py": lines_with({20: "x"})}, "Fix")
    project.add_patch("lib", "bad", data.replace(b"@@ -17,7 +17,7 @@", b"@@ -17,9 +17,9 @@"))
    project.manifest("t", {"lib": {"git": "https://example.invalid/lib.git", "commit": pin, "patches": ["bad"]}})
    result = cli("status", "--target", "t", "--source", f"lib={upstream.path}")
    assert result.code == 2
    assert "patches/lib/bad.patch" in result.err and "malformed diff" in result.err


def test_unreachable_source_is_unavailable_not_skipped(cli, project, tmp_path):
    project.manifest("t", {"lib": {"git": "https://example.invalid/lib.git", "commit": PIN, "patches": []}})
    result = cli("status", "--target", "t", "--json", "--source", f"lib={tmp_path / 'nowhere'}")
    assert result.code == 1
    (up,) = result.json["upstreams"]
    assert up["available"] is False and "does not exist" in up["error"]


def test_pin_the_source_does_not_have(cli, project, upstream):
    project.manifest("t", {"lib": {"git": "https://example.invalid/lib.git", "commit": PIN, "patches": []}})
    result = cli("status", "--target", "t", "--json", "--source", f"lib={upstream.path}")
    assert result.code == 1
    assert f"does not have commit {PIN}" in result.json["upstreams"][0]["error"]


def test_unlisted_patch_is_a_warning_in_status(cli, project, upstream):
    pin = upstream.head()
    project.add_patch("lib", "stray", upstream.make_patch(pin, {"src/mod.py": BASE_TEXT + "x\n"}, "Stray"))
    project.manifest("t", {"lib": {"git": "https://example.invalid/lib.git", "commit": pin, "patches": []}})
    result = cli("status", "--target", "t", "--json", "--source", f"lib={upstream.path}")
    assert result.code == 0
    assert result.json["warnings"] == ["patches/lib/stray.patch is listed by no manifest"]
