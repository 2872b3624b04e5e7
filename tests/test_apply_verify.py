"""apply --into: all or nothing, one commit per patch, idempotent; verify catches hand edits."""

from __future__ import annotations

import json

from support.gitrepos import git
from support.scenes import two_upstreams


def test_apply_makes_one_commit_per_patch_and_verifies(tmp_path, cli, project):
    lib, _tool, sources = two_upstreams(tmp_path, project)
    into = tmp_path / "build"
    result = cli("apply", "--target", "t", "--into", str(into), *sources)
    assert result.code == 0, result.out + result.err
    assert "applied target t" in result.out
    log = git(into / "lib", "log", "--format=%s", "-3")
    assert log.splitlines() == ["Lib two", "Lib one", "lib initial"]
    assert git(into / "lib", "rev-parse", "HEAD~2") == lib.head()
    text = (into / "lib" / "src/mod.py").read_text()
    assert "one\n" in text and "two\n" in text
    assert git(into / "lib", "status", "--porcelain") == ""
    ledger = json.loads((into / "patchmgr-ledger.json").read_text())
    assert [p["id"] for p in ledger["upstreams"][0]["patches"]] == ["one", "two"]
    verified = cli("verify", "--target", "t", "--into", str(into))
    assert verified.code == 0 and "verified" in verified.out


def test_reapply_is_a_noop_that_says_so(tmp_path, cli, project):
    _lib, _tool, sources = two_upstreams(tmp_path, project)
    into = tmp_path / "build"
    assert cli("apply", "--target", "t", "--into", str(into), *sources).code == 0
    head = git(into / "lib", "rev-parse", "HEAD")
    again = cli("apply", "--target", "t", "--into", str(into), *sources)
    assert again.code == 0
    assert "nothing to do" in again.out
    assert git(into / "lib", "rev-parse", "HEAD") == head


def test_the_ledger_records_the_source_as_a_typed_identity_and_reads_an_older_ledgers_text(tmp_path, cli, project):
    lib, _tool, sources = two_upstreams(tmp_path, project)
    into = tmp_path / "build"
    assert cli("apply", "--target", "t", "--into", str(into), *sources).code == 0
    ledger_path = into / "patchmgr-ledger.json"
    ledger = json.loads(ledger_path.read_text())
    source = ledger["upstreams"][0]["checkout"]["source"]
    assert ledger["format"] == 3
    assert source == {"kind": "local", "location": str(lib.path), "cached": False, "unreachable": None}
    # the ledger patchmgr wrote before: format 2, the source as its display text without " (cached)"
    ledger["format"] = 2
    for entry in ledger["upstreams"]:
        entry["checkout"]["source"] = f"git {entry['checkout']['source']['location']}"
    ledger_path.write_text(json.dumps(ledger))
    assert cli("verify", "--target", "t", "--into", str(into)).code == 0
    head = git(into / "lib", "rev-parse", "HEAD")
    again = cli("apply", "--target", "t", "--into", str(into), *sources)  # served by the cache now: the same source
    assert again.code == 0 and "nothing to do" in again.out, again.out + again.err
    assert git(into / "lib", "rev-parse", "HEAD") == head


def test_apply_is_all_or_nothing_across_upstreams(tmp_path, cli, project):
    _lib, _tool, sources = two_upstreams(tmp_path, project, second_conflicts=True)
    into = tmp_path / "build"
    result = cli("apply", "--target", "t", "--into", str(into), "--json", *sources)
    assert result.code == 1
    doc = result.json
    assert doc["action"] == "refused"
    states = {p["id"]: p["state"] for u in doc["upstreams"] for p in u["patches"]}
    assert states == {"one": "clean", "two": "clean", "fix": "conflict"}
    assert not into.exists() or not any(into.iterdir())


def test_dry_run_writes_nothing(tmp_path, cli, project):
    _lib, _tool, sources = two_upstreams(tmp_path, project)
    into = tmp_path / "build"
    result = cli("apply", "--target", "t", "--into", str(into), "--dry-run", *sources)
    assert result.code == 0 and "dry run" in result.out
    assert not into.exists()


def test_verify_catches_a_hand_edited_file(tmp_path, cli, project):
    _lib, _tool, sources = two_upstreams(tmp_path, project)
    into = tmp_path / "build"
    assert cli("apply", "--target", "t", "--into", str(into), *sources).code == 0
    with open(into / "lib" / "src/mod.py", "a") as handle:
        handle.write("hand edit\n")
    result = cli("verify", "--target", "t", "--into", str(into))
    assert result.code == 1
    assert "src/mod.py" in result.out


def test_verify_catches_a_changed_patch_file(tmp_path, cli, project):
    _lib, _tool, sources = two_upstreams(tmp_path, project)
    into = tmp_path / "build"
    assert cli("apply", "--target", "t", "--into", str(into), *sources).code == 0
    patch = project.root / "patches/lib/two.patch"
    patch.write_bytes(patch.read_bytes().replace(b"Lib two", b"Lib two, edited"))
    result = cli("verify", "--target", "t", "--into", str(into), "--json")
    assert result.code == 1
    assert any("two" in problem for problem in result.json["problems"])
    # and apply rebuilds the checkout with the new patch, then verify passes again
    assert cli("apply", "--target", "t", "--into", str(into), *sources).code == 0
    assert git(into / "lib", "log", "-1", "--format=%s") == "Lib two, edited"
    assert cli("verify", "--target", "t", "--into", str(into)).code == 0


def test_verify_of_a_folder_apply_never_wrote(tmp_path, cli, project):
    two_upstreams(tmp_path, project)
    result = cli("verify", "--target", "t", "--into", str(tmp_path))
    assert result.code == 1 and "no ledger" in result.out


def test_apply_refuses_a_folder_it_did_not_make(tmp_path, cli, project):
    _lib, _tool, sources = two_upstreams(tmp_path, project)
    into = tmp_path / "build"
    (into / "lib").mkdir(parents=True)
    (into / "lib" / "keep.txt").write_text("mine")
    result = cli("apply", "--target", "t", "--into", str(into), *sources)
    assert result.code == 1
    assert "was not made by patchmgr" in result.err
    assert (into / "lib" / "keep.txt").read_text() == "mine"
