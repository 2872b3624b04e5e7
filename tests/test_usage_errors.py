"""Every usage error of the command line is patchmgr's own (issue 27, item 6): one ``error:`` line, one ``hint:``
line, exit 2, click's suggestion kept; ``patchmgr targets`` lists the targets that ``--target`` names."""

from __future__ import annotations

import pytest

from patchmgr.cli import main

USAGE = [
    (
        "unknown option, suggested",
        ["status", "--aginst", "lib=main"],
        "error: no such option: --aginst (did you mean --against?)",
        "hint: `patchmgr status --help` lists its options",
    ),
    (
        "unknown option, nothing close",
        ["apply", "--zzz"],
        "error: no such option: --zzz",
        "hint: `patchmgr apply --help` lists its options",
    ),
    (
        "unknown command, suggested",
        ["statuz"],
        "error: no such command 'statuz' (did you mean 'status'?)",
        "hint: `patchmgr --help` lists the commands",
    ),
    (
        "unknown command",
        ["frobnicate"],
        "error: no such command 'frobnicate'",
        "hint: `patchmgr --help` lists the commands",
    ),
    (
        "unknown top-level option",
        ["--verison"],
        "error: no such option: --verison (did you mean --version?)",
        "hint: `patchmgr --help` lists the commands",
    ),
    (
        "option without its value",
        ["status", "--target"],
        "error: option '--target' needs a value",
        "hint: `patchmgr status --help` lists its options",
    ),
    (
        "value given to a flag",
        ["lint", "--json=yes"],
        "error: option '--json' does not take a value",
        "hint: `patchmgr lint --help` lists its options",
    ),
    (
        "extra argument",
        ["status", "extra"],
        "error: got unexpected extra argument(s) (extra)",
        "hint: `patchmgr status --help` lists its options",
    ),
    (
        "required option left out",
        ["edit", "--upstream", "lib"],
        "error: --target is required: edit needs --target NAME",
        "hint: the project's targets: a, b (`patchmgr targets` lists them with their pins)",
    ),
    (
        "status without its target",
        ["status"],
        "error: --target is required: status needs --target NAME",
        "hint: the project's targets: a, b (`patchmgr targets` lists them with their pins)",
    ),
]


@pytest.mark.fast
@pytest.mark.parametrize("args, error, hint", [c[1:] for c in USAGE], ids=[c[0] for c in USAGE])
def test_a_usage_error_is_one_error_and_one_hint(tmp_path, capsys, args, error, hint):
    (tmp_path / "manifests").mkdir()
    (tmp_path / "patches").mkdir()
    for name in ("a", "b"):
        (tmp_path / "manifests" / f"{name}.toml").write_text(f'[target]\nname = "{name}"\n')
    command, *rest = args
    code = main([command, "--root", str(tmp_path), *rest] if command in ("status", "edit", "apply", "lint") else args)
    captured = capsys.readouterr()
    assert (code, captured.out, captured.err.splitlines()) == (2, "", [error, hint])


def test_targets_lists_each_target_its_upstreams_and_pins(cli, project, upstream, monkeypatch):
    pin = upstream.head()
    project.add_patch("lib", "fix", upstream.make_patch(pin, {"README": "fixed\n"}, "Fix"))
    spec = {"git": "https://user:secret@example.invalid/lib.git", "commit": pin, "version": "1.0", "patches": ["fix"]}
    project.manifest(
        "ascend", {"lib": spec, "other": {"git": "git@example.invalid:other.git", "commit": pin, "patches": []}}
    )
    people = cli("targets")
    assert people.code == 0, people.out + people.err
    assert people.out.splitlines() == [
        "ascend  test target",
        f"  lib  pin {pin[:12]} (1.0)  1 patch  https://user:***@example.invalid/lib.git",
        f"  other  pin {pin[:12]}  0 patches  git@example.invalid:other.git",
    ]
    doc = cli("targets", "--json").json
    (target,) = doc["targets"]
    assert doc["ok"] and target["name"] == "ascend" and [u["name"] for u in target["upstreams"]] == ["lib", "other"]
    assert target["upstreams"][0] == {
        "name": "lib",
        "commit": pin,
        "version": "1.0",
        "pypi": None,
        "git": ["https://user:***@example.invalid/lib.git"],
        "patches": 1,
        "source": None,
    }
    monkeypatch.setenv("PATCHMGR_SOURCES", f"other={upstream.path}")
    assert cli("targets").out.splitlines()[3] == f"    source {upstream.path}, given by PATCHMGR_SOURCES"
    (project.root / "manifests/broken.toml").write_text("[target\n")
    broken = cli("targets", "--json")
    assert broken.code == 1 and [t["name"] for t in broken.json["targets"]] == ["ascend"]
    assert "broken.toml" in broken.json["broken"][0]
