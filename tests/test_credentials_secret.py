"""Credentials stay secret: a token in a manifest's git URL, in PATCHMGR_INDEX_URL or in a patch's header is in
no output format, no error and no file that patchmgr writes (issue 37, item 9)."""

from __future__ import annotations

import base64
import hashlib
import http.server
import json
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from support.git_http import served_over_http
from support.gitrepos import BASE_TEXT, git
from support.reliability import make_wheel
from support.scenes import lines_with

from patchmgr.cli import main
from patchmgr.model.patchfile import with_message_masked
from patchmgr.model.urls import mask_url

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


def test_a_malformed_index_url_is_one_error_line_without_its_password(cli, project, upstream, monkeypatch):
    _token_project(project, upstream)
    monkeypatch.setenv("PATCHMGR_INDEX_URL", f"https://user:{TOKEN}@[bad/simple")
    _one_error(cli("status", "--target", "t"), "error: PATCHMGR_INDEX_URL 'https://user:***@[bad/simple' is not a URL")


@contextmanager
def _index_asking_for_a_login(folder: Path, login: str) -> Iterator[tuple[str, list[tuple[str, bool]]]]:
    """A package index on 127.0.0.1 (PEP 691 JSON) serving release 1.0 of ``lib`` (the upstream's files as a
    wheel, linked relative to the project page) only to a request with ``login`` as its Basic credentials; its
    address, and each request's path and whether it carried them."""
    wheel = make_wheel(folder, "lib", "1.0", {"src/mod.py": BASE_TEXT, "README": "upstream\n"}, "")
    page = {
        "meta": {"api-version": "1.0"},
        "name": "lib",
        "files": [
            {
                "filename": wheel.name,
                "url": f"../../files/{wheel.name}",
                "hashes": {"sha256": hashlib.sha256(wheel.read_bytes()).hexdigest()},
            }
        ],
    }
    bodies = {"/simple/lib/": json.dumps(page).encode(), f"/files/{wheel.name}": wheel.read_bytes()}
    expected = "Basic " + base64.b64encode(login.encode()).decode()
    asked: list[tuple[str, bool]] = []

    class Index(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - the name http.server calls
            logged_in = self.headers.get("Authorization") == expected
            asked.append((self.path, logged_in))
            body = bodies.get(self.path) if logged_in else None
            self.send_response(200 if body is not None else 401 if not logged_in else 404)
            self.send_header("Content-Length", str(len(body or b"")))
            self.end_headers()
            self.wfile.write(body or b"")

        def log_message(self, *args) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Index)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}", asked
    finally:
        server.shutdown()
        server.server_close()


def _one_error(result, starts: str) -> None:
    said = _secret_free(result)
    assert result.code == 2 and result.out == "", said
    lines = result.err.splitlines()
    assert [line.split(":")[0] for line in lines] == ["error", "hint"], said
    assert lines[0].startswith(starts), said


def test_a_malformed_url_in_a_manifest_or_given_to_init_is_one_error_line_without_its_password(
    cli, project, upstream, tmp_path
):
    bad = f"https://ci:{TOKEN}@[bad/lib.git"
    project.manifest("t", {"lib": {"git": bad, "commit": upstream.head(), "patches": []}})
    _one_error(cli("status", "--target", "t"), "error: ")
    fresh = tmp_path / "fresh"
    given = ["init", "--git", bad, "--target", "t", "--pin", upstream.head(), "--root", str(fresh)]
    _one_error(cli(*given), "error: --git: 'https://ci:***@[bad/lib.git' is not a URL: its host has an unclosed '['")
    assert not fresh.exists()


def test_an_index_url_with_a_login_is_asked_with_it_and_shown_without_it(cli, project, upstream, tmp_path, monkeypatch):
    _token_project(project, upstream)  # git out of reach: the release stands in
    with _index_asking_for_a_login(tmp_path, f"mirror:{TOKEN}") as (host, asked):
        monkeypatch.setenv("PATCHMGR_INDEX_URL", f"http://mirror:{TOKEN}@{host}/simple")
        result = cli("status", "--target", "t", "--json")
    said = _secret_free(result)
    assert result.code == 0, said
    source = result.json["upstreams"][0]["source"]
    assert source.startswith("release lib 1.0 (PyPI lib-1.0-py3-none-any.whl)"), source
    assert asked == [("/simple/lib/", True), ("/files/lib-1.0-py3-none-any.whl", True)], asked
    assert _files_holding_the_token(tmp_path / "cache" / "releases") == []  # the release's record: no login


def test_an_index_that_breaks_off_its_answer_is_a_source_error_not_a_traceback(cli, project, upstream, monkeypatch):
    import socketserver

    class BreaksOff(socketserver.BaseRequestHandler):
        def handle(self) -> None:
            self.request.recv(65536)
            self.request.sendall(b'HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{"files"')  # 8 of 100 bytes

    _token_project(project, upstream)
    with socketserver.ThreadingTCPServer(("127.0.0.1", 0), BreaksOff) as server:
        threading.Thread(target=server.serve_forever, daemon=True).start()
        monkeypatch.setenv("PATCHMGR_INDEX_URL", f"http://127.0.0.1:{server.server_address[1]}/simple")
        result = cli("status", "--target", "t")
        server.shutdown()
    said = _secret_free(result)
    assert result.code == 1 and "IncompleteRead(8 bytes read, 92 more expected)" in said, said


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


def test_export_writes_the_pins_and_its_record_without_the_token(cli, project, upstream, tmp_path, monkeypatch, capsys):
    pin = _token_project(project, upstream)
    monkeypatch.setenv("PATCHMGR_INDEX_URL", INDEX_URL)
    into = tmp_path / "image" / "npu_patch"
    args = ["--target", "t", "--format", "series", "--into", str(into), "--source", f"lib={upstream.path}"]
    result = cli("export", *args)
    _secret_free(result)
    assert result.code == 0, result.out + result.err
    assert _files_holding_the_token(into) == []
    pins = (into / "pins.dockerfile").read_text()
    assert "ARG LIB_REPO=https://127.0.0.1:9/lib.git\n" in pins and f"ARG LIB_COMMIT={pin}\n" in pins, pins
    assert 'git = "https://127.0.0.1:9/lib.git"' in (into / "patchmgr-series" / "export.toml").read_text()
    # the exported patch keeps its fields, the credential in them masked
    piece = (into / "patchmgr-series" / "lib" / "fix.patch").read_text()
    assert "Origin: backport, https://x:***@issues.example.invalid/lib/issues/7\n" in piece, piece
    # the export JSON document says nothing more
    document = cli("export", *args, "--force", "--json")
    _secret_free(document)
    assert document.code == 0 and _files_holding_the_token(into) == []
    # import of the folder takes the recorded patches back: the pins' URL is the record's
    again = tmp_path / "again"
    (again / "manifests").mkdir(parents=True)
    back = ["import", str(into / "series.conf"), "--target", "t", "--dockerfile", str(into / "pins.dockerfile")]
    imported = main([*back, "--source", f"lib={upstream.path}", "--root", str(again), "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert imported == 0 and [p["id"] for p in doc["upstreams"][0]["pieces"]] == ["fix"], doc
    (lib,) = doc["upstreams"]
    assert lib["git"] == "https://127.0.0.1:9/lib.git" and lib["proven"] and not lib["notes"], lib
    assert lib["base"]["detail"] == "the pin of lib that patchmgr export recorded in patchmgr-series/export.toml"
    assert (again / "patches/lib/fix.patch").read_bytes() == (into / "patchmgr-series/lib/fix.patch").read_bytes()


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


@pytest.mark.fast
def test_mask_url_finds_every_kind_of_credential_in_any_text():
    text = (
        "git -c http.extraheader='Authorization: Bearer eyJhbGciOi.x' fetch; PRIVATE-TOKEN: glpat-abc, "
        "https://s3.example/x.whl?X-Amz-Credential=AKIA1&X-Amz-Signature=9f8e&v=1 "
        '<a href="https://h/x?a=1&amp;api_key=k3y">, https://h/sas?sv=2020&sig=abc%3D,x, (https://h/y?token=t0k), ssh://git@host/r'
    )
    assert mask_url(text) == (
        "git -c http.extraheader='Authorization: Bearer ***' fetch; PRIVATE-TOKEN: ***, "
        "https://s3.example/x.whl?X-Amz-Credential=***&X-Amz-Signature=***&v=1 "
        '<a href="https://h/x?a=1&amp;api_key=***">, https://h/sas?sv=2020&sig=***, (https://h/y?token=***), ssh://git@host/r'
    )
    assert mask_url(mask_url(text)) == mask_url(text)  # masked text stays as it is


@pytest.mark.fast
def test_an_exported_patch_has_its_message_masked_and_its_diff_byte_for_byte():
    message = f"Subject: [PATCH] Fix\n\nOrigin: {HEADER_URL}\n---\n"
    diff = f"diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-old {MANIFEST_URL}\n+new {MANIFEST_URL}\n"
    masked = with_message_masked((message + diff).encode())
    assert masked == (message.replace(TOKEN, "***") + diff).encode()
    assert with_message_masked(diff.encode()) == diff.encode()  # a plain diff has no message to mask


def test_a_build_and_an_edit_checkout_keep_no_login_of_the_url_they_were_fetched_from(cli, project, upstream, tmp_path):
    """The build (``apply --into``) is what an image COPYs: its ``.git/config`` names the upstream's URL without
    the login it was fetched with (from --source, PATCHMGR_SOURCES or .patchmgr.local.toml); ``edit --onto``
    in an edit checkout still fetches with that login."""
    pin = upstream.head()
    project.add_patch("lib", "fix", upstream.make_patch(pin, {"src/mod.py": lines_with({20: "fixed 20"})}, "Fix 20"))
    newer = upstream.commit({"README": "upstream, newer\n"}, "newer")
    with served_over_http(upstream.path, "ci", TOKEN) as where:
        project.manifest("t", {"lib": {"git": f"http://{where}", "commit": pin, "version": "1.0", "patches": ["fix"]}})
        source = ["--source", f"lib=http://ci:{TOKEN}@{where}"]
        build, work = tmp_path / "build", tmp_path / "work"
        applied = cli("apply", "--target", "t", "--into", str(build), *source)
        assert applied.code == 0, _secret_free(applied)
        assert _files_holding_the_token(build) == []
        assert git(build / "lib", "remote", "get-url", "origin") == f"http://{where}"
        edited = cli("edit", "--target", "t", "-u", "lib", "--into", str(work), *source)
        assert edited.code == 0 and _files_holding_the_token(work) == [], _secret_free(edited)
        moved = cli("edit", "--target", "t", "-u", "lib", "--into", str(work), "--onto", newer, *source)
        said = _secret_free(moved)
        assert moved.code == 0 and "from the patchmgr cache" not in said, said  # the upstream served, with the login
        assert git(work, "rev-parse", "HEAD~1") == newer
        assert _files_holding_the_token(work) == [] and git(work, "remote", "get-url", "origin") == f"http://{where}"


@pytest.mark.fast
def test_mask_url_masks_the_token_that_a_url_gives_as_its_user_beside_a_stand_in_password_and_in_its_fragment():
    """GitHub's documented form puts the token in the user and ``x-oauth-basic`` (or nothing) in the password;
    an OAuth implicit grant puts ``access_token=`` after ``#``."""
    text = (
        "https://ghp_T0ken:x-oauth-basic@github.com/o/r.git https://glpat-T0ken:@gitlab.example/r.git "
        "https://app.example/cb#access_token=T0ken&state=1 https://ci:T0ken@h/r"
    )
    assert mask_url(text) == (
        "https://***:***@github.com/o/r.git https://***:***@gitlab.example/r.git "
        "https://app.example/cb#access_token=***&state=1 https://ci:***@h/r"
    )
    assert mask_url(mask_url(text)) == mask_url(text)
