"""Abbreviated commit ids on the command line (init --pin, status --against, bump --to): a unique one names its commit
on any branch or tag of the source, whatever the cache held; an ambiguous one is an error listing the candidates;
the manifest gets the full id. git itself is the oracle (rev-parse in the upstream, --disambiguate)."""

from __future__ import annotations

import hashlib
import json
import tomllib

from support.gitrepos import UpstreamRepo, git
from support.scenes import lines_with
from support.snapshot import snapshot


def side_branch(upstream: UpstreamRepo) -> tuple[str, str]:
    """main (the default branch, HEAD) moves on; ``dev``, forked at the first commit, has a commit main lacks.
    Returns (the fork point, the dev-only commit)."""
    base = upstream.head()
    git(upstream.path, "checkout", "-q", "-b", "dev")
    dev = upstream.commit({"docs.txt": "on dev alone\n"}, "docs on dev")
    git(upstream.path, "checkout", "-q", "main")
    upstream.commit({"README": "main moves on\n"}, "main moves on")
    assert git(upstream.path, "branch", "--contains", dev) == "dev"  # the default branch does not have it
    return base, dev


def pinned_at(project, upstream: UpstreamRepo, pin: str) -> None:
    patch = upstream.make_patch(pin, {"src/mod.py": lines_with({20: "fixed 20"})}, "Fix line 20")
    project.add_patch("lib", "fix", patch)
    project.manifest("t", {"lib": {"git": "https://example.invalid/lib.git", "commit": pin, "patches": ["fix"]}})


def against(cli, upstream: UpstreamRepo, ref: str):
    return cli("status", "--target", "t", "--against", f"lib={ref}", "--source", f"lib={upstream.path}", "--json")


def test_a_unique_prefix_of_a_commit_on_another_branch_resolves_whatever_the_cache_holds(
    tmp_path, cli, project, upstream, monkeypatch
):
    base, dev = side_branch(upstream)
    pinned_at(project, upstream, base)
    short = dev[:8]
    assert git(upstream.path, "rev-parse", "--verify", f"{short}^{{commit}}") == dev  # git's own answer
    fresh = against(cli, upstream, short)  # an empty cache: nothing of dev was ever fetched
    assert fresh.code == 0, fresh.out + fresh.err
    assert fresh.json["upstreams"][0]["commit"] == dev
    monkeypatch.setenv("PATCHMGR_CACHE", str(tmp_path / "other-cache"))
    assert against(cli, upstream, "dev").code == 0  # this cache holds dev's commit already
    warm = against(cli, upstream, short)
    assert warm.code == 0 and warm.json["upstreams"][0]["commit"] == dev


def test_a_commit_the_cache_holds_but_no_branch_or_tag_of_the_source_has_is_no_such_commit(cli, project, upstream):
    base, _dev = side_branch(upstream)
    pinned_at(project, upstream, base)
    git(upstream.path, "checkout", "-q", "-b", "gone", base)
    gone = upstream.commit({"docs.txt": "soon gone\n"}, "on a branch deleted later")
    git(upstream.path, "checkout", "-q", "main")
    assert against(cli, upstream, "gone").json["upstreams"][0]["commit"] == gone  # the cache holds it now
    git(upstream.path, "branch", "-q", "-D", "gone")
    assert git(upstream.path, "branch", "--all", "--contains", gone) == ""  # no branch of the source has it
    result = against(cli, upstream, gone[:10])
    assert result.code == 2, result.out + result.err
    assert f"has no ref '{gone[:10]}'" in result.err and "hint:" in result.err


def _commit_bytes(tree: str, parent: str, n: int) -> bytes:
    stamp = "A U Thor <author@example.com> 1700000000 +0000"
    return f"tree {tree}\nparent {parent}\nauthor {stamp}\ncommitter {stamp}\n\ncandidate {n}\n".encode()


def _sha(body: bytes) -> str:
    return hashlib.sha1(b"commit %d\0" % len(body) + body).hexdigest()


def two_commits_sharing_a_prefix(upstream: UpstreamRepo, base: str) -> tuple[str, str, str]:
    """Two real commits on ``base`` whose ids begin with the same 4 hex digits (found by hashing candidates as git
    would, then written by git), one on branch ``one``, one under tag ``two``. Returns (prefix, first, second)."""
    tree = git(upstream.path, "rev-parse", f"{base}^{{tree}}")
    seen: dict[str, int] = {}
    n = 0
    while True:
        prefix = _sha(_commit_bytes(tree, base, n))[:4]
        if prefix in seen:
            break
        seen[prefix] = n
        n += 1
    made = [
        git(upstream.path, "hash-object", "-t", "commit", "-w", "--stdin", input=_commit_bytes(tree, base, m))
        for m in (seen[prefix], n)
    ]
    git(upstream.path, "branch", "one", made[0])
    git(upstream.path, "tag", "two", made[1])
    return prefix, made[0], made[1]


def test_an_ambiguous_prefix_is_an_error_listing_the_candidates(cli, project, upstream):
    base, _dev = side_branch(upstream)
    pinned_at(project, upstream, base)
    prefix, first, second = two_commits_sharing_a_prefix(upstream, base)
    oracle = [
        sha
        for sha in git(upstream.path, "rev-parse", f"--disambiguate={prefix}").split()
        if git(upstream.path, "cat-file", "-t", sha) == "commit"
    ]
    assert {first, second} <= set(oracle)
    before = snapshot(project.root)
    result = against(cli, upstream, prefix)
    assert result.code == 2, result.out + result.err
    error = next(line for line in result.err.splitlines() if line.startswith("error:"))
    assert f"commit id '{prefix}' is ambiguous: {len(oracle)} commits of" in error
    assert all(sha in error for sha in oracle)
    assert "hint: give more digits of the commit id" in result.err
    assert snapshot(project.root) == before
    longer = next(first[:k] for k in range(5, 40) if not second.startswith(first[:k]))
    assert against(cli, upstream, longer).json["upstreams"][0]["commit"] == first


def test_init_pins_the_full_id_of_an_abbreviated_one_on_another_branch(tmp_path, capsys, upstream):
    from patchmgr.cli import main

    _base, dev = side_branch(upstream)
    root = tmp_path / "proj"
    root.mkdir()
    code = main(
        ["init", "--target", "t", "--git", "https://example.com/org/lib.git", "--pin", dev[:7]]
        + ["--source", f"lib={upstream.path}", "--root", str(root)]
    )
    out = capsys.readouterr()
    assert code == 0, out.out + out.err
    manifest = tomllib.loads((root / "manifests" / "t.toml").read_text())
    assert manifest["upstreams"]["lib"]["commit"] == dev


def test_bump_to_an_abbreviated_id_writes_the_full_one(cli, project, upstream):
    base, dev = side_branch(upstream)
    pinned_at(project, upstream, base)
    result = cli("bump", "--target", "t", "--upstream", "lib", "--to", dev[:9], "--source", f"lib={upstream.path}")
    assert result.code == 0, result.out + result.err
    manifest = tomllib.loads((project.root / "manifests" / "t.toml").read_text())
    assert manifest["upstreams"]["lib"]["commit"] == dev
    assert json.loads(against(cli, upstream, dev).out)["upstreams"][0]["commit"] == dev


def test_import_pins_the_full_id_of_an_abbreviated_pin_on_another_branch(tmp_path, cli, project):
    from support.monolith import MONOLITH, dirty_diff, import_args, text_with, three_file_upstream

    lib = three_file_upstream(tmp_path)
    git(lib.path, "checkout", "-q", "-b", "dev")
    dev = lib.commit({"src/a.py": text_with({30: "dev-only change"})}, "a: dev change")
    git(lib.path, "checkout", "-q", "main")
    lib.commit({"README": "main moves on\n"}, "main moves on")
    wanted = {**MONOLITH, "src/a.py": text_with({5: "a fix", 30: "dev-only change"})}
    (tmp_path / "lib.patch").write_bytes(dirty_diff(lib, dev, wanted))
    result = cli(*import_args(lib, tmp_path / "lib.patch"), "--pin", f"lib={dev[:8]}", "--json")
    assert result.code == 0, result.out + result.err
    (up,) = result.json["upstreams"]
    assert up["pin"] == dev
    assert f"the abbreviated pin {dev[:8]} is {dev}" in up["notes"], up["notes"]
    manifest = tomllib.loads((project.root / "manifests" / "t.toml").read_text())
    assert manifest["upstreams"]["lib"]["commit"] == dev
