"""patchmgr export --format series: a target as the old image-repository layout, and back with import."""

from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path

from support.gitrepos import Project, UpstreamRepo, format_patch_of_head, git, make_series
from support.monolith import MONOLITH, URL, dirty_diff, fill_stubs, three_file_upstream
from support.real_histories import clone_of
from support.series_layout import sources, two_upstreams

from patchmgr.cli import main


def tree(folder: Path) -> dict[str, tuple[bytes, bool]]:
    """Every file below ``folder`` but git's own: its bytes and whether it is executable."""
    out = {}
    for path in sorted(folder.rglob("*")):
        relative = path.relative_to(folder)
        if relative.parts[0] in (".git", ".patchmgr-state") or not path.is_file():
            continue
        out[relative.as_posix()] = (path.read_bytes(), os.access(path, os.X_OK))
    return out


def snapshot(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_each_monolith_applied_by_git_at_its_pin_gives_the_files_apply_writes(tmp_path, cli, project):
    lib, other = two_upstreams(tmp_path, project)
    into = tmp_path / "image" / "npu_patch"
    result = cli("export", "--target", "t", "--format", "series", "--into", str(into), *sources(lib, other), "--json")
    assert result.code == 0, result.out + result.err
    doc = result.json
    assert doc["command"] == "export" and [u["name"] for u in doc["upstreams"]] == ["lib", "other"]
    assert sorted(p.name for p in into.iterdir()) == [
        "lib.patch",
        "other.patch",
        "patchmgr-series",
        "pins.dockerfile",
        "series.conf",
    ]

    applied = tmp_path / "build"
    assert cli("apply", "--target", "t", "--into", str(applied), *sources(lib, other)).code == 0
    manifest = tomllib.loads((project.root / "manifests/t.toml").read_text())["upstreams"]
    for repo in (lib, other):
        name = repo.path.name
        monolith = (into / f"{name}.patch").read_bytes()
        assert monolith.startswith(b"diff --git ") and b"\nindex " in monolith  # git diff, nothing before it
        clone = tmp_path / "by-git" / name
        git(clone.parent if clone.parent.exists() else _mkdir(clone.parent), "clone", "-q", str(repo.path), name)
        git(clone, "checkout", "-q", "--detach", manifest[name]["commit"])
        git(clone, "apply", "-", input=monolith)
        assert tree(clone) == tree(applied / name), name  # bytes and the executable bit, file for file
    assert b"new file mode 100644" in (into / "lib.patch").read_bytes()
    assert not (applied / "lib/src/c.py").exists()

    pins = (into / "pins.dockerfile").read_text()
    for repo in (lib, other):
        name, stem = repo.path.name, repo.path.name.upper()
        assert f"ARG {stem}_COMMIT={manifest[name]['commit']}\n" in pins
        assert f"ARG {stem}_REPO={URL.format(name)}\n" in pins
    assert pins.startswith("# Pins of target t") and "patchmgr import" in pins
    conf = [line for line in (into / "series.conf").read_text().splitlines() if not line.startswith("#")]
    assert conf == ["<workspace>/lib|lib.patch|lib.patch", "<workspace>/other|other.patch|other.patch"]


def _mkdir(path: Path) -> Path:
    path.mkdir(parents=True)
    return path


def test_a_folder_that_is_not_empty_is_refused_and_nothing_changes(tmp_path, cli, project):
    lib, other = two_upstreams(tmp_path, project)
    into = tmp_path / "image"
    (into / "docker").mkdir(parents=True)
    (into / "docker" / "Dockerfile").write_text("FROM base\n")
    (into / "lib.patch").write_text("the team's own patch\n")
    before = snapshot(into)
    result = cli("export", "--target", "t", "--format", "series", "--into", str(into), *sources(lib, other))
    assert result.code == 1 and "error:" in result.err and "is not empty" in result.err, result.out + result.err
    assert "hint:" in result.err and "--force" in result.err and "Traceback" not in result.err
    assert snapshot(into) == before and sorted(p.name for p in into.iterdir()) == ["docker", "lib.patch"]

    forced = cli("export", "--target", "t", "--format", "series", "--into", str(into), "--force", *sources(lib, other))
    assert forced.code == 0, forced.out + forced.err
    assert (into / "docker" / "Dockerfile").read_text() == "FROM base\n"  # not export's: left alone
    assert (into / "lib.patch").read_bytes().startswith(b"diff --git ")
    assert not (into / ".patchmgr-state").exists()

    manifest = project.root / "manifests/t.toml"  # lib's last patch leaves the series: its copy leaves DIR
    manifest.write_text(manifest.read_text().replace('"fix-a-again", "fix-b"]', '"fix-a-again"]'))
    again = cli("export", "--target", "t", "--format", "series", "--into", str(into), "--force", *sources(lib, other))
    assert again.code == 0, again.out + again.err
    assert sorted(p.name for p in (into / "patchmgr-series/lib").iterdir()) == ["drop-c.patch", "fix-a-again.patch"]
    assert (into / "patchmgr-series/other/fix-b.patch").is_file()
    assert (into / "docker" / "Dockerfile").read_text() == "FROM base\n"


def test_force_never_writes_through_a_link_out_of_the_folder_and_says_nothing_was_replaced(tmp_path, cli, project):
    lib, other = two_upstreams(tmp_path, project)
    into, precious = tmp_path / "image", tmp_path / "precious.txt"
    into.mkdir()
    precious.write_text("the team's own file\n")
    (into / "series.conf").symlink_to(precious)
    forced = cli("export", "--target", "t", "--format", "series", "--into", str(into), "--force", *sources(lib, other))
    assert forced.code == 1 and "is a link to" in forced.err and "nothing was written" in forced.err, forced.err
    assert "replaced" not in forced.out + forced.err and "Traceback" not in forced.err
    assert precious.read_text() == "the team's own file\n"
    assert sorted(p.name for p in into.iterdir()) == ["series.conf"]


def test_options_of_the_two_forms_are_not_mixed(tmp_path, cli, project):
    lib, other = two_upstreams(tmp_path, project)
    into = tmp_path / "out"
    wrong = [
        ("--format", "tarball", "--into", str(into)),
        ("--format", "series"),
        ("--format", "series", "--into", str(into), "--from", str(tmp_path)),
        ("--into", str(into), "--upstream", "lib"),
        ("--force", "--upstream", "lib", "--from", str(tmp_path)),
        ("--upstream", "lib", "--from", str(tmp_path), *sources(lib)),
        ("--format", "series", "--into", str(into), "--own-copy"),
        ("--format", "series", "--into", str(into), "--also-target", "t"),
    ]
    for words in wrong:
        result = cli("export", "--target", "t", *words)
        assert result.code == 2 and "error:" in result.err and "Traceback" not in result.err, (words, result.err)
    assert not into.exists()


def test_a_folder_whose_path_series_conf_cannot_hold_is_refused_before_anything(tmp_path, cli, project):
    lib, other = two_upstreams(tmp_path, project)
    image = tmp_path / "image"
    git(_mkdir(image), "init", "-q")
    for folder, said in (("a|b", "holds '|'"), ("a#b", "holds '#'"), ("a\nb", "(U+000A)"), (" a", "a space")):
        into = image / folder / "npu_patch"
        result = cli("export", "--target", "t", "--format", "series", "--into", str(into), *sources(lib, other))
        lines = result.err.splitlines()
        assert result.code == 2 and len(lines) == 2 and said in lines[0] and "nothing was written" in lines[0], lines
        assert lines[1].startswith("hint: ") and sorted(p.name for p in image.iterdir()) == [".git"]
    # outside git series.conf names the patches by their file names alone: a '|' above them is no matter
    into = tmp_path / "x|y" / "npu_patch"
    exported = cli("export", "--target", "t", "--format", "series", "--into", str(into), *sources(lib, other))
    assert exported.code == 0, exported.out + exported.err
    imported = cli("import", str(into / "series.conf"), "--target", "back", *sources(lib, other), "--json")
    assert imported.code == 0 and [u["name"] for u in imported.json["upstreams"]] == ["lib", "other"], imported.err


def _import(cli, conf: Path, repo: UpstreamRepo, *more: str):
    return cli("import", str(conf), "--target", "t", "--source", f"lib={repo.path}", "--json", *more)


def test_import_export_import_gives_the_same_patches_back(tmp_path, cli, project, capsys):
    lib = three_file_upstream(tmp_path)
    pin = lib.head()
    team = tmp_path / "team"
    team.mkdir()
    (team / "lib.patch").write_bytes(dirty_diff(lib, pin, MONOLITH))
    topics = tmp_path / "topics.toml"  # two topics share src/b.py: hunk #2 of it goes with src/c.py
    topics.write_text('b-first = ["src/b.py#1", "src/a.py"]\nb-second-and-c = ["src/b.py#2", "src/c.py"]\n')
    first = _import(
        cli, team / "lib.patch", lib, "--git", f"lib={URL.format('lib')}", "--pin", f"lib={pin}", "--map", str(topics)
    )
    assert first.code == 0, first.out + first.err
    assert first.json["stubs"] == 2  # the two pieces split here carry the stub until people describe them
    fill_stubs(project.root)  # people describe the patches: the round trip keeps what they wrote
    original = snapshot(project.root / "patches")
    manifest = tomllib.loads((project.root / "manifests/t.toml").read_text())["upstreams"]["lib"]
    assert manifest["patches"] == ["b-first", "b-second-and-c"]

    image = tmp_path / "image"  # an image repository: the series lands in its docker/npu_patch/
    git(_mkdir(image), "init", "-q")
    into = image / "docker" / "npu_patch"
    result = cli("export", "--target", "t", "--format", "series", "--into", str(into), "--source", f"lib={lib.path}")
    assert result.code == 0, result.out + result.err
    assert "<workspace>/lib|lib.patch|docker/npu_patch/lib.patch" in (into / "series.conf").read_text()

    again = Project(tmp_path / "again")
    args = ["import", str(into / "series.conf"), "--target", "t", "--dockerfile", str(into / "pins.dockerfile")]
    code = main([*args, "--source", f"lib={lib.path}", "--root", str(again.root), "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0 and doc["ok"] and doc["stubs"] == 0, doc  # the described headers came back: nothing to fill
    (up,) = doc["upstreams"]
    assert up["pin"] == pin and all(p["ok"] for p in up["proofs"]) and not up["notes"], up
    assert snapshot(again.root / "patches") == original  # the same ids, the same bytes, headers and all
    back = tomllib.loads((again.root / "manifests/t.toml").read_text())["upstreams"]["lib"]
    assert (back["patches"], back["commit"], back["git"]) == (manifest["patches"], pin, URL.format("lib"))


def test_a_monolith_changed_after_export_is_split_as_any_other(tmp_path, cli, project, capsys):
    lib = three_file_upstream(tmp_path)
    pin = lib.head()
    (tmp_path / "lib.patch").write_bytes(dirty_diff(lib, pin, MONOLITH))
    first = _import(
        cli, tmp_path / "lib.patch", lib, "--git", f"lib={URL.format('lib')}", "--pin", f"lib={pin}", "--split", "hunk"
    )
    assert first.code == 0, first.out + first.err
    into = tmp_path / "out"
    assert (
        cli("export", "--target", "t", "--format", "series", "--into", str(into), "--source", f"lib={lib.path}").code
        == 0
    )
    monolith = into / "lib.patch"
    monolith.write_bytes(monolith.read_bytes().replace(b"+c fix\n", b"+c fix, by hand\n"))

    again = Project(tmp_path / "again")
    args = ["import", str(into / "series.conf"), "--target", "t", "--source", f"lib={lib.path}"]
    code = main([*args, "--git", f"lib={URL.format('lib')}", "--root", str(again.root), "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0 and doc["ok"], doc
    assert any("changed since patchmgr export wrote it" in n for n in doc["upstreams"][0]["notes"]), doc
    assert sorted(p.name for p in (again.root / "patches/lib").iterdir()) == ["a.patch", "b.patch", "c.patch"]
    assert "c fix, by hand" in (again.root / "patches/lib/c.patch").read_text()


def test_a_real_mindspeed_series_stacked_on_one_file_goes_there_and_back(tmp_path, cli, project, capsys):
    """MindSpeed at fc63de5c (its real history): two patches of fused_rope.py, the second on the first's result,
    and one of another file; the monolith applies by git as the series does, and comes back as the three."""
    clone = clone_of("mindspeed", tmp_path / "MindSpeed")
    pin = git(clone, "rev-parse", "fc63de5c^{commit}")
    rope, other = "mindspeed/core/fusions/fused_rope.py", "mindspeed/features_manager/fusions/fused_rope.py"
    git(clone, "checkout", "-q", "--detach", pin)
    mails = []
    for path, line, subject in ((rope, 20, "Rope: note one"), (rope, 60, "Rope: note two"), (other, 5, "Other")):
        lines = (clone / path).read_text().splitlines(keepends=True)
        lines.insert(line, f"# {subject.lower()}: keeps our runs correct\n")
        (clone / path).write_text("".join(lines))
        git(clone, "commit", "-q", "-am", f"{subject}\n\nWhy: it keeps our runs correct.\n\nOrigin: vendor")
        mails.append(format_patch_of_head(clone))
    ids = ["rope-one", "rope-two", "other"]
    for patch_id, mail in zip(ids, mails, strict=True):
        project.add_patch("mindspeed", patch_id, mail)
    git_url = "https://gitcode.com/Ascend/MindSpeed.git"
    project.manifest("t", {"mindspeed": {"git": git_url, "commit": pin, "patches": ids}})
    source = ["--source", f"mindspeed={clone}"]

    into = tmp_path / "npu_patch"
    result = cli("export", "--target", "t", "--format", "series", "--into", str(into), *source)
    assert result.code == 0, result.out + result.err
    monolith = (into / "mindspeed.patch").read_bytes()
    assert monolith.count(b"diff --git ") == 2  # git diff: one diff per file, the two rope patches in one
    assert f"ARG MINDSPEED_COMMIT={pin}\n" in (into / "pins.dockerfile").read_text()
    applied = tmp_path / "build"
    assert cli("apply", "--target", "t", "--into", str(applied), *source).code == 0
    git(clone, "checkout", "-q", "--detach", pin)
    git(clone, "apply", "-", input=monolith)
    for path in (rope, other):
        assert (clone / path).read_bytes() == (applied / "mindspeed" / path).read_bytes(), path

    again = Project(tmp_path / "again")
    args = ["import", str(into / "series.conf"), "--target", "t", "--dockerfile", str(into / "pins.dockerfile")]
    code = main([*args, "--source", f"mindspeed={clone}", "--root", str(again.root), "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0 and doc["ok"], doc
    assert snapshot(again.root / "patches") == snapshot(project.root / "patches")
    back = tomllib.loads((again.root / "manifests/t.toml").read_text())["upstreams"]["mindspeed"]
    assert (back["patches"], back["commit"], back["git"]) == (ids, pin, git_url)


def test_a_pin_given_otherwise_splits_the_monolith_and_a_damaged_record_is_bad_input(tmp_path, cli, project, capsys):
    lib = three_file_upstream(tmp_path)
    pin = lib.head()
    (tmp_path / "lib.patch").write_bytes(dirty_diff(lib, pin, MONOLITH))
    given = ["--git", f"lib={URL.format('lib')}", "--pin", f"lib={pin}"]
    assert _import(cli, tmp_path / "lib.patch", lib, *given, "--split", "hunk").code == 0
    into = tmp_path / "out"
    exported = cli("export", "--target", "t", "--format", "series", "--into", str(into), "--source", f"lib={lib.path}")
    assert exported.code == 0, exported.out + exported.err
    later = lib.commit({"README": "more docs\n"}, "docs again")

    again = Project(tmp_path / "again")
    args = ["import", str(into / "series.conf"), "--target", "t", "--source", f"lib={lib.path}", "--json"]
    code = main([*args, "--pin", f"lib={later}", "--root", str(again.root)])
    captured = capsys.readouterr()
    doc = json.loads(captured.out or "null") or captured.err
    assert code == 0 and doc["ok"], doc
    assert any(f"its pin is given as {later}" in note for note in doc["upstreams"][0]["notes"]), doc
    assert sorted(p.name for p in (again.root / "patches/lib").iterdir()) == ["a.patch", "b.patch", "c.patch"]

    record = into / "patchmgr-series/export.toml"
    record.write_text(record.read_text().replace('commit = "', 'commit = "x'))
    third = Project(tmp_path / "third")
    before = snapshot(third.root)
    code = main([*args, "--root", str(third.root)])
    captured = capsys.readouterr()
    assert code == 2 and "export.toml is damaged" in captured.err and "hint:" in captured.err, captured
    assert snapshot(third.root) == before


def test_crlf_lines_and_non_ascii_text_come_through_byte_for_byte(tmp_path, cli, project):
    lib = UpstreamRepo(tmp_path / "lib")
    text = "".join(f"line {i} café\r\n" for i in range(1, 30)).encode()  # CRLF line ends, UTF-8 past ASCII
    pin = lib.commit({"src/legacy.txt": text}, "initial")
    changed = text.replace("line 7 café\r\n".encode(), "line 7 fixed été\r\n".encode())
    mail = make_series(lib, pin, [({"src/legacy.txt": changed}, "Fix legacy")])[0]
    project.add_patch("lib", "fix-legacy", mail)
    project.manifest("t", {"lib": {"git": URL.format("lib"), "commit": pin, "patches": ["fix-legacy"]}})
    into = tmp_path / "out"
    result = cli("export", "--target", "t", "--format", "series", "--into", str(into), *sources(lib))
    assert result.code == 0, result.out + result.err
    clone = _mkdir(tmp_path / "by-git")
    git(clone, "clone", "-q", str(lib.path), "lib")
    git(clone / "lib", "checkout", "-q", "--detach", pin)
    git(clone / "lib", "apply", "-", input=(into / "lib.patch").read_bytes())
    assert (clone / "lib/src/legacy.txt").read_bytes() == changed


def test_a_series_that_does_not_apply_exactly_is_refused_and_no_folder_is_made(tmp_path, cli, project):
    lib, other = two_upstreams(tmp_path, project)
    patch = project.root / "patches/other/fix-b.patch"
    patch.write_text(patch.read_text().replace(" line 11\n", " line eleven\n", 1))  # its context is not upstream's
    into = tmp_path / "image" / "npu_patch"
    result = cli("export", "--target", "t", "--format", "series", "--into", str(into), *sources(lib, other))
    assert result.code == 1 and "does not apply exactly at its pin (fix-b is conflict)" in result.err, result.err
    assert "hint:" in result.err and not (tmp_path / "image").exists()


def test_one_upstream_forced_over_a_whole_target_export_keeps_the_other_upstreams(tmp_path, cli, project, capsys):
    """``--upstream lib --force`` into the folder of a whole-target export writes lib anew and keeps other's
    series.conf line, its ARG lines, its monolith and its recorded patches: import still gives both back."""
    lib, other = two_upstreams(tmp_path, project)
    into = tmp_path / "npu_patch"
    words = ["export", "--target", "t", "--format", "series", "--into", str(into), *sources(lib, other)]
    assert cli(*words).code == 0
    first = snapshot(into)
    record = tomllib.loads((into / "patchmgr-series/export.toml").read_text())
    manifest = project.root / "manifests/t.toml"  # lib's last patch leaves its series: only lib is exported again
    manifest.write_text(manifest.read_text().replace('"fix-a-again", "fix-b"]', '"fix-a-again"]'))

    result = cli(*words, "--upstream", "lib", "--force", "--json")
    assert result.code == 0, result.out + result.err
    after = snapshot(into)
    for kept in ("other.patch", "patchmgr-series/other/fix-b.patch"):
        assert after.get(kept) == first[kept], kept
    assert "patchmgr-series/lib/fix-b.patch" not in after and after["lib.patch"] != first["lib.patch"]
    conf = [line for line in after["series.conf"].decode().splitlines() if not line.startswith("#")]
    assert conf == ["<workspace>/lib|lib.patch|lib.patch", "<workspace>/other|other.patch|other.patch"]
    pins = after["pins.dockerfile"].decode()
    assert f"ARG OTHER_COMMIT={record['upstreams']['other']['commit']}\n" in pins and "ARG LIB_COMMIT=" in pins
    now = tomllib.loads(after["patchmgr-series/export.toml"].decode())
    assert now["upstreams"]["other"] == record["upstreams"]["other"]
    assert now["upstreams"]["lib"]["patches"] == ["drop-c", "fix-a-again"]
    assert [u["name"] for u in result.json["upstreams"]] == ["lib"] and result.json["kept"] == ["other"]
    text = cli(*words, "--upstream", "lib", "--force")
    assert text.code == 0 and "kept other from the earlier export" in text.out, text.out + text.err
    assert snapshot(into) == after

    again = Project(tmp_path / "again")
    args = ["import", str(into / "series.conf"), "--target", "t", "--dockerfile", str(into / "pins.dockerfile")]
    capsys.readouterr()
    code = main([*args, *sources(lib, other), "--root", str(again.root), "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0 and doc["ok"], doc
    assert snapshot(again.root / "patches") == {
        p: data for p, data in snapshot(project.root / "patches").items() if p != "lib/fix-b.patch"
    }


def test_one_upstream_over_a_folder_it_cannot_merge_with_is_refused(tmp_path, cli, project):
    """Over another target's export, or a series.conf that no export wrote, ``--upstream`` would drop lines it
    cannot keep: refused, nothing changed."""
    lib, other = two_upstreams(tmp_path, project)
    into = tmp_path / "npu_patch"
    words = ["export", "--format", "series", "--into", str(into), *sources(lib, other)]
    assert cli(*words, "--target", "t").code == 0
    manifest = project.root / "manifests/t.toml"
    (project.root / "manifests/u.toml").write_text(manifest.read_text().replace('name = "t"', 'name = "u"'))
    before = snapshot(into)
    result = cli(*words, "--target", "u", "--upstream", "lib", "--force")
    assert result.code == 1 and "holds the export of target t" in result.err, result.err
    assert "hint:" in result.err and "Traceback" not in result.err and snapshot(into) == before

    team = tmp_path / "team"
    team.mkdir()
    (team / "series.conf").write_text("<workspace>/vllm|vllm.patch|vllm.patch\n")
    mine = snapshot(team)
    result = cli(*[w if w != str(into) else str(team) for w in words], "--target", "t", "-u", "lib", "--force")
    assert result.code == 1 and "was not written by patchmgr export" in result.err, result.err
    assert "hint:" in result.err and snapshot(team) == mine
