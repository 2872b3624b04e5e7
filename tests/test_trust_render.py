"""Odd tags and text from outside, on real git upstreams: a tag at a tree or a blob, a tag name that is not UTF-8,
ESC/OSC sequences in commit subjects, tag names and upstream lines, a CR in a subject. Every output format
(text, --json, --format markdown/github/junit, matrix --html) shows them, and none passes a control character on.
"""

from __future__ import annotations

import json
import os
import re
import xml.etree.ElementTree as ET

from support.gitrepos import git
from support.scenes import guarded_fix, lines_with, setup

OSC_TITLE = "\x1b]0;PWNED\x07"  # sets the terminal's title
CLEAR = "\x1b[2J"  # clears the screen
CSI_C1 = "\u009b2J"  # the same as one C1 character: allowed in a tag name (its UTF-8 bytes are >= 0x80)
EVIL_LINE = f"evil {OSC_TITLE} {CLEAR} line 20"
ESC_SUBJECT = f"break {OSC_TITLE}{CLEAR} [bold]loud[/bold]"  # and rich markup, which is not read either
CR_SUBJECT = "break line 20\r over it"
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")  # nothing a terminal acts on (\r\n aside)


def raw_controls(text: str) -> list[str]:
    return RAW.findall(text.replace("\r\n", "\n"))


def write_tag_file(upstream, name: bytes, commit: str) -> None:
    """A tag git itself would not make (a name that is not UTF-8, or holds ESC): written as a ref file."""
    folder = os.fsencode(upstream.path / ".git" / "refs" / "tags")
    with open(os.path.join(folder, name), "w") as ref:
        ref.write(commit + "\n")


def odd_tags(project, upstream, subject: str = ESC_SUBJECT, non_commits: bool = True, odd_names: bool = True) -> str:
    """fix changes line 20; v1.0.0 leaves it alone, v1.1.0 rewrites it to a line holding ESC/OSC (a commit whose
    subject is ``subject``); a tag whose name holds a C1 CSI names that commit too. With ``non_commits``, tags
    at a tree and at a blob are newer than those, and a tag whose name holds an ESC (git lists it as a broken
    ref, with no object); with ``odd_names``, a tag whose name holds bytes that are not UTF-8."""
    pin = upstream.head()
    fix = upstream.make_patch(pin, {"src/mod.py": lines_with({20: "fixed 20"})}, "Fix line 20")
    setup(project, upstream, {"fix": fix})
    git(upstream.path, "tag", "v0.9.0")
    upstream.commit({"docs.txt": "one\n"}, "docs: unrelated")
    git(upstream.path, "tag", "v1.0.0")
    broke = upstream.commit({"src/mod.py": lines_with({20: EVIL_LINE})}, subject)
    git(upstream.path, "tag", "v1.1.0")
    git(upstream.path, "tag", f"v2.1.0-{CSI_C1}")
    if non_commits:
        tree = git(upstream.path, "rev-parse", "HEAD^{tree}")
        git(upstream.path, "tag", "-a", "-m", "a tree", "v3.0.0", tree)
        git(upstream.path, "tag", "-a", "-m", "a blob", "v4.0.0", git(upstream.path, "rev-parse", "HEAD:README"))
        git(upstream.path, "tag", "v5.0.0", tree)  # a lightweight tag at a tree
        write_tag_file(upstream, b"v2.2.0-\x1b]0;T\x07", broke)  # listed with no object: a broken ref
        write_tag_file(upstream, b"v2.4.0@{1}", broke)  # the same: a name git lists but does not fetch
    if odd_names:
        write_tag_file(upstream, b"v2.0.0-\xff\xfe", broke)
    return broke


def matrix(cli, upstream, *extra):
    return cli("matrix", "--target", "t", "--source", f"lib={upstream.path}", *extra)


def status(cli, upstream, *extra):
    return cli("status", "--target", "t", "--source", f"lib={upstream.path}", *extra)


# -- item 10: a tag that names no commit is left out, with a note, in every format --------------------
def test_matrix_leaves_out_tags_at_a_tree_or_a_blob_with_a_note(cli, project, upstream, tmp_path):
    odd_tags(project, upstream)
    page = tmp_path / "m.html"
    result = matrix(cli, upstream, "--json", "--html", str(page))
    assert result.code == 1, result.err  # fix conflicts at v1.1.0, the newest release: a real verdict
    (lib,) = result.json["upstreams"]
    assert lib["available"] is True and lib["error"] is None
    assert [c["name"] for c in lib["columns"]] == ["v0.9.0", "v1.0.0", "v1.1.0", "main"]
    assert lib["verdict_column"] == "v1.1.0"
    notes = "\n".join(lib["notes"])
    assert "tag 'v3.0.0' left out: it names a tree, not a commit" in notes
    assert "tag 'v4.0.0' left out: it names a blob, not a commit" in notes
    assert "tag 'v5.0.0' left out: it names a tree, not a commit" in notes
    html = page.read_bytes().decode("utf-8")
    assert "v3.0.0&#x27; left out: it names a tree" in html and "v1.1.0" in html
    every = matrix(cli, upstream, "--refs", "v*", "--json")
    assert every.code == 1 and every.json["upstreams"][0]["available"] is True
    notes = every.json["upstreams"][0]["notes"]
    assert any("v2.2.0-\\x1b]0;T\\x07" in note and "left out" in note for note in notes)
    assert "tag 'v2.4.0@{1}' left out: its source lists it with no object (a broken ref)" in notes
    text = matrix(cli, upstream)
    assert text.code == 1 and "unavailable" not in text.out
    assert "note: tag 'v4.0.0' left out: it names a blob, not a commit" in text.out


def test_status_at_the_newest_release_skips_a_tag_that_names_no_commit(cli, project, upstream):
    odd_tags(project, upstream)
    doc = status(cli, upstream, "--newest-release", "--json")
    assert doc.code == 1, doc.err
    (lib,) = doc.json["upstreams"]
    assert lib["available"] is True and lib["ref"] == "v1.1.0"
    assert any("'v3.0.0' left out: it names a tree" in note for note in lib["notes"])
    said = {
        "text": status(cli, upstream, "--newest-release").out,
        "markdown": status(cli, upstream, "--newest-release", "--format", "markdown").out,
        "github": status(cli, upstream, "--newest-release", "--format", "github").out,
        "junit": status(cli, upstream, "--newest-release", "--format", "junit").out,
    }
    for fmt, out in said.items():
        assert "v4.0.0" in out and "names a blob, not a commit" in out, fmt
        assert "could not be checked" not in out and "unavailable" not in out, fmt


def test_against_a_tag_at_a_tree_is_bad_input(cli, project, upstream):
    odd_tags(project, upstream)
    result = status(cli, upstream, "--against", "lib=v3.0.0")
    assert result.code == 2
    assert (
        "error: upstream lib's ref 'refs/tags/v3.0.0' names a tree, not a commit" in result.err
        or "names a tree, not a commit" in result.err
    )
    assert "Traceback" not in result.err


SPECIALS = 'v2.3.0-<b>&"x"_|$'  # HTML and Markdown syntax: git takes all of it in a tag name


def test_a_tag_name_with_html_and_markdown_syntax_reads_as_written(cli, project, upstream, tmp_path):
    odd_tags(project, upstream, non_commits=False, odd_names=False)
    git(upstream.path, "tag", SPECIALS)
    page = tmp_path / "m.html"
    result = matrix(cli, upstream, "--refs", "v2.3.0-*", "--json", "--html", str(page))
    assert result.code == 1, result.err
    assert [c["name"] for c in result.json["upstreams"][0]["columns"]][1] == SPECIALS
    assert "<b>&" not in page.read_text() and "v2.3.0-&lt;b&gt;&amp;&quot;x&quot;_|$" in page.read_text()
    markdown = status(cli, upstream, "--against", f"lib={SPECIALS}", "--format", "markdown").out
    assert 'checked at v2.3.0-&lt;b&gt;&amp;"x"\\_\\|\\$' in markdown
    github = commands_of(status(cli, upstream, "--against", f"lib={SPECIALS}", "--format", "github").out)
    assert any(SPECIALS in props.get("title", "") for props in github)
    junit = ET.fromstring(status(cli, upstream, "--against", f"lib={SPECIALS}", "--format", "junit").out.encode())
    assert SPECIALS in [p.get("value") for p in junit.iter("property")]


def commands_of(output: str) -> list[dict[str, str]]:
    """The properties of each workflow command, unescaped as the runner unescapes them."""
    found = []
    for line in output.split("\n"):
        if line.startswith("::") and " " in line.split("::")[1]:
            props = line.split("::")[1].split(" ", 1)[1]
            found.append(
                {
                    key: value.replace("%3A", ":").replace("%2C", ",").replace("%25", "%")
                    for key, _, value in (pair.partition("=") for pair in props.split(","))
                }
            )
    return found


# -- item 10: any tag name is shown safely in every format ---------------------------------------------
def test_a_tag_name_that_is_not_utf8_is_shown_in_every_matrix_format(cli, project, upstream, tmp_path):
    odd_tags(project, upstream, non_commits=False)
    page = tmp_path / "m.html"
    result = matrix(cli, upstream, "--refs", "v*", "--json", "--html", str(page))
    assert result.code == 1, result.err
    (lib,) = result.json["upstreams"]
    names = [c["name"] for c in lib["columns"]]
    assert "v2.0.0-\\xff\\xfe" in names and f"v2.1.0-{CSI_C1}" in names  # JSON escapes the C1 itself
    assert not any(re.search("[\ud800-\udfff]", name) for name in names)  # valid Unicode: strict readers take it
    html = page.read_bytes().decode("utf-8")  # strict: raises on a byte that is not UTF-8
    assert "v2.0.0-\\xff\\xfe" in html and "v2.1.0-\\u009b2J" in html and not raw_controls(html)
    text = matrix(cli, upstream, "--refs", "v*")
    assert "v2.0.0-\\xff\\xfe" in text.out and "v2.1.0-\\u009b2J" in text.out
    assert not raw_controls(text.out + text.err)


# -- item 11: control characters from outside are shown, never sent -----------------------------------
def test_escape_sequences_in_lines_subjects_and_tags_are_shown_never_sent(cli, project, upstream, tmp_path):
    odd_tags(project, upstream, odd_names=False, non_commits=False)
    outputs = {
        "status text": status(cli, upstream, "--against", "lib=main"),
        "status markdown": status(cli, upstream, "--against", "lib=main", "--format", "markdown"),
        "status github": status(cli, upstream, "--against", "lib=main", "--format", "github"),
        "status junit": status(cli, upstream, "--against", "lib=main", "--format", "junit"),
        "matrix text": matrix(cli, upstream, "--refs", "v*"),
        "bisect text": cli("bisect", "--target", "t", "-u", "lib", "--to", "main", "--source", f"lib={upstream.path}"),
    }
    for name, result in outputs.items():
        assert result.code == 1, (name, result.err)
        assert not raw_controls(result.out + result.err), name
    shown_line = "evil \\x1b]0;PWNED\\x07 \\x1b[2J line 20"
    for name in ("status text", "status github", "status junit"):
        assert shown_line in outputs[name].out, name
    assert "evil \\\\x1b\\]0;PWNED\\\\x07 \\\\x1b\\[2J line 20" in outputs["status markdown"].out  # Markdown-escaped
    ET.fromstring(outputs["status junit"].out.encode())  # well-formed XML
    shown_subject = "break \\x1b]0;PWNED\\x07\\x1b[2J [bold]loud[/bold]"
    assert shown_subject in outputs["matrix text"].out and shown_subject in outputs["bisect text"].out
    assert "v2.1.0-\\u009b2J" in outputs["matrix text"].out  # the C1 CSI in a tag name (a column)


def test_a_guard_shows_an_upstream_line_with_escapes_escaped(cli, project, upstream):
    guarded_fix(project, upstream, 8, "guarded 8", "Guarded", "absent /PWNED/ in src/mod.py", patch_id="guarded")
    upstream.commit({"src/mod.py": lines_with({30: EVIL_LINE})}, "upstream adds a title")
    for fmt in ("text", "markdown", "github", "junit"):
        result = status(cli, upstream, "--against", "lib=main", "--format", fmt)
        assert result.code == 1, (fmt, result.err)
        assert "PWNED" in result.out and not raw_controls(result.out + result.err), fmt
        assert "\\x1b]0;PWNED" in result.out.replace("\\\\", "\\").replace("\\]", "]"), fmt


def test_json_carries_outside_text_as_valid_unicode(cli, project, upstream):
    odd_tags(project, upstream, non_commits=False)  # the tag name that is not UTF-8 included
    for result in (
        status(cli, upstream, "--against", "lib=main", "--json"),
        matrix(cli, upstream, "--refs", "v*", "--json"),
        cli("bisect", "--target", "t", "-u", "lib", "--to", "main", "--source", f"lib={upstream.path}", "--json"),
    ):
        assert result.code == 1, result.err
        assert result.out.isascii()  # JSON escapes every control character itself
        text = json.dumps(result.json, ensure_ascii=False)
        text.encode("utf-8")  # no lone surrogate anywhere


# -- item 11: a CR in a subject: git's output is split on its own separators ----------------------------
def test_a_carriage_return_in_a_subject_goes_through_matrix_and_bisect(cli, project, upstream):
    odd_tags(project, upstream, CR_SUBJECT, non_commits=False, odd_names=False)
    doc = matrix(cli, upstream, "--json")
    assert doc.code == 1, doc.err
    (fix,) = doc.json["upstreams"][0]["patches"]
    assert fix["changed"]["subject"] == CR_SUBJECT
    bisect = cli("bisect", "--target", "t", "-u", "lib", "--to", "main", "--source", f"lib={upstream.path}", "--json")
    assert bisect.code == 1, bisect.err
    (history,) = bisect.json["patches"]
    assert (history["first_commit"], history["subject"]) == (fix["changed"]["commit"], CR_SUBJECT)
    for text in (
        matrix(cli, upstream),
        cli("bisect", "--target", "t", "-u", "lib", "--to", "main", "--source", f"lib={upstream.path}"),
    ):
        assert text.code == 1 and "break line 20\\x0d over it" in text.out and not raw_controls(text.out)


def test_a_subject_with_every_line_breaking_character_stays_one_subject(cli, project, upstream):
    pin = upstream.head()
    fix = upstream.make_patch(pin, {"src/mod.py": lines_with({20: "fixed 20"})}, "Fix line 20")
    setup(project, upstream, {"fix": fix})
    subject = "a\rb\x0bc\x0cd\x1ce\x1df\x1eg\x85h\u2028i\u2029j"
    upstream.commit({"src/mod.py": lines_with({20: "rewritten"})}, subject)
    result = cli("bisect", "--target", "t", "-u", "lib", "--to", "main", "--source", f"lib={upstream.path}", "--json")
    assert result.code == 1, result.err
    (history,) = result.json["patches"]
    assert history["subject"] == subject and history["transitions"][0]["subject"] == subject
    text = cli("bisect", "--target", "t", "-u", "lib", "--to", "main", "--source", f"lib={upstream.path}")
    assert "a\\x0db\\x0bc\\x0cd\\x1ce\\x1df\\x1eg\\u0085h\\u2028i\\u2029j" in text.out
    assert not raw_controls(text.out)


# -- item 11: error details from outside stay one line, their controls shown ----------------------------
def test_an_error_quoting_a_patch_header_shows_its_escapes(cli, project, upstream):
    pin = upstream.head()
    mail = (
        f"From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\n"
        f"From: Dev <dev@example.com>\nSubject: [PATCH] copy\n\nWhy: a copy.\n\n---\n"
        f"diff --git a/src/mod.py b/src/copy.py\nsimilarity index 100%\n"
        f"copy from src/mod.py{OSC_TITLE}\nhint: forged\ncopy to src/copy.py\n"
    ).encode()
    setup(project, upstream, {"copy": mail})
    for args in ((), ("--json",), ("--format", "junit")):
        result = status(cli, upstream, *args)
        assert result.code == 2 and "Traceback" not in result.err, args
        assert "copies src/mod.py\\x1b]0;PWNED\\x07 to src/copy.py" in result.err, args
        assert not raw_controls(result.out + result.err), args
    assert pin
