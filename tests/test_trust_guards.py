"""Guards cannot hang or flood (issue 24, item 9): their expressions match in linear time (RE2), syntax RE2 lacks
is refused when the patch is read, the files a guard reads are bounded, and its offenses are capped in every
format with the total stated. Real git upstreams, real patch files, the CLI as a user runs it."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from support.scenes import FIELDS, lines_with, setup

from patchmgr.model import guards

ROOT = Path(__file__).resolve().parent.parent
WORDS = "the quick brown fox jumps over the lazy dog and keeps on running far away\n"


def guarded_patch(upstream, pin, guard_lines: str) -> bytes:
    """A patch that changes line 20 of src/mod.py and states ``guard_lines``."""
    return upstream.make_patch(
        pin,
        {"src/mod.py": lines_with({20: "safe.call()"}, upstream.read("src/mod.py", pin))},
        "Call the safe helper",
        fields=f"{FIELDS}\n{guard_lines}",
    )


def patchmgr(project, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """The CLI in a process of its own, so that a command that hangs fails the test instead of stalling it."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "patchmgr", *args, "--root", str(project.root)],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


# -- linear time ----------------------------------------------------------------------------------------------
def test_a_catastrophic_expression_finishes_on_ordinary_text(project, upstream):
    """``^(\\w+\\s?)+:$`` backtracks exponentially in Python's ``re`` on a line of words without the colon."""
    pin = upstream.commit({"src/notes.txt": WORDS * 50 + "a section title:\n" + WORDS * 50}, "notes")
    patch = guarded_patch(upstream, pin, r"Guard: absent /^(\w+\s?)+:$/ in src/notes.txt")
    setup(project, upstream, {"fix": patch})
    try:
        done = patchmgr(project, "status", "--target", "t", "--json", "--source", f"lib={upstream.path}", timeout=90)
    except subprocess.TimeoutExpired:
        pytest.fail("status did not finish: the guard's expression backtracks")
    assert done.returncode == 1, done.stderr
    (guard,) = json.loads(done.stdout)["upstreams"][0]["patches"][0]["guards"]
    assert guard["offenses"] == ["src/notes.txt:51: a section title:"] and guard["offense_count"] == 1


def test_whole_text_anchors_are_refused_as_guards_read_lines(cli, project, upstream):
    """``\\A`` and ``\\z`` anchor at a whole text, but a guard's expression is searched in each line."""
    pin = upstream.head()
    setup(project, upstream, {"fix": guarded_patch(upstream, pin, r"Guard: absent /\Acuda/ in src/mod.py")})
    bad = cli("status", "--target", "t", "--source", f"lib={upstream.path}")
    assert bad.code == 2 and "Traceback" not in bad.err
    assert "\\A, which a guard cannot use" in bad.err and "write ^" in bad.err, bad.err


def test_the_count_stops_at_its_bound_and_says_so(cli, project, upstream, monkeypatch):
    monkeypatch.setattr(guards, "MAX_COUNT", 50, raising=False)  # the real bound is 1,000,000 offenses
    pin = upstream.commit({"data/many.txt": "y\n" * 5000}, "many short lines")
    setup(project, upstream, {"fix": guarded_patch(upstream, pin, "Guard: absent /y/ in data/many.txt")})
    result = cli("status", "--target", "t", "--source", f"lib={upstream.path}")
    assert result.code == 1 and len(result.out) < 5000
    assert "… and at least 40 more (counting stops at 50)" in result.out, result.out


@pytest.mark.parametrize(
    "regex, syntax",
    [
        (r"(?<=cuda\.)call", "lookbehind"),
        (r"cuda(?=\.call)", "lookahead"),
        (r"(cuda)\.\1", "backreference"),
        (r"(?P<x>cuda)(?P=x)", "named backreference"),
        (r"(?>cuda)", "atomic group"),
        (r"cuda\Z", r"\Z"),
    ],
)
def test_syntax_re2_lacks_is_refused_when_the_patch_is_read(cli, project, upstream, regex, syntax):
    pin = upstream.head()
    path = project.root / "patches/lib/fix.patch"
    setup(project, upstream, {"fix": guarded_patch(upstream, pin, f"Guard: absent /{regex}/ in src/mod.py")})
    before = path.read_bytes()
    lint = cli("lint", "--json")
    assert lint.code == 1
    (problem,) = lint.json["problems"]
    assert syntax in problem["message"] and "guards do not support" in problem["message"], problem
    bad = cli("status", "--target", "t", "--source", f"lib={upstream.path}")
    assert bad.code == 2 and "Traceback" not in bad.err
    assert "error:" in bad.err and syntax in bad.err and "hint: write the expression in RE2 syntax" in bad.err
    assert path.read_bytes() == before


def test_re2_syntax_python_lacks_is_taken(cli, project, upstream):
    """The expression is RE2's: ``\\pL`` and ``[[:alpha:]]`` are classes there (Python's ``re`` refuses them)."""
    pin = upstream.head()
    setup(
        project,
        upstream,
        {
            "fix": guarded_patch(
                upstream,
                pin,
                r"Guard: present /^\pL+[[:alpha:]]\s\d+$/ in "
                "src/mod.py",
            )
        },
    )
    result = cli("status", "--target", "t", "--json", "--source", f"lib={upstream.path}")
    assert result.code == 0, result.out + result.err
    assert result.json["upstreams"][0]["patches"][0]["guards"][0]["holds"] is True


# -- bounded output -------------------------------------------------------------------------------------------
MANY = 150_000


@pytest.fixture
def flooded(project, upstream):
    """A tree where ``absent /y{100}/ in *`` breaks at 150,000 lines of one file and at one line of 2 MB."""
    pin = upstream.commit(
        {"data/many.txt": ("y" * 120 + "\n") * MANY, "data/long.txt": "y" * (2 << 20) + "\n"}, "much data"
    )
    setup(project, upstream, {"fix": guarded_patch(upstream, pin, "Guard: absent /y{100}/ in *")})
    return upstream


@pytest.mark.parametrize("fmt", ["text", "json", "markdown", "github", "junit"])
def test_many_offenses_are_capped_in_every_format_with_the_total(cli, flooded, fmt):
    result = cli("status", "--target", "t", "--source", f"lib={flooded.path}", "--format", fmt)
    assert result.code == 1, result.err
    assert len(result.out) < 20_000, f"{len(result.out)} characters of {fmt}"
    total = MANY + 1
    more = f"… and {total - guards.MAX_OFFENSES:,} more ({total:,} in all)"
    if fmt == "json":
        (guard,) = result.json["upstreams"][0]["patches"][0]["guards"]
        assert guard["offense_count"] == total and len(guard["offenses"]) == guards.MAX_OFFENSES
        assert guard["offenses"][0] == "data/long.txt:1: " + "y" * (guards.MAX_TEXT - 1) + "…"
        assert guard["offenses"][1] == "data/many.txt:1: " + "y" * 120
        return
    shown = ET.fromstring(result.out).find(".//failure").text if fmt == "junit" else result.out
    assert more in shown
    assert "data/many.txt:9: " in shown and "data/many.txt:10: " not in shown


def test_bisect_and_matrix_state_the_total_too(cli, project, upstream, tmp_path):
    pin = upstream.head()
    guarded = {"fix": guarded_patch(upstream, pin, "Guard: absent /y{100}/ in *")}
    setup(project, upstream, guarded, {"track": "branch"})  # the tip, where the guard breaks, decides the matrix
    upstream.commit({"data/many.txt": ("y" * 120 + "\n") * MANY}, "much data")
    bisect = cli("bisect", "--target", "t", "--upstream", "lib", "--to", "HEAD", "--source", f"lib={upstream.path}")
    assert bisect.code == 1 and len(bisect.out) < 20_000
    more = f"… and {MANY - guards.MAX_OFFENSES:,} more ({MANY:,} in all)"
    assert more in bisect.out, bisect.out[-3000:]
    matrix = cli("matrix", "--target", "t", "--source", f"lib={upstream.path}", "--json")
    assert matrix.code == 1 and len(matrix.out) < 60_000
    (fix,) = matrix.json["upstreams"][0]["patches"]
    tip = fix["cells"][-1]["guards"][0]
    assert tip["offense_count"] == MANY and len(tip["offenses"]) == guards.MAX_OFFENSES
    assert more in fix["changed"]["guards_broken"][0]
    page = tmp_path / "matrix.html"
    cli("matrix", "--target", "t", "--source", f"lib={upstream.path}", "--html", str(page))
    html = page.read_text(encoding="utf-8")
    assert len(html) < 200_000 and f"({MANY:,} in all)" in html


def test_an_expression_too_costly_for_its_text_stops_at_the_time_bound_and_says_where(
    cli, project, upstream, monkeypatch
):
    """RE2 is linear in the text, but ``a[ab]{999}!`` on lines of a and b defeats its DFA: seconds per MiB."""
    monkeypatch.setattr(guards, "MAX_SECONDS", 0.01, raising=False)  # the real bound is 10 s
    rng = random.Random(0)
    lines = "".join("".join(rng.choice("ab") for _ in range(200)) + "\n" for _ in range(5000))
    pin = upstream.commit({"data/ab.txt": lines}, "a and b")
    setup(project, upstream, {"fix": guarded_patch(upstream, pin, "Guard: absent /a[ab]{999}!/ in data/ab.txt")})
    result = cli("status", "--target", "t", "--json", "--source", f"lib={upstream.path}")
    assert result.code == 1
    (guard,) = result.json["upstreams"][0]["patches"][0]["guards"]
    assert guard["holds"] is False and guard["error"].startswith("stopped after 0.01 s at data/ab.txt:"), guard
    assert "make its expression simpler" in guard["error"]


def test_bump_and_refresh_state_the_total_too(cli, project, upstream):
    pin = upstream.head()
    guarded = {"fix": guarded_patch(upstream, pin, "Guard: absent /y{100}/ in *")}
    setup(project, upstream, guarded, {"track": "branch"})  # the tip, where the guard breaks, decides the matrix
    upstream.commit({"data/many.txt": ("y" * 120 + "\n") * MANY}, "much data")
    args = ("--target", "t", "--upstream", "lib", "--to", "main", "--source", f"lib={upstream.path}")
    bumped = cli("bump", *args)
    refreshed = cli("refresh", *args)
    as_json = cli("refresh", *args, "--json")
    assert (bumped.code, refreshed.code, as_json.code) == (1, 1, 1)
    assert max(len(bumped.out), len(refreshed.out), len(as_json.out)) < 20_000
    more = f"… and {MANY - guards.MAX_OFFENSES:,} more ({MANY:,} in all)"
    assert more in bumped.out and more in refreshed.out, bumped.out + refreshed.out
    assert as_json.json["patches"][0]["guards"][0]["offense_count"] == MANY


# -- bounded reading ------------------------------------------------------------------------------------------
def test_a_guard_that_names_too_much_to_read_breaks_and_says_so(cli, project, upstream, monkeypatch):
    # the real bound, 256 MiB, would take a large tree to reach (raising=False: the old code has no bound to set)
    monkeypatch.setattr(guards, "MAX_BYTES", 4096, raising=False)
    pin = upstream.commit({"data/a.txt": "x\n" * 1500, "data/b.txt": "x\n" * 1500}, "two files of 3 KB")
    setup(project, upstream, {"fix": guarded_patch(upstream, pin, "Guard: absent /never/ in data/*")})
    result = cli("status", "--target", "t", "--json", "--source", f"lib={upstream.path}")
    assert result.code == 1
    (guard,) = result.json["upstreams"][0]["patches"][0]["guards"]
    assert guard["holds"] is False
    assert "more than 0 MiB" not in guard["error"] and "stopped at data/b.txt" in guard["error"]
    assert "name fewer files" in guard["error"]


@pytest.mark.parametrize("regex", ["[[:foo:]]", "[a--b]", "(?<=x)[[a]", "[[:alpha:]][[:bogus:]]"])
def test_a_refused_guard_prints_only_its_error_and_hint_never_a_python_warning(project, upstream, regex):
    """Python's ``re`` (asked only to tell "does not compile" from "not RE2") warns "Possible nested set" on
    ``[[``: the user sees the error and its hint, nothing else."""
    pin = upstream.head()
    setup(project, upstream, {"fix": guarded_patch(upstream, pin, f"Guard: absent /{regex}/ in src/mod.py")})
    done = patchmgr(project, "status", "--target", "t", "--source", f"lib={upstream.path}")
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2 and done.stdout == "", done.stdout + done.stderr
    assert lines and all(line.startswith(("error: ", "hint: ", "  ")) for line in lines), done.stderr
    assert "Warning" not in done.stderr and "Traceback" not in done.stderr, done.stderr
