"""Releases as upstreams tag them: small real git upstreams tagged with the real names and the real topology of
Megatron-LM (core_v0.12.0 on branch core_r0.12.0, each release on a branch of its own off main, old v2.6 and
23.06 tags in main's history), openssh (V_9_9_P2 on V_9_9, V_10_0_P1 on V_10_0) and MindSpeed
(v2.1.0_core_r0.12.1). ``status --newest-release`` and ``matrix`` must pick the same tag, and it must be the one
git names: the tags matching the pattern that descend from where the pin's line leaves main (``git tag
--contains``) and that the pin does not already contain (``git tag --merged``), the newest by git's own version
sort (``--sort=version:refname`` with ``versionsort.suffix``)."""

from __future__ import annotations

import pytest
from support.commands import matrix
from support.gitrepos import UpstreamRepo, git
from support.tag_oracle import git_newest


def release_line(upstream: UpstreamRepo, fork: str, branch: str, *tags: str) -> dict[str, str]:
    """Branch ``branch`` forked from main at ``fork``, one commit per tag on it, each tagged; main checked out
    again. Returns tag -> commit."""
    git(upstream.path, "checkout", "-q", "-b", branch, fork)
    made = {}
    for tag in tags:
        made[tag] = upstream.commit({f"release/{branch}.txt": f"{tag}\n"}, f"release {tag}")
        git(upstream.path, "tag", tag)
    git(upstream.path, "checkout", "-q", "main")
    return made


def on_main(upstream: UpstreamRepo, step: int) -> str:
    return upstream.commit({"main.txt": f"main, step {step}\n"}, f"main, step {step}")


def megatron_shaped(upstream: UpstreamRepo) -> dict[str, str]:
    """Megatron-LM's shape: v2.6 and 23.06 (2021, 2023) in main's history; then each release on a branch of its
    own off main (core_r0.12.0 with core_v0.12.0rc3, core_v0.12.0, core_v0.12.1; core_r0.13.0; core_r0.15.0,
    whose core_v0.15.3 is also tagged v0.15.3; core_r0.19.0). Returns tag (and main step) -> commit."""
    made = {"first": upstream.head()}
    git(upstream.path, "tag", "v2.6")
    git(upstream.path, "tag", "23.06")
    made["main-1"] = on_main(upstream, 1)
    made |= release_line(upstream, made["main-1"], "core_r0.12.0", "core_v0.12.0rc3", "core_v0.12.0", "core_v0.12.1")
    made["main-2"] = on_main(upstream, 2)
    made |= release_line(upstream, made["main-2"], "core_r0.13.0", "core_v0.13.0rc4", "core_v0.13.0")
    made["main-3"] = on_main(upstream, 3)
    made |= release_line(upstream, made["main-3"], "core_r0.15.0", "core_v0.15.0rc4", "core_v0.15.3")
    git(upstream.path, "tag", "v0.15.3", made["core_v0.15.3"])
    made["main-4"] = on_main(upstream, 4)
    made |= release_line(upstream, made["main-4"], "core_r0.19.0", "core_v0.19.0")
    on_main(upstream, 5)
    return made


def openssh_shaped(upstream: UpstreamRepo) -> dict[str, str]:
    """openssh-portable's shape: V_9_9 forked from main, V_9_9_P1 and V_9_9_P2 on it; main moves on; V_10_0 forked
    later, V_10_0_P1 and V_10_0_P2 on it."""
    made = {"main-1": on_main(upstream, 1)}
    made |= release_line(upstream, made["main-1"], "V_9_9", "V_9_9_P1", "V_9_9_P2")
    made["main-2"] = on_main(upstream, 2)
    made["main-3"] = on_main(upstream, 3)
    made |= release_line(upstream, made["main-3"], "V_10_0", "V_10_0_P1", "V_10_0_P2")
    on_main(upstream, 4)
    return made


def mindspeed_shaped(upstream: UpstreamRepo) -> dict[str, str]:
    """MindSpeed's shape: a branch per release and Megatron core line (2.0.0_core_r0.8.0, 2.1.0_core_r0.8.0 off
    it, 2.1.0_core_r0.12.1, 2.2.0_core_r0.12.1, 26.0.0_core_r0.12.1), the tags named v<version>_core_r<core>."""
    made = {"main-1": on_main(upstream, 1)}
    made |= release_line(upstream, made["main-1"], "2.0.0_core_r0.8.0", "v2.0.0_core_r0.8.0")
    made |= release_line(upstream, made["v2.0.0_core_r0.8.0"], "2.1.0_core_r0.8.0", "v2.1.0_core_r0.8.0")
    made["main-2"] = on_main(upstream, 2)
    made |= release_line(upstream, made["main-2"], "2.1.0_core_r0.12.1", "v2.1.0_core_r0.12.1")
    made["main-3"] = on_main(upstream, 3)
    made |= release_line(upstream, made["main-3"], "2.2.0_core_r0.12.1", "v2.2.0_core_r0.12.1")
    made["main-4"] = on_main(upstream, 4)
    made |= release_line(upstream, made["main-4"], "26.0.0_core_r0.12.1", "v26.0.0_core_r0.12.1")
    return made


def pinned(project, upstream: UpstreamRepo, pin: str, **spec) -> None:
    """Target ``t`` pinned at ``pin`` with one patch (of the README, which no release changes); ``spec``: more
    manifest keys (``tag_pattern`` for tag-pattern)."""
    project.add_patch("lib", "other", upstream.make_patch(pin, {"README": "upstream, patched\n"}, "Patch the readme"))
    keys = {key.replace("_", "-"): value for key, value in spec.items()}
    lib = {"git": "https://example.invalid/lib.git", "commit": pin, "patches": ["other"], **keys}
    project.manifest("t", {"lib": lib})


def newest_release(cli, upstream: UpstreamRepo):
    return cli("status", "--target", "t", "--newest-release", "--source", f"lib={upstream.path}", "--json")


def both_choose(cli, upstream: UpstreamRepo, *refs: str) -> tuple[str, str, dict, dict]:
    """The ref status --newest-release checks and matrix's deciding column, and their documents."""
    status = newest_release(cli, upstream)
    assert status.code == 0, status.out + status.err
    grid = matrix(cli, upstream, *refs, "--json")
    assert grid.code == 0, grid.out + grid.err
    lib, table = status.json["upstreams"][0], grid.json["upstreams"][0]
    return lib["ref"], table["verdict_column"], lib, table


SHAPES = {"megatron": megatron_shaped, "openssh": openssh_shaped, "mindspeed": mindspeed_shaped}


@pytest.mark.parametrize(
    ("shape", "pin_tag", "pattern", "newest"),
    [
        ("megatron", "core_v0.12.0", "core_v*", "core_v0.19.0"),  # a release branch's tag: the newer lines count
        ("megatron", "core_v0.13.0rc4", "core_v*", "core_v0.19.0"),
        ("openssh", "V_9_9_P2", "V_*", "V_10_0_P2"),  # V_10_0_P2 > V_10_0_P1 > V_9_9_P2, not as text
        ("mindspeed", "v2.1.0_core_r0.12.1", "v*", "v26.0.0_core_r0.12.1"),
    ],
)
def test_a_tag_pattern_finds_the_real_newest_release_and_status_and_matrix_agree(
    cli, project, upstream, shape, pin_tag, pattern, newest
):
    made = SHAPES[shape](upstream)
    pin = made[pin_tag]
    assert git_newest(upstream.path, pin, pattern) == newest  # git's own answer
    pinned(project, upstream, pin, tag_pattern=pattern)
    checked, decided, lib, table = both_choose(cli, upstream)
    assert (checked, decided) == (newest, newest)
    assert lib["commit"] == made[newest]
    assert lib["chosen_by"] == f"newest release (track = releases, tag-pattern {pattern!r})"
    columns = [c["name"] for c in table["columns"] if c["kind"] == "tag"]
    assert newest in columns and not any("rc" in name for name in columns)


def test_an_ancestor_with_a_higher_version_is_never_the_newest_release(cli, project, upstream):
    """Megatron-LM's v2.6 and 23.06 are in the history of a 2025 main commit pinned as version 0.12.0: their
    versions are higher, their commits older. The newest release is v0.15.3, which descends from the pin."""
    made = megatron_shaped(upstream)
    pin = made["main-2"]
    pinned(project, upstream, pin, version="0.12.0")
    assert git(upstream.path, "merge-base", "--is-ancestor", "23.06", pin) == ""  # an ancestor: git says so
    assert git_newest(upstream.path, pin, "*") == "v0.15.3"
    checked, decided, lib, table = both_choose(cli, upstream)
    assert (checked, decided) == ("v0.15.3", "v0.15.3")
    assert "23.06" not in [c["name"] for c in table["columns"]]
    said = "left out, though of a higher version than the pin: 23.06, v2.6, which the pin already contains"
    assert any(note.startswith(said) for note in lib["notes"]), lib["notes"]
    assert any(note.startswith(said) for note in table["notes"]), table["notes"]


def test_a_tag_of_an_older_release_line_is_never_newer(cli, project, upstream):
    """openssh pinned at a main commit after V_9_9 forked: V_9_9_P2, tagged on that older line, does not descend
    from the pin; V_10_0_P2 does. matrix --refs 'V_*' orders V_10_0_P1 after V_9_9_P2, by version."""
    made = openssh_shaped(upstream)
    pin = made["main-2"]
    pinned(project, upstream, pin)
    assert "V_9_9_P2" not in git(upstream.path, "tag", "--contains", pin).split()
    assert git_newest(upstream.path, pin, "V_*") == "V_10_0_P2"
    checked, decided, _lib, table = both_choose(cli, upstream)
    assert (checked, decided) == ("V_10_0_P2", "V_10_0_P2")
    assert [c["name"] for c in table["columns"] if c["kind"] == "tag"] == ["V_10_0_P1", "V_10_0_P2"]
    grid = matrix(cli, upstream, "--refs", "V_*", "--json").json["upstreams"][0]
    assert grid["verdict_column"] == "V_10_0_P2"


def test_refs_orders_tags_by_version_not_as_text(cli, project, upstream):
    """matrix --refs 'V_*' at V_9_9_P1: V_9_9_P2 (its own line) and V_10_0_P1/P2 (a later line) follow it, and
    the newest by version decides, as git's version sort says, never V_9_9_P2 as text sorts it."""
    made = openssh_shaped(upstream)
    pinned(project, upstream, made["V_9_9_P1"])
    grid = matrix(cli, upstream, "--refs", "V_*", "--json").json["upstreams"][0]
    tags = [c["name"] for c in grid["columns"] if c["kind"] == "tag"]
    assert tags == ["V_9_9_P2", "V_10_0_P1", "V_10_0_P2"]
    assert git(upstream.path, "tag", "-l", "--sort=version:refname", *tags).split()[-1] == "V_10_0_P2"
    assert sorted(tags)[-1] == "V_9_9_P2"  # what text order says
    assert grid["verdict_column"] == "V_10_0_P2"


def test_a_tag_pattern_that_finds_no_release_is_an_error_naming_the_tags_that_look_like_releases(
    cli, project, upstream
):
    made = megatron_shaped(upstream)
    pinned(project, upstream, made["core_v0.12.0"], tag_pattern="release-*")
    result = newest_release(cli, upstream)
    assert result.code == 1, result.out + result.err
    lib = result.json["upstreams"][0]
    assert lib["available"] is False
    assert "tag-pattern 'release-*' of lib matches no tag: its releases cannot be found" in lib["error"]
    text = cli("status", "--target", "t", "--newest-release", "--source", f"lib={upstream.path}")
    hint = "tags that look like releases: core_v0.19.0, core_v0.15.3, core_v0.15.0rc4, core_v0.13.0, core_v0.13.0rc4"
    assert hint + ': set tag-pattern = "core_v*"' in " ".join(text.out.split())
    grid = matrix(cli, upstream, "--json")
    assert grid.code == 1 and "matches no tag: its releases cannot be found" in grid.json["upstreams"][0]["error"]


def test_no_release_newer_than_the_pin_says_which_pattern_found_none(cli, project, upstream):
    made = megatron_shaped(upstream)
    pinned(project, upstream, made["core_v0.19.0"], tag_pattern="core_v*")
    assert git_newest(upstream.path, made["core_v0.19.0"], "core_v*") is None
    result = newest_release(cli, upstream)
    assert result.code == 0, result.out + result.err
    lib = result.json["upstreams"][0]
    assert lib["notes"][0] == (
        "no release tag matching 'core_v*' of lib is newer than the pin (0.19.0): checked at the pin (track = releases)"
    )


@pytest.mark.parametrize(
    ("pattern", "names", "suffixes"),
    [
        (
            "core_v*",
            "core_v0.9.0 core_v0.12.0rc2 core_v0.12.0 core_v0.12.3 core_v0.15.0rc4 core_v0.15.0 core_v0.15.3 "
            "core_v0.19.0 core_v0.7.0.beta core_v0.7.0",
            ("rc", ".beta"),
        ),
        (
            "v*",
            "v1.0.RC2 v1.0.0_core_r0.6.0 v1.0.0_core_r0.7.0 v2.0.0_core_r0.8.0 v2.1.0_core_r0.8.0 "
            "v2.1.0_core_r0.12.1 v2.2.0_core_r0.12.1 v26.0.0_core_r0.12.1",
            (".RC",),
        ),
        ("V_*", "V_9_2_P1 V_9_3_P2 V_9_9_P1 V_9_9_P2 V_10_0_P1 V_10_0_P2 V_10_5_P1", ()),
    ],
)
def test_tags_order_by_version_as_gits_version_sort_does(cli, project, upstream, pattern, names, suffixes):
    """matrix --refs PATTERN --include-older lists its columns in time order, then by version: every commit here
    has the same date, so the columns are in version order, which must be git's version sort, never text order.
    The tags are made newest first, so the history's order is no help."""
    pin = upstream.head()
    pinned(project, upstream, pin)
    for step, name in enumerate(sorted(names.split(), reverse=True)):
        on_main(upstream, step)
        git(upstream.path, "tag", name)
    config = [arg for suffix in suffixes for arg in ("-c", f"versionsort.suffix={suffix}")]
    gits = git(upstream.path, *config, "tag", "-l", pattern, "--sort=version:refname").split()
    assert gits != sorted(gits)  # text order differs
    grid = matrix(cli, upstream, "--refs", pattern, "--include-older", "--json").json["upstreams"][0]
    assert [c["name"] for c in grid["columns"] if c["kind"] == "tag"] == gits


def test_bump_to_a_tag_writes_the_version_it_names_as_its_upstream_tags_it(cli, project, upstream):
    made = megatron_shaped(upstream)
    pinned(project, upstream, made["core_v0.12.0"], tag_pattern="core_v*", version="0.12.0")
    result = cli(
        "bump", "--target", "t", "--upstream", "lib", "--to", "core_v0.19.0", "--source", f"lib={upstream.path}"
    )
    assert result.code == 0, result.out + result.err
    text = (project.root / "manifests" / "t.toml").read_text()
    assert f'commit = "{made["core_v0.19.0"]}"' in text and 'version = "0.19.0"' in text
