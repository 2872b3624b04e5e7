"""Smoke environments per upstream: one virtual environment for each set of ``smoke-requirements``.

An upstream whose smoke tests need versions other than the running environment's (verl's transformers
4.57.x beside Megatron-Bridge's 5.x) names them in its manifest (``smoke-requirements``). ``smoke`` then
runs its tests in ``<cache>/smoke-envs/<key>``: a venv holding those requirements with their dependencies
(installed by the running interpreter's pip, so the machine's pip configuration applies), then a ``.pth``
file that appends the running interpreter's site-packages, so torch, pytest and the rest are borrowed, not
downloaded, and the environment's own packages come first. The key is a hash of the Python version, the
sorted requirements and that site-packages path. It is built in a folder beside it and renamed into place
when complete (a killed build is never reused), under a lock, so two runs never build it twice.

An upstream whose declared Python (``smoke-python``, else its ``Requires-Python``) the running interpreter does
not fit gets an environment made with another interpreter of the machine (``smoke.pythons``): there nothing is
borrowed (the host's packages are built for another Python), pytest is installed beside the requirements, and
the key holds that interpreter and its version.

An environment is reused only when it passes the cache's one trust check (``sources.cache_entry``): a real
folder of this user's, with no link out of it but ``bin/python`` to the interpreter that built it, and a
``.pth`` and ``pyvenv.cfg`` that name only what patchmgr wrote there. Anything else is refused, and nothing
in it runs.
"""

from __future__ import annotations

import hashlib
import json
import os
import site
import sys
import sysconfig
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from patchmgr.io import children
from patchmgr.io.files import remove_tree
from patchmgr.io.locks import lock_timeout
from patchmgr.model.errors import StateError
from patchmgr.model.manifest import Upstream
from patchmgr.smoke.pythons import Interpreter
from patchmgr.sources.cache_entry import cache_folder, check_cache_entry
from patchmgr.sources.cache_errors import CacheError, CacheLock
from patchmgr.sources.store import default_cache_dir

Progress = Callable[[str], None]
_PTH = "patchmgr-smoke-host.pth"
_DONE = "patchmgr-smoke-env.json"  # written last: an environment without it is not complete


@dataclass(frozen=True)
class SmokeEnv:
    python: str
    path: Path
    built: bool  # built in this run (else reused)
    seconds: float
    requirements: tuple[str, ...] = ()  # what it holds besides the interpreter's (and, borrowed, the host's)


def host_site_packages() -> list[str]:
    """The running environment's site-packages, then the base Python's when it sees them (a venv made with
    --system-site-packages, like the image's over a base that brings torch and torch_npu)."""
    paths = sysconfig.get_paths()
    seen = [paths["purelib"], paths["platlib"], *site.getsitepackages()]
    return list(dict.fromkeys(p for p in seen if p and os.path.isdir(p)))


def _running() -> Interpreter:
    """The running interpreter: the one whose site-packages an environment borrows."""
    base = getattr(sys, "_base_executable", None) or sys.executable  # what venv links bin/python to
    return Interpreter(sys.executable, ".".join(map(str, sys.version_info[:3])), base)


def env_key(requirements: tuple[str, ...], interpreter: Interpreter | None = None) -> str:
    fields: dict[str, object] = {
        "python": list(sys.version_info[:3]),
        "implementation": sys.implementation.name,
        "requirements": sorted(requirements),
        "host": host_site_packages(),
    }
    if interpreter is not None:  # another interpreter's environment: its own, nothing borrowed
        fields = {"python": interpreter.version, "base": interpreter.base, "requirements": sorted(requirements)}
    return hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()[:16]


def env_python(path: Path) -> Path:
    return path / "bin" / "python"


def smoke_env(
    upstream: Upstream, progress: Progress | None = None, cache: Path | None = None, python: Interpreter | None = None
) -> SmokeEnv:
    """The environment for ``upstream``'s smoke requirements: reused when built, else built now.

    With ``python`` (another interpreter than the running one) it is made with that one and holds pytest too."""
    requirements = upstream.smoke_requirements if python is None else ("pytest", *upstream.smoke_requirements)
    base = python or _running()
    host = host_site_packages() if python is None else []
    root = cache_folder(cache or default_cache_dir(), "smoke-envs")
    path = root / env_key(requirements, python)
    if _complete(path, base, host):
        return SmokeEnv(str(env_python(path)), path, False, 0.0, requirements)
    say = progress or (lambda message: None)
    with CacheLock(
        root / f"{path.name}.lock", lock_timeout(1800), f"building smoke environment {path.name}", on_wait=say
    ):
        if _complete(path, base, host):  # another run built it while this one waited
            return SmokeEnv(str(env_python(path)), path, False, 0.0, requirements)
        started = time.monotonic()
        shown = ", ".join(requirements)
        say(f"building the smoke environment for {upstream.name} (Python {base.version}; {shown}) in {path}")
        if os.path.lexists(path):  # incomplete (and our own: _complete checked it): never reused
            remove_tree(path)
        for stale in root.glob(f"{path.name}.building-*"):  # a killed build's (this run holds the lock)
            remove_tree(stale)
        building = Path(tempfile.mkdtemp(prefix=f"{path.name}.building-", dir=root))
        try:
            _build(building, requirements, say, base, host)
            os.replace(building, path)
        except BaseException:
            remove_tree(building)
            raise
        seconds = round(time.monotonic() - started, 1)
        say(f"built the smoke environment for {upstream.name} in {seconds:g}s")
        return SmokeEnv(str(env_python(path)), path, True, seconds, requirements)


def _complete(path: Path, interpreter: Interpreter, host: list[str]) -> bool:
    """Whether the environment at ``path`` is built; refused (CacheError) when it is not patchmgr's own."""
    if not os.path.lexists(path):
        return False
    hint = f"remove it (rm -rf {path}): smoke builds it again"
    what = "the smoke environment"
    base = Path(interpreter.base)
    check_cache_entry(path, what, hint, inside=("bin", "pyvenv.cfg", _DONE), programs={"bin/python": base}, walk=True)
    if not (path / _DONE).is_file():
        return False
    pth = path / _site_packages(path) / _PTH
    if not pth.is_file() or pth.read_text(encoding="utf-8", errors="replace") != _pth_text(host):
        raise CacheError(
            f"{pth} in {what} is not the one patchmgr wrote (a .pth file runs its `import` lines "
            "at every start): refusing to run it",
            hint,
        )
    config = path / "pyvenv.cfg"
    lines = config.read_text(encoding="utf-8", errors="replace").splitlines() if config.is_file() else []
    homes = [line.partition("=")[2].strip() for line in lines if line.partition("=")[0].strip() == "home"]
    if [os.path.realpath(home) for home in homes] != [os.path.realpath(base.parent)]:
        raise CacheError(
            f"{path / 'pyvenv.cfg'} in {what} names a Python home other than {base.parent}: refusing to run it", hint
        )
    return True


def _site_packages(path: Path) -> str:
    """The environment's site-packages, relative to it: as patchmgr recorded it when it built it."""
    try:
        recorded = json.loads((path / _DONE).read_text(encoding="utf-8")).get("site-packages")
    except (OSError, ValueError, AttributeError):
        recorded = None
    if isinstance(recorded, str) and recorded and not os.path.isabs(recorded) and ".." not in Path(recorded).parts:
        return recorded
    return os.path.relpath(sysconfig.get_path("purelib", "venv", {"base": str(path), "platbase": str(path)}), path)


def _pth_text(host: list[str]) -> str:
    # appended after the environment's own packages (site.addsitedir also reads the host's .pth files)
    return "".join(f"import site; site.addsitedir({p!r})\n" for p in host)


_PIP_TMP = ".pip-tmp"  # pip's temporary files, inside the environment being built


def _build(building: Path, requirements: tuple[str, ...], say: Progress, base: Interpreter, host: list[str]) -> None:
    # the venv is made in place and renamed: its scripts name the folder, but `python` and the .pth need no path
    say(f"creating the virtual environment (Python {base.version})")
    _run([base.path, "-m", "venv", "--without-pip", str(building)], "python -m venv")
    python = env_python(building)
    say(f"installing {', '.join(requirements)} with their dependencies (pip)")
    _run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "--disable-pip-version-check",
            "--no-input",
            "--quiet",
            "--",
            *requirements,
        ],
        "pip install",
        cwd=building,
        tmp=building / _PIP_TMP,
    )
    remove_tree(building / _PIP_TMP)
    purelib = children.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    Path(purelib, _PTH).write_text(_pth_text(host), encoding="utf-8")
    (building / _DONE).write_text(
        json.dumps(
            {
                "requirements": list(requirements),
                "python": base.version,
                "host-site-packages": host,
                "site-packages": os.path.relpath(purelib, building),
            },
            indent=1,
        )
        + "\n",
        encoding="utf-8",
    )


def _run(command: list[str], what: str, cwd: Path | None = None, tmp: Path | None = None) -> None:
    # pip runs in the new environment's folder: a bare name (`x.tar.gz`) never meets a file of the caller's folder;
    # its temporary files go in ``tmp`` there, so that they go with the folder when a killed build is removed
    env = None
    if tmp is not None:
        tmp.mkdir(exist_ok=True)
        env = {**os.environ, "TMPDIR": str(tmp)}
    done = children.run(command, capture_output=True, text=True, cwd=cwd, env=env)
    if done.returncode != 0:
        tail = " | ".join(line.strip() for line in (done.stdout + done.stderr).strip().splitlines()[-4:])
        raise StateError(
            f"cannot build the smoke environment: {what} failed (exit {done.returncode}): {tail[-600:]}",
            "check the requirement and pip's index (PIP_INDEX_URL, pip.conf), then run again",
        )
