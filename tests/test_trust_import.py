"""Issue 24, item 13: `import` reads only inside the repository of the patch set, writes only inside the
project, writes every text into the manifest as TOML data, keeps credentials out of the project and out of
its output, and says what is wrong with odd input (control characters, a byte-order mark)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from support.gitrepos import BASE_TEXT, UpstreamRepo, git
from support.monolith import MONOLITH, URL, dirty_diff, import_args, three_file_upstream

SECRET = "glpat-Sekr1tT0ken"


def project_bytes(root: Path) -> bytes:
    """Every byte of every file of the project (its state folder too)."""
    return b"".join(p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file())


def team_repository(tmp_path: Path, lib: UpstreamRepo, line: str, *, name: str = "lib.patch") -> Path:
    """A real image repository (git) at ws/team holding docker/npu_patch/series.conf with ``line``; the
    monolithic patch is written next to the series as ``name``, and a second copy outside the repository
    (ws/outside.patch), where no series may reach."""
    team = tmp_path / "ws" / "team"
    folder = team / "docker" / "npu_patch"
    folder.mkdir(parents=True)
    mono = dirty_diff(lib, lib.head(), MONOLITH)
    if name:
        (folder / name).write_bytes(mono)
    (tmp_path / "ws" / "outside.patch").write_bytes(mono)
    (folder / "series.conf").write_text(f"# target_worktree|image_patch|source_patch\n{line}\n")
    git(team, "init", "-q")
    git(team, "add", "-A")
    git(team, "commit", "-q", "-m", "image")
    return folder / "series.conf"


def import_by_dockerfile(cli, tmp_path: Path, lib: UpstreamRepo, dockerfile_text: str, *more: str):
    """Import lib's monolithic patch (tmp_path/lib.patch, written on the first call) with the Dockerfile
    ``dockerfile_text`` naming its URL and pin."""
    patch_file = tmp_path / "lib.patch"
    if not patch_file.exists():
        patch_file.write_bytes(dirty_diff(lib, lib.head(), MONOLITH))
    dockerfile = tmp_path / "Dockerfile"
    dockerfile.write_text(dockerfile_text, encoding="utf-8")
    return cli(*import_args(lib, patch_file, dockerfile=dockerfile), *more)


# -- 13.1: the source_patch lookup stays inside the repository that holds the series ------------------------
def test_a_source_patch_above_the_repository_is_not_found_by_climbing(tmp_path, cli, project):
    lib = three_file_upstream(tmp_path)
    conf = team_repository(tmp_path, lib, "/ws/lib|lib.patch|outside.patch", name="")
    result = cli(*import_args(lib, conf))
    assert result.code == 2, result.out + result.err
    assert f"{conf}:2: the patch outside.patch is not in the repository {conf.parents[2]}" in result.err, result.err
    assert "hint:" in result.err and not list((project.root / "manifests").iterdir())


def test_a_source_patch_that_climbs_or_is_absolute_is_bad_input(tmp_path, cli, project):
    lib = three_file_upstream(tmp_path)
    for line in (
        "/ws/lib|lib.patch|etc/passwd",
        "/ws/lib|lib.patch|/etc/passwd",
        "/ws/lib|lib.patch|../../outside.patch",
        "/ws/lib|lib.patch|docker/../../outside.patch",
    ):
        conf = team_repository(tmp_path / line.replace("/", "_"), lib, line, name="")
        result = cli(*import_args(lib, conf))
        assert result.code == 2, result.out + result.err
        assert "not a path inside the repository" in result.err or "is not in the repository" in result.err, result.err
        assert "holds no diff" not in result.err and "root:" not in result.err, result.err  # never opened
    assert not list((project.root / "manifests").iterdir())


def test_a_link_out_of_the_repository_is_not_followed(tmp_path, cli, project):
    lib = three_file_upstream(tmp_path)
    conf = team_repository(tmp_path, lib, "/ws/lib|lib.patch|docker/npu_patch/linked.patch", name="")
    (conf.parent / "linked.patch").symlink_to(tmp_path / "ws" / "outside.patch")
    result = cli(*import_args(lib, conf))
    assert result.code == 2, result.out + result.err
    assert "leads out of the repository" in result.err and "outside.patch" in result.err, result.err
    assert not list((project.root / "manifests").iterdir())
    # a link inside the repository to a file of the repository is followed
    (conf.parent / "inner.patch").symlink_to("lib.patch")
    (conf.parent / "lib.patch").write_bytes((tmp_path / "ws" / "outside.patch").read_bytes())
    conf.write_text("/ws/lib|lib.patch|docker/npu_patch/inner.patch\n")
    inner = cli(*import_args(lib, conf))
    assert inner.code == 0, inner.out + inner.err


def test_a_series_outside_git_reads_only_its_own_folder(tmp_path, cli, project):
    lib = three_file_upstream(tmp_path)
    folder = tmp_path / "loose" / "patches"
    folder.mkdir(parents=True)
    (tmp_path / "loose" / "lib.patch").write_bytes(dirty_diff(lib, lib.head(), MONOLITH))
    (folder / "series.conf").write_text("/ws/lib|lib.patch|lib.patch\n")  # only in the folder above: not read
    result = cli(*import_args(lib, folder))
    assert result.code == 2 and f"is not in the repository {folder}" in result.err, result.out + result.err


def test_a_version_folder_linked_out_of_the_folder_given_is_refused(tmp_path, cli, project):
    lib = three_file_upstream(tmp_path)
    elsewhere = tmp_path / "elsewhere" / "1.0.0"
    elsewhere.mkdir(parents=True)
    (elsewhere / "lib.patch").write_bytes(dirty_diff(lib, lib.head(), MONOLITH))
    given = tmp_path / "docker" / "patch"
    given.mkdir(parents=True)
    (given / "1.0.0").symlink_to(elsewhere)
    result = cli(*import_args(lib, given))
    assert result.code == 2 and "leads out of the repository" in result.err, result.out + result.err
    assert not list((project.root / "manifests").iterdir())


# -- 13.2: every text goes into the manifest as TOML data ------------------------------------------------------
def test_a_newline_in_a_folder_name_writes_no_key_into_the_manifest(tmp_path, cli, project):
    lib = three_file_upstream(tmp_path)
    folder = tmp_path / 'team\npypi = "evil-package"\nsmoke-requirements = ["evil"]\n#'
    folder.mkdir()
    (folder / "lib.patch").write_bytes(dirty_diff(lib, lib.head(), MONOLITH))
    result = cli(*import_args(lib, folder / "lib.patch"))
    assert result.code == 2, result.out + result.err
    assert "contains a control character (U+000A)" in result.err and "bug in patchmgr" not in result.err, result.err
    assert not list((project.root / "manifests").iterdir()) and not list((project.root / "patches").iterdir())


def test_a_control_character_in_a_series_line_is_bad_input_with_its_line(tmp_path, cli, project):
    lib = three_file_upstream(tmp_path)
    conf = team_repository(tmp_path, lib, "/ws/lib|lib.patch|docker/npu_patch/lib\x1b]0;pwned\x07.patch")
    result = cli(*import_args(lib, conf))
    assert result.code == 2, result.out + result.err
    assert f"{conf}:2: the line" in result.err and "control character (U+001B)" in result.err, result.err
    assert "\x1b" not in result.err


# -- 13.3: credentials never reach a project file, and are masked in every output -----------------------------
def test_a_token_in_a_dockerfile_clone_url_is_not_written_nor_printed(tmp_path, cli, project):
    lib = three_file_upstream(tmp_path)
    clone = (
        f"RUN git clone https://ci:{SECRET}@example.invalid/lib.git /ws/lib && cd /ws/lib && git checkout {lib.head()}"
    )
    result = import_by_dockerfile(cli, tmp_path, lib, f"FROM base\n{clone}\n", "--json")
    assert result.code == 0, result.out + result.err
    assert SECRET not in result.out + result.err and SECRET.encode() not in project_bytes(project.root)
    (up,) = result.json["upstreams"]
    assert up["git"] == "https://example.invalid/lib.git"
    assert any("holds credentials" in note for note in up["notes"]), up["notes"]
    assert 'git = "https://example.invalid/lib.git"' in (project.root / "manifests/t.toml").read_text()


def test_a_token_given_with_git_is_not_written_nor_printed(tmp_path, cli, project, monkeypatch):
    lib = three_file_upstream(tmp_path)
    (tmp_path / "lib.patch").write_bytes(dirty_diff(lib, lib.head(), MONOLITH))
    for target, url in (
        ("t1", f"https://{SECRET}@example.invalid/lib.git"),
        ("t2", f"https://oauth2:{SECRET}@example.invalid/lib.git"),
    ):
        result = cli(
            "import",
            str(tmp_path / "lib.patch"),
            "--target",
            target,
            "--git",
            f"lib={url}",
            "--source",
            f"lib={lib.path}",
        )
        assert result.code == 0, result.out + result.err
        manifest = (project.root / f"manifests/{target}.toml").read_text()
        assert SECRET not in manifest and 'git = "https://example.invalid/lib.git"' in manifest, manifest
        assert SECRET not in result.out + result.err and "holds credentials" in result.out, result.out
        for piece in (project.root / "patches/lib").iterdir():
            piece.unlink()  # the next target imports the same pieces
    # fetching fails (no --source, a host that does not resolve, and a cache that never resolved HEAD, which
    # would stand in otherwise): the error names the URL without the token
    monkeypatch.setenv("PATCHMGR_CACHE", str(tmp_path / "empty-cache"))
    failed = cli(
        "import",
        str(tmp_path / "lib.patch"),
        "--target",
        "t",
        "--git",
        f"lib=https://{SECRET}@example.invalid/lib.git",
        "--json",
    )
    assert failed.code != 0 and SECRET not in failed.out + failed.err, failed.out + failed.err
    assert SECRET.encode() not in project_bytes(project.root)


# -- 13.4: writes stay inside the project root ---------------------------------------------------------------
def test_a_patches_folder_linked_out_of_the_project_is_not_written_through(tmp_path, cli, project):
    lib = three_file_upstream(tmp_path)
    (tmp_path / "lib.patch").write_bytes(dirty_diff(lib, lib.head(), MONOLITH))
    outside = tmp_path / "outside-patches"
    outside.mkdir()
    (project.root / "patches" / "lib").symlink_to(outside)
    result = cli(*import_args(lib, tmp_path / "lib.patch"))
    assert result.code == 1, result.out + result.err
    assert "outside" in result.err and "nothing was written" in result.err, result.err
    assert not list(outside.iterdir()) and not list((project.root / "manifests").iterdir())


def test_a_manifests_folder_linked_out_of_the_project_is_not_written_through(tmp_path, cli, project):
    lib = three_file_upstream(tmp_path)
    (tmp_path / "lib.patch").write_bytes(dirty_diff(lib, lib.head(), MONOLITH))
    outside = tmp_path / "outside-manifests"
    (project.root / "manifests").rename(outside)
    (project.root / "manifests").symlink_to(outside)
    result = cli(*import_args(lib, tmp_path / "lib.patch"))
    assert result.code == 1 and "nothing was written" in result.err, result.out + result.err
    assert not list(outside.iterdir()) and not list((project.root / "patches").iterdir())


def test_bump_inherits_it_a_manifests_folder_linked_out_of_the_project_is_not_rewritten(tmp_path, cli, project):
    lib = UpstreamRepo(tmp_path / "lib")
    pin = lib.commit({"src/mod.py": BASE_TEXT}, "initial")
    project.add_patch(
        "lib", "fix", lib.make_patch(pin, {"src/mod.py": BASE_TEXT.replace("line 5\n", "five\n")}, "Fix five")
    )
    project.manifest("t", {"lib": {"git": URL.format("lib"), "commit": pin, "patches": ["fix"]}})
    lib.commit({"README": "x\n"}, "later")
    outside = tmp_path / "linked-manifests"
    (project.root / "manifests").rename(outside)
    (project.root / "manifests").symlink_to(outside)
    before = (outside / "t.toml").read_bytes()
    result = cli("bump", "--target", "t", "--upstream", "lib", "--to", "main", "--source", f"lib={lib.path}")
    assert result.code == 1 and "outside" in result.err and "nothing was written" in result.err, result.out + result.err
    assert (outside / "t.toml").read_bytes() == before


def test_the_one_file_outside_the_root_a_project_transaction_writes_is_the_edit_record():
    from patchmgr.maintain.edit_record import RECORD
    from patchmgr.targets.project_files import CHECKOUT_RECORD

    assert CHECKOUT_RECORD == RECORD


def test_recovery_puts_nothing_back_through_a_link_out_of_the_project(tmp_path, cli, project):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "a.patch").write_bytes(b"theirs\n")
    (project.root / "patches" / "lib").symlink_to(outside)
    journal = project.root / ".patchmgr-state" / "journal"
    (journal / "saved").mkdir(parents=True)
    (journal / "saved" / "0").write_bytes(b"planted\n")
    (journal / "journal.json").write_text(
        json.dumps(
            {
                "state": "prepared",
                "moves": [],
                "discard": [],
                "made": [],
                "entries": [{"path": str(project.root / "patches" / "lib" / "a.patch"), "saved": "0"}],
            }
        )
    )
    result = cli("lint")
    assert result.code == 1 and "damaged" in result.err and "outside" in result.err, result.out + result.err
    assert (outside / "a.patch").read_bytes() == b"theirs\n"
    # a journal that would remove a folder out of the project (a committed one is only cleaned up): nothing goes
    (journal / "journal.json").write_text(
        json.dumps({"state": "committed", "moves": [], "made": [], "entries": [], "discard": [str(outside)]})
    )
    result = cli("lint")
    assert result.code == 1 and "damaged" in result.err, result.out + result.err
    assert (outside / "a.patch").read_bytes() == b"theirs\n"


# -- 13.5: odd input: a byte-order mark is ignored, control characters in paths are bad input ---------------------
def test_a_byte_order_mark_before_a_comment_line_of_series_conf_is_ignored(tmp_path, cli, project):
    lib = three_file_upstream(tmp_path)
    conf = team_repository(tmp_path, lib, "/ws/lib|lib.patch|docker/npu_patch/lib.patch")
    conf.write_text(
        "\ufeff# target_worktree|image_patch|source_patch\n/ws/lib|lib.patch|docker/npu_patch/lib.patch\n",
        encoding="utf-8",
    )
    result = cli(*import_args(lib, conf), "--dry-run")
    assert result.code == 0 and "dry run: would import 3 piece(s)" in result.out, result.out + result.err


def test_a_byte_order_mark_at_the_start_of_a_dockerfile_is_ignored(tmp_path, cli, project):
    lib = three_file_upstream(tmp_path)
    clone = f"RUN git clone {URL.format('lib')} /ws/lib && cd /ws/lib && git checkout {lib.head()}"
    result = import_by_dockerfile(cli, tmp_path, lib, f"\ufeff{clone}\n", "--json", "--dry-run")
    assert result.code == 0, result.out + result.err
    (up,) = result.json["upstreams"]
    assert up["git"] == URL.format("lib") and up["pin"] == lib.head() and up["base"]["how"] == "given"


def test_a_byte_order_mark_at_the_start_of_a_map_file_is_ignored(tmp_path, cli, project):
    lib = three_file_upstream(tmp_path)
    (tmp_path / "lib.patch").write_bytes(dirty_diff(lib, lib.head(), MONOLITH))
    mapping = tmp_path / "map.toml"
    mapping.write_text('\ufeff# topics\nfirst = ["src/a.py", "src/b.py"]\n', encoding="utf-8")
    result = cli(*import_args(lib, tmp_path / "lib.patch"), "--map", str(mapping), "--json", "--dry-run")
    assert result.code == 0, result.out + result.err
    assert [p["id"] for p in result.json["upstreams"][0]["pieces"]] == ["first", "c"]


def test_a_control_character_in_a_path_is_bad_input_not_a_bug(tmp_path, cli, project):
    lib = three_file_upstream(tmp_path)
    for name in ("te\x01am", "te\x1b[2Jam", "te\x85am"):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "lib.patch").write_bytes(dirty_diff(lib, lib.head(), MONOLITH))
        result = cli(*import_args(lib, folder / "lib.patch"))
        assert result.code == 2, result.out + result.err
        assert "contains a control character" in result.err and "bug in patchmgr" not in result.err, result.err
        assert not any(ch in result.err for ch in "\x01\x1b\x85"), result.err
    assert not list((project.root / "manifests").iterdir())
    assert os.listdir(project.root / "patches") == []


def test_a_byte_order_mark_at_the_start_of_a_patch_file_is_ignored(tmp_path, cli, project):
    lib = three_file_upstream(tmp_path)
    (tmp_path / "lib.patch").write_bytes(b"\xef\xbb\xbf" + dirty_diff(lib, lib.head(), MONOLITH))
    result = cli(*import_args(lib, tmp_path / "lib.patch"), "--json", "--dry-run")
    assert result.code == 0, result.out + result.err
    (up,) = result.json["upstreams"]
    assert [p["id"] for p in up["pieces"]] == ["a", "b", "c"] and up["proven"], up


def test_a_name_with_a_trailing_line_break_is_bad_input(tmp_path, cli, project):
    lib = three_file_upstream(tmp_path)
    (tmp_path / "lib.patch").write_bytes(dirty_diff(lib, lib.head(), MONOLITH))
    (tmp_path / "map.toml").write_text('"first\\n" = ["src/a.py"]\n')
    for extra, said in (
        (["--map", str(tmp_path / "map.toml")], "cannot name a patch"),
        (["--upstream", "lib\n"], "is not an upstream name"),
    ):
        result = cli(*import_args(lib, tmp_path / "lib.patch"), *extra)
        assert result.code == 2 and said in result.err, result.out + result.err
    target = cli(*import_args(lib, tmp_path / "lib.patch", target="t\n"))
    assert target.code == 2 and "cannot name a manifest" in target.err, target.out + target.err
    assert not list((project.root / "manifests").iterdir()) and not list((project.root / "patches").iterdir())


def test_a_fifo_given_as_the_dockerfile_is_bad_input_not_a_hang(tmp_path, project):
    import subprocess
    import sys

    import patchmgr

    lib = three_file_upstream(tmp_path)
    (tmp_path / "lib.patch").write_bytes(dirty_diff(lib, lib.head(), MONOLITH))
    os.mkfifo(tmp_path / "Dockerfile")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "patchmgr",
            "import",
            str(tmp_path / "lib.patch"),
            "--target",
            "t",
            "--dockerfile",
            str(tmp_path / "Dockerfile"),
            "--root",
            str(project.root),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(Path(patchmgr.__file__).parents[1])},
    )
    assert done.returncode == 2 and "not a regular file" in done.stderr, done.stdout + done.stderr


# -- a token in a clone URL's query string is a credential too: masked in every output, never written --------
def test_a_token_in_a_url_query_string_is_not_written_nor_printed(tmp_path, cli, project):
    lib = three_file_upstream(tmp_path)
    url = f"https://example.invalid/lib.git?private_token={SECRET}"
    clone = f"RUN git clone '{url}' /ws/lib && cd /ws/lib && git checkout {lib.head()}"
    result = import_by_dockerfile(cli, tmp_path, lib, f"FROM base\n{clone}\n", "--json")
    assert result.code == 0, result.out + result.err
    assert SECRET not in result.out + result.err and SECRET.encode() not in project_bytes(project.root)
    assert 'git = "https://example.invalid/lib.git"' in (project.root / "manifests/t.toml").read_text()
    for parameter in ("access_token", "token", "key", "password", "secret"):
        url = f"https://example.invalid/lib.git?ref=main&{parameter}={SECRET}"
        failed = cli("import", str(tmp_path / "lib.patch"), "--target", "t2", "--git", f"lib={url}", "--json")
        assert failed.code != 0 and SECRET not in failed.out + failed.err, failed.out + failed.err
        assert SECRET.encode() not in project_bytes(project.root)


# -- messages: what import says names what is really wrong ---------------------------------------------------
def test_a_device_given_with_upstream_is_not_a_regular_file_not_a_series(tmp_path, cli, project):
    lib = three_file_upstream(tmp_path)
    result = cli(*import_args(lib, "/dev/zero", upstream="lib"), "--dry-run")
    assert result.code == 2 and "/dev/zero is not a regular file or a folder" in result.err, result.out + result.err
    assert "series.conf or a folder" not in result.err and "Traceback" not in result.err, result.err
    folder = cli("import", str(tmp_path), "--upstream", "lib", "--target", "t", "--dry-run")  # still said so
    assert folder.code == 2 and "is a series.conf or a folder" in folder.err, folder.err


def test_a_control_character_in_a_dockerfile_clone_folder_is_named(tmp_path, cli, project):
    lib = three_file_upstream(tmp_path)
    for char in ("\x1b", "\x85", "\u2028", "\x7f"):
        clone = (
            f"RUN git clone https://example.invalid/lib.git /ws/l{char}ib && cd /ws/lib && git checkout {lib.head()}"
        )
        result = import_by_dockerfile(cli, tmp_path, lib, f"FROM base\n{clone}\n")
        said = result.out + result.err
        assert result.code == 2 and f"control character (U+{ord(char):04X})" in said, said
        assert "Dockerfile:2" in said and "no git URL" not in said and char not in said, said
    assert not list((project.root / "manifests").iterdir())
