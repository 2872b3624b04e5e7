"""What the image's ascend variant installs for the smoke tests: patchmgr's ``smoke`` extra less what the base brings
(``patchmgr.smoke.image_needs``, run by ``build.sh install-tool``); and the smoke environments' view of a base
image's packages. The image itself is built in test_docker_ascend_variant."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from patchmgr.model.errors import UsageError
from patchmgr.smoke import envs
from patchmgr.smoke.image_needs import main, smoke_extra, variant_requirements

ROOT = Path(__file__).resolve().parent.parent
DECLARED = [
    "typer>=0.28,<0.29",
    'torch==2.13.0; extra == "smoke"',
    'einops; extra == "smoke"',
    'pytest>=8; extra == "test"',
    'pytest>=8; extra == "smoke"',
    'triton; extra == "smoke"',
    'transformers==5.24.0; extra == "smoke"',
    'tomli; python_version < "3.11"',
]


def pyproject_smoke_extra() -> list[str]:
    """The ``smoke`` extra as this tree's pyproject.toml writes it, as Requires-Dist lines of the metadata."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return [f'{line}; extra == "smoke"' for line in project["optional-dependencies"]["smoke"]]


@pytest.mark.fast
def test_the_ascend_variant_gets_the_smoke_extra_without_what_its_base_brings():
    assert smoke_extra(DECLARED) == ["torch==2.13.0", "einops", "pytest>=8", "triton", "transformers==5.24.0"]
    assert variant_requirements("ascend", DECLARED) == ["einops", "pytest>=8", "transformers==5.24.0"]
    assert variant_requirements("cpu", DECLARED) == smoke_extra(DECLARED)


@pytest.mark.fast
def test_from_this_pyproject_the_ascend_variant_pins_transformers_and_installs_einops_but_never_torch():
    declared = pyproject_smoke_extra()
    ascend = variant_requirements("ascend", declared)
    names = {canonicalize_name(Requirement(r).name): r for r in ascend}
    assert "einops" in names and "pytest" in names, ascend
    assert str(Requirement(names["transformers"]).specifier).startswith("=="), ascend  # pinned, as proven
    assert not {"torch", "triton", "torch-npu"} & set(names), ascend
    cpu = {canonicalize_name(Requirement(r).name) for r in variant_requirements("cpu", declared)}
    assert cpu - set(names) == {"torch", "triton"}, (cpu, ascend)
    # megatron-core comes from requirements-smoke-nodeps.txt (--no-deps), as in the cpu variant
    assert "megatron-core" in (ROOT / "requirements-smoke-nodeps.txt").read_text()


@pytest.mark.fast
def test_an_unknown_variant_is_refused(capsys):
    with pytest.raises(UsageError):
        variant_requirements("gpu", DECLARED)
    assert main(["gpu"]) == 2 and "error: no smoke requirements for the image variant 'gpu'" in capsys.readouterr().err
    assert main([]) == 2


@pytest.mark.fast
def test_a_smoke_environment_sees_the_base_pythons_packages_when_the_running_one_does(tmp_path, monkeypatch):
    """In the image, patchmgr's venv sees the base's torch (--system-site-packages): an environment built for
    an upstream's smoke-requirements borrows both, the venv's first."""
    base = tmp_path / "dist-packages"
    base.mkdir()
    own = envs.host_site_packages()
    monkeypatch.setattr(envs.site, "getsitepackages", lambda: [*own, str(base), str(tmp_path / "absent")])
    assert envs.host_site_packages() == [*own, str(base)]
