"""patchmgr import of image recipes as teams write them, each shape alone: a build script, a Dockerfile here-document,
a patch copied out of another clone the recipe makes, and a checkout that comes from the base image.

Each recipe is a real file over real git upstreams; where it can run here (a build script) it is run with bash, git
and patch themselves, its clone URLs sent to the local upstreams, and what patchmgr applies is compared with the tree
it made; a Dockerfile's patches are applied with git apply as docker build would."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from support.gitrepos import BASE_TEXT, UpstreamRepo, git
from support.monolith import dirty_diff, fill_stubs, text_with, three_file_upstream

URL = "https://example.invalid/org/{}.git"
CORE = {"src/a.py": text_with({5: "a fix"}), "src/b.py": text_with({10: "b fix"})}
EXTRA = {"src/c.py": text_with({20: "c fix"})}
FILES = ["src/a.py", "src/b.py", "src/c.py", "README"]


def run_recipe(script: Path, upstreams: dict[str, Path]) -> None:
    """Run the build script with bash, as a team does; git fetches each example URL from the local upstream."""
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_COUNT": str(len(upstreams))}
    for index, (name, path) in enumerate(upstreams.items()):
        env[f"GIT_CONFIG_KEY_{index}"] = f"url.{path}.insteadOf"
        env[f"GIT_CONFIG_VALUE_{index}"] = URL.format(name)
    subprocess.run(["bash", str(script)], cwd=script.parent, env=env, check=True, capture_output=True)


def git_applied(lib: UpstreamRepo, ref: str, patches: list[bytes], dest: Path) -> Path:
    """The upstream at ``ref`` with ``patches`` applied by git apply, in order, as docker build applies them."""
    git(dest.parent, "clone", "-q", str(lib.path), dest.name)
    git(dest, "checkout", "-q", "--detach", ref)
    for patch in patches:
        git(dest, "apply", "-", input=patch)
    return dest


def applied_by_patchmgr(cli, project, tmp_path: Path, name: str, *source: str) -> Path:
    """The imported series, its stubs filled, checked clean and applied by patchmgr apply: the upstream's tree."""
    fill_stubs(project.root)
    assert cli("lint").code == 0
    status = cli("status", "--target", "t", *source, "--json")
    assert {r["state"] for u in status.json["upstreams"] for r in u["patches"]} == {"clean"}, status.out
    into = tmp_path / "build"
    result = cli("apply", "--target", "t", "--into", str(into), *source)
    assert result.code == 0, result.out + result.err
    return into / name


def same_files(left: Path, right: Path, paths) -> None:
    for path in paths:
        assert (left / path).read_bytes() == (right / path).read_bytes(), path


def nothing_written(project) -> None:
    assert not list((project.root / "manifests").iterdir()) and not list((project.root / "patches").iterdir())


BUILD_SH = """\
#!/bin/bash
# clones the upstream at its pin and applies the team's patches, as the image's RUN does
set -euo pipefail
cd "$(dirname "$0")"
LIB_COMMIT={pin}
git clone {url}
cd lib
git checkout -q "$LIB_COMMIT"
git apply ../patches/core.diff
cd ..
(cd lib && patch -p1 -s < ../patches/extra.diff)
"""


def script_repository(tmp_path: Path, lib: UpstreamRepo, pin: str) -> Path:
    image = tmp_path / "image"
    (image / "patches").mkdir(parents=True)
    (image / "patches" / "core.diff").write_bytes(dirty_diff(lib, pin, CORE))
    (image / "patches" / "extra.diff").write_bytes(dirty_diff(lib, pin, EXTRA))
    (image / "build.sh").write_text(BUILD_SH.format(pin=pin, url=URL.format("lib")))
    git(image, "init", "-q")
    git(image, "add", "-A")
    git(image, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "the image")
    return image


def test_a_build_script_imports_alone_as_bash_runs_it(tmp_path, cli, project):
    lib = three_file_upstream(tmp_path)
    pin = lib.head()
    lib.commit({"README": "later\n"}, "upstream moves on")
    image = script_repository(tmp_path, lib, pin)
    ran = tmp_path / "ran"
    shutil.copytree(image, ran)
    run_recipe(ran / "build.sh", {"lib": lib.path})  # bash, git apply and patch themselves
    source = ["--source", f"lib={lib.path}"]
    result = cli("import", "--target", "t", "--script", str(image / "build.sh"), *source, "--json")
    assert result.code == 0, result.out + result.err
    (up,) = result.json["upstreams"]
    assert up["name"] == "lib" and up["pin"] == pin and up["git"] == URL.format("lib")
    assert [p["id"] for p in up["pieces"]] == ["a", "b", "c"]  # core.diff, then extra.diff, as the script applies
    manifest = (project.root / "manifests/t.toml").read_text()
    assert "patches/core.diff + patches/extra.diff" in manifest and str(tmp_path) not in manifest
    same_files(applied_by_patchmgr(cli, project, tmp_path, "lib", *source), ran / "lib", FILES)


def test_a_dockerfile_run_that_calls_the_build_script_follows_it(tmp_path, cli, project):
    """The script is copied in and run with `bash` from the WORKDIR: its paths are the image's, traced to the
    build context; its errors name the script's own line."""
    lib = three_file_upstream(tmp_path)
    pin = lib.head()
    image = script_repository(tmp_path, lib, pin)
    script = (image / "build.sh").read_text().replace('cd "$(dirname "$0")"\n', "")
    (image / "build.sh").write_text(script.replace("../patches/", "/opt/patches/"))
    (image / "Dockerfile").write_text(
        "FROM ubuntu:22.04\nWORKDIR /ws\nCOPY patches/ /opt/patches/\nCOPY build.sh /ws/\nRUN bash build.sh\n"
    )
    source = ["--source", f"lib={lib.path}"]
    result = cli("import", "--target", "t", "--dockerfile", str(image / "Dockerfile"), *source, "--json")
    assert result.code == 0, result.out + result.err
    assert [p["id"] for p in result.json["upstreams"][0]["pieces"]] == ["a", "b", "c"]
    reference = git_applied(lib, pin, [(image / "patches" / n).read_bytes() for n in ("core.diff", "extra.diff")],
                            tmp_path / "ref")  # fmt: skip
    same_files(applied_by_patchmgr(cli, project, tmp_path, "lib", *source), reference, FILES)
    (image / "Dockerfile").write_text((image / "Dockerfile").read_text().replace("COPY patches/ /opt/patches/\n", ""))
    missing = cli("import", "--target", "u", "--dockerfile", str(image / "Dockerfile"), *source)
    assert missing.code == 2 and f"{(image / 'build.sh').resolve()}:8: applies /opt/patches/core.diff" in missing.err
    assert "Traceback" not in missing.err


def test_a_script_patch_that_is_not_in_its_repository_is_one_error_naming_the_line(tmp_path, cli, project):
    lib = three_file_upstream(tmp_path)
    image = script_repository(tmp_path, lib, lib.head())
    (image / "patches" / "extra.diff").unlink()
    result = cli("import", "--target", "t", "--script", str(image / "build.sh"), "--source", f"lib={lib.path}")
    lines = result.err.splitlines()
    assert result.code == 2 and len(lines) == 2 and lines[1].startswith("hint: "), result.out + result.err
    assert lines[0].startswith(f"error: {image / 'build.sh'}:11: applies {image.resolve()}/patches/extra.diff")
    nothing_written(project)


HEREDOC_DOCKERFILE = """\
FROM ubuntu:22.04
WORKDIR /ws
RUN git clone {url} && cd lib && git checkout {pin}
RUN cd /ws/lib && git apply <<'EOP'
{core}EOP
RUN <<'EOS'
set -e
cd /ws/lib
# the fix on top, given to patch on stdin as well
patch -p1 <<-"EOF"
{extra}\tEOF
EOS
"""


def test_a_dockerfile_here_document_patch_is_extracted_into_patches(tmp_path, cli, project):
    lib = three_file_upstream(tmp_path)
    pin = lib.head()
    core, extra = dirty_diff(lib, pin, CORE), dirty_diff(lib, pin, EXTRA)
    docker = tmp_path / "image" / "docker"
    docker.mkdir(parents=True)
    text = HEREDOC_DOCKERFILE.format(url=URL.format("lib"), pin=pin, core=core.decode(), extra=extra.decode())
    (docker / "Dockerfile").write_text(text)
    source = ["--source", f"lib={lib.path}"]
    result = cli("import", "--target", "t", "--dockerfile", str(docker / "Dockerfile"), *source, "--json")
    assert result.code == 0, result.out + result.err
    (up,) = result.json["upstreams"]
    assert up["pin"] == pin and [p["id"] for p in up["pieces"]] == ["a", "b", "c"]
    header = (project.root / "patches/lib/c.patch").read_text().split("\n---\n")[0]
    second = 1 + text.splitlines().index('patch -p1 <<-"EOF"')
    assert "imported from Dockerfile:4 (sha256 " in header and f" + Dockerfile:{second} (sha256" in header, header
    manifest = (project.root / "manifests/t.toml").read_text()
    assert f"Dockerfile:4 + Dockerfile:{second}" in manifest and str(tmp_path) not in manifest
    reference = git_applied(lib, pin, [core, extra], tmp_path / "ref")  # git apply of the heredocs' text
    same_files(applied_by_patchmgr(cli, project, tmp_path, "lib", *source), reference, FILES)


def test_an_unquoted_here_document_the_shell_would_change_is_refused(tmp_path, cli, project):
    lib = three_file_upstream(tmp_path)
    pin = lib.head()
    patch = dirty_diff(lib, pin, {"src/a.py": text_with({5: "price = '$HOME'"})}).decode()
    docker = tmp_path / "image"
    docker.mkdir()
    (docker / "Dockerfile").write_text(
        f"FROM b\nRUN git clone {URL.format('lib')} /ws/lib && git -C /ws/lib checkout {pin}\n"
        f"RUN cd /ws/lib && git apply <<EOP\n{patch}EOP\n"
    )
    result = cli("import", "--target", "t", "--dockerfile", str(docker / "Dockerfile"), "--source", f"lib={lib.path}")
    assert result.code == 2, result.out + result.err
    line = 4 + patch.splitlines().index("+price = '$HOME'")
    assert f"Dockerfile:{line}: the here-document <<EOP holding the patch has an unquoted delimiter" in result.err
    assert "hint: quote the delimiter (<<'EOP')" in result.err
    nothing_written(project)


def team_patches(tmp_path: Path, lib: UpstreamRepo, pin: str) -> tuple[UpstreamRepo, str]:
    """The team's own patch repository: lib/fix.diff at the commit the recipe checks out, changed after it."""
    patches = UpstreamRepo(tmp_path / "team-patches")
    at = patches.commit({"lib/fix.diff": dirty_diff(lib, pin, {**CORE, **EXTRA})}, "the fixes")
    patches.commit({"lib/fix.diff": dirty_diff(lib, pin, {"src/a.py": text_with({7: "later"})})}, "later")
    return patches, at


def test_a_patch_copied_out_of_another_clone_is_read_from_that_clone(tmp_path, cli, project):
    lib = three_file_upstream(tmp_path)
    pin = lib.head()
    patches, at = team_patches(tmp_path, lib, pin)
    image = tmp_path / "image"
    image.mkdir()
    (image / "build.sh").write_text(
        'set -e\ncd "$(dirname "$0")"\n'
        f"git clone -q {URL.format('team-patches')}\ngit -C team-patches checkout -q {at}\n"
        "mkdir -p out && cp team-patches/lib/fix.diff out/ && mv out/fix.diff out/lib.diff\n"
        f"git clone -q {URL.format('lib')}\ncd lib && git checkout -q {pin} && git apply ../out/lib.diff\n"
    )
    ran = tmp_path / "ran"
    shutil.copytree(image, ran)
    run_recipe(ran / "build.sh", {"lib": lib.path, "team-patches": patches.path})
    source = ["--source", f"lib={lib.path}", "--source", f"team-patches={patches.path}"]
    result = cli("import", "--target", "t", "--script", str(image / "build.sh"), *source, "--json")
    assert result.code == 0, result.out + result.err
    (up,) = result.json["upstreams"]
    assert up["name"] == "lib" and [p["id"] for p in up["pieces"]] == ["a", "b", "c"]  # the fix at `at`, not HEAD's
    manifest = (project.root / "manifests/t.toml").read_text()
    assert f"lib/fix.diff in {URL.format('team-patches')} at commit {at[:12]}" in manifest, manifest
    same_files(applied_by_patchmgr(cli, project, tmp_path, "lib", source[0], source[1]), ran / "lib", FILES)


def test_a_patch_copied_from_a_stage_that_clones_it_is_read_from_that_clone(tmp_path, cli, project):
    lib = three_file_upstream(tmp_path)
    pin = lib.head()
    patches, at = team_patches(tmp_path, lib, pin)
    docker = tmp_path / "image"
    docker.mkdir()
    (docker / "Dockerfile").write_text(
        f"FROM alpine/git AS fetch\nRUN git clone {URL.format('team-patches')} /src/p && git -C /src/p checkout {at}\n"
        f"FROM ubuntu:22.04\nCOPY --from=fetch /src/p/lib/ /tmp/p/\n"
        f"RUN git clone {URL.format('lib')} /ws/lib && cd /ws/lib && git checkout {pin} && git apply /tmp/p/fix.diff\n"
    )
    source = ["--source", f"lib={lib.path}", "--source", f"p={patches.path}"]
    result = cli("import", "--target", "t", "--dockerfile", str(docker / "Dockerfile"), *source, "--json")
    assert result.code == 0, result.out + result.err
    assert [p["id"] for p in result.json["upstreams"][0]["pieces"]] == ["a", "b", "c"]
    reference = git_applied(lib, pin, [git(patches.path, "show", f"{at}:lib/fix.diff").encode() + b"\n"],
                            tmp_path / "ref")  # fmt: skip
    same_files(applied_by_patchmgr(cli, project, tmp_path, "lib", source[0], source[1]), reference, FILES)


BASE_IMAGE = """\
FROM quay.io/ascend/vllm-ascend:v0.11.0
COPY fix.patch /tmp/
RUN cd /vllm-workspace/vllm-ascend && git apply /tmp/fix.patch
"""


def test_a_checkout_from_the_base_image_is_named_with_checkout(tmp_path, cli, project):
    ascend = UpstreamRepo(tmp_path / "vllm-ascend")
    ascend.commit({"vllm_ascend/worker.py": BASE_TEXT, "README": "x\n"}, "initial")
    release = ascend.commit({"vllm_ascend/ops.py": BASE_TEXT}, "v0.11.0")
    git(ascend.path, "tag", "v0.11.0")
    ascend.commit({"vllm_ascend/worker.py": text_with({3: "main moved"})}, "main moves on")
    docker = tmp_path / "image"
    docker.mkdir()
    fix = dirty_diff(ascend, release, {"vllm_ascend/worker.py": text_with({12: "npu fix"})})
    (docker / "fix.patch").write_bytes(fix)
    (docker / "Dockerfile").write_text(BASE_IMAGE)
    args = ["import", "--target", "t", "--dockerfile", str(docker / "Dockerfile")]
    source = ["--source", f"vllm-ascend={ascend.path}"]
    unnamed = cli(*args, *source)
    lines = unnamed.err.splitlines()
    assert unnamed.code == 2 and len(lines) == 2, unnamed.out + unnamed.err
    assert lines[0] == (
        f"error: {docker / 'Dockerfile'}:3: /tmp/fix.patch is applied in /vllm-workspace/vllm-ascend, which no "
        "`git clone` of the Dockerfile makes"
    )
    assert "--checkout /vllm-workspace/vllm-ascend=vllm-ascend@REF --git vllm-ascend=URL" in lines[1]
    assert "quay.io/ascend/vllm-ascend:v0.11.0" in lines[1] and "v0.11.0 may be the pin" in lines[1]
    nothing_written(project)
    named = ["--checkout", "/vllm-workspace/vllm-ascend=vllm-ascend@v0.11.0", "--git", f"vllm-ascend={URL.format('x')}"]
    result = cli(*args, *named, *source, "--json")
    assert result.code == 0, result.out + result.err
    (up,) = result.json["upstreams"]
    assert up["name"] == "vllm-ascend" and up["pin"] == release and up["git"] == URL.format("x")
    reference = git_applied(ascend, "v0.11.0", [fix], tmp_path / "ref")
    same_files(
        applied_by_patchmgr(cli, project, tmp_path, "vllm-ascend", *source), reference, ["vllm_ascend/worker.py"]
    )
    typo = cli(*args, "--checkout", "/vllm-workspace/vllm=vllm@v1", "--target", "u", *source)
    assert typo.code == 2 and "the recipe applies no patch in /vllm-workspace/vllm " in typo.err, typo.err
