"""What a test needs from this machine (the package index, torch, the smoke extras): skip with the reason
where it is missing, fail in CI."""

from __future__ import annotations

import importlib.util
import os

import pytest

_REACHED: dict[str, str | None] = {}


def require(available: bool, reason: str) -> None:
    """Skip a test whose requirement is missing here, with the reason; in CI (CI=true) fail it instead,
    so a machine that lost PyPI or the smoke extras cannot turn a red run into a row of skips."""
    if available:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI must run this test, but {reason}", pytrace=False)
    pytest.skip(reason)


def pypi_problem() -> str | None:
    """None when the package index answers; else why not (asked once per session)."""
    if "pypi" not in _REACHED:
        import urllib.request

        from patchmgr.sources.release import index_url

        try:
            with urllib.request.urlopen(f"{index_url()}/pip/", timeout=20):
                _REACHED["pypi"] = None
        except OSError as exc:
            _REACHED["pypi"] = f"the package index is out of reach ({exc})"
    return _REACHED["pypi"]


def missing_modules(*names: str) -> list[str]:
    """Those of ``names`` (dotted: a package and its subpackage) that this interpreter cannot import."""
    missing = []
    for name in names:
        top = name.split(".")[0]
        if importlib.util.find_spec(top) is None or (name != top and importlib.util.find_spec(name) is None):
            missing.append(name)
    return missing
