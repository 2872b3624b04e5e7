"""patchmgr import: a monolithic patch set from real histories becomes a pinned, documented series."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path, PurePosixPath

from support.gitrepos import BASE_TEXT, UpstreamRepo, git
from support.monolith import (
    MONOLITH,
    URL,
    applied_monolith,
    dirty_diff,
    fill_stubs,
    import_args,
    same_files,
    text_with,
    three_file_upstream,
)


def test_several_fixes_one_carried_upstream_at_the_dockerfile_pin(tmp_path, cli, project):
    lib = three_file_upstream(tmp_path)
    made_at = lib.head()
    mono = dirty_diff(lib, made_at, MONOLITH)
    carrier = lib.commit({"src/c.py": MONOLITH["src/c.py"]}, "Fix c the same way (#12)")
    pin = lib.commit({"src/a.py": "# header\n# more\n" + BASE_TEXT}, "a: header")
    patch_file = tmp_path / "team" / "lib.patch"
    patch_file.parent.mkdir()
    patch_file.write_bytes(mono)
    dockerfile = tmp_path / "team" / "Dockerfile"
    dockerfile.write_text(
        f"FROM base\nRUN git clone --depth 1 {URL.format('lib')} /ws/lib && \\\n"
        f"    cd /ws/lib && git checkout {pin}\nRUN cd /ws/lib && git apply /tmp/lib.patch\n"
    )
    source = ["--source", f"lib={lib.path}"]
    result = cli("import", str(patch_file), "--target", "t", "--dockerfile", str(dockerfile), *source, "--json")
    assert result.code == 0, result.out + result.err
    doc = json.loads(result.out)
    assert doc["command"] == "import" and doc["ok"] and doc["action"] == "imported"
    (up,) = doc["upstreams"]
    assert up["base"]["commit"] == made_at and up["base"]["how"] == "index" and up["pin"] == pin
    states = {p["id"]: (p["state"], p["imported"]) for p in up["pieces"]}
    assert states == {"a": ("offset", True), "b": ("clean", True), "c": ("upstream", False)}  # a: made again at the pin
    carried = next(p for p in up["pieces"] if p["id"] == "c")
    assert carried["carrier"] == carrier and carrier in carried["evidence"]
    assert all(p["ok"] for p in up["proofs"]) and [p["commit"] for p in up["proofs"]] == [pin, made_at]
    manifest = (project.root / "manifests/t.toml").read_text()
    assert f'commit = "{pin}"' in manifest and 'patches = ["a", "b"]' in manifest
    assert not (project.root / "patches/lib/c.patch").exists()
    piece = (project.root / "patches/lib/a.patch").read_text()
    assert "Description: TODO: describe what this fixes and why (src/a.py)" in piece
    assert "Origin: vendor, imported from lib.patch (sha256 " in piece and str(tmp_path) not in piece  # outside git
    assert made_at in piece and "Upstream-Status: Pending" in piece

    lint = cli("lint")
    assert lint.code == 1 and lint.out.count("DEP-3 stub left by patchmgr import") == 2, lint.out
    fill_stubs(project.root)
    lint = cli("lint")
    assert lint.code == 0, lint.out + lint.err
    status = cli("status", "--target", "t", *source, "--json")
    assert status.code == 0, status.out + status.err
    assert {r["state"] for u in status.json["upstreams"] for r in u["patches"]} == {"clean"}

    into = tmp_path / "build"
    assert cli("apply", "--target", "t", "--into", str(into), *source).code == 0
    reference = applied_monolith(lib.path, pin, mono, tmp_path / "ref", exclude=["src/c.py"])
    same_files(into / "lib", reference, ["src/a.py", "src/b.py", "src/c.py", "README"])
    assert (into / "lib/src/c.py").read_text() == MONOLITH["src/c.py"]  # upstream's own copy of the fix


def test_dirty_tree_patch_with_fake_index_lines_is_pinned_where_it_applies(tmp_path, cli, project):
    lib = three_file_upstream(tmp_path)
    made_at = lib.head()
    mono = dirty_diff(lib, made_at, {"src/a.py": MONOLITH["src/a.py"], "src/b.py": MONOLITH["src/b.py"]})
    fake = re.sub(rb"^index [0-9a-f]+\.\.[0-9a-f]+", b"index 1234567..89abcde", mono, flags=re.M)
    assert fake != mono
    lib.commit({"src/c.py": text_with({3: "later"})}, "c: later")  # the patch still applies here
    lib.commit({"src/a.py": text_with({5: "upstream rewrote line 5"})}, "a: rewrite")  # ... and no more here
    patch_file = tmp_path / "work.patch"
    patch_file.write_bytes(fake)
    source = ["--source", f"lib={lib.path}"]
    result = cli(*import_args(lib, patch_file, upstream="lib"), "--split", "hunk", "--json")
    assert result.code == 0, result.out + result.err
    (up,) = result.json["upstreams"]
    assert up["base"]["how"] == "applies" and up["pin"] == git(lib.path, "rev-parse", "HEAD~1")
    assert any("not found in those files' history" in note and "src/a.py (1234567)" in note for note in up["notes"])
    assert [p["id"] for p in up["pieces"]] == ["a", "b-hunk-1", "b-hunk-2"]
    assert all(p["state"] == "clean" for p in up["pieces"]) and up["proven"]
    for piece in (project.root / "patches/lib").iterdir():
        assert "1234567" not in piece.read_text() and re.search(
            r"^index [0-9a-f]{40}\.\.[0-9a-f]{40}", piece.read_text(), re.M
        )
    fill_stubs(project.root)
    assert cli("lint").code == 0
    status = cli("status", "--target", "t", *source, "--json")
    assert status.code == 0 and [r["state"] for r in status.json["upstreams"][0]["patches"]] == ["clean"] * 3
    into = tmp_path / "build"
    assert cli("apply", "--target", "t", "--into", str(into), *source).code == 0
    reference = applied_monolith(lib.path, up["pin"], fake, tmp_path / "ref")
    same_files(into / "lib", reference, ["src/a.py", "src/b.py", "src/c.py"])


def test_one_fake_index_line_among_real_ones_still_finds_the_base_by_blob_ids(tmp_path, cli, project):
    lib = three_file_upstream(tmp_path)
    made_at = lib.head()
    mono = dirty_diff(lib, made_at, MONOLITH)
    first = re.search(rb"^index [0-9a-f]+\.\.[0-9a-f]+", mono, re.M).group(0)
    mono = mono.replace(first, b"index abcdef1..1234567", 1)
    lib.commit({"README": "more docs\n"}, "docs again")
    lib.commit({"src/b.py": text_with({1: "b head"})}, "b: head")
    (tmp_path / "lib.patch").write_bytes(mono)
    result = cli(*import_args(lib, tmp_path / "lib.patch"), "--json")
    assert result.code == 0, result.out + result.err
    (up,) = result.json["upstreams"]
    assert up["base"]["how"] == "index" and "only 2 of 3 files" in up["base"]["detail"]
    assert up["base"]["partial"] is True and up["base"]["blobs_matched"] == {"files": 2, "of": 3}
    assert up["pin"] == git(lib.path, "rev-parse", "HEAD~1")  # the newest commit with those blobs
    assert any("src/a.py (abcdef1)" in note for note in up["notes"])


def two_upstream_series(tmp_path: Path):
    lib = three_file_upstream(tmp_path, "Megatron-Bridge")
    tool = UpstreamRepo(tmp_path / "MindSpeed")
    tool.commit({"tool.py": BASE_TEXT, "pkg/x.py": BASE_TEXT}, "tool initial")
    team = tmp_path / "team"
    folder = team / "docker" / "npu_patch"
    folder.mkdir(parents=True)
    monos = {
        "megatron-bridge": dirty_diff(lib, lib.head(), MONOLITH),
        "mindspeed": dirty_diff(
            tool,
            tool.head(),
            {
                "tool.py": text_with({7: "t fix", 30: "t two"}),
                "pkg/x.py": text_with({2: "x"}),
                "pkg/new.py": "new = 1\n",
            },
        ),
    }
    for name, data in monos.items():
        (folder / f"{name}.patch").write_bytes(data)
    (folder / "series.conf").write_text(
        "# target_worktree|image_patch|source_patch\n"
        "/ws/Megatron-Bridge|megatron-bridge.patch|docker/npu_patch/megatron-bridge.patch\n"
        "\n  # MindSpeed after Megatron-Bridge\n"
        "/ws/MindSpeed|mindspeed.patch|docker/npu_patch/mindspeed.patch  # the NPU fixes\n"
    )
    (team / "Dockerfile").write_text(
        f"RUN git clone {URL.format('Megatron-Bridge')} /ws/Megatron-Bridge && "
        f"git -C /ws/Megatron-Bridge checkout {lib.head()}\n"
        f"RUN git clone -b master {URL.format('MindSpeed')} /ws/MindSpeed\n"
        f"RUN cd /ws/MindSpeed && git checkout {tool.head()[:10]}\n"
    )  # abbreviated, as people write them
    git(team, "init", "-q")
    git(team, "add", "-A")
    git(team, "commit", "-q", "-m", "npu patches")
    sources = ["--source", f"megatron-bridge={lib.path}", "--source", f"mindspeed={tool.path}"]
    return lib, tool, team, monos, sources


def test_series_conf_with_comments_and_two_upstreams(tmp_path, cli, project):
    lib, tool, team, monos, sources = two_upstream_series(tmp_path)
    result = cli(
        "import",
        str(team / "docker/npu_patch/series.conf"),
        "--target",
        "npu",
        "--dockerfile",
        str(team / "Dockerfile"),
        *sources,
    )
    assert result.code == 0, result.out + result.err
    assert "proven: 3 piece(s) and the monolithic patch" in result.out and "proven: 3 piece(s)" in result.out
    assert "imported 6 piece(s) of 2 upstream(s) into target npu" in result.out
    assert f"note: the abbreviated pin {tool.head()[:10]} is {tool.head()}\n" in result.out
    doc = json.loads(cli("status", "--target", "npu", *sources, "--json").out)
    assert [u["name"] for u in doc["upstreams"]] == ["megatron-bridge", "mindspeed"]
    manifest = (project.root / "manifests/npu.toml").read_text()
    at = git(team, "rev-parse", "HEAD")[:12]  # the image repository's commit of the patch
    comment = (
        f"# imported from docker/npu_patch/megatron-bridge.patch at commit {at}, which applies at this pin as given"
    )
    assert "base found" not in manifest
    assert f'commit = "{lib.head()}"  {comment}' in manifest
    assert 'git = "https://example.invalid/MindSpeed.git"' in manifest
    origin = (
        f"Origin: vendor, imported from docker/npu_patch/mindspeed.patch at commit {git(team, 'rev-parse', 'HEAD')}"
    )
    assert origin in (project.root / "patches/mindspeed/tool.patch").read_text()
    assert cli("lint").code == 1
    fill_stubs(project.root)
    assert cli("lint").code == 0
    assert cli("status", "--target", "npu", *sources).code == 0
    into = tmp_path / "build"
    assert cli("apply", "--target", "npu", "--into", str(into), *sources).code == 0
    for repo, name, paths in (
        (lib, "megatron-bridge", MONOLITH),
        (tool, "mindspeed", ["tool.py", "pkg/x.py", "pkg/new.py"]),
    ):
        reference = applied_monolith(repo.path, repo.head(), monos[name], tmp_path / f"ref-{name}")
        same_files(into / name, reference, paths)


def test_per_version_folder_pins_the_version_tag(tmp_path, cli, project):
    lib = three_file_upstream(tmp_path)
    git(lib.path, "tag", "v1.0.0")
    old = lib.head()
    lib.commit({"src/c.py": text_with({20: "upstream moved on"})}, "later work")
    folder = tmp_path / "docker" / "patch"
    for version, files in (("0.9.0", {"src/a.py": MONOLITH["src/a.py"]}), ("1.0.0", MONOLITH)):
        (folder / version).mkdir(parents=True)
        (folder / version / "lib.patch").write_bytes(dirty_diff(lib, old, files))
    result = cli(*import_args(lib, folder), "--json")
    assert result.code == 0, result.out + result.err
    (up,) = result.json["upstreams"]
    assert up["pin"] == old and up["base"]["how"] == "given" and len(up["pieces"]) == 3
    assert any("tag v1.0.0" in note for note in up["notes"])
    manifest = (project.root / "manifests/t.toml").read_text()
    assert 'version = "1.0.0"' in manifest and "# imported from 1.0.0/lib.patch, " in manifest  # outside git
    assert str(tmp_path) not in manifest + (project.root / "patches/lib/a.patch").read_text()
    fill_stubs(project.root)
    assert cli("lint").code == 0 and cli("status", "--target", "t", "--source", f"lib={lib.path}").code == 0


def test_mapping_file_topics_and_appending_keeps_the_manifest_comments(tmp_path, cli, project):
    lib = three_file_upstream(tmp_path)
    other = UpstreamRepo(tmp_path / "other")
    other_pin = other.commit({"o.py": BASE_TEXT}, "o")
    project.add_patch("other", "keep", other.make_patch(other_pin, {"o.py": text_with({3: "o"})}, "Keep"))
    manifest = project.root / "manifests/t.toml"
    manifest.write_text(
        '# our target, kept by hand\n[target]\nname = "t"\ndescription = "mine"\n\n'
        f'[upstreams.other]  # the other one\ngit = "{URL.format("other")}"\n'
        f'commit = "{other_pin}"  # pinned by hand\npatches = ["keep"]\n'
    )
    (tmp_path / "lib.patch").write_bytes(dirty_diff(lib, lib.head(), MONOLITH))
    (tmp_path / "map.toml").write_text(
        '# topics\nfirst-fix = ["src/b.py#2", "src/a.py"]\nsecond-fix = ["src/b.py#1"]\n'
    )
    result = cli(*import_args(lib, tmp_path / "lib.patch"), "--map", str(tmp_path / "map.toml"), "--json")
    assert result.code == 0, result.out + result.err
    (up,) = result.json["upstreams"]
    assert [(p["id"], p["takes"]) for p in up["pieces"]] == [
        ("first-fix", "src/a.py; src/b.py hunk #2 of 2"),
        ("second-fix", "src/b.py hunk #1 of 2"),
        ("c", "src/c.py"),
    ]
    assert any("leaves out src/c.py" in note for note in up["notes"]) and up["proven"]
    text = manifest.read_text()
    assert text.startswith("# our target, kept by hand\n") and "# pinned by hand" in text and "# the other one" in text
    assert "[upstreams.lib]" in text
    fill_stubs(project.root)
    assert cli("lint").code == 0


def test_existing_patch_files_are_never_overwritten_and_nothing_is_written(tmp_path, cli, project):
    lib = three_file_upstream(tmp_path)
    (tmp_path / "lib.patch").write_bytes(dirty_diff(lib, lib.head(), MONOLITH))
    mine = project.add_patch("lib", "b", b"mine\n")
    result = cli(*import_args(lib, tmp_path / "lib.patch"))
    assert result.code == 2 and "patches/lib/b.patch exists; import never overwrites" in result.err, result.err
    assert mine.read_bytes() == b"mine\n" and not (project.root / "manifests/t.toml").exists()
    assert sorted(p.name for p in (project.root / "patches/lib").iterdir()) == ["b.patch"]


def test_bad_input_is_one_clear_message_and_nothing_written(tmp_path, cli, project):
    lib = three_file_upstream(tmp_path)
    conf = tmp_path / "series.conf"
    conf.write_text("# ok\n/ws/lib|lib.patch\n")
    result = cli("import", str(conf), "--target", "t")
    assert result.code == 2 and result.err.startswith(f"error: {conf}:2: '/ws/lib|lib.patch' is not "), result.err
    assert "Traceback" not in result.err and "hint:" in result.err
    (tmp_path / "lib.patch").write_bytes(dirty_diff(lib, lib.head(), MONOLITH))
    no_url = cli("import", str(tmp_path / "lib.patch"), "--target", "t", "--source", f"lib={lib.path}")
    assert no_url.code == 2 and "no git URL for upstream lib" in no_url.err
    unrelated = tmp_path / "other.patch"
    unrelated.write_bytes(dirty_diff(lib, lib.head(), MONOLITH).replace(b"-line 5\n", b"-line 5 is not here\n"))
    nowhere = cli(*import_args(lib, unrelated, upstream="lib"))
    assert nowhere.code == 2 and "found no upstream commit" in nowhere.err, nowhere.err
    assert not list((project.root / "manifests").iterdir()) and not list((project.root / "patches").iterdir())


def test_dry_run_writes_nothing(tmp_path, cli, project):
    lib = three_file_upstream(tmp_path)
    (tmp_path / "lib.patch").write_bytes(dirty_diff(lib, lib.head(), MONOLITH))
    result = cli(*import_args(lib, tmp_path / "lib.patch"), "--dry-run")
    assert result.code == 0 and "dry run: would import 3 piece(s)" in result.out, result.out + result.err
    assert not list((project.root / "manifests").iterdir())
    shutil.rmtree(tmp_path / "cache", ignore_errors=True)


def test_dockerfile_clone_and_checkout_lines_give_urls_and_pins(tmp_path):
    from patchmgr.maintain.importing.dockerfile import read_dockerfile

    dockerfile = tmp_path / "Dockerfile"
    dockerfile.write_text(
        "FROM base\nWORKDIR /workspace\n"
        "RUN git clone https://gitcode.com/Ascend/MindSpeed.git && cd MindSpeed && git checkout fc63de5c4842\n"
        "RUN git clone -b v0.4.2 --depth 1 https://github.com/NVIDIA-NeMo/Megatron-Bridge.git \\\n"
        "    && git -C Megatron-Bridge checkout c810129341a8\n"
        "RUN git clone https://github.com/example/tools.git /opt/tools\n"
        "WORKDIR /workspace/mbridge\n"
        "RUN git clone https://github.com/ISEEKYAN/mbridge.git . && git checkout b614d7ae6faa  # the pin\n"
    )
    built = read_dockerfile(dockerfile)
    found = {PurePosixPath(c.folder).name.lower(): (c.url.text, c.ref.text if c.ref else None) for c in built.checkouts}
    assert found == {
        "mindspeed": ("https://gitcode.com/Ascend/MindSpeed.git", "fc63de5c4842"),
        "megatron-bridge": ("https://github.com/NVIDIA-NeMo/Megatron-Bridge.git", "c810129341a8"),
        "tools": ("https://github.com/example/tools.git", None),
        "mbridge": ("https://github.com/ISEEKYAN/mbridge.git", "b614d7ae6faa"),
    }


def test_appending_to_an_upstream_the_target_has_keeps_its_pin_and_series(tmp_path, cli, project):
    lib = three_file_upstream(tmp_path)
    pin = lib.head()
    project.add_patch("lib", "keep", lib.make_patch(pin, {"src/c.py": text_with({2: "kept"})}, "Keep"))
    project.manifest("t", {"lib": {"git": URL.format("lib"), "commit": pin, "patches": ["keep"]}})
    lib.commit({"src/a.py": text_with({39: "later"})}, "later")
    (tmp_path / "lib.patch").write_bytes(dirty_diff(lib, pin, {"src/a.py": MONOLITH["src/a.py"]}))
    source = ["--source", f"lib={lib.path}"]
    result = cli("import", str(tmp_path / "lib.patch"), "--target", "t", *source, "--json")
    assert result.code == 0, result.out + result.err
    assert result.json["upstreams"][0]["pin"] == pin
    text = (project.root / "manifests/t.toml").read_text()
    assert f'commit = "{pin}"' in text and 'patches = ["keep", "a"]' in text
    fill_stubs(project.root)
    assert cli("lint").code == 0 and cli("status", "--target", "t", *source).code == 0


def test_split_options_are_checked_before_anything_runs(tmp_path, cli, project):
    lib = three_file_upstream(tmp_path)
    (tmp_path / "lib.patch").write_bytes(dirty_diff(lib, lib.head(), MONOLITH))
    args = import_args(lib, tmp_path / "lib.patch")
    (tmp_path / "map.toml").write_text('topic = ["src/nowhere.py"]\n')
    cases = [
        (["--split", "line"], "--split 'line' is not one of: file, hunk"),
        (["--split", "hunk", "--map", str(tmp_path / "map.toml")], "--map and --split hunk both say"),
        (["--map", str(tmp_path / "map.toml")], "--map names what no imported patch changes: src/nowhere.py"),
    ]
    for extra, message in cases:
        result = cli(*args, *extra)
        assert result.code == 2 and message in result.err, result.err
    (tmp_path / "map.toml").write_text('topic = ["src/b.py#3"]\n')
    result = cli(*args, "--map", str(tmp_path / "map.toml"))
    assert result.code == 2 and "src/b.py has hunks #1 to #2" in result.err, result.err
    assert not list((project.root / "manifests").iterdir())


def test_the_proof_names_the_files_where_series_and_monolith_differ(tmp_path):
    from patchmgr.io.git import GitRepo
    from patchmgr.maintain.importing.prove import prove
    from patchmgr.maintain.importing.scratch import Scratch
    from patchmgr.sources.upstream import GitSource

    lib = three_file_upstream(tmp_path)
    head = lib.head()
    mono = dirty_diff(lib, head, MONOLITH)
    first = dirty_diff(lib, head, {"src/a.py": MONOLITH["src/a.py"]})
    rest = dirty_diff(lib, head, {"src/b.py": MONOLITH["src/b.py"], "src/c.py": MONOLITH["src/c.py"]})
    paths = ["src/a.py", "src/b.py", "src/c.py"]
    with Scratch() as scratch, GitRepo(lib.path) as repo:
        reader = GitSource(repo, head, str(lib.path))
        short = prove(scratch, reader, head, mono, paths, [first])
        whole = prove(scratch, reader, head, mono, paths, [first, rest])
        broken = prove(scratch, reader, head, mono, paths, [rest, rest])
    assert not short.ok and short.detail == "the files differ: src/b.py, src/c.py"
    assert whole.ok and whole.files == 3
    assert not broken.ok and "git apply of piece 2 fails" in broken.detail


def test_a_wrong_pin_is_replaced_by_the_base_with_a_note(tmp_path, cli, project):
    lib = three_file_upstream(tmp_path)
    made_at = lib.head()
    mono = dirty_diff(lib, made_at, MONOLITH)
    wrong = lib.commit({"src/b.py": text_with({10: "upstream rewrote line 10"})}, "b: rewrite")
    (tmp_path / "lib.patch").write_bytes(mono)
    result = cli(*import_args(lib, tmp_path / "lib.patch"), "--pin", f"lib={wrong}", "--json")
    assert result.code == 0, result.out + result.err
    (up,) = result.json["upstreams"]
    assert up["pin"] == made_at and up["base"]["how"] == "index"
    assert any(f"the given pin {wrong[:12]} does not fit: b is conflict there" in n for n in up["notes"]), up["notes"]
    assert all(p["imported"] for p in up["pieces"]) and up["proven"]


def release_branch_upstream(tmp_path: Path):
    """main moves on; the release v0.4.2 sits on branch r0.4, off main's first-parent line, with its own a.py."""
    lib = three_file_upstream(tmp_path)
    fork = lib.head()
    git(lib.path, "checkout", "-q", "-b", "r0.4", fork)
    release = lib.commit({"src/a.py": text_with({20: "release-only change"})}, "a: release fix")
    git(lib.path, "tag", "-a", "-m", "v0.4.2", "v0.4.2", release)  # annotated: its commit is found peeled
    git(lib.path, "checkout", "-q", "main")
    lib.commit({"src/a.py": text_with({40: "main-only change"})}, "a: main change")  # b, c still match here
    lib.commit({"src/b.py": text_with({10: "upstream rewrote line 10"})}, "b: rewrite")
    carrier = lib.commit({"src/c.py": MONOLITH["src/c.py"]}, "Fix c the same way (#12)")
    git(lib.path, "tag", "v0.5.0", carrier)
    lib.commit({"README": "newer docs\n"}, "docs")
    return lib, release, carrier


def test_a_release_tag_off_the_line_is_the_base_when_its_blobs_all_match(tmp_path, cli, project):
    lib, release, carrier = release_branch_upstream(tmp_path)
    mono = dirty_diff(lib, release, {**MONOLITH, "src/a.py": text_with({5: "a fix", 20: "release-only change"})})
    (tmp_path / "lib.patch").write_bytes(mono)
    args = (*import_args(lib, tmp_path / "lib.patch"), "--pin", "lib=v0.5.0")
    text = cli(*args, "--dry-run")
    assert text.code == 0, text.out + text.err
    assert "match tag v0.4.2" in text.out and "partial" not in text.out.lower()
    assert f"c at the given pin {carrier[:12]}:" in text.out
    result = cli(*args, "--json")
    assert result.code == 0, result.out + result.err
    (up,) = result.json["upstreams"]
    base = up["base"]
    assert base["commit"] == release and base["how"] == "index" and base["tag"] == "v0.4.2", base
    assert "the preimage blobs of 3 of 3 files (index lines) match tag v0.4.2" in base["detail"]
    assert base["partial"] is False and base["blobs_matched"] == {"files": 3, "of": 3}
    # a.py's preimage blob is the release's: nothing is said to be missing
    assert not any("not found" in note or "never had" in note for note in up["notes"]), up["notes"]
    assert up["pin"] == release and up["proven"]  # v0.5.0 rejected: b conflicts there
    assert any(f"the given pin {carrier[:12]} does not fit: b is conflict there" in n for n in up["notes"])
    # what each piece is at the rejected pin: upstream already carries c there
    at_given = {p["id"]: p["at_given_pin"] for p in up["pieces"]}
    assert at_given["b"] == f"conflict at the given pin {carrier[:12]}"
    assert at_given["c"] == f"upstream at the given pin {carrier[:12]}: commit {carrier[:12]} carries it", at_given
    assert all(p["imported"] for p in up["pieces"])  # at the base every piece is needed
    manifest = (project.root / "manifests/t.toml").read_text()
    assert (
        f'commit = "{release}"  # imported from lib.patch, which was made against this commit '
        "(tag v0.4.2) (its index lines' blobs match)"
    ) in manifest, manifest


def test_a_tag_inside_the_matching_stretch_is_preferred_to_the_newest_commit(tmp_path, cli, project):
    lib = three_file_upstream(tmp_path)
    made_at = lib.head()
    mono = dirty_diff(lib, made_at, MONOLITH)
    tagged = lib.commit({"README": "docs 1.0\n"}, "release 1.0")
    git(lib.path, "tag", "v1.0.0", tagged)
    lib.commit({"README": "docs after 1.0\n"}, "docs")  # the newest commit with the same blobs
    (tmp_path / "lib.patch").write_bytes(mono)
    result = cli(*import_args(lib, tmp_path / "lib.patch"), "--json")
    assert result.code == 0, result.out + result.err
    (up,) = result.json["upstreams"]
    assert up["base"]["commit"] == tagged and up["pin"] == tagged and up["base"]["tag"] == "v1.0.0"
    assert "tag v1.0.0 among them" in up["base"]["detail"] and up["proven"]


def test_a_file_upstream_carries_part_of_is_proven_at_the_pin_by_what_the_series_holds(tmp_path, cli, project):
    """One hunk of b.py is upstream at the pin, the other is imported: the monolithic patch has no result at the
    pin for b.py, so the proof there is that all of its changes to b.py are in the series' result."""
    lib = three_file_upstream(tmp_path)
    made_at = lib.head()
    mono = dirty_diff(lib, made_at, MONOLITH)
    pin = lib.commit({"src/b.py": text_with({10: "b fix one"})}, "b: the first fix (#7)")
    patch_file = tmp_path / "lib.patch"
    patch_file.write_bytes(mono)
    result = cli(*import_args(lib, patch_file, upstream="lib"), "--pin", f"lib={pin}", "--split", "hunk", "--json")
    assert result.code == 0, result.out + result.err
    (up,) = result.json["upstreams"]
    states = {p["id"]: (p["state"], p["imported"]) for p in up["pieces"]}
    assert states["b-hunk-1"] == ("upstream", False) and states["b-hunk-2"][1], states
    at_pin = next(p for p in up["proofs"] if p["commit"] == pin)
    assert at_pin["ok"] and "src/b.py, which upstream carries part of" in at_pin["detail"], at_pin

    # the same proof fails when the series lacks a change the monolithic patch makes to that file
    from patchmgr.io.git import GitRepo
    from patchmgr.maintain.importing.prove import prove
    from patchmgr.maintain.importing.scratch import Scratch
    from patchmgr.sources.upstream import GitSource

    imported = [(project.root / "patches/lib" / f"{p['id']}.patch").read_bytes() for p in up["pieces"] if p["imported"]]
    without_b = [data for data in imported if b"src/b.py" not in data]
    reader = GitSource(GitRepo(lib.path), pin, str(lib.path))
    paths = ["src/a.py", "src/b.py", "src/c.py"]
    with Scratch() as scratch:
        assert prove(scratch, reader, pin, mono, paths, imported, partly=["src/b.py"]).ok
        short = prove(scratch, reader, pin, mono, paths, without_b, partly=["src/b.py"])
    assert not short.ok and "lacks a change the monolithic patch makes to src/b.py" in short.detail, short


def test_options_for_an_upstream_that_is_not_imported_are_refused(tmp_path, cli, project):
    lib = three_file_upstream(tmp_path)
    patch_file = tmp_path / "lib.patch"
    patch_file.write_bytes(dirty_diff(lib, lib.head(), MONOLITH))
    common = [
        str(patch_file),
        "--upstream",
        "lib",
        "--target",
        "t",
        "--git",
        f"lib={URL.format('lib')}",
        "--source",
        f"lib={lib.path}",
    ]
    for option, value in (
        ("--pin", "lbi=main"),
        ("--git", "other=https://example.invalid/o.git"),
        ("--search", "lbi=main"),
    ):
        result = cli("import", *common, option, value)
        assert result.code == 2, (option, result.out, result.err)
        assert f"error: {option} {value.split('=')[0]}: no patch imported here is for upstream" in result.err, (
            result.err
        )
        assert "hint:" in result.err and "Traceback" not in result.err
        assert not (project.root / "manifests/t.toml").exists() and not (project.root / "patches/lib").exists()
    folder = tmp_path / "versions" / "1.0"
    folder.mkdir(parents=True)
    shutil.copy(patch_file, folder / "lib.patch")
    result = cli("import", str(folder.parent), "--upstream", "lib", "--target", "t", "--source", f"lib={lib.path}")
    assert result.code == 2 and "is a series.conf or a folder" in result.err, result.err
