"""NAME=VALUE options: checked against the chosen targets without changing the mapping the command was given."""

from __future__ import annotations

from pathlib import Path

import pytest

from patchmgr.cli.options import for_targets, require_upstreams, source_overrides
from patchmgr.model.errors import UsageError
from patchmgr.model.manifest import Target, Upstream

pytestmark = pytest.mark.fast


def _target(name: str, *upstreams: str) -> Target:
    entries = tuple(Upstream(u, f"https://example.org/{u}.git", (), "0" * 40, None, None, "", ()) for u in upstreams)
    return Target(name, "", Path(f"manifests/{name}.toml"), entries)


def test_an_option_for_another_targets_upstream_is_noted_and_left_out_of_a_new_mapping():
    given = source_overrides(["lib=/srv/lib", "other=/srv/other"])
    chosen = [_target("a", "lib")]
    notes = require_upstreams(chosen, given, elsewhere=lambda: {"lib", "other"})
    assert notes == ["--source other: target a has no upstream other; ignored"]
    assert dict(given) == {"lib": "/srv/lib", "other": "/srv/other"}  # what was given stays as it was
    assert for_targets(chosen, given) == {"lib": "/srv/lib"}


def test_an_option_for_an_upstream_no_manifest_has_is_bad_input():
    with pytest.raises(UsageError):
        require_upstreams([_target("a", "lib")], source_overrides(["typo=/srv/x"]), elsewhere=lambda: {"lib"})
