"""patchmgr import --dockerfile alone: the Dockerfile (ARG pins and URLs, COPY, git apply/patch lines in clone
folders) says which patch files patch which upstream in which order, as docker build would apply them."""

from __future__ import annotations

import subprocess
from hashlib import sha256
from pathlib import Path

from support.gitrepos import BASE_TEXT, UpstreamRepo, git
from support.monolith import MONOLITH, dirty_diff, fill_stubs, text_with, three_file_upstream
from support.real_histories import clone_of

ROCM = {"src/c.py": text_with({20: "rocm fix"}), "src/new.py": "rocm = True\n"}
CORE = {"src/a.py": MONOLITH["src/a.py"], "src/b.py": MONOLITH["src/b.py"]}

DOCKERFILE = """\
# escape=\\
ARG LIB_REPO=example/Lib-Core
FROM ubuntu:22.04 AS build
ARG LIB_REPO
ARG LIB_COMMIT={pin}
ARG PATCH_VERSION=latest
ENV WS=/workspace
WORKDIR ${{WS}}
COPY patch/${{PATCH_VERSION}}/ /tmp/patch/
RUN git clone --depth 1 "https://example.invalid/${{LIB_REPO}}.git" && \\
    # the pin is an ARG, as image repositories write it
    cd Lib-Core && git fetch origin "${{LIB_COMMIT}}" && git checkout FETCH_HEAD
RUN cd ${{WS}}/Lib-Core \\
 && git apply /tmp/patch/zz-rocm.patch \\
 && patch -p1 -N < /tmp/patch/core.patch
"""


def image_repository(tmp_path: Path, lib: UpstreamRepo, pin: str, dockerfile: str = DOCKERFILE) -> Path:
    """docker/Dockerfile with docker/patch/latest/{zz-rocm,core}.patch (applied rocm first) and a higher-sorting
    docker/patch/v9.9 that holds core.patch alone."""
    docker = tmp_path / "image" / "docker"
    for folder, patches in (("latest", {"zz-rocm": ROCM, "core": CORE}), ("v9.9", {"core": CORE})):
        (docker / "patch" / folder).mkdir(parents=True)
        for name, files in patches.items():
            (docker / "patch" / folder / f"{name}.patch").write_bytes(dirty_diff(lib, pin, files))
    (docker / "Dockerfile").write_text(dockerfile.format(pin=pin))
    return docker


def git_applied(lib: UpstreamRepo, pin: str, patches: list[Path], dest: Path) -> Path:
    """The upstream at ``pin`` with ``patches`` applied by git, in that order, as the image build does."""
    git(dest.parent, "clone", "-q", str(lib.path), dest.name)
    git(dest, "checkout", "-q", "--detach", pin)
    for patch in patches:
        git(dest, "apply", str(patch))
    return dest


def same_files(left: Path, right: Path, paths) -> None:
    for path in paths:
        assert (left / path).read_bytes() == (right / path).read_bytes(), path


def test_dockerfile_alone_arg_pins_and_urls_clone_folder_and_series_order(tmp_path, cli, project):
    lib = three_file_upstream(tmp_path)
    pin = lib.head()
    lib.commit({"README": "later\n"}, "upstream moves on")
    docker = image_repository(tmp_path, lib, pin)
    source = ["--source", f"lib-core={lib.path}"]
    result = cli("import", "--target", "t", "--dockerfile", str(docker / "Dockerfile"), *source, "--json")
    assert result.code == 0, result.out + result.err
    (up,) = result.json["upstreams"]
    assert up["name"] == "lib-core" and up["pin"] == pin  # named after the clone folder, pinned by the ARG
    assert up["git"] == "https://example.invalid/example/Lib-Core.git"
    assert [p["id"] for p in up["pieces"]] == ["c", "new", "a", "b"]  # zz-rocm.patch first, as the RUN applies it
    manifest = (project.root / "manifests/t.toml").read_text()
    assert f'commit = "{pin}"' in manifest and "${" not in manifest and "v9.9" not in manifest
    assert "zz-rocm.patch + " in manifest
    fill_stubs(project.root)
    assert cli("lint").code == 0
    status = cli("status", "--target", "t", *source, "--json")
    assert status.code == 0, status.out + status.err
    assert {r["state"] for u in status.json["upstreams"] for r in u["patches"]} == {"clean"}
    into = tmp_path / "build"
    assert cli("apply", "--target", "t", "--into", str(into), *source).code == 0
    latest = docker / "patch" / "latest"
    reference = git_applied(lib, pin, [latest / "zz-rocm.patch", latest / "core.patch"], tmp_path / "ref")
    same_files(into / "lib-core", reference, ["src/a.py", "src/b.py", "src/c.py", "src/new.py", "README"])


def test_build_arg_overrides_the_version_folder_and_a_branch_is_the_pin(tmp_path, cli, project):
    lib = three_file_upstream(tmp_path)
    old = lib.head()
    git(lib.path, "checkout", "-q", "-b", "dev")
    dev = lib.commit({"src/c.py": text_with({38: "dev work"})}, "dev work")
    git(lib.path, "checkout", "-q", "main")
    lib.commit({"src/a.py": "# main moved\n" + BASE_TEXT}, "main work")
    text = DOCKERFILE.replace("ARG LIB_COMMIT={pin}", "ARG LIB_BRANCH=main").replace(
        '--depth 1 "https', '-b ${{LIB_BRANCH}} --depth 1 "https'
    )
    text = text.replace('git fetch origin "${{LIB_COMMIT}}" && git checkout FETCH_HEAD', "true")
    text = text.replace("git apply /tmp/patch/zz-rocm.patch \\\n && ", "")
    docker = image_repository(tmp_path, lib, dev, text)
    (docker / "patch" / "v9.9" / "core.patch").write_bytes(dirty_diff(lib, dev, {"src/b.py": CORE["src/b.py"]}))
    args = ["import", "--target", "t", "--dockerfile", str(docker / "Dockerfile"), "--source", f"lib-core={lib.path}"]
    unused = cli(*args, "--build-arg", "NOT_AN_ARG=1", "--dry-run", "--json")  # main and latest by default
    assert unused.code == 0, unused.out + unused.err
    assert any("declares no ARG NOT_AN_ARG" in n for n in unused.json["notes"]), unused.out
    assert [p["id"] for p in unused.json["upstreams"][0]["pieces"]] == ["a", "b"]
    result = cli(*args, "--build-arg", "LIB_BRANCH=dev", "--build-arg", "PATCH_VERSION=v9.9", "--json")
    assert result.code == 0, result.out + result.err
    (up,) = result.json["upstreams"]
    assert up["pin"] == dev and [p["id"] for p in up["pieces"]] == ["b"]  # v9.9's core.patch, at dev's head
    manifest = (project.root / "manifests/t.toml").read_text()
    assert "the Dockerfile checks out dev, resolved to this commit at import" in manifest
    assert "v9.9/core.patch" in manifest
    assert old not in manifest


def test_a_variable_without_a_value_is_one_error_naming_it_and_its_line(tmp_path, cli, project):
    lib = three_file_upstream(tmp_path)
    docker = image_repository(tmp_path, lib, lib.head(), DOCKERFILE.replace("ARG LIB_REPO=example/Lib-Core", "ARG X"))
    result = cli(
        "import", "--target", "t", "--dockerfile", str(docker / "Dockerfile"), "--source", f"lib-core={lib.path}"
    )
    assert result.code == 2, result.out + result.err
    assert f"{docker / 'Dockerfile'}:10: ${{LIB_REPO}} has no value" in result.err
    assert "hint: pass --build-arg LIB_REPO=VALUE" in result.err and "Traceback" not in result.err
    assert not list((project.root / "manifests").iterdir()) and not list((project.root / "patches").iterdir())
    fixed = cli(
        "import", "--target", "t", "--dockerfile", str(docker / "Dockerfile"), "--source", f"lib-core={lib.path}",
        "--build-arg", "LIB_REPO=fork/Lib-Core", "--dry-run", "--json",
    )  # fmt: skip
    assert fixed.code == 0 and fixed.json["upstreams"][0]["git"] == "https://example.invalid/fork/Lib-Core.git"


def test_only_picks_upstreams_and_a_patch_file_is_named_by_its_clone_folder(tmp_path, cli, project):
    lib = three_file_upstream(tmp_path)
    tool = UpstreamRepo(tmp_path / "tool")
    tool.commit({"tool.py": BASE_TEXT}, "initial")
    folder = tmp_path / "image"
    folder.mkdir()
    (folder / "megatron.patch").write_bytes(dirty_diff(lib, lib.head(), MONOLITH))
    (folder / "tool.patch").write_bytes(dirty_diff(tool, tool.head(), {"tool.py": text_with({3: "t"})}))
    (folder / "Dockerfile").write_text(
        "FROM base\nCOPY *.patch /tmp/\n"
        f"RUN git clone https://example.invalid/NVIDIA/Megatron-LM.git /ws/Megatron-LM && "
        f"cd /ws/Megatron-LM && git checkout {lib.head()} && git apply /tmp/megatron.patch\n"
        f"RUN git clone https://example.invalid/nowhere/tool.git /ws/tool && git -C /ws/tool checkout {tool.head()} "
        "&& cd /ws/tool && git apply /tmp/tool.patch\n"
        "RUN cd \"$(python3 -c 'import os, vllm; print(os.path.dirname(vllm.__file__))')\" \\\n"
        "    && patch -p1 < /tmp/v.patch\n"
    )
    source = ["--source", f"megatron-lm={lib.path}"]
    blocked = cli("import", "--target", "t", "--dockerfile", str(folder / "Dockerfile"), *source)
    assert blocked.code != 0 and not list((project.root / "manifests").iterdir())  # tool cannot be fetched
    dockerfile = ["--dockerfile", str(folder / "Dockerfile")]
    result = cli("import", str(folder), "--only", "megatron-lm", "--target", "t", *dockerfile, *source)
    assert result.code == 0, result.out + result.err
    manifest = (project.root / "manifests/t.toml").read_text()
    assert "[upstreams.megatron-lm]" in manifest and "tool" not in manifest
    assert "Dockerfile:5: /tmp/v.patch is applied in $(python3 -c 'import os, vllm;" in result.out, result.out
    assert "which no `git clone` of the Dockerfile makes" in result.out
    wrong = cli("import", "--only", "megatron", "--target", "u", "--dockerfile", str(folder / "Dockerfile"), *source)
    assert wrong.code == 2 and "no patch here is for upstream 'megatron'" in wrong.err, wrong.err


PATCH_STAGE = "FROM alpine:3 AS patches\nCOPY patch/latest/ /tmp/patch/\n"
APPLIED = """\
FROM ubuntu:22.04 AS build
WORKDIR /ws
RUN git clone https://example.invalid/example/Lib-Core.git && cd Lib-Core && git checkout {pin}
{copy}RUN cd /ws/Lib-Core && git apply /tmp/patch/core.patch
"""


def test_a_patch_applied_before_its_copy_or_copied_in_another_stage_is_refused_as_docker_build_fails(
    tmp_path, cli, project
):
    lib = three_file_upstream(tmp_path)
    source = ["--source", f"lib-core={lib.path}"]
    refused = {
        "after it": APPLIED.replace("{copy}", "") + "COPY patch/latest/ /tmp/patch/\n",  # RUN at 4, COPY at 5
        "in another build stage": PATCH_STAGE + APPLIED.replace("{copy}", ""),  # COPY at 2, RUN at 6
    }
    for when, text in refused.items():
        docker = image_repository(tmp_path / when.replace(" ", "-"), lib, lib.head(), text)
        result = cli("import", "--target", "t", "--dockerfile", str(docker / "Dockerfile"), *source)
        lines = result.err.splitlines()
        assert result.code == 2 and len(lines) == 2 and lines[1].startswith("hint: "), result.out + result.err
        run, copy = (4, 5) if when == "after it" else (6, 2)
        assert lines[0] == (
            f"error: {docker / 'Dockerfile'}:{run}: applies /tmp/patch/core.patch, which only the COPY at line "
            f"{copy} puts in the image, {when}{', not one this RUN is built on' if copy < run else ''}: docker "
            "build fails there, the file is not there yet; nothing was written"
        )
        assert not list((project.root / "manifests").iterdir()) and not list((project.root / "patches").iterdir())
    taken = {  # the stage the RUN is built FROM holds the file, or a COPY --from=<stage> brings it
        "from": PATCH_STAGE + APPLIED.replace("FROM ubuntu:22.04 AS build", "FROM patches").replace("{copy}", ""),
        "copy --from": PATCH_STAGE + APPLIED.replace("{copy}", "COPY --from=patches /tmp/patch/ /tmp/patch/\n"),
        "copy --from=0": PATCH_STAGE + APPLIED.replace("{copy}", "COPY --from=0 /tmp/patch/core.patch /tmp/patch/\n"),
    }
    for how, text in taken.items():
        docker = image_repository(tmp_path / how.replace(" ", "-"), lib, lib.head(), text)
        result = cli(
            "import", "--target", "t", "--dockerfile", str(docker / "Dockerfile"), *source, "--dry-run", "--json"
        )
        assert result.code == 0, (how, result.out + result.err)
        assert [p["id"] for p in result.json["upstreams"][0]["pieces"]] == ["a", "b"], how  # core.patch alone


def test_lint_refuses_a_manifest_url_with_an_unexpanded_variable(cli, project):
    project.manifest(
        "t", {"lib": {"git": "https://github.com/${MEGATRON_REPO}.git", "commit": "a" * 40, "patches": []}}
    )
    result = cli("lint")
    assert result.code != 0 and "never given a value" in result.out + result.err, result.out + result.err


def test_real_mindspeed_dev_pinned_by_an_arg_imports_clean(tmp_path, cli, project):
    pin = "fc63de5c48426dd019c3b3f39e65f5bdf56e4086"
    mindspeed = clone_of("mindspeed", tmp_path / "MindSpeed")
    git(mindspeed, "checkout", "-q", "--detach", pin)
    for path, old, new in (
        ("mindspeed/args_utils.py", "import", "import os  # npu\nimport"),
        ("mindspeed/arguments.py", "def ", "# npu: ported\ndef "),
    ):
        text = (mindspeed / path).read_text()
        (mindspeed / path).write_text(text.replace(old, new, 1))
    patch = subprocess.run(["git", "diff"], cwd=mindspeed, capture_output=True, check=True).stdout
    git(mindspeed, "checkout", "-q", "--", ".")
    docker = tmp_path / "image"
    docker.mkdir()
    (docker / "mindspeed.patch").write_bytes(patch)
    (docker / "Dockerfile").write_text(
        f"ARG MINDSPEED_REPO=https://gitcode.com/Ascend/MindSpeed.git\nFROM base\nARG MINDSPEED_REPO\n"
        f"ARG MINDSPEED_COMMIT={pin}\nCOPY mindspeed.patch /root/\n"
        'RUN git clone -b dev "${MINDSPEED_REPO}" /root/MindSpeed && '
        'git -C /root/MindSpeed checkout "${MINDSPEED_COMMIT}"\n'
        "RUN cd /root/MindSpeed && git apply /root/mindspeed.patch\n"
    )
    source = ["--source", f"mindspeed={mindspeed}"]
    result = cli("import", "--target", "t", "--dockerfile", str(docker / "Dockerfile"), *source, "--json")
    assert result.code == 0, result.out + result.err
    (up,) = result.json["upstreams"]
    assert up["pin"] == pin and up["git"] == "https://gitcode.com/Ascend/MindSpeed.git"
    fill_stubs(project.root)
    status = cli("status", "--target", "t", *source, "--json")
    assert {r["state"] for u in status.json["upstreams"] for r in u["patches"]} == {"clean"}, status.out
    into = tmp_path / "build"
    assert cli("apply", "--target", "t", "--into", str(into), *source).code == 0
    git(mindspeed, "apply", str(docker / "mindspeed.patch"))
    same_files(into / "mindspeed", mindspeed, ["mindspeed/args_utils.py", "mindspeed/arguments.py"])


def test_a_base_off_the_line_of_the_dockerfile_branch_is_a_warning(tmp_path, cli, project):
    lib = three_file_upstream(tmp_path)
    git(lib.path, "checkout", "-q", "-b", "dev")
    lib.commit({"src/a.py": text_with({5: "dev a"})}, "dev work")
    git(lib.path, "checkout", "-q", "main")
    made_at = lib.commit({"src/b.py": text_with({30: "main b"})}, "main work")
    image = tmp_path / "image"
    image.mkdir()
    patch = {"src/a.py": text_with({5: "a fix"}), "src/b.py": text_with({10: "b fix", 30: "main b"})}
    (image / "lib.patch").write_bytes(dirty_diff(lib, made_at, patch))
    (image / "Dockerfile").write_text(
        "FROM base\nCOPY lib.patch /tmp/\nRUN git clone -b dev https://example.invalid/fork/lib.git /ws/lib\n"
        "RUN cd /ws/lib && git apply /tmp/lib.patch\n"
    )
    dockerfile = ["--dockerfile", str(image / "Dockerfile"), "--source", f"lib={lib.path}"]
    result = cli("import", "--target", "t", *dockerfile, "--json", "--dry-run")
    assert result.code == 0, result.out + result.err
    (up,) = result.json["upstreams"]
    assert up["base"]["commit"] == made_at and up["git"] == "https://example.invalid/fork/lib.git"
    assert any(n.startswith("warning: the base") and "not on the line of dev" in n for n in up["notes"]), up["notes"]


def test_two_series_conf_lines_for_one_worktree_are_one_upstream_in_their_order(tmp_path, cli, project):
    lib = three_file_upstream(tmp_path)
    folder = tmp_path / "npu_patch"
    folder.mkdir()
    (folder / "zz-rocm.patch").write_bytes(dirty_diff(lib, lib.head(), ROCM))
    (folder / "core.patch").write_bytes(dirty_diff(lib, lib.head(), CORE))
    (folder / "series.conf").write_text("/ws/lib|zz-rocm.patch|zz-rocm.patch\n/ws/lib|core.patch|core.patch\n")
    result = cli("import", str(folder), "--target", "t", "--git", "lib=https://example.invalid/lib.git",
                 "--pin", f"lib={lib.head()}", "--source", f"lib={lib.path}", "--json")  # fmt: skip
    assert result.code == 0, result.out + result.err
    (up,) = result.json["upstreams"]
    assert [p["id"] for p in up["pieces"]] == ["c", "new", "a", "b"]
    # each file is named with the sha256 of its own bytes (not one hash of the two joined)
    rocm, core = (sha256((folder / name).read_bytes()).hexdigest()[:12] for name in ("zz-rocm.patch", "core.patch"))
    header = (project.root / "patches/lib/a.patch").read_text().split("\n---\n")[0]
    assert f"Origin: vendor, imported from zz-rocm.patch (sha256 {rocm}) + core.patch (sha256 {core})," in header
    twice = cli("import", str(folder / "core.patch"), str(folder / "core.patch"), "--target", "u", "--dry-run")
    assert twice.code == 2 and "is given twice for upstream core" in twice.err, twice.err


def test_the_second_patch_file_of_one_clone_is_made_on_the_first(tmp_path, cli, project):
    """core.patch changes src/c.py further after zz-rocm.patch (its preimage is zz-rocm's postimage): its pieces
    are made on zz-rocm's result, so status is clean and apply gives what git apply of both gives."""
    lib = three_file_upstream(tmp_path)
    pin = lib.head()
    docker = image_repository(tmp_path, lib, pin)
    latest = docker / "patch" / "latest"
    with_rocm = git_applied(lib, pin, [latest / "zz-rocm.patch"], tmp_path / "with-rocm")
    git(with_rocm, "add", "-A")
    git(with_rocm, "commit", "-q", "-m", "rocm")
    (with_rocm / "src/c.py").write_text(text_with({20: "rocm fix", 21: "core on top of rocm"}))
    (with_rocm / "src/a.py").write_text(MONOLITH["src/a.py"])
    (latest / "core.patch").write_bytes((git(with_rocm, "diff") + "\n").encode())
    source = ["--source", f"lib-core={lib.path}"]
    result = cli("import", "--target", "t", "--dockerfile", str(docker / "Dockerfile"), *source, "--json")
    assert result.code == 0, result.out + result.err
    fill_stubs(project.root)
    status = cli("status", "--target", "t", *source, "--json")
    assert {r["state"] for u in status.json["upstreams"] for r in u["patches"]} == {"clean"}, status.out
    into = tmp_path / "build"
    assert cli("apply", "--target", "t", "--into", str(into), *source).code == 0
    reference = git_applied(lib, pin, [latest / "zz-rocm.patch", latest / "core.patch"], tmp_path / "ref")
    same_files(into / "lib-core", reference, ["src/a.py", "src/c.py", "src/new.py"])


def test_piece_files_are_shared_across_targets_only_when_they_are_the_same_patch(tmp_path, cli, project):
    lib = three_file_upstream(tmp_path)
    pin = lib.head()
    docker = image_repository(tmp_path, lib, pin)
    args = ["import", "--dockerfile", str(docker / "Dockerfile"), "--source", f"lib-core={lib.path}"]
    assert cli(*args, "--target", "cuda").code == 0
    before = {p.name: p.read_bytes() for p in (project.root / "patches/lib-core").iterdir()}
    same = cli(*args, "--target", "rocm", "--json")  # the same Dockerfile: the same pieces, shared
    assert same.code == 0, same.out + same.err
    assert {p.name: p.read_bytes() for p in (project.root / "patches/lib-core").iterdir()} == before
    assert any("its file is shared" in n for n in same.json["upstreams"][0]["notes"])
    (docker / "patch" / "latest" / "core.patch").write_bytes(
        dirty_diff(lib, pin, {"src/a.py": text_with({5: "npu fix"}), "src/b.py": CORE["src/b.py"]})
    )
    other = cli(*args, "--target", "npu", "--json")  # a.patch differs: named after the target, b.patch shared
    assert other.code == 0, other.out + other.err
    assert [p["id"] for p in other.json["upstreams"][0]["pieces"]] == ["c", "new", "a-npu", "b"]
    assert (project.root / "patches/lib-core/a.patch").read_bytes() == before["a.patch"]
    assert "npu fix" in (project.root / "patches/lib-core/a-npu.patch").read_text()
    fill_stubs(project.root)
    for target in ("cuda", "rocm", "npu"):
        status = cli("status", "--target", target, "--source", f"lib-core={lib.path}", "--json")
        assert {r["state"] for u in status.json["upstreams"] for r in u["patches"]} == {"clean"}, status.out


def test_only_never_reads_the_patches_of_upstreams_left_out(tmp_path, cli, project):
    """A real image repository's folder held a corrupt patch for an upstream we do not carry: --only the others
    must import as if it were not there, from the folder and from the Dockerfile alone."""
    lib = three_file_upstream(tmp_path)
    folder = tmp_path / "image"
    folder.mkdir()
    (folder / "megatron.patch").write_bytes(dirty_diff(lib, lib.head(), MONOLITH))
    (folder / "vllm.patch").write_text(
        "diff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n@@ -1,3 +1,5 @@\n a\n-b\n+c\n"
    )
    (folder / "Dockerfile").write_text(
        "FROM base\nARG MEGATRON_COMMIT=" + lib.head() + "\nCOPY *.patch /tmp/\n"
        "RUN git clone https://example.invalid/NVIDIA/Megatron-LM.git /ws/Megatron-LM && "
        'git -C /ws/Megatron-LM checkout "${MEGATRON_COMMIT}" && git -C /ws/Megatron-LM apply /tmp/megatron.patch\n'
        "RUN git clone https://example.invalid/vllm.git /ws/vllm && git -C /ws/vllm apply /tmp/vllm.patch\n"
    )
    source = ["--source", f"megatron-lm={lib.path}"]
    dockerfile = ["--dockerfile", str(folder / "Dockerfile")]
    broken = cli("import", "--target", "t", *dockerfile, *source)
    assert broken.code == 2 and "vllm.patch" in broken.err and "malformed diff" in broken.err, broken.err
    for given in ([], [str(folder)]):
        result = cli("import", *given, "--only", "megatron-lm", "--target", f"t{len(given)}", *dockerfile, *source)
        assert result.code == 0, result.out + result.err
    absent = cli("import", str(folder), "--only", "mbridge", "--target", "u", *dockerfile, *source)
    assert absent.code == 2 and "(they are for megatron-lm, vllm)" in absent.err, absent.err
