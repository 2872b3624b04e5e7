"""The adoption journey on the real MindSpeed history, as an image repository has it: the pin and the clone URL
are Dockerfile ``ARG``s, the clone folder is named unlike nothing the patch says, and the monolith holds a second
diff of fused_rope.py stacked on the first. ``import --dockerfile`` alone adopts it, ``status`` reads it clean,
``apply`` gives the files `git apply` of the monolith gives, and ``edit --onto`` moves the series to a newer
``dev`` commit where it reads clean again. Needs PATCHMGR_TEST_MIRRORS (skipped with the reason elsewhere)."""

from __future__ import annotations

import tomllib

from support.gitrepos import git
from support.monolith import applied_monolith, fill_stubs, same_files, stacked_diff
from support.real_histories import clone_of, edited

PIN = "fc63de5c48426dd019c3b3f39e65f5bdf56e4086"  # MindSpeed, on its dev branch
ROPE = "mindspeed/core/fusions/fused_rope.py"
DOCKERFILE = f"""\
ARG MINDSPEED_REPO=https://gitcode.com/Ascend/MindSpeed.git
FROM base AS build
ARG MINDSPEED_REPO
ARG MINDSPEED_COMMIT={PIN}
WORKDIR /root
COPY docker/npu_patch /tmp/npu_patch
RUN git clone "${{MINDSPEED_REPO}}" /root/MindSpeed && \\
    git -C /root/MindSpeed checkout "${{MINDSPEED_COMMIT}}"
RUN git -C /root/MindSpeed apply --whitespace=nowarn /tmp/npu_patch/mindspeed.patch
"""


def test_dockerfile_alone_adopts_a_stacked_monolith_and_edit_onto_moves_it(tmp_path, cli, project):
    clone = clone_of("mindspeed", tmp_path / "MindSpeed")
    scale = ("    _mscale = mscale\n", "    _mscale = float(mscale)\n")
    yarn = (
        '    if hasattr(args, "rope_scaling_type") and args.rope_scaling_type == "yarn":\n',
        '    if getattr(args, "rope_scaling_type", None) == "yarn":\n',
    )
    first = {ROPE: edited(clone, PIN, ROPE, scale)}
    second = {ROPE: edited(clone, PIN, ROPE, scale, yarn)}
    mono = stacked_diff(clone, PIN, {}, first) + stacked_diff(clone, PIN, first, second)
    image = tmp_path / "rl-image"
    (image / "docker" / "npu_patch").mkdir(parents=True)
    (image / "docker" / "npu_patch" / "mindspeed.patch").write_bytes(mono)
    (image / "docker" / "Dockerfile").write_text(DOCKERFILE)
    git(image, "init", "-q")
    git(image, "add", "-A")
    git(image, "commit", "-qm", "the image")
    source = ["--source", f"mindspeed={clone}"]

    imported = cli("import", "--target", "t", "--dockerfile", str(image / "docker" / "Dockerfile"), *source, "--json")
    assert imported.code == 0, imported.out + imported.err
    (up,) = imported.json["upstreams"]
    assert up["pin"] == PIN and up["git"] == "https://gitcode.com/Ascend/MindSpeed.git" and up["proven"], up
    assert [(p["id"], p["diffs"][0]["diff"]) for p in up["pieces"]] == [("fused-rope", 1), ("fused-rope-diff-2", 2)]
    written = [*(project.root / "patches" / "mindspeed").glob("*.patch"), project.root / "manifests" / "t.toml"]
    assert not [f.name for f in written if str(tmp_path) in f.read_text()]  # origins are relative to the image
    assert "Origin: vendor, imported from docker/npu_patch/mindspeed.patch at commit" in written[0].read_text()
    fill_stubs(project.root)
    status = cli("status", "--target", "t", *source, "--json")
    assert status.code == 0 and {p["state"] for u in status.json["upstreams"] for p in u["patches"]} == {"clean"}

    build = tmp_path / "build"
    assert cli("apply", "--target", "t", "--into", str(build), *source).code == 0
    same_files(build / "mindspeed", applied_monolith(clone, PIN, mono, tmp_path / "ref"), [ROPE])

    newer = git(clone, "rev-parse", "origin/dev")
    assert newer != PIN
    moved = cli("edit", "--target", "t", "-u", "mindspeed", "--into", str(tmp_path / "work"), "--onto", newer, *source)
    assert moved.code == 0, moved.out + moved.err
    exported = cli("export", "--target", "t", "-u", "mindspeed", "--from", str(tmp_path / "work"))
    assert exported.code == 0, exported.out + exported.err
    table = tomllib.loads((project.root / "manifests/t.toml").read_text())["upstreams"]["mindspeed"]
    assert table["commit"] == newer and table["patches"] == ["fused-rope", "fused-rope-diff-2"], table
    after = cli("status", "--target", "t", *source, "--json")
    assert after.code == 0 and {p["state"] for u in after.json["upstreams"] for p in u["patches"]} == {"clean"}


VLLM_ASCEND_TAG = "v0.23.0"
WORKER, OFFLOAD = "vllm_ascend/worker/worker.py", "vllm_ascend/simple_kv_offload/worker.py"
VLLM_DOCKERFILE = """\
ARG VLLM_ASCEND_REPO=https://github.com/vllm-project/vllm-ascend.git
FROM base
ARG VLLM_ASCEND_REPO
ARG VLLM_ASCEND_TAG=v0.23.0
ARG PATCH_VERSION=latest
COPY docker/patch/${PATCH_VERSION}/ /tmp/patch/
RUN git clone --depth 1 -b ${VLLM_ASCEND_TAG} ${VLLM_ASCEND_REPO} /vllm-workspace/vllm-ascend
RUN cd /vllm-workspace/vllm-ascend && git apply /tmp/patch/worker.patch && git apply /tmp/patch/a-offload.patch
"""


def test_vllm_ascend_two_files_in_a_version_folder_one_with_two_diffs_of_one_preimage(tmp_path, cli, project):
    """The tag and URL are ARGs, -b is the pin, ARG PATCH_VERSION picks latest/ (not the higher-sorting v0.9/,
    whose broken patch is never read), two patch files named unlike the clone are one series in the order the
    Dockerfile applies them, and worker.patch holds two diffs of worker.py against one preimage."""
    clone = clone_of("vllm-ascend", tmp_path / "vllm-ascend")
    pin = git(clone, "rev-parse", f"{VLLM_ASCEND_TAG}^{{commit}}")
    first = {WORKER: edited(clone, pin, WORKER, ("is in developing, some", "is under development, some"))}
    second = {WORKER: edited(clone, pin, WORKER, ('falling back to v1 model runner.")', 'falling back to v1.")'))}
    worker_patch = stacked_diff(clone, pin, {}, first) + stacked_diff(clone, pin, {}, second)
    offload = {OFFLOAD: git(clone, "show", f"{pin}:{OFFLOAD}") + "\n# patched for the image\n"}
    offload_patch = stacked_diff(clone, pin, {}, offload)
    image = tmp_path / "rl-image"
    latest, older = image / "docker/patch/latest", image / "docker/patch/v0.9"
    for folder in (latest, older):
        folder.mkdir(parents=True)
    (latest / "worker.patch").write_bytes(worker_patch)
    (latest / "a-offload.patch").write_bytes(offload_patch)
    (older / "worker.patch").write_text("diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1,3 +1,5 @@\n a\n")
    (image / "docker/Dockerfile").write_text(VLLM_DOCKERFILE)
    git(image, "init", "-q")  # the build context is the repository's root, above the Dockerfile's folder
    source = ["--source", f"vllm-ascend={clone}"]

    imported = cli("import", "--target", "t", "--dockerfile", str(image / "docker/Dockerfile"), *source, "--json")
    assert imported.code == 0, imported.out + imported.err
    (up,) = imported.json["upstreams"]
    assert up["pin"] == pin and up["git"] == "https://github.com/vllm-project/vllm-ascend.git" and up["proven"], up
    assert [p["takes"] for p in up["pieces"]] == [  # worker.patch first, as the Dockerfile applies it
        f"{WORKER} diff 1 of 2, hunk #1 of 2",
        f"{WORKER} diff 2 of 2, hunk #2 of 2",
        OFFLOAD,
    ], up["pieces"]
    assert any("diff 2 was made against the same preimage as diff 1" in n for n in up["notes"]), up["notes"]
    fill_stubs(project.root)
    status = cli("status", "--target", "t", *source, "--json")
    assert status.code == 0 and {p["state"] for u in status.json["upstreams"] for p in u["patches"]} == {"clean"}

    build = tmp_path / "build"
    assert cli("apply", "--target", "t", "--into", str(build), *source).code == 0
    reference = applied_monolith(clone, pin, worker_patch, tmp_path / "ref")
    git(reference, "apply", "-", input=offload_patch)
    same_files(build / "vllm-ascend", reference, [WORKER, OFFLOAD])

    newer = git(clone, "rev-parse", "origin/releases/v0.23.0")
    assert newer != pin
    moved = cli(
        "edit", "--target", "t", "-u", "vllm-ascend", "--into", str(tmp_path / "work"), "--onto", newer, *source
    )
    assert moved.code == 0, moved.out + moved.err
    assert cli("export", "--target", "t", "-u", "vllm-ascend", "--from", str(tmp_path / "work")).code == 0
    table = tomllib.loads((project.root / "manifests/t.toml").read_text())["upstreams"]["vllm-ascend"]
    assert table["commit"] == newer and len(table["patches"]) == 3, table
    after = cli("status", "--target", "t", *source, "--json")
    assert after.code == 0 and {p["state"] for u in after.json["upstreams"] for p in u["patches"]} == {"clean"}
