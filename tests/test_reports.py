"""`patchmgr status --format junit|markdown|github`: the CI reports, read back with real parsers.

One real upstream git repository and one real patch series: at ``main`` one patch is clean, one
moved (offset), one conflicts (upstream rewrote its lines, into text full of ``|``, ``%``, ``<&>``),
one applies but breaks its ``Guard:`` (a regex with backslashes, which every format must show once, as
written); a second upstream cannot be fetched at all. JUnit XML is validated against the published
JUnit schema that Jenkins' xUnit plugin reads reports with (support/junit-10.xsd, MIT, its source in
support/junit-10.xsd.SOURCE) by xmlschema, and read with ElementTree; the Markdown rendered to HTML by
markdown-it-py (GitHub-flavoured tables) and read back as a browser shows it; the workflow commands with
the Actions runner's own unescaping (ActionCommand.cs: its data and property mappings, in its order).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from html import escape as html_escape
from pathlib import Path

import pytest
from markdown_it import MarkdownIt
from support.gitrepos import BASE_TEXT
from support.junit_schema import JUNIT_XSD
from support.needs import require

from patchmgr.render.reports.github import escape_data, escape_property
from patchmgr.render.reports.junit import xml_text
from patchmgr.render.reports.markdown import md_escape

REPO_ROOT = Path(__file__).resolve().parents[1]
NASTY = "a | b %0A 100% <&> *x* _y_ `z` [l](u) $m$ ~s~ \\ \\| :: x,y:z"
GUARDED = "guarded 8 | <&> 100%"
GUARD = r"absent /guarded\s8 \| <&>/ in src/mod.py"  # as written in the patch: one backslash each
GUARD_SAID = f"guard '{GUARD}'"


def lines_with(changes: dict[int, str], insert_after: int = 0, inserted: int = 0) -> str:
    lines = BASE_TEXT.splitlines(keepends=True)
    for number, value in changes.items():
        lines[number - 1] = value + "\n"
    return "".join(lines[:insert_after] + [f"new {i}\n" for i in range(inserted)] + lines[insert_after:])


@pytest.fixture
def scene(tmp_path, project, upstream):
    """Target ``t``: upstream ``lib`` (clean, moved, broken, guarded at ``main``) and ``gone`` (unreachable)."""
    pin = upstream.head()
    patches = {
        "clean": upstream.make_patch(pin, {"src/mod.py": lines_with({3: "fixed 3"})}, "Clean"),
        "moved": upstream.make_patch(pin, {"src/mod.py": lines_with({35: "fixed 35"})}, "Moved"),
        # two files: the hunk that fails (src/mod.py) is the patch's second hunk
        "broken": upstream.make_patch(
            pin, {"README": "upstream, patched\n", "src/mod.py": lines_with({15: "fixed 15"})}, "Broken"
        ),
        "guarded": upstream.make_patch(
            pin,
            {"src/mod.py": lines_with({8: GUARDED})},
            "Guarded",
            fields=f"Origin: vendor\nUpstream-Status: Pending\nGuard: {GUARD}",
        ),
    }
    for patch_id, data in patches.items():
        project.add_patch("lib", patch_id, data)
    project.add_patch("gone", "far", patches["clean"])
    project.manifest(
        "t",
        {
            "lib": {"git": "https://example.invalid/lib.git", "commit": pin, "patches": list(patches)},
            "gone": {"git": "https://example.invalid/gone.git", "commit": pin, "patches": ["far"]},
        },
    )
    # upstream: 3 lines inserted after line 25 (moves "moved"), lines 15-16 rewritten (breaks "broken")
    upstream.commit(
        {"src/mod.py": lines_with({15: NASTY, 16: "<&> second | line"}, insert_after=25, inserted=3)},
        "upstream rewrites 15-16 and grows",
    )
    sources = ["--source", f"lib={upstream.path}", "--source", f"gone={tmp_path / 'nowhere'}"]
    return project, [*sources, "--against", "lib=main"]


def run(cli, scene, *args: str):
    _project, extra = scene
    return cli("status", "--target", "t", *extra, *args)


# -- JUnit --------------------------------------------------------------------------
def test_junit_is_valid_and_carries_each_patch(cli, scene):
    result = run(cli, scene, "--format", "junit")
    assert result.code == 1, result.err
    JUNIT_XSD.validate(result.out)  # raises on any departure from the schema
    root = ET.fromstring(result.out.encode())
    assert root.tag == "testsuites" and (root.get("tests"), root.get("failures"), root.get("errors")) == ("5", "2", "1")
    suites = {s.get("name"): s for s in root.iter("testsuite")}
    assert list(suites) == ["t.lib", "t.gone"]
    lib = suites["t.lib"]
    assert (lib.get("tests"), lib.get("failures"), lib.get("errors")) == ("4", "2", "0")
    cases = {c.get("name"): c for c in lib.iter("testcase")}
    assert list(cases) == ["clean", "moved", "broken", "guarded"]
    assert {c.get("classname") for c in cases.values()} == {"t.lib"}
    assert list(cases["clean"]) == []
    (out,) = list(cases["moved"])
    assert out.tag == "system-out" and "src/mod.py: hunk #1 +3 lines" in out.text
    (failure,) = list(cases["broken"])
    assert failure.tag == "failure" and failure.get("type") == "conflict"
    assert failure.get("message").startswith("conflict: src/mod.py hunk #1")
    assert f"  {NASTY}\n  <&> second | line" in failure.text  # the upstream's lines, exactly, after the parser
    (guard,) = list(cases["guarded"])
    assert guard.tag == "failure" and guard.get("type") == "guard"
    assert f"{GUARD_SAID} does not hold" in guard.get("message")  # backslashes once, as written
    assert f"{GUARD_SAID} breaks at:" in guard.text and GUARD.replace("\\", "\\\\") not in guard.text
    assert f"src/mod.py:8: {GUARDED}" in guard.text
    gone = suites["t.gone"]
    assert (gone.get("tests"), gone.get("failures"), gone.get("errors")) == ("1", "0", "1")
    (case,) = gone.iter("testcase")
    (error,) = list(case)
    assert (case.get("classname"), case.get("name"), error.tag, error.get("type")) == (
        "t.gone",
        "far",
        "error",
        "unavailable",
    )
    assert error.get("message").startswith("upstream gone could not be checked at ")
    props = {p.get("name"): p.get("value") for p in lib.iter("property")}
    assert props["ref"] == "main" and len(props["commit"]) == 40


def test_junit_at_the_pin_fails_only_the_broken_guard(cli, scene, upstream):
    result = cli(
        "status", "--target", "t", "--source", f"lib={upstream.path}", "--upstream", "lib", "--format", "junit"
    )  # at the pin, without the unreachable upstream: the guard still breaks
    root = ET.fromstring(result.out.encode())
    JUNIT_XSD.validate(result.out)
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("4", "1", "0")
    assert result.code == 1  # the broken guard is trouble, as in text and --json
    failing = [c.get("name") for c in root.iter("testcase") if c.find("failure") is not None]
    assert failing == ["guarded"]


def test_junit_upstream_carried_patch_is_a_failure_with_the_evidence(cli, project, upstream):
    pin = upstream.head()
    project.add_patch("lib", "fix", upstream.make_patch(pin, {"src/mod.py": lines_with({20: "fixed 20"})}, "Fix"))
    project.manifest("t", {"lib": {"git": "https://example.invalid/lib.git", "commit": pin, "patches": ["fix"]}})
    carrier = upstream.commit({"src/mod.py": lines_with({20: "fixed 20"})}, "upstream takes the fix")
    result = cli(
        "status", "--target", "t", "--source", f"lib={upstream.path}", "--against", "lib=main", "--format", "junit"
    )
    assert result.code == 1
    JUNIT_XSD.validate(result.out)
    (failure,) = ET.fromstring(result.out.encode()).iter("failure")
    assert failure.get("type") == "upstream"
    assert failure.get("message").startswith(f"upstream (carried by {carrier[:12]}): ")  # the state, as status says it
    # one carrier detail: the evidence names the commit (and its subject), no second line repeats it
    assert failure.text.count(carrier) == 1 and f"upstream commit {carrier} carries this change" in failure.text
    assert "upstream takes the fix" in failure.text


@pytest.mark.fast
def test_xml_text_drops_what_xml_cannot_carry():
    assert xml_text("a\x00b\x1bc\td\n") == "a\\x00b\\x1bc\td\n"
    doc = ET.fromstring(f"<r a={chr(34)}{xml_text(chr(7))}{chr(34)}/>")
    assert doc.get("a") == "\\x07"


# -- Markdown -----------------------------------------------------------------------
def markdown_it() -> MarkdownIt:
    """GitHub-flavoured Markdown as markdown-it-py reads it: CommonMark with tables and strikethrough."""
    return MarkdownIt("commonmark").enable(["table", "strikethrough"])


def table_rows(markdown: str) -> list[list[str]]:
    """Every row of every table as its cells' text, the way GitHub's Markdown reads it (a <br> is a new line)."""
    tokens = markdown_it().parse(markdown)
    found, current = [], None
    for token in tokens:
        if token.type == "tr_open":
            current = []
        elif token.type == "tr_close":
            found.append(current)
            current = None
        elif token.type == "inline" and current is not None:
            text = ""
            for child in token.children or []:
                if child.type == "text":
                    text += child.content
                elif child.type == "html_inline" and child.content == "<br>":
                    text += "\n"
                else:  # any emphasis, code, link, HTML, strikethrough: the text was read as syntax
                    raise AssertionError(f"markup {child.type} {child.content!r} in a cell")
            current.append(text)
    return found


def test_markdown_table_reads_back_exactly(cli, scene):
    result = run(cli, scene, "--format", "markdown")
    assert result.code == 1, result.err
    assert result.out.isascii()  # words, no emoji
    assert "**3 of 5 patches need attention** (1 pass, 1 warn, 2 fail, 1 error)" in result.out
    header, *body = table_rows(result.out)
    assert header == ["upstream", "patch", "state", "verdict", "detail"]
    assert all(len(row) == 5 for row in body)
    by_patch = {row[1]: row for row in body}
    assert [row[1] for row in body] == ["clean", "moved", "broken", "guarded", "far"]
    assert by_patch["clean"][2:] == ["clean", "pass", ""]
    assert by_patch["moved"][2:] == ["offset", "warn", "src/mod.py: hunk #1 +3 lines"]
    upstream, patch, state, verdict, detail = by_patch["broken"]
    assert (upstream, state, verdict) == ("lib", "conflict", "fail")
    assert detail.startswith("src/mod.py hunk #1")
    assert re.search(f"\nupstream at line \\d+:\n(  line .*\n)*  {re.escape(NASTY)}\n  <&> second \\| line\n", detail)
    assert by_patch["guarded"][2:4] == ["clean", "fail"]
    assert f"src/mod.py:8: {GUARDED}" in by_patch["guarded"][4]
    assert f"{GUARD_SAID} breaks at:" in by_patch["guarded"][4]  # one backslash each, as written
    html = markdown_it().render(result.out)  # what the reader sees: the backslashes once, no markup
    assert html_escape(f"{GUARD_SAID} does not hold", quote=False) in html
    assert "\\\\" not in html
    assert by_patch["far"][:4] == ["gone", "far", "unavailable", "error"]
    assert "- gone: could not be checked at " in result.out


@pytest.mark.fast
def test_md_escape_round_trips_through_a_table():
    nasty = NASTY + "\nsecond line\r\nthird | <b>bold</b> & &amp; #1 !"
    rows = table_rows(f"| h |\n| --- |\n| {md_escape(nasty)} |\n")
    assert rows == [["h"], [nasty.replace("\r\n", "\n")]]


# -- GitHub workflow commands --------------------------------------------------------
# The Actions runner's unescaping (actions/runner, src/Runner.Common/ActionCommand.cs, UnescapeData and
# UnescapeProperty): each mapping's replacement back to its token, in the order the runner lists them.
DATA_MAPPINGS = (("\r", "%0D"), ("\n", "%0A"), ("%", "%25"))
PROPERTY_MAPPINGS = (("\r", "%0D"), ("\n", "%0A"), (":", "%3A"), (",", "%2C"), ("%", "%25"))


def unescape(text: str, mappings: tuple[tuple[str, str], ...]) -> str:
    for token, replacement in mappings:
        text = text.replace(replacement, token)
    return text


def unescape_data(text: str) -> str:
    return unescape(text, DATA_MAPPINGS)


def unescape_property(text: str) -> str:
    return unescape(text, PROPERTY_MAPPINGS)


COMMAND = re.compile(r"^::(?P<name>[a-z-]+)(?: (?P<props>[^:]*))?::(?P<message>.*)$")


def commands(output: str) -> list[tuple[str, dict[str, str], str]]:
    """The workflow commands in ``output``, read as the Actions runner reads them (ActionCommand.TryParseV2):
    ``::name k=v,k=v::message``; properties split at ``,`` and at the first ``=``; then unescaped."""
    found = []
    for line in output.splitlines():
        if not line.startswith("::"):
            continue
        match = COMMAND.match(line)
        assert match, line
        props = {}
        for pair in filter(None, (match.group("props") or "").split(",")):
            key, _, value = pair.partition("=")
            props[key] = unescape_property(value)
        found.append((match.group("name"), props, unescape_data(match.group("message"))))
    return found


def hunk_line_in(path: Path, number: int = 1) -> int:
    """The 1-based line of the ``number``-th hunk header in a patch file, counted here independently."""
    headers = [i for i, line in enumerate(path.read_text().split("\n"), 1) if line.startswith("@@ -")]
    return headers[number - 1]


def test_github_annotations_point_at_the_failing_hunk(cli, scene, monkeypatch):
    project, _extra = scene
    monkeypatch.chdir(project.root)  # CI runs in the checkout: annotations name files from there
    result = run(cli, scene, "--format", "github")
    assert result.code == 1, result.err
    found = commands(result.out)
    by_title = {props.get("title"): (name, props, message) for name, props, message in found}
    name, props, message = next(v for t, v in by_title.items() if t.startswith("patchmgr: lib/broken conflict"))
    assert name == "error" and props["file"] == "patches/lib/broken.patch"
    assert int(props["line"]) == hunk_line_in(project.root / "patches/lib/broken.patch", 2)
    assert f"\n  {NASTY}\n  <&> second | line\n" in message  # %, |, newlines survive
    name, props, message = next(v for t, v in by_title.items() if t.startswith("patchmgr: lib/moved offset"))
    assert name == "warning" and props["file"] == "patches/lib/moved.patch"
    assert int(props["line"]) == hunk_line_in(project.root / "patches/lib/moved.patch")
    assert message == "offset: src/mod.py: hunk #1 +3 lines"
    name, props, message = next(v for t, v in by_title.items() if t.startswith("patchmgr: lib/guarded guard"))
    assert name == "error" and props["line"] == "1" and f"src/mod.py:8: {GUARDED}" in message
    assert message.startswith(f"clean: {GUARD_SAID} does not hold\n{GUARD_SAID} breaks at:")  # backslashes once
    assert GUARD.replace("\\", "\\\\") not in result.out
    name, props, message = by_title["patchmgr: t.gone could not be checked"]
    assert name == "error" and props["file"] == "manifests/t.toml"
    assert not any(t and "lib/clean" in t for t in by_title)  # a clean patch is no annotation
    assert found[-1] == ("notice", {"title": "patchmgr status"}, "target t: 1 pass, 1 warn, 2 fail, 1 error")
    plain = [line for line in result.out.splitlines() if not line.startswith("::")]
    assert plain[0] == "pass: t.lib clean: clean" and len(plain) == 5


@pytest.mark.fast
def test_github_escaping_follows_the_runner():
    nasty = "50% a:b, c\r\nnext %0A"
    assert escape_data(nasty) == "50%25 a:b, c%0D%0Anext %250A"
    assert escape_property(nasty) == "50%25 a%3Ab%2C c%0D%0Anext %250A"
    assert unescape_property(escape_property(nasty)) == nasty and unescape_data(escape_data(nasty)) == nasty
    # nothing more: what the runner does not unescape is passed as it is (a backslash stays one backslash)
    plain = r"torch\.cuda\.nvtx; a]b [c] = d | e\\f 'g' \"h\" ::"
    assert escape_data(plain) == plain and unescape_data(escape_data(plain)) == plain
    assert escape_property(plain) == plain.replace(":", "%3A")


# -- the options ----------------------------------------------------------------------
def test_format_json_is_json_and_the_text_default_is_unchanged(cli, scene):
    as_json = run(cli, scene, "--json")
    assert run(cli, scene, "--format", "json").out == as_json.out and as_json.json["command"] == "status"
    assert run(cli, scene, "--json", "--format", "json").code == as_json.code == 1
    text = run(cli, scene, "--format", "text")
    assert text.code == 1 and "target t" in text.out and text.out == run(cli, scene).out


@pytest.mark.parametrize(
    "args, message",
    [
        (["--format", "xml"], "error: --format 'xml' is not one of text, json, junit, markdown, github"),
        (["--json", "--format", "junit"], "error: --json and --format junit ask for two different outputs"),
    ],
)
def test_bad_format_is_usage_error(cli, scene, args, message):
    result = run(cli, scene, *args)
    assert result.code == 2 and result.out == ""
    assert result.err.splitlines()[0] == message and result.err.splitlines()[1].startswith("hint: ")


# -- the sample workflow ---------------------------------------------------------------
def test_sample_workflow_is_valid_and_uses_real_options():
    import importlib.util

    require(importlib.util.find_spec("yaml") is not None, "PyYAML is not installed")
    import typer
    import yaml

    from patchmgr.cli.app import app

    workflow = yaml.safe_load((REPO_ROOT / "examples" / "nightly-patch-status.yml").read_text())
    assert workflow[True]["schedule"][0]["cron"]  # YAML 1.1 reads the key `on` as true
    steps = [step for job in workflow["jobs"].values() for step in job["steps"]]
    scripts = "\n".join(step.get("run", "") for step in steps)
    assert any(step.get("uses", "").startswith("actions/upload-artifact@") for step in steps)
    group = typer.main.get_command(app)
    calls = re.findall(r"patchmgr (\w+)((?:[^\n]|\\\n)*)", scripts)
    assert {name for name, _ in calls} >= {"status", "matrix"}
    for name, args in calls:
        assert name in group.commands, f"patchmgr {name} is no command"
        known = {opt for param in group.commands[name].params for opt in param.opts}
        for option in re.findall(r"(?<![\w-])(--?[a-z][\w-]*)", args):
            assert option in known, f"patchmgr {name} has no option {option}"
    assert "--format github" in scripts and "--format markdown" in scripts and "GITHUB_STEP_SUMMARY" in scripts
