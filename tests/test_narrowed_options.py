"""Options that a command validates come back narrowed (issue 25, item 1): the value the type checker proves
present is the one the command uses, so a value that passes one check cannot fall through to another branch."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize("command", ["apply", "verify", "smoke"])
def test_an_empty_python_is_bad_input_not_a_fall_through_to_into(cli, project, upstream, command):
    project.manifest("t", {"lib": {"git": "https://example.invalid/lib.git", "commit": upstream.head(), "patches": []}})
    # --python "" once passed the "--into or --python" check (it is not None) and then, being falsy, took the
    # --into branch with no folder: a traceback (AttributeError on None)
    result = cli(command, "--target", "t", "--python", "")
    assert result.code == 2, result.err
    assert "error: --python is empty: it takes the path of an interpreter" in result.err
    assert "hint: " in result.err and "Traceback" not in result.err + result.out
