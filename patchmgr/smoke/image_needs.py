"""What an image variant installs for its smoke tests, derived from patchmgr's own ``smoke`` extra.

The ``smoke`` extra of patchmgr's metadata (pyproject.toml) is the one list of what the Ascend set's smoke tests
import, at the versions they were proven with: the cpu variant installs it whole (``pip install
'patchmgr[smoke]'``). The ascend variant installs the same list except what its base image brings, built for the
NPU (torch, torch_npu, triton): pip must not replace those with PyPI's builds. Each upstream's own
``smoke-requirements`` (or the ``smoke-env`` of its version) are not installed here: ``smoke`` builds an
environment of their own for them at its first run (the image's ``smoke`` step), which borrows this one's
packages and the base's.

    python -m patchmgr.smoke.image_needs ascend   # one requirement a line, for `pip install -r /dev/stdin`
"""

from __future__ import annotations

import importlib.metadata
import sys
from collections.abc import Sequence

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from patchmgr.model.errors import UsageError

# what each variant's base image brings for itself (canonical distribution names): never installed over
BASE_BRINGS: dict[str, tuple[str, ...]] = {"ascend": ("torch", "torch-npu", "triton", "triton-ascend"), "cpu": ()}


def smoke_extra(declared: Sequence[str] | None = None) -> list[str]:
    """The requirements of patchmgr's ``smoke`` extra (``declared``: its Requires-Dist lines, else read)."""
    lines = declared if declared is not None else _requires_dist()
    found = []
    for line in lines:
        try:
            requirement = Requirement(line)
        except InvalidRequirement:
            continue
        marker = requirement.marker
        if marker is None or not marker.evaluate({"extra": "smoke"}):
            continue
        if marker.evaluate({"extra": ""}):
            continue  # a runtime dependency whose marker holds without the extra: installed with patchmgr
        requirement.marker = None
        found.append(str(requirement))
    return found


def variant_requirements(variant: str, declared: Sequence[str] | None = None) -> list[str]:
    """What ``variant``'s install step adds for the smoke tests: the ``smoke`` extra less what its base brings."""
    if variant not in BASE_BRINGS:
        raise UsageError(
            f"no smoke requirements for the image variant {variant!r}", f"use one of {', '.join(BASE_BRINGS)}"
        )
    brought = set(BASE_BRINGS[variant])
    return [r for r in smoke_extra(declared) if canonicalize_name(Requirement(r).name) not in brought]


def _requires_dist() -> list[str]:
    try:
        return importlib.metadata.requires("patchmgr") or []
    except importlib.metadata.PackageNotFoundError:
        return []


def main(argv: Sequence[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m patchmgr.smoke.image_needs VARIANT", file=sys.stderr)
        return 2
    try:
        requirements = variant_requirements(argv[0])
    except UsageError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if not requirements:
        print("error: patchmgr's metadata names no `smoke` extra (is patchmgr installed?)", file=sys.stderr)
        return 1
    print("\n".join(requirements))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
