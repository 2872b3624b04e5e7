"""The ascend target's tracking rules and backports on the real upstream histories (``PATCHMGR_TEST_MIRRORS``):
vllm-ascend follows its release candidates, MindSpeed and mbridge their branch tips, and the verl, THD and mbridge
backports are shown absent at their pins and present at the refs that carry them."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from support.real_histories import real_history

REPOSITORY = Path(__file__).resolve().parent.parent


def ascend(project, *names: str) -> list[str]:
    """The repository's own ascend manifest and patches in the test's project; ``--source`` of each upstream in
    ``names`` at its real history (each skips the test where this machine has none)."""
    shutil.copy(REPOSITORY / "manifests" / "ascend.toml", project.root / "manifests" / "ascend.toml")
    shutil.rmtree(project.root / "patches")
    shutil.copytree(REPOSITORY / "patches", project.root / "patches")
    sources = []
    for name in names:
        sources += ["--source", f"{name}={real_history(name)}"]
    return ["--target", "ascend", *[f"-u{n}" for n in names], *sources]


def rev(name: str, ref: str) -> str:
    return subprocess.run(
        ["git", "rev-parse", f"{ref}^{{commit}}"], cwd=real_history(name), capture_output=True, text=True, check=True
    ).stdout.strip()


def landed(doc: dict, patch: str) -> list[tuple[int | None, str, str, str | None]]:
    (up,) = doc["upstreams"]
    marks = next(p for p in up["patches"] if p["id"] == patch)["backports"]
    return [(m["pr"], m["role"], m["state"], (m["landed_as"] or {}).get("commit")) for m in marks]


def test_vllm_ascend_follows_its_release_candidates(cli, project):
    args = ascend(project, "vllm-ascend")
    lib = cli("matrix", *args, "--json").json["upstreams"][0]
    names = [c["name"] for c in lib["columns"]]
    assert {"v0.24.0rc1", "v0.25.1rc1"} <= set(names) and "v0.23.0" in names, names
    # in time order: v0.24.0rc1 (release branch, 2026-08-04) was tagged before the pin's v0.23.0 (2026-08-17)
    assert names.index("v0.24.0rc1") < names.index("v0.23.0") < names.index("v0.25.1rc1"), names
    assert lib["verdict_column"] == "v0.25.1rc1"
    said = "newest release candidate (track = prereleases)"
    assert next(c for c in lib["columns"] if c["name"] == "v0.25.1rc1")["chosen_by"] == said
    text = cli("matrix", *args).out  # every column but the pin says why it is there, wherever the pin stands
    assert "v0.24.0rc1: release candidate newer than the pin (track = prereleases)" in text, text
    assert "pin v0.23.0: the pin" not in text and "PR #12713: in no column" in text, text
    (up,) = cli("status", *args, "--newest-release", "--json").json["upstreams"]
    assert (up["ref"], up["commit"], up["chosen_by"]) == ("v0.25.1rc1", rev("vllm-ascend", "v0.25.1rc1"), said)
    # its patch names its own submitted pull request, not merged anywhere yet
    assert landed(cli("status", *args, "--json").json, "packed-broadcast-wait-source-stream") == [
        (12713, "backport", "absent", None)
    ]


def test_mindspeed_is_checked_at_the_tip_of_dev(cli, project):
    args = ascend(project, "mindspeed")
    lib = cli("matrix", *args, "--json").json["upstreams"][0]
    tip = lib["columns"][-1]
    assert (tip["kind"], tip["name"], tip["commit"]) == ("tip", "dev", rev("mindspeed", "dev"))
    assert lib["verdict_column"] == "dev" and tip["chosen_by"] == "tip of branch dev (track = branch)"
    (up,) = cli("status", *args, "--newest-release", "--json").json["upstreams"]
    assert (up["ref"], up["commit"]) == ("dev", rev("mindspeed", "dev"))
    assert up["chosen_by"] == "tip of branch dev (track = branch)"


def test_mbridge_tip_carries_the_kwargs_fix_and_its_pull_request(cli, project):
    args = ascend(project, "mbridge")
    fix = rev("mbridge", "74093e34")
    result = cli("status", *args, "--newest-release", "--json")
    assert result.code == 1, result.out + result.err  # upstream: the patch is to be dropped
    (up,) = result.json["upstreams"]
    assert (up["ref"], up["commit"], up["chosen_by"]) == (
        "main",
        rev("mbridge", "main"),
        "tip of branch main (track = branch)",
    )
    (patch,) = up["patches"]
    assert (patch["state"], patch["carrier"]) == ("upstream", fix) and fix in patch["evidence"]
    assert landed(result.json, "vlm-forward-kwargs-passthrough") == [(37, "backport", "present", fix)]
    assert landed(cli("status", *args, "--json").json, "vlm-forward-kwargs-passthrough") == [
        (37, "backport", "absent", None)
    ]
    lib = cli("matrix", *args, "--json").json["upstreams"][0]
    assert lib["verdict_column"] == "main"
    assert [c["backports"][0]["state"] for c in lib["patches"][0]["cells"]] == ["absent", "present"]


def test_verl_routing_backport_and_its_prerequisite(cli, project):
    args = ascend(project, "verl")
    prerequisite = rev("verl", "7af85da21d9acab2ef1465a23da8830e6d23f31e")
    lib = cli("matrix", *args, "--json").json["upstreams"][0]
    routing = next(p for p in lib["patches"] if p["id"] == "npu-moe-routing-scatter-always")
    at_pin, at_tip = routing["cells"][0]["backports"], routing["cells"][-1]["backports"]
    assert [(m["pr"], m["role"], m["state"]) for m in at_pin] == [
        (6131, "backport", "absent"),
        (4888, "prerequisite", "absent"),
    ]
    assert [(m["pr"], m["role"], m["state"]) for m in at_tip] == [
        (6131, "backport", "absent"),  # the snapshot's main predates it
        (4888, "prerequisite", "present"),
    ]
    assert at_tip[1]["landed_as"]["commit"] == prerequisite
    changed = routing["changed"]
    assert changed["commit"] == prerequisite
    assert changed["named_by_patch"] == "the backport's prerequisite PR #4888 landed"
    text = cli("matrix", *args).out
    assert f"since {prerequisite[:12]}: the backport's prerequisite PR #4888 landed" in text


def test_megatron_bridge_thd_backport_is_there_from_v0_5_0(cli, project):
    args = ascend(project, "megatron-bridge")
    carrier = rev("megatron-bridge", "85323c5cc8884448956ffc0d1d9ea06760854ee2")
    assert landed(cli("status", *args, "--json").json, "thd-bool-attention-mask") == [
        (3314, "backport", "absent", None)
    ]
    at_release = cli("status", *args, "--against", "megatron-bridge=v0.5.0", "--json").json
    assert landed(at_release, "thd-bool-attention-mask") == [(3314, "backport", "present", carrier)]
    bisect = cli("bisect", *args[:2], "-u", "megatron-bridge", "--to", "v0.5.0", *args[3:], "--json").json
    assert [m["state"] for m in bisect["backports"]["thd-bool-attention-mask"]["pin"]] == ["absent"]
    assert [m["state"] for m in bisect["backports"]["thd-bool-attention-mask"]["to"]] == ["present"]
    thd = next(p for p in bisect["patches"] if p["id"] == "thd-bool-attention-mask")
    assert thd["named_by_patch"] == "PR #3314, which this patch backports, landed"
