"""Guards: facts a patch keeps true in the patched tree, on real git upstreams and real patch files."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from support.gitrepos import git
from support.scenes import FIELDS, lines_with, setup

from patchmgr.model.errors import PatchFormatError
from patchmgr.model.guards import GuardSyntaxError, evaluate, parse_guard
from patchmgr.model.patchfile import parse_patch

GUARD = r"Guard: absent /cuda\.call\(/ in src/mod.py"


def fix(upstream, pin, guards: str = GUARD):
    """A patch that replaces line 20 (``cuda.call()`` at the pin) with ``safe.call()``, with ``guards``."""
    return upstream.make_patch(
        pin,
        {"src/mod.py": lines_with({20: "safe.call()"}, upstream.read("src/mod.py", pin))},
        "Call the safe helper",
        fields=f"{FIELDS}\n{guards}",
    )


@pytest.fixture
def pin(upstream):
    """The pin: src/mod.py with a cuda.call() at line 20, which the patch replaces."""
    return upstream.commit({"src/mod.py": lines_with({20: "cuda.call()"})}, "use cuda at 20")


def status(cli, upstream, *extra):
    return cli("status", "--target", "t", "--json", "--source", f"lib={upstream.path}", *extra)


def patches_of(result):
    return result.json["upstreams"][0]["patches"]


# -- syntax ---------------------------------------------------------------------------------------------------
@pytest.mark.fast
@pytest.mark.parametrize(
    "value, problem",
    [
        ("absent cuda in src/mod.py", "is not of the form"),
        ("forbidden /cuda/ in src/mod.py", "give absent or present"),
        ("absent /cuda(/ in src/mod.py", "does not compile"),
        ("absent // in src/mod.py", "empty regular expression"),
        ("absent /cuda/ in /etc/passwd", "relative to the upstream's root"),
        ("absent /cuda/ in src/../x.py", "without '..'"),
        ("absent /cuda/ src/mod.py", "is not of the form"),
    ],
)
def test_malformed_guards_say_what_is_wrong(value, problem):
    with pytest.raises(GuardSyntaxError, match=re.escape(problem)):
        parse_guard(value)


@pytest.mark.fast
def test_the_expression_ends_at_the_last_slash_before_in():
    guard = parse_guard(r"present /a/b in c/ in src/x.py")
    assert (guard.kind, guard.pattern.pattern, guard.where, guard.is_glob) == ("present", "a/b in c", "src/x.py", False)
    assert parse_guard("absent /x/ in src/*.py").is_glob


@pytest.mark.fast
def test_evaluate_names_each_offending_line_and_a_missing_match():
    files = {"a.py": b"ok\ncuda.call()\n  cuda.call(x)\n", "b.py": b"nothing\n"}
    absent = evaluate(parse_guard(r"absent /cuda\.call/ in *.py"), files.get, list(files))
    assert (absent.holds, absent.offenses) == (False, ("a.py:2: cuda.call()", "a.py:3: cuda.call(x)"))
    present = evaluate(parse_guard("present /helper/ in b.py"), files.get, list(files))
    assert not present.holds and present.offenses == ("b.py: no line matches /helper/",)
    assert evaluate(parse_guard("present /noth/ in b.py"), files.get, None).holds
    gone = evaluate(parse_guard("absent /x/ in c.py"), files.get, list(files))
    assert not gone.holds and gone.error == "c.py is not a file of the patched tree"
    # a glob without a listing looks only at the files the patch touches
    unlisted = evaluate(parse_guard(r"absent /cuda/ in *.py"), files.get, None, ["b.py"])
    assert unlisted.holds
    none = evaluate(parse_guard(r"absent /cuda/ in src/*.py"), files.get, None, ["b.py"])
    assert not none.holds and "this source cannot list" in none.error


def test_a_malformed_guard_header_is_a_format_error_naming_its_line(upstream, pin, tmp_path):
    data = fix(upstream, pin, guards="Guard: absent cuda in src/mod.py")
    line = data.decode().splitlines().index("Guard: absent cuda in src/mod.py") + 1
    with pytest.raises(PatchFormatError) as caught:
        parse_patch(data, tmp_path / "fix.patch")
    assert caught.value.message.startswith(f"{tmp_path / 'fix.patch'}:{line}: Guard 'absent cuda in src/mod.py'")
    assert "absent|present /REGEX/ in PATH-OR-GLOB" in caught.value.hint


def test_lint_and_status_flag_a_malformed_guard_and_change_nothing(cli, project, upstream, pin):
    path = project.root / "patches/lib/fix.patch"
    setup(project, upstream, {"fix": fix(upstream, pin, guards="Guard: absent /cuda(/ in src/mod.py")})
    before = path.read_bytes()
    result = cli("lint", "--json")
    assert result.code == 1
    (problem,) = result.json["problems"]
    assert problem["path"] == str(path) and "does not compile" in problem["message"]
    assert problem["line"] > 1 and problem["message"].startswith("Guard ")
    assert re.search(r"fix\.patch:\d+: Guard ", cli("lint").out)  # path:line, as editors read it
    bad = cli("status", "--target", "t", "--source", f"lib={upstream.path}")
    assert bad.code == 2 and "Traceback" not in bad.err and "does not compile" in bad.err
    assert path.read_bytes() == before


# -- status ---------------------------------------------------------------------------------------------------
def test_guard_holds_at_the_pin_and_breaks_when_upstream_adds_the_line(cli, project, upstream, pin):
    setup(project, upstream, {"fix": fix(upstream, pin)})
    git(upstream.path, "tag", "A")
    result = status(cli, upstream)
    assert result.code == 0, result.out
    (patch,) = patches_of(result)
    assert patch["ok"] is True and patch["guards"] == [
        {"guard": GUARD.removeprefix("Guard: "), "holds": True, "offenses": [], "error": None, "offense_count": 0}
    ]
    upstream.commit(
        {"src/mod.py": lines_with({20: "cuda.call()", 35: "    cuda.call(again)"})}, "call cuda at 35 too (#42)"
    )
    git(upstream.path, "tag", "B")
    at_a = status(cli, upstream, "--against", "lib=A")
    assert at_a.code == 0 and patches_of(at_a)[0]["ok"] is True
    at_b = status(cli, upstream, "--against", "lib=B")
    assert at_b.code == 1 and at_b.json["ok"] is False
    (patch,) = patches_of(at_b)
    assert (patch["state"], patch["ok"]) == ("clean", False)  # applies exactly, yet broken
    (guard,) = patch["guards"]
    assert guard["holds"] is False and guard["offenses"] == ["src/mod.py:35: cuda.call(again)"]
    people = cli("status", "--target", "t", "--source", f"lib={upstream.path}", "--against", "lib=B")
    assert people.code == 1
    assert "clean, guard broken" in people.out and "src/mod.py:35: cuda.call(again)" in people.out


def test_a_later_patch_that_breaks_an_earlier_guard_counts(cli, project, upstream, pin):
    first = fix(upstream, pin)
    setup(project, upstream, {"fix": first, "later": _only_hunk_at(upstream, pin, first)})
    (one, two) = patches_of(status(cli, upstream))
    assert one["state"] == "clean" and two["state"] == "clean"
    assert one["guards"][0]["offenses"] == ["src/mod.py:30: cuda.call(late)"]


def _only_hunk_at(upstream, pin, first) -> bytes:
    """A patch made on top of ``first`` applied: it adds a cuda.call() at line 30."""
    branch = git(upstream.path, "rev-parse", "--abbrev-ref", "HEAD")
    git(upstream.path, "checkout", "-q", "--detach", pin)
    try:
        git(upstream.path, "am", "-q", input=first)
        applied = git(upstream.path, "rev-parse", "HEAD")
    finally:
        git(upstream.path, "checkout", "-q", branch)
    text = upstream.read("src/mod.py", applied)
    return upstream.make_patch(
        applied, {"src/mod.py": lines_with({30: "cuda.call(late)"}, text)}, "Later", fields=FIELDS
    )


def test_glob_guards_and_present_guards(cli, project, upstream, pin):
    upstream.commit({"src/other.py": "x = 1\ncuda.call(other)\n", "src/reg.py": "NAMES = ['A']\n"}, "more files")
    guards = "\n".join(
        [
            r"Guard: absent /cuda\.call\(/ in src/*.py",
            r"Guard: present /'A'/ in src/reg.py",
            r"Guard: present /'B'/ in src/reg.py",
            r"Guard: absent /x/ in src/gone.py",
        ]
    )
    setup(project, upstream, {"fix": fix(upstream, upstream.head(), guards=guards)})
    result = status(cli, upstream)
    assert result.code == 1
    (patch,) = patches_of(result)
    glob, present_a, present_b, gone = patch["guards"]
    assert glob["offenses"] == ["src/other.py:2: cuda.call(other)"]
    assert present_a["holds"] is True
    assert present_b["holds"] is False and present_b["offenses"] == ["src/reg.py: no line matches /'B'/"]
    assert gone["holds"] is False and gone["error"] == "src/gone.py is not a file of the patched tree"


def test_conflicting_patch_has_no_guards_evaluated(cli, project, upstream, pin):
    setup(project, upstream, {"fix": fix(upstream, pin)})
    upstream.commit({"src/mod.py": lines_with({19: "x", 20: "y", 21: "z"})}, "rewrite")
    (patch,) = patches_of(status(cli, upstream, "--against", "lib=main"))
    assert patch["state"] == "conflict" and patch["guards"] == [] and patch["ok"] is False


# -- bisect ---------------------------------------------------------------------------------------------------
def test_bisect_names_the_commit_that_breaks_the_guard(cli, project, upstream, pin):
    setup(project, upstream, {"fix": fix(upstream, pin)})
    upstream.commit({"README": "docs\n"}, "docs")
    culprit = upstream.commit(
        {"src/mod.py": lines_with({20: "cuda.call()", 35: "cuda.call(again)"})}, "call cuda at 35 (#42)"
    )
    upstream.commit({"src/mod.py": lines_with({20: "cuda.call()", 35: "cuda.call(again)", 2: "two"})}, "later")
    result = cli(
        "bisect", "--target", "t", "--upstream", "lib", "--to", "main", "--json", "--source", f"lib={upstream.path}"
    )
    assert result.code == 1, result.out
    (patch,) = result.json["patches"]
    assert (patch["first_commit"], patch["pr"], patch["state"]) == (culprit, 42, "clean")
    assert patch["guards_broken"] == [r"absent /cuda\.call\(/ in src/mod.py: src/mod.py:35: cuda.call(again)"]
    assert patch["guards_broken_at_to"] and "breaks its guard" in patch["note"]
    people = cli("bisect", "--target", "t", "--upstream", "lib", "--to", "main", "--source", f"lib={upstream.path}")
    assert "clean, guard broken" in people.out and culprit[:12] in people.out


# -- apply, refresh, bump, export ------------------------------------------------------------------------------
def test_apply_refuses_a_series_with_a_broken_guard(cli, project, upstream, tmp_path):
    pin = upstream.commit({"src/mod.py": lines_with({20: "cuda.call()", 35: "cuda.call(again)"})}, "two calls")
    setup(project, upstream, {"fix": fix(upstream, pin)})
    into = tmp_path / "build"
    result = cli("apply", "--target", "t", "--into", str(into), "--source", f"lib={upstream.path}")
    assert result.code == 1
    assert "guard is broken" in result.out and "src/mod.py:35: cuda.call(again)" in result.out
    assert not into.exists()


def test_refresh_reports_a_broken_guard_and_bump_refuses(cli, project, upstream, pin):
    setup(project, upstream, {"fix": fix(upstream, pin)})
    manifest = project.root / "manifests/t.toml"
    upstream.commit({"src/mod.py": "top\n" + lines_with({20: "cuda.call()", 35: "cuda.call(again)"})}, "moved")
    before = manifest.read_bytes()
    bumped = cli(
        "bump", "--target", "t", "--upstream", "lib", "--to", "main", "--json", "--source", f"lib={upstream.path}"
    )
    assert bumped.code == 1 and bumped.json["action"] == "refused" and bumped.json["guards_broken"] == ["fix"]
    assert manifest.read_bytes() == before
    refreshed = cli(
        "refresh", "--target", "t", "--upstream", "lib", "--to", "main", "--json", "--source", f"lib={upstream.path}"
    )
    assert refreshed.code == 1 and refreshed.json["ok"] is False and refreshed.json["guards_broken"] == ["fix"]
    (patch,) = refreshed.json["patches"]
    assert patch["action"] == "refreshed" and patch["guards"][0]["offenses"] == ["src/mod.py:36: cuda.call(again)"]
    people = cli("refresh", "--target", "t", "--upstream", "lib", "--to", "main", "--source", f"lib={upstream.path}")
    assert "guard broken at main" in people.out and "src/mod.py:36: cuda.call(again)" in people.out


def test_export_reports_a_guard_the_edited_patch_breaks(cli, project, upstream, pin, tmp_path):
    setup(project, upstream, {"fix": fix(upstream, pin)})
    into = tmp_path / "edit"
    assert (
        cli("edit", "--target", "t", "--upstream", "lib", "--into", str(into), "--source", f"lib={upstream.path}").code
        == 0
    )
    text = (into / "src/mod.py").read_text().replace("line 30\n", "cuda.call(edited)\n")
    (into / "src/mod.py").write_text(text)
    git(into, "commit", "-q", "--amend", "--no-edit", "-a")
    result = cli("export", "--target", "t", "--upstream", "lib", "--from", str(into), "--json")
    assert result.code == 1 and result.json["ok"] is False
    (guard,) = result.json["guards"]["fix"]
    assert guard["offenses"] == ["src/mod.py:30: cuda.call(edited)"]
    assert b"cuda.call(edited)" in (project.root / "patches/lib/fix.patch").read_bytes()  # written all the same


@pytest.mark.fast
def test_guards_of_the_shipped_patches_parse():
    root = Path(__file__).resolve().parent.parent
    found = [
        parse_guard(value)
        for path in sorted(root.glob("patches/*/*.patch"))
        for value in parse_patch(path.read_bytes(), path).field_values("Guard")
    ]
    assert any(g.kind == "absent" and "nvtx" in g.pattern.pattern for g in found)
