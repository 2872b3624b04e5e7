"""Sources set once (issue 27, item 3): ``--source`` > ``PATCHMGR_SOURCES`` > ``.patchmgr.local.toml`` > the
user's ``$XDG_CONFIG_HOME/patchmgr/config.toml`` > the manifest; every command gets them through the one
``Sources`` value, the output says where each upstream's source came from, and a wrong value is one error that
names where it is written."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.scenes import lines_with, pin_fixes

from patchmgr.model.errors import UsageError
from patchmgr.sources.settings import (
    ENVIRONMENT,
    PROJECT_FILE,
    configured,
    from_environment,
    read_file,
    user_config_path,
)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def user_file(tmp_path: Path) -> Path:
    return tmp_path / "xdg-config" / "patchmgr" / "config.toml"  # conftest points XDG_CONFIG_HOME there


# -- reading the settings: no process ---------------------------------------------------------------
@pytest.mark.fast
def test_the_user_file_is_where_xdg_says(tmp_path):
    assert user_config_path({"XDG_CONFIG_HOME": "/cfg"}) == Path("/cfg/patchmgr/config.toml")
    default = Path.home() / ".config/patchmgr/config.toml"
    assert user_config_path({}) == default and user_config_path({"XDG_CONFIG_HOME": "relative"}) == default


@pytest.mark.fast
def test_precedence_environment_over_project_file_over_user_file(tmp_path):
    user = write(tmp_path / "user.toml", '[sources]\na = "/u/a"\nb = "/u/b"\nc = "/u/c"\n')
    root = tmp_path / "project"
    write(root / PROJECT_FILE, '[sources]\nb = "/p/b"\nc = "/p/c"\n')
    env = {"XDG_CONFIG_HOME": str(tmp_path / "xdg"), ENVIRONMENT: " c=/e/c  d=https://example.org/d.git "}
    (tmp_path / "xdg/patchmgr").mkdir(parents=True)
    user.rename(tmp_path / "xdg/patchmgr/config.toml")
    settings = configured(root, env).settings
    assert {name: (s.location, s.given_by) for name, s in settings.items()} == {
        "a": ("/u/a", str(tmp_path / "xdg/patchmgr/config.toml")),
        "b": ("/p/b", str(root / PROJECT_FILE)),
        "c": ("/e/c", ENVIRONMENT),
        "d": ("https://example.org/d.git", ENVIRONMENT),
    }


@pytest.mark.fast
def test_a_relative_path_in_a_file_is_read_from_its_folder_and_home_is_kept(tmp_path):
    path = write(tmp_path / "c.toml", '[sources]\n"lib" = "../src/lib"\nmb = "~/src/Megatron-Bridge"\n')
    settings = read_file(path)
    assert settings["lib"].location == str(tmp_path / "../src/lib")
    assert settings["mb"].location == "~/src/Megatron-Bridge"


@pytest.mark.fast
def test_the_project_file_not_in_gitignore_gets_a_note(tmp_path):
    write(tmp_path / PROJECT_FILE, '[sources]\nlib = "/x"\n')
    (note,) = configured(tmp_path, {}).notes
    assert ".gitignore does not name it" in note
    write(tmp_path / ".gitignore", "/build\n/.patchmgr.local.toml\n")
    assert configured(tmp_path, {}).notes == ()


BAD = [
    ("env without =", {ENVIRONMENT: "lib=/x mindspeed"}, None, f"{ENVIRONMENT}: 'mindspeed' is not NAME=LOCATION"),
    ("env empty location", {ENVIRONMENT: "lib="}, None, f"{ENVIRONMENT}: 'lib=' is not NAME=LOCATION"),
    ("env bad name", {ENVIRONMENT: "Lib/x=/x"}, None, f"{ENVIRONMENT}: 'Lib/x' cannot name an upstream"),
    ("env a name twice", {ENVIRONMENT: "lib=/x mb=/z lib=/y"}, None, f"{ENVIRONMENT}: names lib twice ('/x', '/y')"),
    ("env option-like", {ENVIRONMENT: "lib=--upload-pack=x"}, None, f"{ENVIRONMENT}: the source of lib:"),
    ("bad TOML", {}, '[sources]\nlib = "/x"\nmb = ~/src\n', "{file}:3: invalid TOML"),
    ("unknown table", {}, '[source]\nlib = "/x"\n', "{file}:1: unknown key 'source': only [sources] is read"),
    ("not a string", {}, "[sources]\nlib = 3\n", "{file}:2: the source of lib must be a non-empty string"),
    ("sources not a table", {}, 'sources = "x"\n', "{file}:1: sources must be a table"),
    ("ext transport", {}, '[sources]\n\nlib = "ext::sh -c x"\n', "{file}:3: the source of lib: the ext::"),
]


@pytest.mark.fast
@pytest.mark.parametrize("env, text, expected", [c[1:] for c in BAD], ids=[c[0] for c in BAD])
def test_a_wrong_value_is_one_error_naming_where(tmp_path, env, text, expected):
    env = {"XDG_CONFIG_HOME": str(tmp_path / "xdg"), **env}
    file = tmp_path / "xdg/patchmgr/config.toml"
    if text is not None:
        write(file, text)
    with pytest.raises(UsageError) as raised:
        configured(tmp_path / "project", env)
    assert raised.value.message.startswith(expected.format(file=file)), raised.value.message
    assert raised.value.hint and (
        ENVIRONMENT in raised.value.hint or str(file) in raised.value.hint or "[sources]" in raised.value.hint
    )


@pytest.mark.fast
def test_an_unset_or_blank_environment_gives_nothing():
    assert from_environment({}) == {} and from_environment({ENVIRONMENT: "  "}) == {}


# -- through the commands: real git -----------------------------------------------------------------
def locations(doc: dict) -> dict[str, tuple[str, str]]:
    return {name: (entry["location"], entry["given_by"]) for name, entry in doc["sources"].items()}


def test_each_place_serves_status_with_its_precedence(cli, project, upstream, tmp_path, monkeypatch):
    pin_fixes(project, upstream, {"fix": {20: "fixed 20"}})  # the manifest's URL cannot be reached
    good, gone = str(upstream.path), str(tmp_path / "gone")
    status = ("status", "--target", "t", "--json")
    manifest_only = cli(*status)
    assert manifest_only.code == 1
    assert locations(manifest_only.json) == {"lib": ("https://example.invalid/lib.git", "manifest")}

    write(user_file(tmp_path), f'[sources]\nlib = "{good}"\n')
    from_user = cli(*status)
    assert from_user.code == 0, from_user.out + from_user.err
    assert locations(from_user.json) == {"lib": (good, str(user_file(tmp_path)))}
    assert f"lib: source {good}, given by {user_file(tmp_path)}" in from_user.json["notes"]

    write(project.root / PROJECT_FILE, f'[sources]\nlib = "{gone}"\n')
    assert locations(cli(*status).json)["lib"] == (gone, str(project.root / PROJECT_FILE))

    monkeypatch.setenv(ENVIRONMENT, f"lib={good}")
    from_env = cli("status", "--target", "t")  # for people: a note says where
    assert from_env.code == 0 and f"note: lib: source {good}, given by {ENVIRONMENT}" in from_env.out

    flag = cli(*status, "--source", f"lib={gone}")
    assert locations(flag.json) == {"lib": (gone, "--source")}
    assert not any("given by" in note for note in flag.json["notes"])  # the command line says it already


def test_every_command_that_reads_sources_takes_them_from_the_environment(
    cli, project, upstream, tmp_path, monkeypatch
):
    pin_fixes(project, upstream, {"fix": {20: "fixed 20"}})
    upstream.commit({"src/mod.py": lines_with({3: "moved"})}, "move")
    monkeypatch.setenv(ENVIRONMENT, f"lib={upstream.path} other=/srv/elsewhere")  # other: no manifest has it
    runs = {
        "apply": ("apply", "--target", "t", "--into", str(tmp_path / "build")),
        "fetch": ("fetch", "--target", "t"),
        "matrix": ("matrix", "--target", "t"),
        "refresh": ("refresh", "--target", "t", "-u", "lib", "--to", "main", "--dry-run"),
        "bisect": ("bisect", "--target", "t", "-u", "lib", "--to", "main"),
    }
    for name, args in runs.items():
        result = cli(*args, "--json")
        assert result.code == 0, (name, result.out, result.err)
        assert locations(result.json) == {"lib": (str(upstream.path), ENVIRONMENT)}, name


def test_a_wrong_value_stops_the_command_before_anything(cli, project, upstream, monkeypatch):
    pin_fixes(project, upstream, {"fix": {20: "fixed 20"}})
    write(project.root / PROJECT_FILE, '[sources]\nlib = "/x"\nbroken\n')
    result = cli("status", "--target", "t")
    assert result.code == 2 and result.out == ""
    assert result.err.splitlines() == [
        f"error: {project.root / PROJECT_FILE}:3: invalid TOML: Expected '=' after a key in a key/value pair",
        'hint: the file holds one [sources] table of NAME = "LOCATION" lines, e.g. '
        'megatron-bridge = "~/src/Megatron-Bridge"',
    ]


def test_a_project_file_name_no_manifest_has_is_noted(cli, project, upstream):
    pin_fixes(project, upstream, {"fix": {20: "fixed 20"}})
    write(project.root / PROJECT_FILE, f'[sources]\nlib = "{upstream.path}"\nlbi = "/x"\n')
    write(project.root / ".gitignore", ".patchmgr.local.toml\n")
    result = cli("status", "--target", "t", "--json")
    assert result.code == 0, result.out + result.err
    ignored = f"{project.root / PROJECT_FILE}: no manifest names upstream 'lbi'; ignored (the upstreams: lib)"
    assert ignored in result.json["notes"]


def test_an_environment_name_no_manifest_has_is_noted_and_one_another_target_has_is_not(
    cli, project, upstream, monkeypatch
):
    pin_fixes(project, upstream, {"fix": {20: "fixed 20"}})
    project.manifest("other", {"tool": {"git": "https://example.invalid/tool.git", "commit": upstream.head()}})
    monkeypatch.setenv(ENVIRONMENT, f"lib={upstream.path} tool=/srv/tool lbi=/srv/typo")
    result = cli("status", "--target", "t")
    assert result.code == 0, result.out + result.err
    notes = [line for line in result.out.splitlines() if line.startswith("note: ")]
    assert notes == [
        f"note: lib: source {upstream.path}, given by {ENVIRONMENT}",
        f"note: {ENVIRONMENT}: no manifest names upstream 'lbi'; ignored (the upstreams: lib, tool)",
    ]
    assert cli("status", "--target", "t", "--json").json["notes"] == [n.removeprefix("note: ") for n in notes]
