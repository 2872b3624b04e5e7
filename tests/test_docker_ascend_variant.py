"""The ascend image variant's Python layer, for real: built on the test base, it holds what the smoke tests import.

The Ascend base (quay.io/ascend/vllm-ascend) cannot be pulled here. The test base (support.docker_images: Debian
bookworm, python3, git) stands in for it with what that base brings for itself, in its system Python: torch (the
CPU build, from the local wheel pip is configured with here) and triton. On it the Dockerfile's first step runs
as the Dockerfile runs it (``build.sh install-tool`` with ``VARIANT=ascend``, into a virtual environment that sees
the base's packages), then, in the image, every module the smoke tests and their conftest.py files import
(``patchmgr.smoke.needs.smoke_imports``: megatron.core, einops, transformers, ...) is imported, and pytest
collects every smoke test module. The base's torch must still be the one imported (the step installs nothing
over it).

Skipped, with the reason, only where no engine can run; under CI a missing engine fails.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from support.docker_images import copy_context, docker

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
# what the Dockerfile's first layer copies (install-tool), and the smoke tests whose imports are checked
CONTEXT = ["pyproject.toml", "README.md", "requirements-smoke-nodeps.txt", "patchmgr", "tests/smoke"]
PASSED_ON = ["PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_TRUSTED_HOST", "PIP_DEFAULT_TIMEOUT"]
IMPORT_EVERY_SMOKE_MODULE = r"""
import importlib, sys
from pathlib import Path
from patchmgr.smoke.needs import smoke_imports
root = Path("/opt/patchmgr")
# what the smoke tests import, then what the upstream modules they load import beyond those (mbridge and
# Megatron-Bridge: einops, safetensors)
modules = smoke_imports(root, sorted(root.glob("tests/smoke/**/test_*.py"))) + ["einops", "safetensors"]
failed = []
for name in modules:
    try:
        importlib.import_module(name)
    except Exception as error:
        failed.append(f"{name}: {type(error).__name__}: {error}")
import torch
print("torch", torch.__version__, torch.__file__)
print("imported", len(modules) - len(failed), "of", len(modules), "modules:", " ".join(modules))
print("\n".join("FAILED " + line for line in failed))
sys.exit(1 if failed else 0)
"""


def context_of(where: Path) -> Path:
    copy_context(ROOT, CONTEXT, where)
    (where / "Dockerfile").write_text(
        "ARG BASE_IMAGE\n"
        "FROM ${BASE_IMAGE}\n"
        "ARG PIP_INDEX_URL\nARG PIP_EXTRA_INDEX_URL\nARG PIP_FIND_LINKS\n"
        "ARG PIP_TRUSTED_HOST\nARG PIP_DEFAULT_TIMEOUT\n"
        "# the Ascend base's own torch and triton, in its system Python (what the variant must not install over)\n"
        "RUN rm /usr/lib/python3*/EXTERNALLY-MANAGED && python3 -m pip install --quiet torch==2.13.0 triton\n"
        "ENV PATCHMGR_HOME=/opt/patchmgr VENV=/opt/venv VARIANT=ascend\n"
        "WORKDIR /opt/patchmgr\n"
        "COPY pyproject.toml README.md requirements-smoke-nodeps.txt ./\n"
        "COPY patchmgr/ patchmgr/\n"
        "RUN bash patchmgr/image/build.sh install-tool\n"
        "COPY tests/smoke/ tests/smoke/\n"
    )
    return where


def test_the_ascend_variant_installs_what_the_smoke_tests_import_beside_the_bases_torch(
    base_image, torch_source, tmp_path
):
    args = {"BASE_IMAGE": base_image, **torch_source}
    for name in PASSED_ON:
        value = os.environ.get(name, "")
        if value and not value.startswith(("/", "file:")):
            args[name] = value
    tag = f"patchmgr-test-ascend-layer:{os.getpid()}"
    context = context_of(tmp_path / "context")
    flags = [f"--build-arg={name}={value}" for name, value in args.items()]
    try:
        docker("build", "--force-rm", "--network", "host", "--tag", tag, *flags, str(context), timeout=2400)
        imported = docker(
            "run", "--rm", "--network", "none", tag, "/opt/venv/bin/python", "-c", IMPORT_EVERY_SMOKE_MODULE,
            check=False, timeout=600,
        )  # fmt: skip
        output = imported.stdout + imported.stderr
        assert imported.returncode == 0, output[-4000:]
        assert re.search(r"^torch 2\.13\.0\+cpu /usr/local/lib/python3[.\d]*/dist-packages/torch/", output, re.M), (
            output
        )
        for module in ("megatron.core", "einops", "transformers", "pytest"):
            assert f" {module} " in output + " ", output
        collected = docker(
            "run", "--rm", "--network", "none", "-w", "/opt/patchmgr", tag,
            "/opt/venv/bin/python", "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "tests/smoke",
            check=False, timeout=600,
        )  # fmt: skip
        listing = collected.stdout + collected.stderr
        assert collected.returncode == 0 and re.search(r"^\d+ tests? collected", listing, re.M), listing[-4000:]
        assert "error" not in listing.lower().split("collected")[-1], listing[-4000:]
    finally:
        docker("rmi", "--force", tag, check=False)
