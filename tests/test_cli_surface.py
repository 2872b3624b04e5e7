"""The command line's one surface: roots, --json on every command, one wording per fault, help."""

from __future__ import annotations

import json

import pytest
from support.scenes import series_project, two_upstreams


def test_roots_prints_name_and_import_root_per_applied_upstream(tmp_path, cli, project):
    _lib, _tool, sources = two_upstreams(tmp_path, project)
    into = tmp_path / "build"
    assert cli("apply", "--target", "t", "--into", str(into), *sources).code == 0
    result = cli("roots", "--target", "t", "--into", str(into))
    assert result.code == 0, result.err
    assert result.out.splitlines() == [f"lib {into.resolve() / 'lib'}", f"tool {into.resolve() / 'tool'}"]
    only = cli("roots", "--target", "t", "--into", str(into), "--upstream", "tool", "--json")
    doc = json.loads(only.out)
    assert (
        doc["command"] == "roots"
        and doc["ok"]
        and doc["roots"] == [{"name": "tool", "root": str(into.resolve() / "tool")}]
    )


def test_roots_of_a_folder_with_nothing_applied_is_exit_1_with_the_reason_on_stderr(tmp_path, cli, project):
    two_upstreams(tmp_path, project)
    result = cli("roots", "--target", "t", "--into", str(tmp_path / "empty"))
    assert result.code == 1 and result.out == ""
    assert "lib is not applied into" in result.err


def test_fetch_json_lists_upstreams_like_status(tmp_path, cli, project):
    _lib, _tool, sources = two_upstreams(tmp_path, project)
    doc = json.loads(cli("fetch", "--target", "t", *sources, "--json").out)
    assert [u["name"] for u in doc["upstreams"]] == ["lib", "tool"]
    assert doc["command"] == "fetch" and doc["ok"] and all(u["ok"] for u in doc["upstreams"])


def test_edit_and_export_have_json(tmp_path, cli, project, upstream):
    series_project(project, upstream)
    into = tmp_path / "work"
    edit = cli(
        "edit", "--target", "t", "--upstream", "lib", "--into", str(into), "--source", f"lib={upstream.path}", "--json"
    )
    doc = json.loads(edit.out)
    assert (
        edit.code == 0
        and doc["command"] == "edit"
        and [p["id"] for p in doc["patches"]] == ["first", "second", "third"]
    )
    export = cli("export", "--target", "t", "--upstream", "lib", "--from", str(into), "--json")
    doc = json.loads(export.out)
    assert export.code == 0 and doc["ok"] and doc["changed"] is False
    assert {p["action"] for p in doc["patches"]} == {"unchanged"}


def test_refresh_and_bump_have_json(tmp_path, cli, project, upstream):
    pin = series_project(project, upstream)
    args = ["--target", "t", "--upstream", "lib", "--to", pin, "--source", f"lib={upstream.path}", "--json"]
    refresh = json.loads(cli("refresh", *args, "--dry-run").out)
    assert refresh["command"] == "refresh" and refresh["ok"] and refresh["action"] == "dry-run"
    assert [p["action"] for p in refresh["patches"]] == ["unchanged"] * 3
    bump = json.loads(cli("bump", *args).out)
    assert bump["command"] == "bump" and bump["action"] == "up-to-date" and bump["ok"]


def test_a_missing_required_option_reads_the_same_in_every_command(cli, project, upstream):
    series_project(project, upstream)
    for args, option in (
        (["apply", "--into", "x"], "--target"),
        (["bump", "--target", "t"], "--upstream"),
        (["refresh", "--target", "t", "--upstream", "lib"], "--to"),
        (["edit", "--target", "t", "--upstream", "lib"], "--into"),
        (["export", "--target", "t", "--upstream", "lib"], "--from"),
        (["revert", "--target", "t"], "--python"),
        (["roots", "--target", "t"], "--into"),
    ):
        result = cli(*args)
        assert result.code == 2 and f"error: {option} is required: {args[0]} needs {option} " in result.err, result.err


@pytest.mark.fast
def test_help_says_the_exit_codes_once_and_marks_required_options(cli):
    def flat(text: str) -> str:
        return " ".join(text.replace("│", " ").split())

    assert flat(cli("--help").out).count("Exit codes") == 1
    bump = flat(cli("bump", "--help").out)
    assert "Exit codes" not in bump and bump.count("[required]") == 3
