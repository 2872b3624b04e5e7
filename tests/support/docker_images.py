"""The Docker engine and the image tests' base image, shared by the image tests (a pytest plugin: tests/conftest.py
registers it).

The base is made here, not pulled (no image registry is reachable from these machines): a minimal Debian
bookworm root with python3, venv and git (mmdebstrap, from the Debian mirror this machine's apt uses), imported
with ``docker import`` and kept in the engine across runs, keyed by its inputs; made once even when two test
files ask for it at the same time (a lock). Skipped, with the reason, only where no engine can run; under CI a
missing engine fails.
"""

from __future__ import annotations

import fcntl
import functools
import hashlib
import http.server
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

BASE_PACKAGES = "python3,python3-venv,python3-pip,git,ca-certificates"
CA_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")


def _unavailable(reason: str):
    if os.environ.get("CI"):
        pytest.fail(f"CI must build the image, but {reason}")
    pytest.skip(reason)


def docker(*args: str, timeout: int = 1800, check: bool = True, **kwargs) -> subprocess.CompletedProcess:
    env = {**os.environ, "DOCKER_BUILDKIT": "0", **kwargs.pop("env", {})}  # the classic builder's step log
    done = subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout, env=env, **kwargs)
    if check:
        assert done.returncode == 0, f"docker {' '.join(args)}:\n{(done.stdout + done.stderr)[-6000:]}"
    return done


@pytest.fixture(scope="module")
def engine():
    if not shutil.which("docker"):
        _unavailable("no docker client on PATH")
    info = subprocess.run(["docker", "info", "--format", "{{.ServerVersion}}"], capture_output=True, text=True)
    if info.returncode != 0:
        _unavailable(f"no Docker engine answers: {(info.stdout + info.stderr).strip()[-300:]}")


def debian_mirror() -> str:
    """The Debian archive this machine's apt uses for bookworm (read here, never written down)."""
    sources = [Path("/etc/apt/sources.list"), *sorted(Path("/etc/apt/sources.list.d").glob("*"))]
    for path in sources:
        if not path.is_file():
            continue
        text = path.read_text(errors="replace")
        if path.suffix == ".sources":
            for block in re.split(r"\n\s*\n", text):
                fields = dict(re.findall(r"^(\w[\w-]*):\s*(.*)$", block, re.M))
                if "bookworm" in fields.get("Suites", "").split() and "main" in fields.get("Components", ""):
                    return fields["URIs"].split()[0]
        else:
            for line in text.splitlines():
                match = re.match(r"^deb\s+(?:\[[^\]]*\]\s+)?(\S+)\s+bookworm\s+.*\bmain\b", line)
                if match:
                    return match.group(1)
    return "http://deb.debian.org/debian"


def _image_exists(tag: str) -> bool:
    return docker("image", "inspect", tag, check=False).returncode == 0


@pytest.fixture(scope="module")
def base_image(engine, tmp_path_factory) -> str:
    """bookworm + python3 + git + this host's CA bundle; kept in the engine across runs, keyed by its inputs."""
    mirror = debian_mirror()
    key = hashlib.sha256(
        b"\0".join([mirror.encode(), BASE_PACKAGES.encode(), CA_BUNDLE.read_bytes() if CA_BUNDLE.is_file() else b""])
    ).hexdigest()[:16]
    tag = f"patchmgr-test-base:bookworm-{key}"
    with open(Path(tempfile.gettempdir()) / "patchmgr-test-base.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another test file may be making it now: wait, then reuse it
        if not _image_exists(tag):
            _make_base(tag, mirror, tmp_path_factory.mktemp("base") / "rootfs.tar")
    return tag


def _make_base(tag: str, mirror: str, rootfs: Path) -> None:
    if not shutil.which("mmdebstrap"):
        _unavailable("mmdebstrap is not installed (apt-get install mmdebstrap): it makes the test's base image")
    hooks = [f"--customize-hook=upload {CA_BUNDLE} {CA_BUNDLE}"] if CA_BUNDLE.is_file() else []
    started = time.monotonic()
    made = subprocess.run(
        ["mmdebstrap", "--variant=minbase", f"--include={BASE_PACKAGES}", *hooks, "bookworm", str(rootfs), mirror],
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert made.returncode == 0, (made.stdout + made.stderr)[-4000:]
    docker("import", str(rootfs), tag)
    rootfs.unlink()
    print(f"base image {tag} made in {time.monotonic() - started:.0f} s")


def local_cpu_torch() -> Path | None:
    """The CPU torch wheel pip is configured with on this machine (find-links), for the image's cp311."""
    folders = [p for p in os.environ.get("PIP_FIND_LINKS", "").split()]
    config = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True).stdout
    folders += [p for value in re.findall(r"find-links='([^']*)'", config) for p in value.split()]
    for folder in folders:
        folder = folder.removeprefix("file://")
        wheels = sorted(Path(folder).glob("torch-*+cpu-cp311-cp311-*x86_64.whl")) if Path(folder).is_dir() else []
        if wheels:
            return wheels[-1]
    return None


@pytest.fixture(scope="module")
def torch_source(tmp_path_factory):
    """Build arguments that bring torch in as the CPU build without downloading CUDA wheels."""
    wheel = local_cpu_torch()
    if wheel is None:  # elsewhere: the PyTorch CPU index, as the README says
        yield {"PIP_EXTRA_INDEX_URL": "https://download.pytorch.org/whl/cpu"}
        return
    folder = tmp_path_factory.mktemp("wheels")
    (folder / wheel.name).symlink_to(wheel)
    handler = functools.partial(_QuietHandler, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield {"PIP_FIND_LINKS": f"http://127.0.0.1:{server.server_address[1]}/"}
    finally:
        server.shutdown()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass


def copy_context(root: Path, names: list[str], where: Path) -> Path:
    """The files and folders ``names`` of the working tree at ``root`` (tracked or not, unless ignored), copied to
    ``where``: a build context as the tree is now."""
    listed = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", "--", *names],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    for name in listed:
        source = root / name
        if source.is_file():
            (where / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, where / name)
    return where
