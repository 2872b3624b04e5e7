"""Trust, third sweep (issue 24): what patchmgr reuses from its cache, manifest values that reach a shell,
smoke requirements under the URL policy, and the output files a user names. Each through the real CLI."""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from support.commands import matrix
from support.scenes import tagged_upstream

# -- 12. an output path is a regular file or absent ---------------------------------------------------------


def _device(path: Path) -> Path:
    """A character device node like /dev/null at ``path`` (root only), else /dev/null itself."""
    if os.geteuid() == 0:
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 3))
        return path
    return Path("/dev/null")


@pytest.mark.parametrize(
    "kind",
    [
        "fifo",
        "device",
        "socket",
        "folder",
        "link-to-fifo",
        "link-to-device",
        "dangling-link",
        "proc",
        "sys",
        "under-a-file",
        "new-folder/",
        "new-folder/.",
        "new-folder/..",
        "proc-self-cwd",
        "proc-self-cwd-dotdot",
    ],
)
def test_matrix_html_refuses_every_path_that_is_not_a_regular_file_and_writes_nothing(
    cli, project, upstream, tmp_path, monkeypatch, kind
):
    tagged_upstream(project, upstream)
    place = tmp_path / "out"
    place.mkdir()
    path, keep = place / "m.html", None
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "device":
        path = _device(path)
    elif kind == "socket":
        keep = socket.socket(socket.AF_UNIX)
        keep.bind(str(path))
    elif kind == "folder":
        path.mkdir()
    elif kind == "link-to-fifo":
        os.mkfifo(place / "fifo")
        path.symlink_to(place / "fifo")
    elif kind == "link-to-device":
        path.symlink_to(_device(place / "null"))
    elif kind == "dangling-link":
        path.symlink_to(place / "elsewhere.html")
    elif kind == "proc":
        path = Path("/proc/self/comm")
    elif kind == "sys":
        path = Path("/sys/kernel/m.html")
    elif kind == "under-a-file":
        (place / "file").write_text("x\n")
        path = place / "file" / "m.html"
    elif kind.startswith("new-folder"):  # a path that ends in "/" names a folder, existing or not
        path = str(place / "new") + kind[len("new-folder") :]  # type: ignore[assignment]
    elif kind.startswith("proc-self-cwd"):  # under /proc as given, though the folder it names is real storage
        monkeypatch.chdir(place)
        path = Path("/proc/self/cwd/m.html" if kind == "proc-self-cwd" else "/proc/self/cwd/../out/m.html")
    before = sorted((p.name, os.lstat(p).st_mode) for p in place.iterdir())
    try:
        result = matrix(cli, upstream, "--html", str(path))
    finally:
        if keep is not None:
            keep.close()
    assert result.code == 2, (kind, result.code, result.out, result.err)
    assert result.err.count("error: ") == 1 and "hint: " in result.err and str(path) in result.err, result.err
    assert "Traceback" not in result.err and result.out == ""
    assert sorted((p.name, os.lstat(p).st_mode) for p in place.iterdir()) == before  # nothing replaced or added


def test_matrix_html_still_replaces_a_regular_file(cli, project, upstream, tmp_path):
    tagged_upstream(project, upstream)
    page = tmp_path / "m.html"
    page.write_text("old\n")
    result = matrix(cli, upstream, "--html", str(page))
    assert result.code == 1 and page.read_text().startswith("<!DOCTYPE html>"), result.err


# -- 7. manifest values that name a path, id, ref or URL hold no control character -------------------------

CONTROL = ["\n", "\r", "\t", "\x00", "\x1b", "\x7f", "\x85", "\x9b", "\u2028", "\u2029"]
FORGED = "\nfake import os;os.mkdir(os.environ['PWNED_AT'])#"


def _toml(value) -> str:
    return json.dumps(value)  # JSON's escapes (\n, \u2028) are TOML's


def _manifest(project, upstream, key: str, value: str) -> Path:
    """manifests/t.toml for one upstream ``lib`` at ``upstream``'s head, with ``value`` put into ``key``."""
    pin = upstream.head()
    project.add_patch("lib", "fix", upstream.make_patch(pin, {"README": "patched\n"}, "Fix the readme"))
    spec = {
        "git": "https://example.invalid/lib.git",
        "commit": pin,
        "version": "1.0",
        "pypi": "lib",
        "package-root": "src",
        "patches": ["fix"],
        "mirrors": ["https://mirror.invalid/lib.git"],
        "smoke-requirements": ["packaging==24.0"],
    }
    name, target = "lib", "t"
    if key == "upstream-name":
        name = "lib" + value
    elif key == "target.name":
        target = "t" + value
    elif key in ("mirrors", "patches", "smoke-requirements"):
        spec[key] = spec[key] + [spec[key][0] + value] if key != "patches" else ["fix" + value]
    else:
        spec[key] = spec[key] + value
    lines = ["[target]", f"name = {_toml(target)}", 'description = "test"', f"[upstreams.{_toml(name)}]"]
    lines += [f"{k} = {_toml(v)}" for k, v in spec.items()]
    path = project.root / "manifests" / "t.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize(
    "key",
    [
        "package-root",
        "git",
        "mirrors",
        "version",
        "pypi",
        "patches",
        "smoke-requirements",
        "upstream-name",
        "target.name",
    ],
)
def test_a_control_character_in_a_manifest_value_is_refused_by_lint_and_apply(cli, project, upstream, tmp_path, key):
    for char in CONTROL:
        _manifest(project, upstream, key, char + "x")
        into = tmp_path / "build"
        for args in (["lint"], ["apply", "--target", "t", "--into", str(into), "--source", f"lib={upstream.path}"]):
            result = cli(*args)
            shown = (key, repr(char), args[0])
            assert result.code == (1 if args[0] == "lint" else 2), (shown, result.out, result.err)  # lint: a finding
            error = " ".join((result.out + result.err).split())
            assert "manifests/t.toml" in error and f"control character (U+{ord(char):04X})" in error, (shown, error)
            assert "Traceback" not in error and (args[0] == "lint" or "remove the character" in error), (shown, error)
            assert not into.exists()
    wanted = {"upstream-name": "upstreams.'lib", "target.name": "target.name"}.get(key, f"upstreams.lib.{key}")
    assert wanted in error, error


def test_the_package_root_that_forged_a_pth_line_is_refused_before_roots_prints_it(cli, project, upstream, tmp_path):
    _manifest(project, upstream, "package-root", FORGED)
    into = tmp_path / "build"
    applied = cli("apply", "--target", "t", "--into", str(into), "--source", f"lib={upstream.path}")
    roots = cli("roots", "--target", "t", "--into", str(into))
    assert applied.code == 2 and roots.code == 2, (applied.out, applied.err, roots.out)
    assert "upstreams.lib.package-root" in applied.err and "fake import" not in roots.out


REPO = Path(__file__).resolve().parents[1]


def _install_upstreams(project, build: Path, tmp_path: Path) -> tuple[subprocess.CompletedProcess, Path]:
    """patchmgr/image/build.sh install-upstreams for real, into a fresh virtual environment (its .pth is what Python
    runs at start); patchmgr and its dependencies come from this interpreter through PYTHONPATH."""
    import sysconfig

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    env = {
        **os.environ,
        "VENV": str(venv),
        "VARIANT": "cpu",
        "TARGET": "t",
        "BUILD_DIR": str(build),
        "PATCHMGR_HOME": str(project.root),
        "UPSTREAMS": "",
        "PYTHONPATH": os.pathsep.join([str(REPO), sysconfig.get_paths()["purelib"]]),
    }
    done = subprocess.run(
        ["bash", str(REPO / "patchmgr" / "image" / "build.sh"), "install-upstreams"],
        env=env,
        capture_output=True,
        text=True,
    )
    return done, venv


def test_build_sh_never_writes_a_forged_line_into_the_pth_from_a_build_folder_named_with_a_newline(
    cli, project, upstream, tmp_path
):
    _manifest(project, upstream, "package-root", "")
    build = tmp_path / f"build{FORGED}"
    applied = cli("apply", "--target", "t", "--into", str(build), "--source", f"lib={upstream.path}")
    assert applied.code == 0, applied.err
    done, venv = _install_upstreams(project, build, tmp_path)
    pwned = tmp_path / "pwned"
    subprocess.run([str(venv / "bin" / "python"), "-c", "pass"], env={**os.environ, "PWNED_AT": str(pwned)}, check=True)
    assert not pwned.exists(), done.stdout + done.stderr  # the forged line ran at Python's start
    assert done.returncode != 0 and "control character" in done.stderr, done.stdout + done.stderr


def test_build_sh_puts_each_import_root_on_sys_path_read_from_roots_json(cli, project, upstream, tmp_path):
    _manifest(project, upstream, "package-root", "")  # "src" + "": the upstream's src folder
    build = tmp_path / "build with  spaces"
    applied = cli("apply", "--target", "t", "--into", str(build), "--source", f"lib={upstream.path}")
    assert applied.code == 0, applied.err
    done, venv = _install_upstreams(project, build, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    [pth] = venv.glob("lib/python*/site-packages/patchmgr-upstreams.pth")
    assert pth.read_text() == f"{build / 'lib' / 'src'}\n"


# -- 8. smoke-requirements get the URL policy of the manifest's git keys ------------------------------------

BACKEND = """
from pathlib import Path
Path({mark!r}).write_text("the build backend of a local tree ran\\n")

def build_wheel(*args, **kwargs):
    raise SystemExit("no wheel")

def get_requires_for_build_wheel(config_settings=None):
    return []
"""


def _evil_tree(tmp_path: Path) -> tuple[Path, Path]:
    """A local project whose in-tree build backend leaves a mark when pip imports it."""
    tree, mark = tmp_path / "evil", tmp_path / "backend-ran"
    tree.mkdir()
    (tree / "pyproject.toml").write_text(
        '[build-system]\nrequires = []\nbuild-backend = "backend"\n'
        'backend-path = ["."]\n[project]\nname = "evil"\nversion = "1.0"\n'
    )
    (tree / "backend.py").write_text(BACKEND.format(mark=str(mark)))
    return tree, mark


@pytest.fixture
def smoke_scene(tmp_path, project, cli, monkeypatch):
    from support.smoke_scene import CPU_ONLY, LOAD, Scene

    import patchmgr.smoke.runner

    monkeypatch.setattr(patchmgr.smoke.runner, "available_devices", lambda python: dict(CPU_ONLY))
    scene = Scene(tmp_path, project, cli)
    scene.patch()
    scene.smoke_test(LOAD + "\n\ndef test_add():\n    assert load_calc().add(2, 3) == 5\n")
    return scene


@pytest.mark.parametrize(
    "form",
    [
        "evil @ {url}",
        "evil@{url}",
        "evil @ git+{url}",
        "evil @ {path}",
        "evil @ ./evil",
        "evil[x] @ {url} ; python_version >= '3'",
        "EVIL @ FILE://{path}",
    ],
)
def test_a_smoke_requirement_pointing_at_a_local_tree_is_refused_and_its_build_backend_never_runs(smoke_scene, form):
    tree, mark = _evil_tree(smoke_scene.tmp_path)
    requirement = form.format(url=tree.as_uri(), path=tree)
    smoke_scene.manifest()
    smoke_scene.apply()  # applied with a sound manifest; then the requirement arrives, as from a pull request
    smoke_scene.manifest(smoke_requirements=[requirement])
    result = smoke_scene.smoke()
    error = " ".join((result.out + result.err).split())
    assert not mark.exists(), error
    assert result.code == 2, error
    assert "manifests/t.toml" in error and "upstreams.lib.smoke-requirements[0]" in error, error
    assert "https://" in error and "Traceback" not in error, error
    assert not (smoke_scene.tmp_path / "cache" / "smoke-envs").exists()
    assert cli_lint_fails(smoke_scene)


def cli_lint_fails(scene) -> bool:
    result = scene.cli("lint")
    return result.code != 0 and "smoke-requirements[0]" in result.out + result.err


@pytest.mark.parametrize(
    "requirement",
    [
        "-e /tmp/evil",
        "--index-url=https://evil.invalid/simple",
        "-r reqs.txt",
        "--find-links=/tmp/wheels",
        "--extra-index-url https://evil.invalid",
        "evil.tar.gz",
        "evil.whl",
        "evil @ https://-oProxyCommand=x/evil",
        "evil @ ext::sh -c touch% /tmp/pwned",
        "evil @ C:\\evil",
        "evil @ https://example.invalid/evil.tar.gz\n--index-url=https://x",
    ],
)
def test_pip_options_and_local_names_in_smoke_requirements_are_refused_by_lint(smoke_scene, requirement):
    smoke_scene.manifest(smoke_requirements=[requirement])
    assert cli_lint_fails(smoke_scene)


def test_published_direct_references_stay_accepted(smoke_scene):
    smoke_scene.manifest(
        smoke_requirements=[
            "packaging==24.0",
            "evil @ https://example.invalid/evil-1.0.tar.gz",
            "lib2 @ git+https://example.invalid/lib2.git@v1",
            "lib3 @ git+ssh://git@host/lib3",
        ]
    )
    result = smoke_scene.cli("lint")
    assert result.code == 0, result.out + result.err


# -- 6. what patchmgr reuses from its cache is its own: smoke environments as cached clones ------------------

OTHER_UID = 12345
REQUIREMENT = "packaging==24.0"


def _env_place(scene) -> Path:
    from patchmgr.smoke.envs import env_key

    return scene.tmp_path / "cache" / "smoke-envs" / env_key((REQUIREMENT,))


def _planted_env(folder: Path, mark: Path) -> Path:
    """A folder that looks like a built smoke environment, whose bin/python leaves ``mark`` when run."""
    (folder / "bin").mkdir(parents=True)
    python = folder / "bin" / "python"
    python.write_text(f"#!/bin/sh\necho \"$@\" >> '{mark}'\nexit 0\n")
    python.chmod(0o755)
    (folder / "patchmgr-smoke-env.json").write_text(json.dumps({"requirements": [REQUIREMENT]}) + "\n")
    return folder


def _patchmgr_env(folder: Path) -> Path:
    """A smoke environment made as patchmgr makes it (venv, its .pth, its completion mark), without pip."""
    import patchmgr.smoke.envs as envs

    real_run = envs._run
    folder.parent.mkdir(parents=True, exist_ok=True)
    envs._run = lambda command, what, **where: None if what == "pip install" else real_run(command, what)
    try:
        envs._build(folder, (REQUIREMENT,), lambda message: None, envs._running(), envs.host_site_packages())
    finally:
        envs._run = real_run
    return folder


def _smoke_with_requirement(scene):
    scene.manifest()
    scene.apply()
    scene.manifest(smoke_requirements=[REQUIREMENT])
    return scene.smoke("--json")


def _refused_and_nothing_ran(result, mark: Path, phrase: str) -> None:
    said = result.out + result.err
    assert not mark.exists(), f"the environment's program ran: {mark.read_text()}\n{said}"
    assert result.code == 1, said
    assert said.count("error: ") == 1 and phrase in said and "hint: " in said, said
    assert "Traceback" not in said and "smoke environment" in said, said


def test_a_smoke_environment_that_is_a_link_to_another_folder_is_refused_and_nothing_runs(smoke_scene):
    mark = smoke_scene.tmp_path / "ran"
    elsewhere = _planted_env(smoke_scene.tmp_path / "elsewhere", mark)
    place = _env_place(smoke_scene)
    place.parent.mkdir(parents=True)
    place.symlink_to(elsewhere)
    _refused_and_nothing_ran(_smoke_with_requirement(smoke_scene), mark, "is a symbolic link")
    assert place.is_symlink() and (elsewhere / "bin" / "python").is_file()  # refused, not removed


@pytest.mark.skipif(os.geteuid() != 0, reason="giving files to another user takes root (CI runs as root)")
@pytest.mark.parametrize("owned", ["folder", "python", "bin"])
def test_a_smoke_environment_owned_by_another_user_is_refused_and_nothing_runs(smoke_scene, owned):
    mark = smoke_scene.tmp_path / "ran"
    place = _planted_env(_env_place(smoke_scene), mark)
    os.chown({"folder": place, "python": place / "bin" / "python", "bin": place / "bin"}[owned], OTHER_UID, OTHER_UID)
    _refused_and_nothing_ran(_smoke_with_requirement(smoke_scene), mark, "belongs to another user")


@pytest.mark.parametrize("tamper", ["python-link", "pth-line", "pyvenv-home", "link-out", "world-writable"])
def test_a_smoke_environment_changed_after_patchmgr_built_it_is_refused_and_nothing_runs(smoke_scene, tamper):
    mark = smoke_scene.tmp_path / "ran"
    place = _patchmgr_env(_env_place(smoke_scene))
    evil = _planted_env(smoke_scene.tmp_path / "evil", mark) / "bin" / "python"
    [pth] = place.glob("lib/python*/site-packages/patchmgr-smoke-host.pth")
    if tamper == "python-link":
        (place / "bin" / "python").unlink()
        (place / "bin" / "python").symlink_to(evil)
        phrase = "refusing to run it"
    elif tamper == "pth-line":
        with pth.open("a") as handle:
            handle.write(f"import os; os.mkdir({str(mark)!r})\n")
        phrase = "is not the one patchmgr wrote"
    elif tamper == "pyvenv-home":
        config = place / "pyvenv.cfg"
        config.write_text(
            "".join(
                f"home = {evil.parent}\n" if line.startswith("home") else line
                for line in config.read_text().splitlines(keepends=True)
            )
        )
        phrase = "names a Python home other than"
    elif tamper == "link-out":
        (pth.parent / "sitecustomize.py").symlink_to(evil)
        phrase = "leads out of it"
    else:
        place.chmod(0o777)
        phrase = "can be written by every user"
    _refused_and_nothing_ran(_smoke_with_requirement(smoke_scene), mark, phrase)


def test_a_smoke_environment_as_patchmgr_built_it_is_reused(smoke_scene):
    place = _patchmgr_env(_env_place(smoke_scene))
    result = _smoke_with_requirement(smoke_scene)
    assert result.code == 0, result.out + result.err
    assert any(f"smoke environment {place}" in note and "reused" in note for note in result.json["notes"])


def cached_clone(cli, project, upstream, tmp_path):
    """A project whose status filled the cache with a clone of ``upstream``: (the status args, the clone)."""
    pin = upstream.head()
    project.add_patch("lib", "fix", upstream.make_patch(pin, {"README": "patched\n"}, "Fix the readme"))
    project.manifest("t", {"lib": {"git": "https://example.invalid/lib.git", "commit": pin, "patches": ["fix"]}})
    args = ["status", "--target", "t", "--source", f"lib={upstream.path}"]
    assert cli(*args).code == 0
    clone = tmp_path / "cache" / "git" / "lib.git"
    return args, clone


def test_a_cached_clone_that_is_a_link_is_refused_and_git_never_runs_there(cli, project, upstream, tmp_path):
    """The cached clones pass the same check: a clone that is a link to a folder elsewhere is refused."""
    args, clone = cached_clone(cli, project, upstream, tmp_path)
    moved = tmp_path / "moved.git"
    clone.rename(moved)
    clone.symlink_to(moved)
    result = cli(*args)
    said = result.out + result.err
    assert result.code == 1 and "is a symbolic link" in said and "Traceback" not in said, said
    assert clone.is_symlink() and (moved / "HEAD").is_file()


def test_a_lock_file_that_is_a_link_is_never_opened_through(smoke_scene):
    """The cache's lock files are its own too: a link in their place would have patchmgr create (as root:
    anywhere) the file it names."""
    victim = smoke_scene.tmp_path / "victim"
    place = _env_place(smoke_scene)
    place.parent.mkdir(parents=True)
    (place.parent / f"{place.name}.lock").symlink_to(victim)
    result = _smoke_with_requirement(smoke_scene)
    said = result.out + result.err
    assert result.code == 1 and "symbolic link" in said and "Traceback" not in said, said
    assert not victim.exists() and not os.path.lexists(place)


# -- 7/8. a host git would hand to ssh never starts with "-", brackets or not; query tokens are never shown ------


@pytest.mark.parametrize(
    "url",
    [
        "ssh://[-oProxyCommand=touch$IFS/tmp/x]/y",
        "ssh://git@[-oProxyCommand=x]:22/y",
        "git+ssh://[-oProxyCommand=x]/y",
        "git://[ -oProxyCommand=x]/y",
        "[-oProxyCommand=x]:y",
        "git@[-oProxyCommand=x]:y",
        "https://u:p@[-ox]:443/y",
    ],
)
def test_a_bracketed_host_that_is_an_option_is_refused_at_load_naming_file_and_key(
    cli, project, upstream, tmp_path, url
):
    pin = upstream.head()
    project.add_patch("lib", "fix", upstream.make_patch(pin, {"README": "patched\n"}, "Fix the readme"))
    project.manifest("t", {"lib": {"git": url, "commit": pin, "patches": ["fix"]}})
    for args in (["lint"], ["status", "--target", "t"]):
        result = cli(*args)
        said = " ".join((result.out + result.err).split())
        assert result.code == (1 if args[0] == "lint" else 2), (args, said)  # lint: a finding
        assert "manifests/t.toml" in said and "upstreams.lib.git" in said, (args, said)
        assert "Traceback" not in said and "looks like a command-line option" in said, said
    _requirements_url = f"evil @ {url}" if "://" in url else None
    if _requirements_url:
        project.manifest(
            "t",
            {
                "lib": {
                    "git": "https://example.invalid/lib.git",
                    "commit": pin,
                    "patches": ["fix"],
                    "smoke-requirements": [_requirements_url],
                }
            },
        )
        result = cli("lint")
        assert result.code != 0 and "smoke-requirements[0]" in result.out + result.err, result.out + result.err


# -- 6. every part of a cached clone that git reads or runs is this user's own and writable by no other ---------


@pytest.mark.skipif(os.geteuid() != 0, reason="giving files to another user takes root (CI runs as root)")
@pytest.mark.parametrize(
    "tamper",
    [
        "group-writable-folder",
        "group-writable-config",
        "foreign-pack",
        "open-hooks",
        "foreign-hook",
        "open-info",
        "open-refs-folder",
        "foreign-loose-folder",
    ],
)
def test_a_cached_clone_part_that_another_user_can_write_is_refused_and_no_hook_runs(
    cli, project, upstream, tmp_path, tamper
):
    args, clone = cached_clone(cli, project, upstream, tmp_path)
    mark = tmp_path / "hook-ran"
    other_gid = os.getegid() + 4242
    if tamper == "group-writable-folder":
        os.chown(clone, os.geteuid(), other_gid)
        clone.chmod(0o775)
    elif tamper == "group-writable-config":
        os.chown(clone / "config", os.geteuid(), other_gid)
        (clone / "config").chmod(0o664)
    elif tamper == "foreign-pack":
        for pack in (clone / "objects" / "pack").iterdir():
            os.chown(pack, OTHER_UID, OTHER_UID)
            pack.chmod(0o666)
    elif tamper in ("open-hooks", "foreign-hook"):
        hooks = clone / "hooks"
        hooks.mkdir(exist_ok=True)
        for name in ("reference-transaction", "post-checkout", "pre-auto-gc", "post-index-change"):
            (hooks / name).write_text(f"#!/bin/sh\ntouch {mark}\n")
            (hooks / name).chmod(0o755)
            if tamper == "foreign-hook":
                os.chown(hooks / name, OTHER_UID, OTHER_UID)
        if tamper == "open-hooks":
            hooks.chmod(0o777)
    elif tamper == "open-info":
        (clone / "info").mkdir(exist_ok=True)
        (clone / "info").chmod(0o777)
    elif tamper == "open-refs-folder":
        (clone / "refs" / "remotes").mkdir(exist_ok=True)
        (clone / "refs" / "remotes").chmod(0o777)
    else:
        (clone / "objects" / "ab").mkdir(exist_ok=True)
        os.chown(clone / "objects" / "ab", OTHER_UID, OTHER_UID)
    upstream.commit({"README": "new\n"}, "more")
    result = cli(*args)
    said = result.out + result.err
    assert result.code != 0 and "refusing to use it" in said and "Traceback" not in said, said
    assert not mark.exists()
    assert clone.is_dir()  # refused, not removed


@pytest.mark.skipif(os.geteuid() != 0, reason="giving files to another group takes root (CI runs as root)")
@pytest.mark.parametrize("part", ["folder", "python", "bin"])
def test_a_smoke_environment_writable_by_another_group_is_refused_and_nothing_runs(smoke_scene, part):
    mark = smoke_scene.tmp_path / "ran"
    place = _planted_env(_env_place(smoke_scene), mark)
    path = {"folder": place, "python": place / "bin" / "python", "bin": place / "bin"}[part]
    os.chown(path, os.geteuid(), os.getegid() + 4242)
    path.chmod(path.stat().st_mode | stat.S_IWGRP)
    _refused_and_nothing_ran(_smoke_with_requirement(smoke_scene), mark, "which is not your own")


# -- messages: a ref with a control character is said in plain words --------------------------------------------


def test_a_ref_with_a_control_character_is_refused_in_a_grammatical_sentence(cli, project, upstream):
    pin = upstream.head()
    project.add_patch("lib", "fix", upstream.make_patch(pin, {"README": "patched\n"}, "Fix the readme"))
    project.manifest("t", {"lib": {"git": "https://example.invalid/lib.git", "commit": pin, "patches": ["fix"]}})
    result = cli("status", "--target", "t", "--source", f"lib={upstream.path}", "--against", "lib=v1\nx")
    said = " ".join((result.out + result.err).split())
    assert result.code == 2 and "Traceback" not in said, said
    assert "it contains a control character (U+000A), which no ref name may hold" in said, said
    assert "holds contains" not in said, said


@pytest.mark.parametrize("parameter", ["private_token", "access_token", "token", "key", "password", "secret"])
def test_a_token_in_a_manifest_url_query_string_is_masked_when_fetching_fails(cli, project, upstream, parameter):
    pin = upstream.head()
    project.add_patch("lib", "fix", upstream.make_patch(pin, {"README": "patched\n"}, "Fix the readme"))
    project.manifest(
        "t",
        {
            "lib": {
                "git": f"https://example.invalid/lib.git?{parameter}=Sekr1t&ref=x",
                "commit": pin,
                "patches": ["fix"],
            }
        },
    )
    result = cli("status", "--target", "t")
    said = result.out + result.err
    assert result.code != 0 and "Sekr1t" not in said and "Traceback" not in said, said
    assert f"https://example.invalid/lib.git?{parameter}=***&ref=x" in said, said
