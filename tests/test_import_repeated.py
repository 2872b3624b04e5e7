"""import of a monolith that changes one file in several diffs (stacked, or made against the same preimage),
of diffs edited by hand after git made them, and what import says: which diff each piece holds, distinct
file counts, `imported: false` on refusal, origins relative to the image repository."""

from __future__ import annotations

import re
import subprocess

from support.gitrepos import UpstreamRepo, git
from support.monolith import (
    applied_monolith,
    dirty_diff,
    import_args,
    same_files,
    stacked_diff,
    text_with,
    three_file_upstream,
)

FIRST = {"src/a.py": text_with({5: "a fix"})}


def stacked(lib: UpstreamRepo) -> bytes:
    """src/a.py changed, src/b.py changed, then src/a.py again on top of its first change: the second diff's
    context holds the first one's line, so it applies only to the first one's result."""
    base = lib.head()
    second = {"src/a.py": text_with({5: "a fix", 6: "a fix two"})}
    return dirty_diff(lib, base, {**FIRST, "src/b.py": text_with({20: "b fix"})}) + stacked_diff(
        lib.path, base, FIRST, second
    )


def same_preimage(lib: UpstreamRepo) -> bytes:
    """src/a.py changed (two hunks, one adding a line), src/b.py changed, then src/a.py again from the same
    preimage: git apply lands the second diff one line down, on the first one's result."""
    base = lib.head()
    first = {"src/a.py": text_with({5: "a fix\na new line", 15: "a fix 15"}), "src/b.py": text_with({20: "b fix"})}
    return dirty_diff(lib, base, first) + dirty_diff(lib, base, {"src/a.py": text_with({30: "a later fix"})})


def imported_equals_git_apply(cli, tmp_path, lib: UpstreamRepo, mono: bytes, pin: str) -> None:
    """`apply` of the imported target gives the files `git apply` of the monolith gives at the pin."""
    into = tmp_path / "build"
    result = cli("apply", "--target", "t", "--into", str(into), "--source", f"lib={lib.path}")
    assert result.code == 0, result.out + result.err
    reference = applied_monolith(lib.path, pin, mono, tmp_path / "ref")
    same_files(into / "lib", reference, ["src/a.py", "src/b.py", "src/c.py", "README"])


def test_a_stacked_second_diff_of_one_file_is_its_own_piece(tmp_path, cli, project):
    lib = three_file_upstream(tmp_path)
    mono = stacked(lib)
    assert mono.count(b"diff --git a/src/a.py b/src/a.py") == 2
    (tmp_path / "lib.patch").write_bytes(mono)
    result = cli(*import_args(lib, tmp_path / "lib.patch"), "--json")
    assert result.code == 0, result.out + result.err
    (up,) = result.json["upstreams"]
    assert up["proven"] and up["pin"] == lib.head()
    assert up["base"]["how"] == "index" and up["base"]["blobs_matched"] == {"files": 2, "of": 2}
    assert "2 of 2 files" in up["base"]["detail"]  # distinct files: src/a.py counts once
    pieces = {p["id"]: p for p in up["pieces"]}
    assert list(pieces) == ["a", "b", "a-diff-2"] and all(p["imported"] for p in pieces.values())
    assert [p["takes"] for p in pieces.values()] == [
        "src/a.py diff 1 of 2, hunk #1 of 2",
        "src/b.py",
        "src/a.py diff 2 of 2, hunk #2 of 2",
    ]
    assert pieces["a-diff-2"]["diffs"] == [{"path": "src/a.py", "diff": 2, "of": 2, "hunks": [2], "hunks_of": 2}]
    assert pieces["b"]["diffs"] == [{"path": "src/b.py", "diff": 1, "of": 1, "hunks": [1], "hunks_of": 1}]
    assert any("src/a.py has 2 diffs" in n and "diff 2 is stacked on diff 1" in n for n in up["notes"]), up["notes"]
    assert not any("edited after git made it" in n for n in up["notes"])
    second = (project.root / "patches/lib/a-diff-2.patch").read_text()
    assert "+a fix two" in second and " a fix\n" in second  # made on top of the first piece
    assert cli("status", "--target", "t", "--source", f"lib={lib.path}").code == 0
    imported_equals_git_apply(cli, tmp_path, lib, mono, up["pin"])


def test_two_diffs_of_one_file_against_the_same_preimage(tmp_path, cli, project):
    lib = three_file_upstream(tmp_path)
    mono = same_preimage(lib)
    (tmp_path / "lib.patch").write_bytes(mono)
    result = cli(*import_args(lib, tmp_path / "lib.patch"))
    assert result.code == 0, result.out + result.err
    assert "proven: 3 piece(s) and the monolithic patch" in result.out
    assert "diff 2 was made against the same preimage as diff 1" in result.out
    assert "src/a.py diff 2 of 2, hunk #3 of 3" in result.out  # which diff the piece holds, in the table
    assert "imported 3 piece(s) of 1 upstream(s)" in result.out
    doc = cli("status", "--target", "t", "--source", f"lib={lib.path}", "--json").json
    assert [r["state"] for r in doc["upstreams"][0]["patches"]] == ["clean"] * 3
    imported_equals_git_apply(cli, tmp_path, lib, mono, lib.head())
    assert (tmp_path / "build/lib/src/a.py").read_text() == text_with(
        {5: "a fix\na new line", 15: "a fix 15", 30: "a later fix"}
    )


def test_hunks_are_numbered_across_the_diffs_of_a_file(tmp_path, cli, project):
    lib = three_file_upstream(tmp_path)
    mono = same_preimage(lib)
    (tmp_path / "lib.patch").write_bytes(mono)
    result = cli(*import_args(lib, tmp_path / "lib.patch"), "--split", "hunk", "--json", "--target", "hunks")
    assert result.code == 0, result.out + result.err
    (up,) = result.json["upstreams"]
    assert [(p["id"], p["takes"]) for p in up["pieces"]] == [
        ("a-hunk-1", "src/a.py diff 1 of 2, hunk #1 of 3"),
        ("a-hunk-2", "src/a.py diff 1 of 2, hunk #2 of 3"),
        ("b", "src/b.py"),
        ("a-hunk-3", "src/a.py diff 2 of 2, hunk #3 of 3"),
    ]
    assert up["pieces"][3]["diffs"] == [{"path": "src/a.py", "diff": 2, "of": 2, "hunks": [3], "hunks_of": 3}]
    # --map names them so too, in any order: the second diff's hunk first, then the rest
    mapping = tmp_path / "map.toml"
    mapping.write_text('later = ["src/a.py#3"]\nearlier = ["src/a.py#1,2", "src/b.py"]\n')
    result = cli(*import_args(lib, tmp_path / "lib.patch"), "--map", str(mapping), "--json")
    assert result.code == 0, result.out + result.err
    (up,) = result.json["upstreams"]
    assert [(p["id"], p["takes"]) for p in up["pieces"]] == [
        ("later", "src/a.py diff 2 of 2, hunk #3 of 3"),
        ("earlier", "src/a.py diff 1 of 2, hunks #1, #2 of 3; src/b.py"),
    ]
    assert up["pieces"][1]["diffs"][0] == {"path": "src/a.py", "diff": 1, "of": 2, "hunks": [1, 2], "hunks_of": 3}
    assert up["proven"]
    imported_equals_git_apply(cli, tmp_path, lib, mono, lib.head())
    mapping.write_text('whole = ["src/a.py"]\nwrong = ["src/a.py#4"]\n')
    result = cli(*import_args(lib, tmp_path / "lib.patch", target="u"), "--map", str(mapping))
    assert result.code == 2 and "src/a.py has hunks #1 to #3 (numbered across its 2 diffs)" in result.err


def test_a_diff_edited_by_hand_is_a_note_per_file(tmp_path, cli, project):
    lib = three_file_upstream(tmp_path)
    mono = stacked(lib)
    edited = mono.replace(b"+a fix two\n", b"+a fix two \n").replace(b"+b fix\n", b"+b fix  \n")
    assert edited.count(b"  \n") == 1 and edited.count(b"two \n") == 1
    (tmp_path / "lib.patch").write_bytes(edited)
    result = cli(*import_args(lib, tmp_path / "lib.patch"), "--json")
    assert result.code == 0, result.out + result.err  # a note, not an error
    (up,) = result.json["upstreams"]
    edits = [n for n in up["notes"] if "edited after git made it" in n]
    assert [n.split(":")[0] for n in edits] == ["src/b.py", "src/a.py (diff 2 of 2)"], up["notes"]
    b_index = re.search(rb"index ([0-9a-f]+)\.\.([0-9a-f]+) 100644\n--- a/src/b.py", edited)
    assert b_index and f"its index line names the result {b_index.group(2).decode()}, but the patch gives" in edits[0]
    assert "the patch's bytes are what is imported" in edits[0]
    imported_equals_git_apply(cli, tmp_path, lib, edited, up["pin"])
    assert "b fix  \n" in (tmp_path / "build/lib/src/b.py").read_text()


def test_a_refused_import_imports_no_piece(tmp_path, cli, project, monkeypatch):
    """When the proof fails nothing is written: --json says so of every piece (the proof's verdict forced,
    as git's real verdict cannot be made to differ from the engine's on purpose)."""
    from patchmgr.maintain.importing import plan
    from patchmgr.maintain.importing.prove import Proof

    def failing(scratch, reader, commit, *rest, **options):
        return Proof(commit, False, 2, "the files differ: src/a.py")

    monkeypatch.setattr(plan, "prove", failing)
    lib = three_file_upstream(tmp_path)
    (tmp_path / "lib.patch").write_bytes(same_preimage(lib))
    result = cli(*import_args(lib, tmp_path / "lib.patch"), "--json")
    assert result.code == 1 and result.json["action"] == "refused" and not result.json["ok"]
    (up,) = result.json["upstreams"]
    assert not up["proven"] and len(up["pieces"]) == 3
    assert all(p["imported"] is False and p["path"] is None for p in up["pieces"])
    assert result.json["written"] == [] and not (project.root / "manifests/t.toml").exists()
    text = cli(*import_args(lib, tmp_path / "lib.patch"))
    assert text.code == 1 and text.out.count("not imported (the import is refused)") == 3
    assert "NOT proven: the files differ" in text.out


def test_origins_are_relative_to_the_image_repository(tmp_path, cli, project):
    lib = three_file_upstream(tmp_path)
    team = tmp_path / "team"
    (team / "docker").mkdir(parents=True)
    (team / "docker/lib.patch").write_bytes(stacked(lib))
    git(team, "init", "-q")
    git(team, "add", "-A")
    git(team, "commit", "-q", "-m", "patches")
    commit = git(team, "rev-parse", "HEAD")
    result = cli(*import_args(lib, (team / "docker/lib.patch").resolve()))  # an absolute path given
    assert result.code == 0, result.out + result.err
    manifest = (project.root / "manifests/t.toml").read_text()
    assert f"# imported from docker/lib.patch at commit {commit[:12]}, which was made against" in manifest
    for piece in (project.root / "patches/lib").iterdir():
        assert f"Origin: vendor, imported from docker/lib.patch at commit {commit} (sha256 " in piece.read_text()
    written = [manifest, *(p.read_text() for p in (project.root / "patches/lib").iterdir())]
    assert not any(str(tmp_path) in text for text in written)


def test_a_second_diff_git_apply_refuses_is_refused_with_the_reason(tmp_path, cli, project):
    """Two diffs of src/a.py from one preimage whose hunks overlap: git apply refuses the second on the first
    one's result, and import says which diff, instead of splitting what git cannot apply."""
    lib = three_file_upstream(tmp_path)
    base = lib.head()
    mono = dirty_diff(lib, base, FIRST) + dirty_diff(lib, base, {"src/a.py": text_with({7: "a seven"})})
    checkout = tmp_path / "check"
    git(tmp_path, "clone", "-q", str(lib.path), checkout.name)
    assert subprocess.run(["git", "apply", "--check", "-"], cwd=checkout, input=mono, capture_output=True).returncode
    (tmp_path / "lib.patch").write_bytes(mono)
    for pin in ([], ["--pin", f"lib={base}"]):
        result = cli(*import_args(lib, tmp_path / "lib.patch"), *pin)
        assert result.code == 2 and not (project.root / "manifests/t.toml").exists()
        assert "src/a.py: its diff 2 of 2 does not apply to the result of the one before it (hunk #2: " in result.err, (
            result.err
        )
        assert "git apply refuses it too: make it against that result, or merge the diffs" in result.err
