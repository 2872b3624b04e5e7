"""The image build: the Dockerfile's steps (docker/build.sh) run end to end on the CPU variant.

No Docker engine runs here, so the script runs against a fresh virtual
environment standing in for the image's Python. Its heavy dependencies (torch,
megatron-core) are borrowed from the test runner's environment through a .pth
file rather than installed a second time; patchmgr itself is installed into it
by the script, as in the image.
"""

from __future__ import annotations

import os
import re
import site
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STEPS = ["install-tool", "fetch", "apply", "install-upstreams", "verify", "smoke"]


def test_dockerfile_runs_the_script_steps_in_cache_friendly_order():
    text = (ROOT / "Dockerfile").read_text()
    runs = re.findall(r"^RUN docker/build\.sh (\S+)$", text, re.M)
    assert runs == STEPS
    copies = [line for line in text.splitlines() if line.startswith(("COPY", "RUN"))]
    order = {line: index for index, line in enumerate(copies)}
    # downloads depend on the manifests only; patches come after, so a patch edit
    # keeps the download layer and invalidates the apply layer
    assert order["COPY manifests/ manifests/"] < order["RUN docker/build.sh fetch"] < order["COPY patches/ patches/"]
    assert order["COPY patches/ patches/"] < order["RUN docker/build.sh apply"]
    assert "ARG BASE_IMAGE=quay.io/ascend/vllm-ascend:v0.22.1rc1-a3" in text


def test_build_script_end_to_end_cpu_variant(tmp_path, release_cache):
    venv = tmp_path / "image-python"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    borrowed = [p for p in site.getsitepackages()]
    (Path(purelib) / "zz-borrowed-deps.pth").write_text("\n".join(borrowed) + "\n")
    build = tmp_path / "upstreams"
    env = {**os.environ, "PYTHON": str(python), "VARIANT": "cpu", "TARGET": "ascend",
           "UPSTREAMS": "megatron-bridge vllm-ascend", "BUILD_DIR": str(build),
           "PATCHMGR_CACHE": str(release_cache), "COLUMNS": "160"}
    env.pop("PYTHONPATH", None)
    done = subprocess.run(["bash", str(ROOT / "docker" / "build.sh"), "all"], env=env, capture_output=True,
                          text=True, timeout=1500)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-4000:]
    # patchmgr came from the script's own install into the image's Python
    where = subprocess.run([str(python), "-c", "import patchmgr; print(patchmgr.__file__)"],
                           capture_output=True, text=True, env=env, cwd=tmp_path).stdout
    assert where.startswith(str(venv)), where
    assert "verified: " in output
    assert "applied target ascend" in output
    assert re.search(r"\d+ tests passed", output), output[-3000:]
    # the patched code is what the image's Python imports
    probe = ("import importlib.util as u; s = u.find_spec('vllm_ascend'); print(s.submodule_search_locations[0])")
    located = subprocess.run([str(python), "-c", probe], capture_output=True, text=True, env=env,
                             cwd=tmp_path).stdout.strip()
    assert located.startswith(str(build / "vllm-ascend")), located
