"""Property tests: the engine against real `git diff` patches and `git apply`, on random files and edits.

The files are built from a tiny alphabet of lines, so repeated lines (several
places a hunk could match) are the rule, not the exception; some lines end in
CRLF and some files lack a final newline. A patch is always what git itself
writes (`git diff` of the index against the work tree); the reference for
placement is `git apply`, run from the repository's root.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from support.memory_tree import Files

from patchmgr.engine.classify import _apply_all, check_patch
from patchmgr.engine.results import State
from patchmgr.model.patchfile import parse_patch

# CI runs a fixed set of 60 examples per property; benchmarks/properties.py runs thousands with random
# seeds (PATCHMGR_PROPERTY_EXAMPLES, PATCHMGR_PROPERTY_SEED) as a long run outside the test suite.
_EXAMPLES = int(os.environ.get("PATCHMGR_PROPERTY_EXAMPLES") or 60)
_SEEDED = bool(os.environ.get("PATCHMGR_PROPERTY_SEED"))
SETTINGS = settings(
    max_examples=_EXAMPLES,
    deadline=None,
    database=None,
    derandomize=not _SEEDED,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
GIT_ENV = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
NAME = "f.txt"

line = st.sampled_from(["a", "b", "c", "a b", "", "x = 1", "}"]).flatmap(
    lambda text: st.sampled_from([text + "\n", text + "\r\n"]) if text else st.just("\n")
)


@st.composite
def text(draw, min_lines: int = 0) -> str:
    lines = draw(st.lists(line, min_size=min_lines, max_size=32))
    if lines and draw(st.booleans()) and draw(st.booleans()):
        lines[-1] = lines[-1].rstrip("\n")  # no final newline (a bare CR may remain)
    return "".join(lines)


@st.composite
def edited(draw, base: str) -> str:
    """``base`` with a few random line replacements, insertions and deletions."""
    lines = base.splitlines(keepends=True)
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["replace", "insert", "delete", "copy"]))
        at = draw(st.integers(0, len(lines)))
        if op == "insert" or not lines:
            lines[at:at] = draw(st.lists(line, min_size=1, max_size=3))
        elif op == "delete":
            del lines[min(at, len(lines) - 1) : min(at, len(lines) - 1) + draw(st.integers(1, 3))]
        elif op == "copy":  # a block repeated elsewhere: a second place a hunk could match
            block = lines[draw(st.integers(0, len(lines) - 1)) :][: draw(st.integers(1, 4))]
            lines[at:at] = [text if text.endswith("\n") else text + "\n" for text in block]
        else:
            lines[min(at, len(lines) - 1)] = draw(line)
    if lines and not lines[-1].endswith("\n") and draw(st.booleans()):
        lines[-1] += "\n"
    # an edit may leave a line without its LF in the middle: give it one
    lines = [text if text.endswith("\n") or i == len(lines) - 1 else text + "\n" for i, text in enumerate(lines)]
    return "".join(lines)


def git(repo: Path, *args: str, input: bytes | None = None, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=repo, env=GIT_ENV, input=input, capture_output=True, check=check)


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("props")
    git(path, "init", "-q")
    git(path, "config", "core.autocrlf", "false")
    return path


def make_patch(repo: Path, base: bytes, new: bytes, context: int) -> bytes:
    """What git writes for base -> new: the base staged in the index, the new text in the work tree."""
    (repo / NAME).write_bytes(base)
    git(repo, "add", NAME)
    (repo / NAME).write_bytes(new)
    return git(repo, "diff", "--full-index", f"-U{context}", "--", NAME).stdout


def git_apply(repo: Path, upstream: bytes, patch: bytes) -> bytes | None:
    """`git apply --check`, then `git apply`, of ``patch`` onto ``upstream``: the result, or None if refused."""
    (repo / NAME).write_bytes(upstream)
    if git(repo, "apply", "--check", "-", input=patch, check=False).returncode:
        return None
    git(repo, "apply", "-", input=patch)
    return (repo / NAME).read_bytes()


@st.composite
def edit_case(draw):
    base = draw(text(min_lines=1))
    new = draw(edited(base))
    return base.encode(), new.encode(), draw(st.integers(1, 3))


# Found by the long run (benchmarks/properties.py, seed 534406519): on "a\na" git's byte-wise match
# applies the patch "a" -> "a\na" again at line 1; the engine calls it upstream (see git_joins_lines)
@example(case=(b"a", b"a\na", 1))
@SETTINGS
@given(case=edit_case())
def test_git_patch_is_clean_applies_and_reverses(repo, case):
    base, new, context = case
    data = make_patch(repo, base, new, context)
    if not data:
        return  # the edit changed nothing
    patch = parse_patch(data, Path("p.patch"))
    result = check_patch(patch, Files({NAME: base}))
    assert result.state is State.CLEAN, (result.state, result.detail)
    assert result.files == {NAME: new}
    # the reverse, applied to the result, gives back the original
    reverted, _ = _apply_all(patch.reversed_files(), Files({NAME: new}), 0)
    assert reverted == {NAME: base}
    # on the patched file the engine says "already upstream", unless the patch
    # applies once more (deleting one of three equal lines can), as git agrees
    again = check_patch(patch, Files({NAME: new}))
    if git_apply(repo, new, data) is None:
        assert again.state is State.UPSTREAM, (again.state, again.detail)
    elif not git_joins_lines(patch, new):  # the one divergence, on purpose: see git_joins_lines
        assert again.state.applies


@st.composite
def drift_case(draw):
    base, new, context = draw(edit_case())
    upstream = draw(edited(base.decode()))
    return base, new, context, upstream.encode()


# Found by this test: a drifted second hunk matched over the line the first hunk had
# just written (git never matches over patched lines), turning b->c, c->d into b->d.
@example(
    case=(
        b"a\nb\na\n" + b"x\n" * 10 + b"a\nc\na\n" + b"y\n" * 5,
        b"a\nc\na\n" + b"x\n" * 10 + b"a\nd\na\n" + b"y\n" * 5,
        1,
        b"a\nb\na\n" + b"x\n" * 10 + b"y\n" * 5,
    )
)
# git's byte-wise match of a final preimage line without LF (see git_joins_lines)
@example(case=(b"a", b"a\na", 1, b"a\n"))
@SETTINGS
@given(case=drift_case())
def test_exact_verdict_agrees_with_git_apply_under_upstream_drift(repo, case):
    base, new, context, upstream = case
    data = make_patch(repo, base, new, context)
    if not data:
        return
    patch = parse_patch(data, Path("p.patch"))
    result = check_patch(patch, Files({NAME: upstream}))
    expected = git_apply(repo, upstream, data)
    if expected is not None and not result.state.applies and git_joins_lines(patch, upstream):
        return  # the one place the engine is stricter than git, on purpose: see git_joins_lines
    assert result.state.applies == (expected is not None), (result.state, result.detail)
    if expected is not None:
        assert result.files == {NAME: expected}


def git_joins_lines(patch, upstream: bytes) -> bool:
    """Whether git's byte-wise match lets a hunk's last preimage line without LF match a longer line.

    git compares a hunk's preimage with memcmp over its length, so a last context
    (or removed) line "a" (the old file ended without a newline) also matches an upstream line
    "a\n" or "a \n" in the middle of a file, and git then replaces that whole line
    with "a": upstream's newline or trailing blanks vanish and two lines are joined
    ("x\na \nz\n" patched becomes "y\naz\n"). The engine never calls such a
    placement exact: it reports fuzz (that context line dropped), a conflict, or "already upstream".
    """
    lines = upstream.decode("utf-8", "surrogateescape").splitlines(keepends=True)
    for hunk in patch.files[0].hunks:
        last = hunk.old_lines[-1] if hunk.old_lines else ""
        if (
            last
            and not last.endswith("\n")
            and any(
                other != last and other.startswith(last) and not other[len(last) :].strip(" \t\n\v\f\r")
                for other in lines
            )
        ):
            return True
    return False
