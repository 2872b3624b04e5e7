"""Releases as the real upstreams tag them, on their real histories (``PATCHMGR_TEST_MIRRORS``; skipped without):
Megatron-LM's core_v0.x.y, openssh's V_x_y_Pz and MindSpeed's v<version>_core_r<core> tags, each release on a
branch of its own. ``status --newest-release`` and ``matrix`` pick the same tag, the one git names
(``support.tag_oracle``)."""

from __future__ import annotations

import pytest
from support.gitrepos import git
from support.real_histories import real_history
from support.tag_oracle import git_newest


def pinned_at(project, name: str, tag: str, **spec) -> tuple[str, list[str]]:
    """Target ``t`` with upstream ``lib`` pinned at ``tag``'s commit of ``name``'s real history, no patches (the
    choice of ref is what is checked); returns the pin and the ``--source`` words."""
    history = real_history(name)
    pin = git(history, "rev-parse", f"{tag}^{{commit}}")
    keys = {key.replace("_", "-"): value for key, value in spec.items()}
    project.manifest("t", {"lib": {"git": "https://example.invalid/lib.git", "commit": pin, "patches": [], **keys}})
    return pin, ["--source", f"lib={history}"]


def chosen(cli, source: list[str], *refs: str) -> tuple[dict, dict]:
    status = cli("status", "--target", "t", "--newest-release", *source, "--json")
    assert status.code == 0, status.out + status.err
    grid = cli("matrix", "--target", "t", *source, *refs, "--json")
    assert grid.code == 0, grid.out + grid.err
    return status.json["upstreams"][0], grid.json["upstreams"][0]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("name", "tag", "pattern", "main", "suffixes"),
    [
        ("megatron-lm", "core_v0.12.0", "core_v*", "main", ("rc",)),
        ("openssh", "V_9_9_P2", "V_*", "master", ()),
        ("mindspeed", "v2.1.0_core_r0.12.1", "v*", "master", (".RC",)),
    ],
)
def test_the_real_newest_release_by_the_tag_pattern(cli, project, name, tag, pattern, main, suffixes):
    pin, source = pinned_at(project, name, tag, tag_pattern=pattern)
    newest = git_newest(real_history(name), pin, pattern, main, suffixes)
    assert newest is not None
    status, grid = chosen(cli, source)
    assert (status["ref"], grid["verdict_column"]) == (newest, newest)
    assert status["commit"] == git(real_history(name), "rev-parse", f"{newest}^{{commit}}")
    assert status["chosen_by"] == f"newest release (track = releases, tag-pattern {pattern!r})"


@pytest.mark.slow
def test_megatron_main_pinned_as_0_12_0_is_not_sent_to_its_2023_tag(cli, project):
    """Megatron-LM's main where core_r0.12.0 forks off, pinned as version 0.12.0 with no tag-pattern: 23.06 and
    v2.6 name higher versions and are in its history (2023, 2021); the newest release that is newer is v0.15.3."""
    history = real_history("megatron-lm")
    fork = git(history, "merge-base", "core_v0.12.0", "main")
    project.manifest(
        "t", {"lib": {"git": "https://example.invalid/lib.git", "commit": fork, "version": "0.12.0", "patches": []}}
    )
    source = ["--source", f"lib={history}"]
    assert git(history, "merge-base", "--is-ancestor", "23.06", fork) == ""
    assert git_newest(history, fork, "*") == "v0.15.3"
    status, grid = chosen(cli, source)
    assert (status["ref"], grid["verdict_column"]) == ("v0.15.3", "v0.15.3")
    said = "left out, though of a higher version than the pin: 23.06, 23.04, v2.6 and 3 more, which the pin already"
    assert any(note.startswith(said) for note in status["notes"]), status["notes"]


@pytest.mark.slow
def test_openssh_refs_order_by_version(cli, project):
    """matrix --refs 'V_*' at V_9_9_P1: V_9_9_P2 and every later line's tag follow; V_10_5_P1 decides, not
    V_9_9_P2 (which text order puts last)."""
    pin, source = pinned_at(project, "openssh", "V_9_9_P1")
    newest = git_newest(real_history("openssh"), pin, "V_*", "master", ())
    grid = cli("matrix", "--target", "t", *source, "--refs", "V_*", "--json").json["upstreams"][0]
    names = [c["name"] for c in grid["columns"] if c["kind"] == "tag"]
    assert "V_9_9_P2" in names and sorted(names)[-1] == "V_9_9_P2"
    assert grid["verdict_column"] == newest == "V_10_5_P1"
