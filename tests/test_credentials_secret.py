"""Credentials stay secret: a token in a manifest's git URL, in PATCHMGR_INDEX_URL or in a patch's header is in
no output format, no error and no file that patchmgr writes (issue 37, item 9)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from support.scenes import lines_with

TOKEN = "glpat-Sekr1tT0ken"
MANIFEST_URL = f"https://ci:{TOKEN}@127.0.0.1:9/lib.git"  # port 9: refused at once
INDEX_URL = f"https://mirror:{TOKEN}@127.0.0.1:9/simple"
HEADER_URL = f"https://x:{TOKEN}@issues.example.invalid/lib/issues/7"


def _token_project(project, upstream):
    """Target ``t``: upstream ``lib`` whose manifest URL holds a token (a PyPI release standing in when git is
    out of reach), and one patch that names a URL with a token in its subject, its ``Origin:`` and ``Bug:``
    fields and its description."""
    pin = upstream.head()
    fields = f"Origin: backport, {HEADER_URL}\nBug: {HEADER_URL}?private_token={TOKEN}\nUpstream-Status: Pending"
    subject, body = f"Fix line 20 (reported at {HEADER_URL})", f"Why: see {HEADER_URL} for the log."
    patch = upstream.make_patch(pin, {"src/mod.py": lines_with({20: "fixed 20"})}, subject, body, fields)
    project.add_patch("lib", "fix", patch)
    spec = {"git": MANIFEST_URL, "commit": pin, "version": "1.0", "pypi": "lib", "patches": ["fix"]}
    project.manifest("t", {"lib": spec})
    return pin


def _secret_free(result) -> str:
    said = result.out + result.err
    assert "Traceback" not in said, said
    assert TOKEN not in said, said
    return said


def _files_holding_the_token(folder: Path, *but: str) -> list[str]:
    """The files below ``folder`` (but those in its folders ``but``: the scene's own) that hold the token."""
    return [
        path.relative_to(folder).as_posix()
        for path in sorted(folder.rglob("*"))
        if path.relative_to(folder).parts[0] not in but
        and path.is_file()
        and not path.is_symlink()
        and TOKEN.encode() in path.read_bytes()
    ]


FORMATS = {
    "log": [],  # off a terminal: the plain table
    "terminal": [],  # rich's table, its cells wrapped at 60 columns
    "json": ["--json"],
    "junit": ["--format", "junit"],
    "markdown": ["--format", "markdown"],
    "github": ["--format", "github"],
}


def _in_format(monkeypatch, fmt: str) -> list[str]:
    if fmt == "terminal":
        monkeypatch.setenv("TTY_COMPATIBLE", "1")
        monkeypatch.setenv("COLUMNS", "60")
    return FORMATS[fmt]


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_no_status_format_shows_the_token_of_the_manifest_url_or_the_index_url(
    cli, project, upstream, monkeypatch, fmt
):
    _token_project(project, upstream)
    monkeypatch.setenv("PATCHMGR_INDEX_URL", INDEX_URL)
    result = cli("status", "--target", "t", *_in_format(monkeypatch, fmt))  # git and the index both out of reach
    said = _secret_free(result)
    assert result.code == 1, said
    assert "127.0.0.1:9/simple" in said and "127.0.0.1:9/lib.git" in said, said  # the error names both


@pytest.mark.parametrize("fmt", list(FORMATS))
@pytest.mark.usefixtures("no_package_index")  # the release compared with the pin: none there
def test_no_status_format_shows_the_token_of_a_patch_header(cli, project, upstream, monkeypatch, fmt):
    _token_project(project, upstream)
    result = cli("status", "--target", "t", "--source", f"lib={upstream.path}", *_in_format(monkeypatch, fmt))
    said = _secret_free(result)
    assert result.code == 0, said
    if fmt == "json":
        patch = result.json["upstreams"][0]["patches"][0]
        assert patch["origin"] == "backport, https://x:***@issues.example.invalid/lib/issues/7", patch


def test_the_html_page_of_matrix_holds_no_token(cli, project, upstream, tmp_path):
    _token_project(project, upstream)
    upstream.commit({"src/mod.py": lines_with({20: "rewritten 20"})}, f"rewrite line 20 (as {HEADER_URL} asks)")
    page = tmp_path / "matrix.html"
    result = cli("matrix", "--target", "t", "--source", f"lib={upstream.path}", "--html", str(page))
    said = _secret_free(result)
    assert result.code == 0 and "rewrite line 20 (as https://x:***@issues.example.invalid" in said, said
    assert "rewrite line 20 (as https://x:***@issues.example.invalid" in page.read_text()
    # the cache keeps the upstream's history (and what matrix found in it) as the upstream has it: not an output
    assert _files_holding_the_token(tmp_path, "upstream", "project", "cache") == []


def test_every_line_written_to_stdout_or_stderr_is_masked(capsys):
    """The net under every rendering (``cli/streams``): what a command prints by any way, a plain
    ``print`` or a stream's ``write``, is masked as it is written."""
    from patchmgr.cli.streams import masked_output

    with masked_output():
        print(f"cloning {MANIFEST_URL}")
        sys.stderr.write(f"index {INDEX_URL} and https://h/x?token={TOKEN}\n")
    captured = capsys.readouterr()
    assert captured.out == "cloning https://ci:***@127.0.0.1:9/lib.git\n"
    assert captured.err == "index https://mirror:***@127.0.0.1:9/simple and https://h/x?token=***\n"
