"""How each upstream releases (the manifest's track, branch and tag-pattern): which refs matrix shows, which one
decides, where status --newest-release checks, and the rule that chose each, on real git upstreams."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from support.commands import matrix
from support.gitrepos import git
from support.scenes import tagged_upstream

from patchmgr.model.manifest import load_target


def tracked(project, upstream, **keys):
    """``tagged_upstream`` (releases v1.0.0 .. v2.0.0, the pre-release v2.1.0rc1, main past it), its manifest
    given the tracking keys ``keys`` (``tag_pattern`` for tag-pattern)."""
    pin, commits = tagged_upstream(project, upstream)
    spec = {"git": "https://example.invalid/lib.git", "commit": pin, "patches": ["fix", "other"]}
    spec.update({key.replace("_", "-"): value for key, value in keys.items()})
    project.manifest("t", {"lib": spec})
    return pin, commits


def newest(cli, upstream, *extra):
    return cli("status", "--target", "t", "--newest-release", "--source", f"lib={upstream.path}", *extra)


def test_prereleases_make_release_candidates_columns_and_the_newest_decides(cli, project, upstream):
    tracked(project, upstream, track="prereleases")
    rc = git(upstream.path, "rev-parse", "v2.1.0rc1")
    lib = matrix(cli, upstream, "--json").json["upstreams"][0]
    names = [c["name"] for c in lib["columns"]]
    assert names == ["v0.9.0", "v1.0.0", "v1.1.0", "v1.2.0", "v2.0.0", "v2.1.0rc1", "main"]
    assert lib["verdict_column"] == "v2.1.0rc1" and lib["tracking"]["track"] == "prereleases"
    rules = {c["name"]: c["chosen_by"] for c in lib["columns"]}
    assert rules["v2.1.0rc1"] == "newest release candidate (track = prereleases)"
    assert rules["v2.0.0"] == "release newer than the pin (track = prereleases)"
    assert rules["main"] == "tip of main, the branch its source's HEAD names"
    status = newest(cli, upstream, "--json").json["upstreams"][0]
    assert (status["ref"], status["commit"]) == ("v2.1.0rc1", rc)
    assert status["chosen_by"] == "newest release candidate (track = prereleases)"
    text = matrix(cli, upstream).out
    assert "v2.1.0rc1: newest release candidate (track = prereleases), decides the verdict" in text


def test_releases_leave_release_candidates_out(cli, project, upstream):
    tracked(project, upstream)  # the default
    lib = matrix(cli, upstream, "--json").json["upstreams"][0]
    assert "v2.1.0rc1" not in [c["name"] for c in lib["columns"]]
    assert lib["verdict_column"] == "v2.0.0" and lib["tracking"] == {
        "track": "releases",
        "branch": None,
        "tag_pattern": None,
    }
    assert newest(cli, upstream, "--json").json["upstreams"][0]["chosen_by"] == "newest release (track = releases)"


def test_branch_follows_the_named_branch_tip(cli, project, upstream):
    pin, _ = tracked(project, upstream, track="branch", branch="dev")
    git(upstream.path, "checkout", "-q", "-b", "dev", pin)
    dev = upstream.commit({"docs.txt": "on dev\n"}, "docs on dev")
    git(upstream.path, "checkout", "-q", "main")
    lib = matrix(cli, upstream, "--json").json["upstreams"][0]
    tip = lib["columns"][-1]
    assert (tip["kind"], tip["name"], tip["commit"]) == ("tip", "dev", dev)
    assert tip["chosen_by"] == "tip of branch dev (track = branch)" and lib["verdict_column"] == "dev"
    assert lib["ok"] is True  # both patches apply on dev, though v2.0.0 carries fix
    result = newest(cli, upstream, "--json")
    assert result.code == 0, result.out + result.err
    status = result.json["upstreams"][0]
    assert (status["ref"], status["commit"], status["chosen_by"]) == ("dev", dev, "tip of branch dev (track = branch)")
    assert status["notes"][0] == f"checked at dev ({dev[:12]}): tip of branch dev (track = branch)"


def test_branch_without_a_name_follows_the_branch_head_names(cli, project, upstream):
    tracked(project, upstream, track="branch")
    status = newest(cli, upstream, "--json").json["upstreams"][0]
    assert (status["ref"], status["commit"]) == ("main", upstream.head())
    assert status["chosen_by"] == "tip of main, the branch its source's HEAD names (track = branch)"


def test_a_branch_the_source_lacks_leaves_the_upstream_unavailable(cli, project, upstream):
    tracked(project, upstream, track="branch", branch="release/9")
    result = matrix(cli, upstream, "--json")
    assert result.code == 1
    lib = result.json["upstreams"][0]
    assert lib["available"] is False and "has no branch 'release/9'" in lib["error"]
    status = newest(cli, upstream, "--json")
    assert status.code == 1 and "has no branch 'release/9'" in status.json["upstreams"][0]["error"]


def test_tag_pattern_keeps_only_the_tags_it_matches(cli, project, upstream):
    tracked(project, upstream, tag_pattern="v1.*")
    lib = matrix(cli, upstream, "--json").json["upstreams"][0]
    assert [c["name"] for c in lib["columns"]] == ["v0.9.0", "v1.0.0", "v1.1.0", "v1.2.0", "main"]
    assert lib["columns"][3]["chosen_by"] == "newest release (track = releases, tag-pattern 'v1.*')"
    assert newest(cli, upstream, "--json").json["upstreams"][0]["ref"] == "v1.2.0"


def test_every_report_says_which_rule_chose_the_ref(cli, project, upstream):
    tracked(project, upstream, track="prereleases")
    said = "newest release candidate (track = prereleases)"
    assert said in newest(cli, upstream).out
    assert said in newest(cli, upstream, "--format", "markdown").out
    assert said in newest(cli, upstream, "--format", "github").out
    junit = newest(cli, upstream, "--format", "junit").out
    assert f'<property name="chosen_by" value="{said}" />' in junit


@pytest.mark.fast
def test_the_ascend_manifest_and_the_nightly_example_use_the_tracking_rules():
    root = Path(__file__).resolve().parent.parent
    target = load_target(root / "manifests" / "ascend.toml", root / "patches")
    rules = {u.name: (u.track.value, u.branch) for u in target.upstreams}
    assert rules["vllm-ascend"] == ("prereleases", None)
    assert rules["mindspeed"] == ("branch", "dev") and rules["mbridge"] == ("branch", "main")
    workflow = yaml.safe_load((root / "examples" / "nightly-patch-status.yml").read_text())
    runs = [step.get("run", "") for step in workflow["jobs"]["status"]["steps"]]
    status = [line for run in runs for line in run.splitlines() if line.strip().startswith("patchmgr status")]
    assert status and all("--newest-release" in line for line in status)
