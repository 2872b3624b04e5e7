"""The text of the files ``patchmgr init`` and ``patchmgr add`` write besides manifests and patches: the smoke tests'
conftest, the pre-commit configuration, and a smoke test stub.

A stub says it is one (``SMOKE_STUB``): it fails until a person writes the test, and lint names it until then.
"""

from __future__ import annotations

from patchmgr.model.lint import SMOKE_STUB

PRE_COMMIT = """\
# patchmgr lint on every commit that touches a manifest, a patch or a smoke test (https://pre-commit.com):
# pip install pre-commit && pre-commit install. It runs the patchmgr installed where git commit runs.
repos:
  - repo: local
    hooks:
      - id: patchmgr-lint
        name: patchmgr lint
        entry: patchmgr lint
        language: system
        pass_filenames: false
        files: ^(manifests/.*\\.toml|patches/.*\\.patch|tests/smoke/.*\\.py)$
"""

_CONFTEST = '''\
"""Fixtures of the smoke tests of {upstream}.

`patchmgr smoke --target TARGET --into DIR` (after `patchmgr apply --target TARGET --into DIR`) runs the tests
that each patch names in its `Smoke-Test:` header (one pytest process for all of {upstream}'s patches, each
result given to the patch that names its test), with:

- PATCHMGR_SMOKE_ROOT: the folder to import {upstream} from (its checkout, joined with the manifest's
  `package-root`), patched; with `--unpatched`, the pinned upstream without the patches, where each test must fail;
- PATCHMGR_SMOKE_DEVICE: `cpu`, `cuda` or `npu`.

A test imports the code a patch changes from that tree, never from an installed copy:

    def test_fix(load_upstream):
        module = load_upstream("mypackage", "mypackage.module")
        assert module.function(...) == ...

Within the package, sub-package `__init__` files do not run unless named in run_init, so a heavy package
(one whose `__init__` imports GPU libraries) still loads the one module a test needs.
"""

from patchmgr.smoke.fixtures import load_upstream, smoke_device, upstream_root

__all__ = ["load_upstream", "smoke_device", "upstream_root"]  # the fixtures, for pytest to find here
'''

_STUB = '''\
"""Smoke test for patches/{upstream}/{patch_id}.patch: {subject}

{marker}: replace it with a test that fails on the pinned upstream without the
patch and passes with it: `patchmgr smoke --target {target} --into DIR` runs it patched,
`--unpatched` without the patch. tests/smoke/{upstream}/conftest.py says how a test
reaches the upstream's code (`load_upstream`).
"""

import pytest


def test_{function}() -> None:
    pytest.fail("write the smoke test of {patch_id} (tests/smoke/{upstream}/{file})")
'''


def conftest_text(upstream: str) -> str:
    return _CONFTEST.format(upstream=upstream)


def smoke_stub_text(target: str, upstream: str, patch_id: str, subject: str, file: str) -> str:
    function = "".join(c if c.isalnum() else "_" for c in patch_id)
    shown = " ".join(subject.replace('"""', "'''").replace("\\", "/").split())
    shown = "".join(c for c in shown if c.isprintable())
    return _STUB.format(
        upstream=upstream,
        patch_id=patch_id,
        subject=shown,
        marker=SMOKE_STUB,
        target=target,
        function=function,
        file=file,
    )
