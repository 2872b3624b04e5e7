"""An image for any project, for real: docker/project.Dockerfile built by a Docker engine for a small project made
here (one local git upstream, one patch, one smoke test), patchmgr installed from its wheel.

Two modes. ``checkout``: the upstream is fetched at its pin from a git daemon on 127.0.0.1 (a ``--network
host`` build), patched, installed, verified and smoke-tested (no torch in the image: the cpu lane needs pytest
alone). ``installed``: a base image made here already holds the upstream, installed editable from its git
checkout, with one file the base itself changed; the build runs with ``--network none`` (wheels from the
context, the pin from the base's own clone through PATCHMGR_SOURCES), patches what the base holds, reports
the drift against the pin, and fails with the reason where the patch does not apply.

The base image is the one tests/test_docker_build.py makes (support/docker_images.py); every wheel comes from
this machine's pip (``pip wheel``), so the builds download nothing.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.docker_images import docker
from support.gitrepos import Project, UpstreamRepo
from support.smoke_scene import LOAD

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
CALC = "".join(
    [
        '"""A tiny library: the upstream of the project made here."""\n\n\n',
        "def add(a, b):\n    return a - b\n\n\n",
        "def mul(a, b):\n    return a * b\n\n\n",
        "def neg(a):\n    return -a\n\n\n",
        'VERSION = "1.0"\n',
    ]
)
PYPROJECT = (
    '[build-system]\nrequires = ["setuptools>=64"]\nbuild-backend = "setuptools.build_meta"\n\n'
    '[project]\nname = "calclib"\nversion = "1.0"\n\n[tool.setuptools]\npackages = ["calclib"]\n'
)
# the smoke test of support/smoke_scene.py, reaching this upstream's module
SMOKE_TEST = (
    LOAD.replace('"lib" / "calc.py"', '"calclib" / "calc.py"')
    + """

def test_add():
    assert load_calc().add(2, 3) == 5
"""
)


def build(context: Path, tag: str, network: str, args: dict[str, str], check: bool = True):
    flags = [f"--build-arg={name}={value}" for name, value in args.items()]
    started = time.monotonic()
    done = docker(
        "build", "--force-rm", "--network", network, "-f", str(context / "project.Dockerfile"),
        "--tag", tag, *flags, str(context), timeout=1200, check=check,
    )  # fmt: skip
    print(f"docker build {tag} ({network}): {time.monotonic() - started:.0f} s")
    return done


@pytest.fixture(scope="module")
def wheels(tmp_path_factory) -> Path:
    """patchmgr's wheel built from this tree, with every wheel it and the smoke tests need (pytest), and ``wheel``
    for the editable install of the base made here (bookworm's setuptools 66 builds through it)."""
    folder = tmp_path_factory.mktemp("wheels")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--disable-pip-version-check", "-w", str(folder), str(ROOT),
         "pytest", "wheel"],
        check=True,
    )  # fmt: skip
    return folder


@pytest.fixture(scope="module")
def served_upstream(tmp_path_factory):
    """calclib in a real git repository, served read-only by a git daemon on 127.0.0.1 (the project's remote)."""
    where = tmp_path_factory.mktemp("upstream")
    repo = UpstreamRepo(where / "calclib")
    pin = repo.commit({"calclib/__init__.py": "", "calclib/calc.py": CALC, "pyproject.toml": PYPROJECT}, "calclib 1.0")
    served = where / "served"
    served.mkdir()
    subprocess.run(["git", "clone", "--quiet", "--bare", str(repo.path), str(served / "calclib.git")], check=True)
    for key in ("uploadpack.allowFilter", "uploadpack.allowAnySHA1InWant"):
        subprocess.run(["git", "-C", str(served / "calclib.git"), "config", key, "true"], check=True)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    daemon = subprocess.Popen(
        ["git", "daemon", "--export-all", f"--base-path={served}", "--listen=127.0.0.1", f"--port={port}",
         "--reuseaddr"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    url = f"git://127.0.0.1:{port}/calclib.git"
    for _ in range(50):
        if subprocess.run(["git", "ls-remote", url], capture_output=True).returncode == 0:
            break
        time.sleep(0.1)
    try:
        yield repo, pin, url
    finally:
        daemon.terminate()
        daemon.wait(timeout=10)


@pytest.fixture(scope="module")
def team_project(tmp_path_factory, served_upstream, wheels) -> Path:
    """The adopting team's repository: manifest, one patch with its smoke test, the wheels; nothing of patchmgr's."""
    repo, pin, url = served_upstream
    root = tmp_path_factory.mktemp("project")
    patch = repo.make_patch(
        pin,
        {"calclib/calc.py": CALC.replace("return a - b", "return a + b")},
        "Fix add",
        body="Why: add subtracted its arguments.",
        fields="Origin: vendor\nUpstream-Status: Pending\nSmoke-Test: tests/smoke/calclib/test_add.py",
    )
    made = Project(root)
    made.add_patch("calclib", "fix-add", patch)
    made.manifest("main", {"calclib": {"git": url, "commit": pin, "patches": ["fix-add"]}})
    (root / "tests" / "smoke" / "calclib").mkdir(parents=True)
    (root / "tests" / "smoke" / "calclib" / "test_add.py").write_text(SMOKE_TEST)
    shutil.copytree(wheels, root / "wheels")
    shutil.copy(ROOT / "docker" / "project.Dockerfile", root / "project.Dockerfile")
    return root


@pytest.fixture(scope="module")
def images():
    tags: list[str] = []
    yield tags
    for tag in tags:  # the shared base stays; what this module built goes
        docker("rmi", "--force", tag, check=False)


def red_in(tag: str, script: str) -> str:
    """What ``script`` prints in the image (offline); it ends with ``smoke --unpatched``, which must be red."""
    done = docker("run", "--rm", "--network", "none", tag, "sh", "-c", script, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 proven (each detects its bug)" in done.stdout, done.stdout
    return done.stdout


def tool_args(wheels: Path) -> dict[str, str]:
    (wheel,) = wheels.glob("patchmgr-*.whl")
    return {"PATCHMGR": f"wheels/{wheel.name}", "TARGET": "main", "PIP_NO_INDEX": "1"}


def test_a_projects_image_from_the_wheel(base_image, team_project, wheels, images):
    tag = f"patchmgr-test-project:{os.getpid()}"
    images.append(tag)
    log = build(team_project, tag, "host", {"BASE_IMAGE": base_image, **tool_args(wheels)})
    out = log.stdout + log.stderr
    assert "calclib: cached from git git://127.0.0.1" in out, out[-4000:]
    assert "verified: " in out, out[-4000:]
    assert "1 proven, 0 failed, 0 not proven" in out, out[-4000:]
    assert "cuda: torch is not installed in this environment" in out, out[-4000:]  # the device lanes say why

    out = red_in(
        tag,
        "! python -c 'import torch' 2>/dev/null && command -v patchmgr && "
        "patchmgr smoke --target main --into /opt/upstreams --device cpu --unpatched",
    )
    assert out.startswith("/opt/venv/bin/patchmgr\n"), out


def installed_base(tmp_path: Path, base_image: str, served, wheels: Path, tag: str, change: tuple[str, str]) -> str:
    """A base that already holds calclib: its git checkout at the pin under /opt/src, installed editable into the
    environment /opt/env (with pytest), and one file the base itself changed (``change``: old, new)."""
    repo, pin, _ = served
    context = tmp_path / tag.replace(":", "-")
    subprocess.run(["git", "clone", "--quiet", str(repo.path), str(context / "calclib")], check=True)
    subprocess.run(["git", "-C", str(context / "calclib"), "checkout", "--quiet", pin], check=True)
    shutil.copytree(wheels, context / "wheels")
    old, new = change
    (context / "Dockerfile").write_text(
        f"FROM {base_image}\n"
        "COPY calclib/ /opt/src/calclib/\nCOPY wheels/ /tmp/wheels/\n"
        "RUN python3 -m venv /opt/env && pip=/opt/env/bin/pip && file=/opt/src/calclib/calclib/calc.py \\\n"
        " && $pip install --quiet --no-index --find-links /tmp/wheels pytest wheel && rm -r /tmp/wheels \\\n"
        " && $pip install --quiet --no-index --no-build-isolation -e /opt/src/calclib \\\n"
        f" && sed -i 's/{old}/{new}/' $file && grep -q '{new}' $file\n"
    )
    docker("build", "--network", "none", "--tag", tag, str(context))
    return tag


def offline_args(base: str, wheels: Path) -> dict[str, str]:
    return {
        "BASE_IMAGE": base,
        **tool_args(wheels),
        "MODE": "installed",
        "TARGET_PYTHON": "/opt/env/bin/python",
        "PATCHMGR_SOURCES": "calclib=/opt/src/calclib",
    }


def test_offline_on_a_base_that_holds_the_upstream(base_image, team_project, wheels, served_upstream, images, tmp_path):
    base = f"patchmgr-test-holds:{os.getpid()}"
    images.append(base)
    installed_base(tmp_path, base_image, served_upstream, wheels, base, ('VERSION = "1.0"', 'VERSION = "1.0+base"'))
    tag = f"patchmgr-test-offline:{os.getpid()}"
    images.append(tag)
    log = build(team_project, tag, "none", offline_args(base, wheels))
    out = log.stdout + log.stderr
    assert "installed files differ from the pin" in out and "calclib/calc.py" in out, out[-4000:]
    print(*[line for line in out.splitlines() if "differ from the pin" in line or "applied target" in line], sep="\n")
    assert "applied target main into /opt/env/bin/python's environment" in out, out[-4000:]
    assert "verified: " in out and "1 proven, 0 failed, 0 not proven" in out, out[-4000:]

    # patched where the base installed it (editable: its checkout), the base's own change kept
    out = red_in(
        tag,
        "cd / && /opt/env/bin/python -c 'import calclib.calc as c; print(c.add(2, 3), c.VERSION, c.__file__)' && "
        "cd /opt/project && patchmgr smoke --target main --python /opt/env/bin/python --device cpu --unpatched",
    )
    assert out.startswith("5 1.0+base /opt/src/calclib/calclib/calc.py\n"), out

    # a base that changed the very lines the patch fixes: refused, the build fails with the reason
    moved = f"patchmgr-test-moved:{os.getpid()}"
    images.append(moved)
    installed_base(tmp_path, base_image, served_upstream, wheels, moved, ("return a - b", "return b - a"))
    refused_tag = f"patchmgr-test-refused:{os.getpid()}"
    images.append(refused_tag)
    refused = build(team_project, refused_tag, "none", offline_args(moved, wheels), check=False)
    out = refused.stdout + refused.stderr
    assert refused.returncode != 0, out[-4000:]
    assert "RUN patchmgr-build apply" in out and "fix-add" in out, out[-4000:]
    assert "conflict" in out.lower(), out[-4000:]
    print(out[out.index("RUN patchmgr-build apply") :][:3000])
    assert "RUN patchmgr-build verify" not in out, out[-4000:]
