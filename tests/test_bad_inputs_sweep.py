"""The second sweep of the bad-input corpus: the classes a hostile probe found past the first one.

Same contract as tests/test_bad_inputs.py, whose scene every case runs in: the
exit code of the policy (2 bad input or usage, 1 a check that ran and found
trouble or an environment that is not as needed), exactly one `error:` line
plus one `hint:` line, never a traceback, and every tree (project, upstream, an
outside folder, an earlier `apply --into` folder) hashed unchanged.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from support.bad_inputs import (
    BAD_FILE_KINDS,
    URL,
    Scene,
    assert_one_error,
    fifo_unblocked,
    good_patch,
    manifest,
    put_bad_file,
)
from support.commands import edit_args

from patchmgr.model.input_files import MAX_PATCH_BYTES, MAX_TEXT_BYTES
from patchmgr.sources.settings import PROJECT_FILE

PY_COMMANDS = ("status", "apply", "verify", "revert", "smoke")


def _script(scene: Scene, name: str, body: bytes) -> Path:
    path = scene.outside.parent / "interpreters" / name
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(b"#!/bin/sh\n" + body)
    path.chmod(0o755)
    return path


def _interpreter(scene: Scene, kind: str) -> str:
    if kind == "true":
        return "/bin/true"
    if kind == "garbage":
        return str(_script(scene, "garbage", b"echo 'Python 3.11 says hello'\n"))
    if kind == "non-utf8":
        return str(_script(scene, "latin", b"printf '\\377\\376{\\n'\n"))
    if kind == "empty-json":
        return str(_script(scene, "empty", b"echo '{}'\n"))
    if kind == "json-list":
        return str(_script(scene, "list", b"echo '[1, 2]'\n"))
    if kind == "wrong-types":
        return str(_script(scene, "types", b'echo \'{"prefix": 5, "executable": null, "dists": []}\'\n'))
    if kind == "missing":
        return str(scene.outside.parent / "no-such-python")
    if kind == "folder":
        return str(scene.outside)
    if kind == "not-executable":
        path = scene.outside.parent / "plain.txt"
        path.write_text("print('hi')\n")
        return str(path)
    raise AssertionError(kind)


INTERPRETERS = (
    "true",
    "garbage",
    "non-utf8",
    "empty-json",
    "json-list",
    "wrong-types",
    "missing",
    "folder",
    "not-executable",
)


@pytest.mark.parametrize("command", PY_COMMANDS)
@pytest.mark.parametrize("kind", INTERPRETERS)
def test_python_that_is_not_a_usable_interpreter(scene, command, kind):
    scene.patch(good_patch(scene))
    python = _interpreter(scene, kind)
    result = scene.run(command, "--target", "t", "--python", python)
    assert_one_error(result, 2, f"--python {python}")


# -- --into that is not a folder, or has a name full of brackets ----------------
@pytest.mark.parametrize("command", ["apply", "verify", "smoke"])
def test_into_naming_a_file(scene, command):
    scene.patch(good_patch(scene))
    result = scene.run(command, "--target", "t", "--into", str(scene.outside / "target.txt"))
    assert_one_error(result, 2, "target.txt", "not a folder")


def test_edit_into_a_file(scene):
    scene.patch(good_patch(scene))
    result = scene.run(*edit_args(scene.outside / "target.txt", scene.upstream.path))
    assert_one_error(result, 2, "target.txt", "not a folder")


def test_export_from_a_file(scene):
    scene.patch(good_patch(scene))
    result = scene.run("export", "--target", "t", "--upstream", "lib", "--from", str(scene.outside / "target.txt"))
    assert_one_error(result, 2, "target.txt")


@pytest.mark.parametrize("name", ["x[/]", "[bold]x", "x[/red]y", "[link=file:///etc]x"])
def test_bracketed_into_folder_is_plain_text(tmp_path, scene, name):
    scene.patch(good_patch(scene))
    into = tmp_path / "out" / name
    applied = scene.cli("apply", "--target", "t", "--into", str(into), "--source", f"lib={scene.upstream.path}")
    assert applied.code == 0 and str(into) in applied.out, applied.out + applied.err
    verified = scene.cli("verify", "--target", "t", "--into", str(into))
    assert verified.code == 0 and str(into) in verified.out, verified.out + verified.err


@pytest.mark.parametrize(
    "field, value", [("Upstream-Status", "[/x]"), ("Origin", "[bold]vendor[/bold"), ("Description", "[/]")]
)
def test_lint_prints_header_values_as_they_are(scene, field, value):
    data = good_patch(scene).replace(
        b"Origin: vendor\nUpstream-Status: Pending",
        f"Origin: vendor\nUpstream-Status: Pending\n{field}: {value}".encode(),
    )
    scene.patch(data)
    result = scene.run("lint")
    assert "Traceback" not in result.err and result.code in (0, 1)


# -- manifests the loader must refuse cleanly ------------------------------------
def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


NASTY_MANIFESTS = [
    ("deeply nested arrays", manifest(f"patches = {_nested(5000)}\n"), "manifests/t.toml"),
    ("deeply nested inline tables", manifest("x = " + "{a = " * 3000 + "1" + "}" * 3000 + "\n"), "manifests/t.toml"),
    ("empty file", "", "at key target"),
    ("target that is a list", "target = [1]\n", "at key target"),
    ("upstreams that is a list", '[target]\nname = "t"\nupstreams = [1]\n', "upstreams"),
    ("upstream name with a slash", manifest().replace("[upstreams.lib]", '[upstreams."a/b"]'), "a/b"),
    ("upstream name with dots", manifest().replace("[upstreams.lib]", '[upstreams.".."]'), ".."),
    ("patch id leaving the folder", manifest('patches = ["../../x"]\n'), "../../x"),
    ("patch id with a NUL", manifest('patches = ["a\\u0000b"]\n'), "patches"),
    ("package-root that is absolute", manifest('package-root = "/etc"\n'), "package-root"),
    ("package-root that leaves", manifest('package-root = "../x"\n'), "package-root"),
    ("version that is not a version", manifest('version = "not a version!"\npypi = "lib"\n'), "version"),
    ("pypi name that is not a name", manifest('pypi = "lib; rm -rf /"\nversion = "1.0"\n'), "pypi"),
    ("git URL with a newline", manifest(git_url="https://example.invalid/a\\nb.git"), "git"),
]


@pytest.mark.parametrize("text, expected", [c[1:] for c in NASTY_MANIFESTS], ids=[c[0] for c in NASTY_MANIFESTS])
def test_nasty_manifest(scene, text, expected):
    (scene.project.root / "manifests/t.toml").write_text(text)
    for result in (scene.status(), scene.apply()):
        assert_one_error(result, 2, "manifests/t.toml", expected)


def test_manifest_that_is_a_folder(scene):
    os.remove(scene.project.root / "manifests/t.toml") if (scene.project.root / "manifests/t.toml").exists() else None
    (scene.project.root / "manifests/t.toml").mkdir()
    assert_one_error(scene.status(), 2, "manifests/t.toml")


def test_patch_file_that_is_a_folder(scene):
    scene.patch(good_patch(scene))
    bad = scene.project.root / "patches/lib/bad.patch"
    bad.unlink()
    bad.mkdir()
    assert_one_error(scene.status(), 2, "patches/lib/bad.patch")


def test_patch_file_missing(scene):
    scene.patch(good_patch(scene))
    (scene.project.root / "patches/lib/bad.patch").unlink()
    assert_one_error(scene.status(), 2, "patches/lib/bad.patch")


# -- command-line values ---------------------------------------------------------
BAD_VALUES = [
    ("source without a name", ["status", "--source", "/tmp"], 2, "NAME=LOCATION"),
    ("source with an empty location", ["status", "--source", "lib="], 2, "lib"),
    ("against without a ref", ["status", "--against", "lib="], 2, "lib"),
    ("against without a name", ["status", "--against", "main"], 2, "NAME=REF"),
    ("a ref the upstream does not have", ["status", "--against", "lib=no-such-branch"], 2, "no-such-branch"),
    ("unknown target", ["status", "--target", "nope"], 2, "nope"),
    ("unknown device", ["smoke", "--device", "tpu"], 2, "tpu"),
    ("bisect without --to", ["bisect", "--upstream", "lib"], 2, "--to"),
    ("bisect to a ref that is not there", ["bisect", "--upstream", "lib", "--to", "v9.9.9"], 2, "v9.9.9"),
    ("refresh of an unknown upstream", ["refresh", "--upstream", "nope", "--to", "main"], 2, "nope"),
    ("bump to a ref that is an option", ["bump", "--upstream", "lib", "--to", "--help=x"], 2, "--help=x"),
    (
        "bump with a bad version",
        ["bump", "--upstream", "lib", "--to", "main", "--version", "not-a-version!"],
        2,
        "not-a-version!",
    ),
]


@pytest.mark.parametrize("args, code, expected", [c[1:] for c in BAD_VALUES], ids=[c[0] for c in BAD_VALUES])
def test_bad_command_line_value(scene, args, code, expected):
    scene.patch(good_patch(scene))
    command, *rest = args
    extra = [] if "--target" in rest else ["--target", "t"]
    source = (
        ["--source", f"lib={scene.upstream.path}"]
        if command in ("status", "bisect", "refresh", "bump") and "--source" not in rest
        else []
    )
    into = ["--into", str(scene.into)] if command == "smoke" else []
    result = scene.run(command, *extra, *rest, *source, *into)
    assert_one_error(result, code, expected)


def test_root_that_is_a_file(scene, capsys):
    from patchmgr.cli import main

    code = main(["status", "--root", str(scene.outside / "target.txt")])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("error: ") and "target.txt" in err and "Traceback" not in err


# -- damaged state in an --into folder: the ledger and the journal ----------------
LEDGER = "patchmgr-ledger.json"


def one_upstream_ledger(**fields) -> dict:
    """A ledger of ``apply --into`` with one well-formed upstream entry, ``fields`` put over it."""
    entry = dict(name="lib", pin="a", base_commit="a", head_commit="a", source="x", patches=[], files={})
    return {"target": "t", "upstreams": [{**entry, **fields}]}


DAMAGED_LEDGERS = [
    ("not JSON", "{not json"),
    ("a list", "[1, 2]"),
    ("target is a number", {"target": 5, "upstreams": []}),
    ("upstreams is an object", {"target": "t", "upstreams": {"lib": 1}}),
    ("patches is a string", one_upstream_ledger(patches="p")),
    ("files is a list", one_upstream_ledger(files=["a"])),
    ("a file hash is a number", one_upstream_ledger(files={"src/mod.py": 5})),
]


@pytest.mark.parametrize("command", ["apply", "verify", "smoke"])
@pytest.mark.parametrize("content", [c[1] for c in DAMAGED_LEDGERS], ids=[c[0] for c in DAMAGED_LEDGERS])
def test_damaged_ledger(scene, command, content):
    scene.patch(good_patch(scene))
    (scene.into / LEDGER).write_text(content if isinstance(content, str) else json.dumps(content))
    args = ["--source", f"lib={scene.upstream.path}"] if command == "apply" else []
    result = scene.run(command, "--target", "t", "--into", str(scene.into), *args)
    assert_one_error(result, 1, LEDGER, "damaged")


DAMAGED_JOURNALS = [
    ("not JSON", "{"),
    ("a list", "[]"),
    ("state is a number", {"state": 5, "entries": []}),
    ("entries is not a list", {"state": "prepared", "entries": 5}),
    ("an entry without a path", {"state": "prepared", "entries": [{"saved": None}]}),
]


@pytest.mark.parametrize("content", [c[1] for c in DAMAGED_JOURNALS], ids=[c[0] for c in DAMAGED_JOURNALS])
def test_damaged_journal(scene, content):
    scene.patch(good_patch(scene))
    journal = scene.into / ".patchmgr-state" / "journal"
    journal.mkdir(parents=True, exist_ok=True)
    (journal / "journal.json").write_text(content if isinstance(content, str) else json.dumps(content))
    result = scene.run("verify", "--target", "t", "--into", str(scene.into))
    assert_one_error(result, 1, "journal.json", "damaged")


# -- refusals leave nothing behind --------------------------------------------
def test_refused_apply_leaves_no_folder_and_no_lock(scene, tmp_path):
    patch = good_patch(scene)  # made while src/mod.py exists: after the drop it would create the file instead
    scene.upstream.commit({"src/mod.py": None}, "drop mod.py")  # the patch is `missing` now
    scene.patch(patch, pin=scene.pin)
    into = tmp_path / "fresh"
    result = scene.cli("apply", "--target", "t", "--into", str(into), "--source", f"lib={scene.upstream.path}")
    assert result.code == 1 and not into.exists()


def test_dry_run_leaves_no_lock_in_an_existing_folder(scene, tmp_path):
    scene.patch(good_patch(scene))
    into = tmp_path / "empty"
    into.mkdir()
    result = scene.cli(
        "apply", "--target", "t", "--into", str(into), "--dry-run", "--source", f"lib={scene.upstream.path}"
    )
    assert result.code == 0 and list(into.iterdir()) == []


def test_apply_into_the_patches_folder_is_refused(scene):
    scene.patch(good_patch(scene))
    result = scene.run(
        "apply",
        "--target",
        "t",
        "--into",
        str(scene.project.root / "patches"),
        "--source",
        f"lib={scene.upstream.path}",
    )
    assert_one_error(result, 2, "patches")


# -- a read-only --into folder (a real read-only mount) ----------------------------
@pytest.fixture
def read_only_into(scene, tmp_path):
    """``scene.into`` copied onto a tmpfs that is then remounted read-only."""
    import shutil
    import subprocess

    from support.needs import require

    mount = tmp_path / "ro"
    mount.mkdir()
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(mount)], capture_output=True)
    require(made.returncode == 0, f"cannot mount a tmpfs here: {made.stderr.decode().strip()}")
    try:
        shutil.copytree(scene.into, mount / "build", symlinks=True)
        subprocess.run(["mount", "-o", "remount,ro", str(mount)], check=True)
        yield mount / "build"
    finally:
        subprocess.run(["umount", str(mount)], check=False)


def test_read_only_into(scene, read_only_into):
    scene.patch(good_patch(scene))
    scene.into = read_only_into
    applied = scene.run(
        "apply", "--target", "t", "--into", str(read_only_into), "--source", f"lib={scene.upstream.path}"
    )
    assert_one_error(applied, 1, "Read-only file system")
    verified = scene.run("verify", "--target", "t", "--into", str(read_only_into))
    assert "Traceback" not in verified.err and "read-only" in verified.out + verified.err


# -- every file a command reads: a regular file, bounded in size ------------------------------------------
@dataclass(frozen=True)
class FileInput:
    """A file some command reads: where the test puts it, the command that reads it, its size bound, and the
    kinds that are bad there (a folder is a good value of import's PATHS)."""

    place: Callable[[Scene], Path]
    args: Callable[[Scene, Path], list[str]]
    limit: int = MAX_TEXT_BYTES
    kinds: tuple[str, ...] = BAD_FILE_KINDS


def _given_patch(scene: Scene) -> Path:
    path = scene.outside / "lib.patch"
    path.write_bytes(good_patch(scene))
    return path


def _import(scene: Scene, *args: str) -> list[str]:
    return ["import", *args, "--target", "n", "--dry-run"]


def _pinned(scene: Scene) -> list[str]:
    return ["--git", f"lib={URL}", "--pin", f"lib={scene.pin}", "--source", f"lib={scene.upstream.path}"]


def _exported(scene: Scene) -> Path:
    """A folder as export --format series writes it: its record is the file under test."""
    folder = scene.outside / "exported"
    folder.mkdir(exist_ok=True)
    (folder / "lib.patch").write_bytes(good_patch(scene))
    return folder / "patchmgr-series" / "export.toml"


def _status(scene: Scene, _: Path) -> list[str]:
    return ["status", "--target", "t", "--source", f"lib={scene.upstream.path}"]


FILE_INPUTS: dict[str, FileInput] = {
    "add --diff": FileInput(
        lambda s: s.outside / "fix.diff",
        lambda s, p: ["add", "fix", "--target", "t", "--upstream", "lib", "--diff", str(p)],
        MAX_PATCH_BYTES,
    ),
    "import PATHS": FileInput(
        lambda s: s.outside / "lib.patch",
        lambda s, p: _import(s, str(p), "--upstream", "lib", *_pinned(s)),
        MAX_PATCH_BYTES,
        tuple(k for k in BAD_FILE_KINDS if k != "folder"),
    ),
    "import --dockerfile": FileInput(
        lambda s: s.outside / "Dockerfile", lambda s, p: _import(s, str(_given_patch(s)), "--dockerfile", str(p))
    ),
    "import --script": FileInput(
        lambda s: s.outside / "build.sh", lambda s, p: _import(s, str(_given_patch(s)), "--script", str(p))
    ),
    "import --map": FileInput(
        lambda s: s.outside / "map.toml",
        lambda s, p: _import(s, str(_given_patch(s)), "--upstream", "lib", *_pinned(s), "--map", str(p)),
    ),
    "import's series.conf": FileInput(
        lambda s: s.outside / "series.conf",
        lambda s, p: _import(s, str(p), *_pinned(s)),
        kinds=tuple(k for k in BAD_FILE_KINDS if k != "folder"),
    ),
    "import's export record": FileInput(
        _exported,
        lambda s, p: _import(s, str(p.parent.parent), *_pinned(s)),
        kinds=tuple(k for k in BAD_FILE_KINDS if k != "device"),  # a link out of the folder: refused as such
    ),
    "the manifest": FileInput(lambda s: s.project.root / "manifests/t.toml", _status),
    "a patch file": FileInput(lambda s: s.project.root / "patches/lib/bad.patch", _status, MAX_PATCH_BYTES),
    "the project's settings": FileInput(lambda s: s.project.root / PROJECT_FILE, _status),
    "the user's settings": FileInput(lambda s: s.tmp / "xdg-config/patchmgr/config.toml", _status),
    "init's .gitignore": FileInput(
        lambda s: s.project.root / ".gitignore",
        lambda s, p: ["init", "--target", "n", "--git", URL, "--pin", s.pin, "--source", f"lib={s.upstream.path}"],
    ),
}
FOLDER_OPTIONS = {"--root", "--into", "--from", "--from-edit", "--repo"}


def test_every_path_a_command_takes_is_a_folder_or_a_file_input_swept_here():
    """A new option naming a file fails here until FILE_INPUTS sweeps it."""
    from patchmgr.cli.app import build_command
    from patchmgr.cli.commands import COMMANDS

    for name in COMMANDS:
        for param in build_command(name).params:
            if param.type.name != "path" or param.opts[0] in FOLDER_OPTIONS:
                continue
            shown = param.opts[0] if param.param_type_name == "option" else (param.name or "").upper()
            assert f"{name} {shown}" in FILE_INPUTS, f"{name} {shown} names a file: add it to FILE_INPUTS"


BAD_FILES = [(read, kind) for read, spec in FILE_INPUTS.items() for kind in spec.kinds]


@pytest.mark.parametrize("read, kind", BAD_FILES, ids=[f"{read}: {kind}".replace(" ", "-") for read, kind in BAD_FILES])
def test_a_file_that_is_no_regular_file_or_too_large_is_one_error_never_read(scene, read, kind):
    spec = FILE_INPUTS[read]
    scene.patch(good_patch(scene))
    (scene.project.root / ".gitignore").write_text(".patchmgr-state/\n")
    path = spec.place(scene)
    put_bad_file(path, kind, spec.limit)
    with fifo_unblocked(path) as rescued:
        result = scene.run(*spec.args(scene, path))
    assert not rescued, f"{read}: the run blocked on the FIFO until the test opened it"
    assert_one_error(result, 2, str(path), "larger than" if kind == "too large" else "not a regular file")


TOML_INPUTS = [
    "import --map",
    "import's export record",
    "the manifest",
    "the project's settings",
    "the user's settings",
]
DEEP_TOML = {
    "arrays": f"x = {_nested(5000)}\n",  # Python's parser recurses on these until it fails
    "inline tables": "x = " + "{a = " * 3000 + "1" + "}" * 3000 + "\n",
    "dotted keys": "[sources]\n" + ".".join(["a"] * 40) + ' = "x"\n',  # read without recursing, 40 deep
}


@pytest.mark.parametrize("nesting", DEEP_TOML)
@pytest.mark.parametrize("read", TOML_INPUTS, ids=[name.replace(" ", "-") for name in TOML_INPUTS])
def test_toml_nested_too_deeply_is_one_error_in_every_toml_file(scene, read, nesting):
    spec = FILE_INPUTS[read]
    scene.patch(good_patch(scene))
    (scene.project.root / ".gitignore").write_text(".patchmgr-state/\n.patchmgr.local.toml\n")
    path = spec.place(scene)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(DEEP_TOML[nesting])
    result = scene.run(*spec.args(scene, path))
    assert_one_error(result, 2, str(path), "nested more than 32 deep")
