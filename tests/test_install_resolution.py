"""Every extra resolves on a plain PyPI machine, not only on one whose pip sees local wheels.

pip runs on the requirements pyproject.toml declares for each extra, with no configuration
file and no PIP_* package sources (this machine's pip configuration adds a local find-links
folder and local indexes), against PyPI alone, with ``--dry-run --report``: it resolves and
reports what it would install, and installs nothing. Wheels are not downloaded either: where
the index serves no PEP 658 metadata (the proxy here strips it), ``--use-feature=fast-deps``
reads each wheel's metadata with HTTP range requests, and pip >= 25.3 no longer downloads
the wheels at the end of a dry run, so the check costs a few megabytes, not the gigabytes of
PyPI's CUDA torch. The test asserts that from pip's own log.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
import ssl
import subprocess
import sys
import tomllib
import urllib.request
from pathlib import Path

import pytest
from packaging.version import Version

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
PYPI = "https://pypi.org/simple"
# pip settings that say how to reach an index (certificates, proxy, timeouts), not where
# packages come from: kept. Every other PIP_* (find-links, index URLs, constraints) goes.
KEEP = {
    "PIP_CERT",
    "PIP_CLIENT_CERT",
    "PIP_PROXY",
    "PIP_DEFAULT_TIMEOUT",
    "PIP_RETRIES",
    "PIP_DISABLE_PIP_VERSION_CHECK",
}
MAX_DOWNLOAD = 30 * 1024 * 1024
UNITS = {"bytes": 1, "kB": 1000, "MB": 1000**2, "GB": 1000**3}


def pypi_only_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_") or k in KEEP}
    env["PIP_CONFIG_FILE"] = os.devnull  # pip then reads no configuration file at all
    env["PIP_NO_INPUT"] = "1"
    return env


def pypi_reachable() -> bool:
    cafile = os.environ.get("PIP_CERT") or None
    try:
        context = ssl.create_default_context(cafile=cafile)
        with urllib.request.urlopen(f"{PYPI}/pip/", timeout=20, context=context):
            return True
    except OSError:
        return False


@pytest.fixture(scope="module")
def pypi():
    pip = importlib.metadata.version("pip")
    if Version(pip) < Version("25.3"):  # older pips download every wheel of a --dry-run at its end
        reason = f"pip {pip} downloads whole wheels even for --dry-run; pip >= 25.3 does not (upgrade pip)"
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    if not pypi_reachable():
        if os.environ.get("CI"):
            pytest.fail(f"{PYPI} is unreachable: CI must prove resolution against PyPI")
        pytest.skip(f"{PYPI} is unreachable from this machine")


def requirements(extras: tuple[str, ...]) -> list[str]:
    """patchmgr's dependencies and those of the extras, as pyproject.toml declares them."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = list(project["dependencies"])
    for extra in extras:
        wanted += project["optional-dependencies"][extra]
    return wanted


def resolve(tmp_path: Path, *requirement: str) -> tuple[dict, str]:
    report = tmp_path / "report.json"
    command = [
        sys.executable,
        "-m",
        "pip",
        "install",
        "--dry-run",
        "--ignore-installed",
        "--no-cache-dir",
        "--index-url",
        PYPI,
        "--use-feature=fast-deps",
        "--report",
        str(report),
        "-v",
        *requirement,
    ]
    done = subprocess.run(command, cwd=ROOT, env=pypi_only_env(), capture_output=True, text=True, timeout=900)
    log = done.stdout + done.stderr
    assert done.returncode == 0, f"{' '.join(requirement)} does not resolve against PyPI alone:\n{log[-5000:]}"
    return json.loads(report.read_text()), log


def downloaded(log: str) -> list[tuple[str, int]]:
    """Whole files pip downloaded (a lazily read wheel logs no such line)."""
    found = []
    for name, size, unit in re.findall(r"^\s*Downloading (\S+) \(([\d.]+) (bytes|kB|MB|GB)\)", log, re.M):
        found.append((name, int(float(size) * UNITS[unit])))
    return found


def installs(report: dict) -> dict[str, str]:
    return {
        item["metadata"]["name"].lower().replace("_", "-"): item["metadata"]["version"] for item in report["install"]
    }


# The base install and the README's set-up (`.[test,smoke]`). An extra alone needs no run of its own: its
# requirements are a subset of the union's, so the set pip finds for the union satisfies them too.
@pytest.mark.parametrize("extras", [(), ("test", "smoke")], ids=lambda e: ",".join(e) or "-")
def test_extras_resolve_against_pypi_alone(pypi, tmp_path, extras):
    report, log = resolve(tmp_path, *requirements(extras))
    chosen = installs(report)
    assert all(item["download_info"]["url"].startswith("https://") for item in report["install"])
    if "smoke" in extras:
        # PyPI's torch at the pin (the CUDA build on Linux): its own pins, triton's among
        # them, must agree with ours
        assert chosen["torch"] == "2.13.0", chosen["torch"]
    files = downloaded(log)
    assert sum(size for _, size in files) < MAX_DOWNLOAD, files


def test_no_deps_requirements_resolve_against_pypi_alone(pypi, tmp_path):
    report, log = resolve(tmp_path, "--no-deps", "--ignore-requires-python", "-r", "requirements-smoke-nodeps.txt")
    wanted = {}
    for line in (ROOT / "requirements-smoke-nodeps.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            name, _, version = line.partition("==")
            wanted[name.strip().lower()] = version.strip()
    assert installs(report) == wanted
    assert sum(size for _, size in downloaded(log)) < MAX_DOWNLOAD
