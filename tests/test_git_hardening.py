"""Git hardening: no hooks or configured programs run, no dangerous transport, no option injection,
and patches and manifests are only ever read as data.

Each attack is first shown to work against plain git (the positive control), so
that a passing test means patchmgr stopped it, not that the attack was broken.
"""

from __future__ import annotations

import os

import pytest
from support.gitrepos import git, plain_git, spy
from support.scenes import lines_with

from patchmgr.io.git import GitRepo
from patchmgr.model.errors import GitError

URL = "https://example.invalid/lib.git"
HOOKS = (
    "pre-commit",
    "prepare-commit-msg",
    "commit-msg",
    "post-commit",
    "post-checkout",
    "post-merge",
    "reference-transaction",
    "post-index-change",
    "pre-auto-gc",
    "post-rewrite",
    "pre-push",
    "pre-receive",
    "update",
    "post-receive",
    "post-update",
    "push-to-checkout",
    "fsmonitor-watchman",
)


def fix_project(project, upstream) -> list[str]:
    pin = upstream.head()
    project.add_patch("lib", "fix", upstream.make_patch(pin, {"src/mod.py": lines_with({20: "fixed"})}, "Fix"))
    project.manifest("t", {"lib": {"git": URL, "commit": pin, "patches": ["fix"]}})
    return ["--target", "t", "--source", f"lib={upstream.path}"]


def test_no_hook_runs_in_the_cache_the_checkouts_or_the_source(cli, project, upstream, tmp_path, monkeypatch):
    marker = tmp_path / "hooks-ran"
    args = fix_project(project, upstream)  # (make_patch commits in the upstream: before its hooks exist)
    template = tmp_path / "template"
    for name in HOOKS:
        spy(template / "hooks" / name, marker)
        spy(upstream.path / ".git/hooks" / name, marker)
    # control: a repository made from this template runs its hooks under plain git
    control = tmp_path / "control"
    plain_git(tmp_path, "init", "-q", str(control), env={"GIT_TEMPLATE_DIR": str(template)})
    plain_git(control, "commit", "-q", "--allow-empty", "-m", "x")
    assert marker.exists()
    marker.unlink()
    # every repository patchmgr creates (cache, checkouts) now starts with these hooks
    monkeypatch.setenv("GIT_TEMPLATE_DIR", str(template))
    into = tmp_path / "build"
    assert cli("status", *args).code == 0
    assert (tmp_path / "cache").is_dir() and any((tmp_path / "cache").rglob("hooks/post-commit"))
    assert cli("apply", *args, "--into", str(into)).code == 0
    assert (into / "lib/.git/hooks/post-commit").is_file()
    assert cli("verify", "--target", "t", "--into", str(into)).code == 0
    assert not marker.exists(), marker.read_text()


def test_configured_programs_do_not_run(cli, project, upstream, tmp_path):
    marker = tmp_path / "program-ran"
    args = fix_project(project, upstream)
    into = tmp_path / "build"
    assert cli("apply", *args, "--into", str(into)).code == 0
    checkout = into / "lib"
    hooks = tmp_path / "hooks"
    for name in HOOKS:
        spy(hooks / name, marker)
    git(checkout, "config", "core.fsmonitor", str(spy(tmp_path / "fsmonitor", marker)))
    git(checkout, "config", "core.hooksPath", str(hooks))
    # control: plain git runs the configured fsmonitor
    plain_git(checkout, "status", "--porcelain")
    assert marker.exists()
    marker.unlink()
    assert cli("verify", "--target", "t", "--into", str(into)).code == 0  # runs `git status` there
    (project.root / "patches/lib/fix.patch").write_bytes(
        upstream.make_patch(upstream.head(), {"src/mod.py": lines_with({21: "fixed"})}, "Fix 21")
    )
    assert cli("apply", *args, "--into", str(into)).code == 0  # rebuilds and commits
    assert not marker.exists(), marker.read_text()


def test_ext_transport_is_refused_by_git_itself(tmp_path):
    marker = tmp_path / "ext-ran"
    url = f"ext::sh -c touch% {marker}"
    bare = tmp_path / "bare"
    # control: plain git with ext allowed runs the command
    plain_git(tmp_path, "init", "-q", "--bare", str(bare))
    plain_git(bare, "-c", "protocol.ext.allow=always", "fetch", url, "HEAD")
    assert marker.exists()
    marker.unlink()
    # even past every URL check, the git boundary refuses the transport
    repo = GitRepo(bare)
    with pytest.raises(GitError):
        repo.run("fetch", url, "HEAD")
    repo.close()
    assert not marker.exists()


@pytest.mark.parametrize(
    "field, url, expected",
    [
        ("git", "ext::sh -c touch% /tmp/pwned", "the ext:: transport runs commands"),
        ("git", "file::/srv/git/lib", "the file:: transport helper is refused in manifests"),
        ("git", "file:///srv/git/lib", "is not an https://, ssh:// or git:// URL"),
        ("mirrors", ["/srv/git/lib"], "is not an https://, ssh:// or git:// URL"),
    ],
)
def test_manifest_transports_are_refused(cli, project, upstream, field, url, expected):
    spec = {"commit": upstream.head(), "patches": []}
    spec[field] = url
    project.manifest("t", {"lib": spec})
    result = cli("status", "--target", "t")
    assert result.code == 2 and expected in result.err


@pytest.mark.parametrize("location", ["{path}", "file://{path}"])
def test_a_local_source_is_accepted_from_the_command_line(cli, project, upstream, location):
    fix_project(project, upstream)
    result = cli("status", "--target", "t", "--json", "--source", "lib=" + location.format(path=upstream.path))
    assert result.code == 0, result.err
    assert result.json["upstreams"][0]["patches"][0]["state"] == "clean"


def test_refs_and_paths_that_look_like_options_are_harmless(upstream, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "x"
    repo = GitRepo(upstream.path)
    pin = upstream.head()
    try:
        assert repo.resolve(f"--output={out}") is None
        assert repo.path_entries(pin, [f"--output={out}"]) == (None,)
        assert repo.read_path(pin, f"--output={out}") is None
        assert repo.read_path(pin, "src/mod.py\nHEAD:README") is None  # would desynchronise cat-file --batch
        assert repo.read_path(pin, "README") == b"upstream\n"
    finally:
        repo.close()
    assert not out.exists() and os.listdir(tmp_path) == ["upstream"]


def test_files_named_like_options_are_only_files(cli, project, upstream, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    pin = upstream.head()
    names = ["--output=pwned", "-rf", "--exec=touch pwned"]
    project.add_patch("lib", "odd", upstream.make_patch(pin, {name: "data\n" for name in names}, "Odd names"))
    project.manifest("t", {"lib": {"git": URL, "commit": pin, "patches": ["odd"]}})
    args = ["--target", "t", "--source", f"lib={upstream.path}"]
    into = tmp_path / "build"
    assert cli("apply", *args, "--into", str(into)).code == 0
    for name in names:
        assert (into / "lib" / name).read_text() == "data\n"
    assert not (tmp_path / "pwned").exists() and not (into / "lib/pwned").exists()
    assert cli("verify", "--target", "t", "--into", str(into)).code == 0


def test_patches_and_manifests_are_never_executed(cli, project, upstream, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    marker = tmp_path / "executed"
    payload = f"$(touch {marker}) `touch {marker}`; touch {marker}"
    pin = upstream.head()
    data = upstream.make_patch(
        pin,
        {"src/mod.py": lines_with({20: payload}), f"odd $(touch {marker}).py": payload},
        f"Subject {payload}",
        body=f"Why: {payload} " * 3,
        fields=f"Origin: {payload}\nUpstream-Status: Pending",
    )
    data = data.replace(b"From: Upstream Dev", f"From: {payload}".encode())
    patch = project.add_patch("lib", "evil", b"#!/bin/sh\ntouch " + str(marker).encode() + b"\n" + data)
    patch.chmod(0o755)
    manifest = project.manifest("t", {"lib": {"git": URL, "commit": pin, "patches": ["evil"]}}, extra=f"# {payload}")
    manifest.write_text(manifest.read_text().replace('description = "test target"', f'description = "{payload}"'))
    manifest.chmod(0o755)
    args = ["--target", "t", "--source", f"lib={upstream.path}"]
    into = tmp_path / "build"
    for command in (
        ["status", *args],
        ["apply", *args, "--into", str(into)],
        ["verify", "--target", "t", "--into", str(into)],
        ["lint"],
    ):
        result = cli(*command)
        assert "Traceback" not in result.out + result.err
        # lint too: the mail's Subject: field is DEP-3's synonym of Description, so the patch is described
        assert result.code == 0, (command, result.out, result.err)
    assert not marker.exists()
    assert payload in git(into / "lib", "log", "-1", "--format=%B")
    assert (into / "lib" / f"odd $(touch {marker}).py").read_text() == payload
