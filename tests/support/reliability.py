"""Helpers for the reliability tests: patchmgr runs in forked processes, a small
installed package in a fresh virtual environment, and the figures RELIABILITY.md quotes.

A run that is to be killed (PATCHMGR_FAULT_KILL_AT) or raced is a forked child of the test
process calling the real command line, so it is a real process that really gets SIGKILL, without
paying the interpreter's start-up for each of the hundred-odd kill points.
"""

from __future__ import annotations

import hashlib
import json
import os
import resource
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
import traceback
import zipfile
from dataclasses import dataclass
from pathlib import Path

from support.gitrepos import Project, UpstreamRepo, make_series


# -- runs in forked processes -------------------------------------------------------------------
@dataclass
class Child:
    pid: int
    pipe: int  # the read end of the child's stdout and stderr (a pipe: a file size limit does not apply)
    started: float

    def __post_init__(self) -> None:
        self.output = b""
        os.set_blocking(self.pipe, False)

    def _drain(self) -> None:
        try:
            while chunk := os.read(self.pipe, 65536):
                self.output += chunk
        except BlockingIOError:
            pass

    def wait(self, timeout: float = 120.0) -> tuple[int, str]:
        """Exit code (negative: killed by that signal) and what the run printed."""
        deadline = time.monotonic() + timeout
        while True:
            self._drain()
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self._drain()
                os.close(self.pipe)
                return os.waitstatus_to_exitcode(status), self.output.decode(errors="replace")
            if time.monotonic() > deadline:
                os.kill(self.pid, 9)
                os.waitpid(self.pid, 0)
                raise AssertionError(f"a patchmgr run did not finish in {timeout}s: {self.output!r}")
            time.sleep(0.005)

    def finished(self) -> bool:
        self._drain()
        return bool(os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT))


def start(args: list[str], env: dict[str, str] | None = None, fsize: int | None = None) -> Child:
    """``patchmgr ARGS`` in a forked child, as the console script runs it (SIGTERM ends it as Ctrl-C does);
    ``fsize`` caps the bytes any file it writes may hold."""
    from patchmgr.cli.entry import main_ending_on_signals

    sys.stdout.flush()
    sys.stderr.flush()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        code = 99
        try:
            os.close(read)
            os.dup2(write, 1)
            os.dup2(write, 2)
            stream = os.fdopen(write, "w", buffering=1)
            sys.stdout = sys.stderr = stream
            os.environ.update(env or {})
            tempfile.tempdir = None  # read TMPDIR again: env may name another
            if fsize is not None:
                resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
            code = main_ending_on_signals(args)
        except BaseException:
            traceback.print_exc()
        finally:
            sys.stdout.flush()
            os._exit(code)
    os.close(write)
    return Child(pid, read, time.monotonic())


def run(args: list[str], env: dict[str, str] | None = None, fsize: int | None = None) -> tuple[int, str]:
    return start(args, env, fsize).wait()


def replace_tree(source: Path, destination: Path) -> None:
    shutil.rmtree(destination, ignore_errors=True)
    shutil.copytree(source, destination, symlinks=True)


# -- figures ------------------------------------------------------------------------------------
def record(test: str, **figures) -> None:
    """Print the figures of a test, and append them to $PATCHMGR_FIGURES (JSON lines) when it is set."""
    line = json.dumps({"test": test, **figures}, sort_keys=True)
    print(f"figures: {line}")
    if os.environ.get("PATCHMGR_FIGURES"):
        with open(os.environ["PATCHMGR_FIGURES"], "a") as handle:
            handle.write(line + "\n")


def said(notes: list[str]) -> str:
    """What the run after a kill said it did: rolled-back, finished, not-started, or nothing."""
    text = " ".join(notes)
    if "rolled back" in text:
        return "rolled-back"
    if "had finished" in text:
        return "finished"
    if "had not started" in text:
        return "not-started"
    return "nothing"


# -- kill points ----------------------------------------------------------------------------------
UNTOUCHED = {"rolled-back", "not-started"}  # what a run after a kill may say when the state is the one before


@dataclass(frozen=True)
class Fault:
    """How a run is stopped at a step: the fault variable and the exit code (negative: the signal) it ends with."""

    variable: str
    code: int


KILL = Fault("PATCHMGR_FAULT_KILL_AT", -9)  # nothing of the run's own cleanup runs: the next run recovers
TERM = Fault("PATCHMGR_FAULT_TERM_AT", 143)  # the run cleans up as after Ctrl-C, then exits 128 + 15


def kill_every_step(
    name, args, restore, before, after, observe, next_apply=None, every=1, stride=1, minimum=10, exit_code=0, fault=KILL
) -> dict:
    """Kill ``args`` at each ``stride``-th step in turn (and the last); after each, ``observe()`` (the next
    run) gives (state, notes), and the state must be ``before`` or ``after`` as the notes say. After every
    ``every``-th kill, ``next_apply()`` then runs the command again (it must complete). The run that gets
    through exits ``exit_code``. At least ``minimum`` kill points, with both outcomes among them; the figures
    are recorded and returned. With ``fault=TERM`` the run is sent SIGTERM instead: it must say so and end
    without a traceback, and may have undone its work itself (the next run then has nothing to say)."""
    counts = {"kill_points": 0, "rolled-back": 0, "not-started": 0, "finished": 0, "nothing": 0, "then_applied": 0}
    step, last = 1, None
    while True:
        restore()
        code, output = run(args, {fault.variable: str(step)})
        if code != fault.code:
            assert code == exit_code, output
            assert observe()[0] == after
            if last is None and stride > 1:
                step, last = step - 1, step  # also the last step, which a stride can jump over
                continue
            break
        if fault is TERM:
            assert "patchmgr: stopped by SIGTERM" in output and "Traceback" not in output, (name, step, output)
        counts["kill_points"] += 1
        state, notes = observe()
        outcome = said(notes)
        assert outcome in ("rolled-back", "not-started", "finished") or fault is TERM, (name, step, notes)
        expected = before if outcome in UNTOUCHED or (outcome == "nothing" and state == before) else after
        assert state == expected, (
            f"{name}: after a {fault.variable} at step {step} the next run said {notes}, "
            f"but the state is not that: {differences(state, expected)}"
        )
        counts[outcome] += 1
        if next_apply and counts["kill_points"] % every == 0:
            next_apply()
            counts["then_applied"] += 1
        if last is not None:
            break
        step += stride
    record(name, **counts)
    both = counts["finished"] and counts["rolled-back"] + counts["not-started"] or fault is TERM
    assert counts["kill_points"] >= minimum and both, (name, counts, minimum)
    return counts


def differences(state: dict[str, str], expected: dict[str, str], shown: int = 8) -> str:
    """The entries two snapshots disagree on (the first few), for a failure message."""
    keys = sorted(k for k in state.keys() | expected.keys() if state.get(k) != expected.get(k))
    return "; ".join(
        f"{k}: {state.get(k, '(absent)')!r} instead of {expected.get(k, '(absent)')!r}" for k in keys[:shown]
    ) + (f"; {len(keys) - shown} more" if len(keys) > shown else "")


# -- a target of two small upstreams, as git repositories and as an installed environment ----------
def module_text(name: str, lines: int = 300) -> str:
    """A module of realistic size (about 12 KB), so that writes span several disk pages."""
    return f'"""{name}"""\n' + "".join(
        f"VALUE_{i} = {i}  # a line of padding that makes the module larger\n" for i in range(1, lines + 1)
    )


def changed(text: str, edits: dict[int, int]) -> str:
    for number, value in edits.items():
        text = text.replace(f"VALUE_{number} = {number}  #", f"VALUE_{number} = {value}  #")
    return text


LIB_FILES = {
    "src/minilib/__init__.py": "from minilib.core import VALUE_1\n",
    "src/minilib/core.py": module_text("minilib core"),
    "src/minilib/util.py": module_text("minilib util"),
}
TOOL_FILES = {
    "minitool/__init__.py": "VERSION = '2.0'\n",
    "minitool/main.py": module_text("minitool main"),
    "minitool/extra.py": module_text("minitool extra"),
}


@dataclass
class Upstreams:
    lib: UpstreamRepo
    tool: UpstreamRepo
    pin_lib: str
    pin_tool: str

    @classmethod
    def make(cls, folder: Path) -> Upstreams:
        lib = UpstreamRepo(folder / "minilib")
        tool = UpstreamRepo(folder / "minitool")
        return cls(lib, tool, lib.commit(LIB_FILES, "minilib 1.0"), tool.commit(TOOL_FILES, "minitool 2.0"))

    @property
    def sources(self) -> list[str]:
        return ["--source", f"minilib={self.lib.path}", "--source", f"minitool={self.tool.path}"]

    def write_series(self, project: Project, version: int) -> None:
        """Three patches on minilib and two on minitool; version 2 changes the last patch of each."""
        core, util = LIB_FILES["src/minilib/core.py"], LIB_FILES["src/minilib/util.py"]
        main, extra = TOOL_FILES["minitool/main.py"], TOOL_FILES["minitool/extra.py"]
        last = 300 + version
        lib = make_series(
            self.lib,
            self.pin_lib,
            [
                ({"src/minilib/core.py": changed(core, {5: 500})}, "Core five"),
                ({"src/minilib/util.py": changed(util, {40: 4000})}, "Util forty"),
                ({"src/minilib/core.py": changed(core, {5: 500, 250: last})}, "Core two hundred fifty"),
            ],
        )
        tool = make_series(
            self.tool,
            self.pin_tool,
            [
                ({"minitool/main.py": changed(main, {10: 1000})}, "Main ten"),
                (
                    {
                        "minitool/extra.py": changed(extra, {120: last}),
                        "minitool/__init__.py": f"VERSION = '2.{last}'\n",
                    },
                    "Extra one hundred twenty, and the version",
                ),
            ],
        )
        for number, mail in enumerate(lib, 1):
            project.add_patch("minilib", f"lib-{number}", mail)
        for number, mail in enumerate(tool, 1):
            project.add_patch("minitool", f"tool-{number}", mail)
        project.manifest(
            "t",
            {
                "minilib": {
                    "git": "https://example.invalid/minilib.git",
                    "commit": self.pin_lib,
                    "version": "1.0",
                    "pypi": "minilib",
                    "package-root": "src",
                    "patches": ["lib-1", "lib-2", "lib-3"],
                },
                "minitool": {
                    "git": "https://example.invalid/minitool.git",
                    "commit": self.pin_tool,
                    "version": "2.0",
                    "pypi": "minitool",
                    "patches": ["tool-1", "tool-2"],
                },
            },
        )


def make_wheel(folder: Path, name: str, version: str, files: dict[str, str], strip: str) -> Path:
    """A pure-Python wheel of ``files`` (git layout, ``strip`` removed), written by hand: a zip with a RECORD."""
    import base64

    path = folder / f"{name}-{version}-py3-none-any.whl"
    info = f"{name}-{version}.dist-info"
    contents = {rel[len(strip) :]: text.encode() for rel, text in files.items()}
    contents[f"{info}/METADATA"] = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode()
    contents[f"{info}/WHEEL"] = (
        b"Wheel-Version: 1.0\nGenerator: patchmgr-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    )
    rows = []
    for rel, data in contents.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        rows.append(f"{rel},sha256={digest},{len(data)}\n")
    contents[f"{info}/RECORD"] = ("".join(rows) + f"{info}/RECORD,,\n").encode()
    with zipfile.ZipFile(path, "w") as archive:
        for rel, data in contents.items():
            archive.writestr(rel, data)
    return path


_PRISTINE: dict[str, Path] = {}


def pristine_environment(tmp_path_factory) -> Path:
    """One environment made per test session; tests copy it (``replace_tree``) and never change it."""
    if "venv" not in _PRISTINE:
        _PRISTINE["venv"] = make_environment(tmp_path_factory.mktemp("wheels"))
    return _PRISTINE["venv"]


def make_environment(folder: Path) -> Path:
    """A fresh virtual environment with minilib 1.0 and minitool 2.0 installed by pip (--no-deps, compiled)."""
    wheels = [
        make_wheel(folder, "minilib", "1.0", LIB_FILES, "src/"),
        make_wheel(folder, "minitool", "2.0", TOOL_FILES, ""),
    ]
    return install_wheels(folder, wheels)


def install_wheels(folder: Path, wheels: list[Path], *options: str) -> Path:
    """A fresh virtual environment ``folder/venv`` with ``wheels`` installed by pip (--no-deps, compiled, offline,
    and ``options``)."""
    venv = folder / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(venv / "bin" / "python"),
            "install",
            "--quiet",
            "--no-deps",
            "--no-index",
            "--no-cache-dir",
            "--disable-pip-version-check",
            *options,
            *map(str, wheels),
        ],
        check=True,
    )
    return venv


def site_packages(venv: Path) -> Path:
    """Where pip installs pure-Python files in ``venv``, a virtual environment of this interpreter (as patchmgr's
    smoke environments find it: no process asked)."""
    return Path(sysconfig.get_path("purelib", "venv", {"base": str(venv), "platbase": str(venv)}))
