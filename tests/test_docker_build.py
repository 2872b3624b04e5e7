"""The image build, for real: the Dockerfile built by a Docker engine, smoke-tested inside the image.

The base is made here, not pulled (no image registry is reachable from these machines): a
minimal Debian bookworm root with python3, venv and git (mmdebstrap, from the Debian mirror
this machine's apt uses), imported with ``docker import``. bookworm's Python is externally
managed (PEP 668), the kind of base on which ``pip install`` is refused; the same base with
that marker removed stands in for the other kind. The base carries this host's CA bundle:
outbound HTTPS here goes through a proxy whose CA is in it (a property of this network, not
of the image users build). torch comes in as the CPU build from the local wheel pip is
configured with here, served on 127.0.0.1 to a ``--network host`` build through the
PIP_FIND_LINKS build argument (the one a PyPI mirror or the PyTorch CPU index goes through).

The built image must smoke green (patched) and red (``--unpatched``), and the layer cache must
hold what the Dockerfile promises: a rebuild with nothing changed runs no step, and a changed
patch keeps the download layer and re-runs every layer from ``COPY patches/`` on.

Skipped, with the reason, only where no engine can run; under CI a missing engine fails.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from pathlib import Path

import pytest
from support.docker_images import copy_context, docker

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
STEPS = ["install-tool", "fetch", "apply", "install-upstreams", "verify", "smoke"]
UPSTREAMS = ["megatron-bridge", "vllm-ascend"]
CONTEXT = [
    "Dockerfile",
    ".dockerignore",
    "pyproject.toml",
    "README.md",
    "requirements-smoke-nodeps.txt",
    "patchmgr",
    "docker",
    "manifests",
    "patches",
    "tests/smoke",
]
# pip and proxy settings of this machine handed to the build, where set (never local paths)
PASSED_ON = [
    "PIP_INDEX_URL",
    "PIP_EXTRA_INDEX_URL",
    "PIP_TRUSTED_HOST",
    "PIP_DEFAULT_TIMEOUT",
    "PATCHMGR_INDEX_URL",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
]


def test_dockerfile_runs_the_script_steps_in_cache_friendly_order():
    text = (ROOT / "Dockerfile").read_text()
    runs = re.findall(r"^RUN (?:bash patchmgr/image/build\.sh|patchmgr-build) (\S+)$", text, re.M)
    assert runs == STEPS
    copies = [line for line in text.splitlines() if line.startswith(("COPY", "RUN"))]
    order = {line: index for index, line in enumerate(copies)}
    # downloads depend on the manifests only; patches come after, so a patch edit
    # keeps the download layer and invalidates the apply layer
    assert order["COPY manifests/ manifests/"] < order["RUN patchmgr-build fetch"] < order["COPY patches/ patches/"]
    assert order["COPY patches/ patches/"] < order["RUN patchmgr-build apply"]
    # the Ascend base carries the vllm-ascend release the manifest pins
    pinned = re.search(
        r'\[upstreams\.vllm-ascend\][^\[]*?version = "([^"]+)"', (ROOT / "manifests" / "ascend.toml").read_text()
    ).group(1)
    assert f"ARG BASE_IMAGE=quay.io/ascend/vllm-ascend:v{pinned}-a3" in text


# --- building ------------------------------------------------------------------------------


def make_context(where: Path) -> Path:
    """The files the Dockerfile copies, as they are in this working tree, outside it."""
    return copy_context(ROOT, CONTEXT, where)


def build(context: Path, tag: str, args: dict[str, str]) -> tuple[str, float]:
    flags = [f"--build-arg={name}={value}" for name, value in args.items()]
    started = time.monotonic()
    done = docker("build", "--force-rm", "--network", "host", "--tag", tag, *flags, str(context), timeout=2400)
    took = time.monotonic() - started
    print(f"docker build {tag}: {took:.0f} s")
    return done.stdout + done.stderr, took


def steps(log: str) -> list[tuple[str, bool]]:
    """Each Dockerfile step after FROM and whether the engine took it from its cache."""
    found: list[tuple[str, bool]] = []
    after_from = False
    for part in re.split(r"^Step \d+/\d+ : ", log, flags=re.M)[1:]:
        instruction = part.splitlines()[0].strip()
        if after_from:
            found.append((instruction, "---> Using cache" in part))
        after_from = after_from or instruction.startswith("FROM")
    return found


def layer_steps(log: str) -> list[tuple[str, bool]]:
    return [(i, cached) for i, cached in steps(log) if i.startswith(("COPY", "RUN"))]


@pytest.fixture(scope="module")
def build_args(base_image, torch_source) -> dict[str, str]:
    args = {"BASE_IMAGE": base_image, "VARIANT": "cpu", "UPSTREAMS": " ".join(UPSTREAMS), **torch_source}
    for name in PASSED_ON:
        value = os.environ.get(name, "")
        if value and name not in args and not value.startswith(("/", "file:")):
            args[name] = value
    return args


@pytest.fixture(scope="module")
def images():
    tags: list[str] = []
    yield tags
    for tag in tags:  # the base stays (it is the expensive part); the builds go
        docker("rmi", "--force", tag, check=False)


def smoke_in(image: str, *flags: str) -> subprocess.CompletedProcess:
    only = [arg for name in UPSTREAMS for arg in ("--upstream", name)]
    return docker(
        "run",
        "--rm",
        "--network",
        "none",
        "-e",
        "COLUMNS=160",
        image,
        "patchmgr",
        "smoke",
        "--target",
        "ascend",
        "--into",
        "/opt/upstreams",
        *only,
        "--device",
        "cpu",
        *flags,
        check=False,
        timeout=900,
    )


def test_image_builds_smokes_green_and_red_and_caches_its_layers(build_args, images, tmp_path):
    context = make_context(tmp_path / "context")
    first_tag = f"patchmgr-test-cpu:{os.getpid()}-1"
    images.append(first_tag)
    log, took = build(context, first_tag, build_args)
    assert "verified: " in log, log[-4000:]
    assert re.search(r"\d+ tests? passed", log), log[-4000:]

    # inside the image: patchmgr runs from its virtual environment over the base's Python,
    # which stays externally managed and untouched
    probe = docker(
        "run",
        "--rm",
        "--network",
        "none",
        first_tag,
        "sh",
        "-c",
        "command -v patchmgr; ls /usr/lib/python3*/EXTERNALLY-MANAGED; "
        "cd / && /usr/bin/python3 -c 'import patchmgr' 2>&1 | tail -1; "
        "python -c 'import importlib.util as u, torch; "
        'print(torch.__version__, u.find_spec("vllm_ascend").submodule_search_locations[0])\'',
    )
    assert probe.stdout.splitlines()[0] == "/opt/venv/bin/patchmgr", probe.stdout
    assert "EXTERNALLY-MANAGED" in probe.stdout and "No module named 'patchmgr'" in probe.stdout, probe.stdout
    assert re.search(r"^2\.13\.0\+cpu /opt/upstreams/vllm-ascend/", probe.stdout, re.M), probe.stdout

    green = smoke_in(first_tag)
    assert green.returncode == 0, green.stdout + green.stderr
    assert re.search(r"\d+ tests? passed", green.stdout), green.stdout
    red = smoke_in(first_tag, "--unpatched")
    assert red.returncode == 0, red.stdout + red.stderr  # 0: every test failed without the patches
    assert "fail" in red.stdout.lower(), red.stdout

    # nothing changed: every layer from the cache, the very same image
    again_tag = f"patchmgr-test-cpu:{os.getpid()}-2"
    images.append(again_tag)
    log_again, took_again = build(context, again_tag, build_args)
    assert all(cached for _, cached in steps(log_again)), steps(log_again)
    image_id = docker("image", "inspect", "--format", "{{.Id}}", first_tag).stdout
    assert docker("image", "inspect", "--format", "{{.Id}}", again_tag).stdout == image_id

    # one patch changed (its message only): the tool and download layers stay, everything
    # from COPY patches/ on runs again
    patch = context / "patches" / "vllm-ascend" / "packed-broadcast-wait-source-stream.patch"
    text = patch.read_text()
    cut = text.index("\n\n", text.index("Subject:"))
    patch.write_text(text[:cut] + "\n\nThis sentence only changes the patch file's bytes." + text[cut:])
    changed_tag = f"patchmgr-test-cpu:{os.getpid()}-3"
    images.append(changed_tag)
    log_changed, took_changed = build(context, changed_tag, build_args)
    layers = layer_steps(log_changed)
    first_rerun = next(index for index, (_, cached) in enumerate(layers) if not cached)
    assert layers[first_rerun][0] == "COPY patches/ patches/", layers
    assert ("RUN patchmgr-build fetch", True) in layers[:first_rerun]
    assert ("RUN bash patchmgr/image/build.sh install-tool", True) in layers[:first_rerun]
    assert not any(cached for _, cached in layers[first_rerun:]), layers
    assert "verified: " in log_changed and re.search(r"\d+ tests? passed", log_changed)
    print(f"first build {took:.0f} s, unchanged rebuild {took_again:.0f} s, one patch changed {took_changed:.0f} s")


def test_a_base_whose_python_is_not_externally_managed(build_args, base_image, images, tmp_path):
    """The install step on the other kind of base: its Python takes pip installs, and the
    step still installs into its own virtual environment, seeing the base's packages (the
    Ascend base's torch and torch_npu) through --system-site-packages."""
    context = make_context(tmp_path / "context")
    (tmp_path / "plain").mkdir()
    (tmp_path / "plain" / "Dockerfile").write_text(
        f"FROM {base_image}\n"
        "RUN rm /usr/lib/python3*/EXTERNALLY-MANAGED && mkdir -p /usr/local/lib/python3.11/dist-packages \\\n"
        " && echo 'WHERE = \"base\"' > /usr/local/lib/python3.11/dist-packages/base_stand_in.py\n"
    )
    plain = f"patchmgr-test-plain:{os.getpid()}"
    images.append(plain)
    docker("build", "--network", "host", "--tag", plain, str(tmp_path / "plain"))
    env = [
        arg
        for name, value in build_args.items()
        if name.startswith(("PIP_", "PATCHMGR_"))
        for arg in ("-e", f"{name}={value}")
    ]
    done = docker(
        "run",
        "--rm",
        "--network",
        "host",
        "-v",
        f"{context}:/opt/patchmgr",
        *env,
        "-e",
        "VARIANT=ascend",
        "-e",
        "VENV=/opt/venv",
        plain,
        "sh",
        "-c",
        "! ls /usr/lib/python3*/EXTERNALLY-MANAGED 2>/dev/null && "
        "bash /opt/patchmgr/patchmgr/image/build.sh install-tool && "
        "/opt/venv/bin/python -c 'import base_stand_in, patchmgr, pytest; print(base_stand_in.WHERE)' && "
        "/usr/bin/python3 -c 'import patchmgr' 2>&1 | tail -1",
        check=False,
        timeout=900,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-4000:]
    assert "\nbase\n" in output and "No module named 'patchmgr'" in output, output[-2000:]
