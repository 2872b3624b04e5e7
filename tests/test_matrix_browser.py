"""matrix --html in a real headless browser (Debian's chromium): every row and column is there, each cell carries
its detail, a link to a cell and a click on one show its detail, and a screenshot is drawn, with no network."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from html.parser import HTMLParser

from support.needs import require
from support.scenes import tagged_upstream

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def chromium(tmp_path, *args: str) -> subprocess.CompletedProcess:
    profile = tmp_path / "chromium-profile"
    # no network: every host name fails to resolve and every connection goes to a proxy that is not there, so
    # the page must need nothing from anywhere (and Chromium's own background traffic is off)
    command = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--hide-scrollbars",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--host-resolver-rules=MAP * ~NOTFOUND",
        "--proxy-server=127.0.0.1:9",
        f"--user-data-dir={profile}",
        *args,
    ]
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()} | {"HOME": str(tmp_path)}
    return subprocess.run(command, capture_output=True, timeout=120, env=env)


class Cells(HTMLParser):
    """What the browser's DOM holds: column headers, rows, and each cell's attributes and text."""

    def __init__(self) -> None:
        super().__init__()
        self.columns: list[str] = []
        self.rows: list[str] = []
        self.cells: list[dict[str, str]] = []
        self.detail = ""
        self._in: str | None = None

    def handle_starttag(self, tag, attrs):
        found = dict(attrs)
        if tag == "th" and "data-column" in found:
            self.columns.append(found["data-column"])
        if tag == "tr" and "data-patch" in found:
            self.rows.append(found["data-patch"])
        if tag == "td" and "cell" in found.get("class", "").split():
            self.cells.append(found)
        if found.get("id") == "detail":
            self._in = "detail"

    def handle_endtag(self, tag):
        if tag == "div":
            self._in = None

    def handle_data(self, data):
        if self._in == "detail":
            self.detail += data


def test_page_loads_in_chromium_with_every_row_column_and_detail(cli, project, upstream, tmp_path):
    require(CHROMIUM is not None, "chromium is not installed (apt-get install chromium)")
    _pin, (_moved, broke, _absorbed) = tagged_upstream(project, upstream)
    page = tmp_path / "matrix.html"
    result = cli("matrix", "--target", "t", "--source", f"lib={upstream.path}", "--html", str(page))
    assert result.code == 1 and page.is_file(), result.err

    # the conflict cell of fix at v1.2.0 (row 0, column 3), as a click would show it
    done = chromium(tmp_path, "--dump-dom", f"file://{page}#c-0-0-3")
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    dom = Cells()
    dom.feed(done.stdout.decode())
    assert dom.columns == ["v0.9.0", "v1.0.0", "v1.1.0", "v1.2.0", "v2.0.0", "main"]
    assert dom.rows == ["fix", "other"]
    assert len(dom.cells) == 12
    states = [cell["data-state"] for cell in dom.cells]
    assert states[:6] == ["clean", "clean", "offset", "conflict", "upstream", "upstream"]
    assert states[6:] == ["clean"] * 6
    for cell in dom.cells:  # each cell says what it is on hover
        assert cell["title"].startswith(f"{cell['data-patch']} at {cell['data-column']} ")
    assert "hunk #1 +3 lines" in dom.cells[2]["title"]
    # the script ran: the linked cell's detail is in the panel
    assert dom.detail.startswith("fix at v1.2.0: conflict\nsrc/mod.py hunk #1"), dom.detail
    assert broke[:12] in done.stdout.decode()  # the bisect result of the row

    # a click on the offset cell of fix at v1.1.0 (row 0, column 2), dispatched as the browser dispatches a
    # mouse click, goes through the page's own handler to the panel
    clicked = tmp_path / "clicked.html"
    clicked.write_text(
        page.read_text().replace(
            "</body>",
            "<script>document.getElementById('c-0-0-2')"
            ".dispatchEvent(new MouseEvent('click', {bubbles: true}));</script></body>",
        )
    )
    done = chromium(tmp_path, "--dump-dom", f"file://{clicked}")
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    dom = Cells()
    dom.feed(done.stdout.decode())
    assert dom.detail.startswith("fix at v1.1.0: offset\n"), dom.detail
    assert [cell["id"] for cell in dom.cells if "chosen" in cell["class"].split()] == ["c-0-0-2"]

    shot = tmp_path / "matrix.png"
    done = chromium(tmp_path, f"--screenshot={shot}", "--window-size=1400,600", f"file://{page}")
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    assert (width, height) == (1400, 600)
    # a drawn page, not a blank one: a blank 1400x600 PNG compresses to a few kilobytes
    assert len(data) > 20_000, len(data)
    assert re.search(rb"IDAT", data)


class Page(HTMLParser):
    """The links of the page, the text of the elements with an id, and the attributes of those elements."""

    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []
        self.text: dict[str, str] = {}
        self.attrs: dict[str, dict[str, str]] = {}
        self._open: list[str | None] = []

    def handle_starttag(self, tag, attrs):
        found = {k: v or "" for k, v in attrs}
        if tag == "a":
            self.hrefs.append(found.get("href", ""))
        if "id" in found:
            self.attrs[found["id"]] = found
            self.text.setdefault(found["id"], "")
        self._open.append(found.get("id"))

    def handle_endtag(self, tag):
        if self._open:
            self._open.pop()

    def handle_data(self, data):
        for name in self._open:
            if name is not None:
                self.text[name] += data


LAYOUT = """<script>
document.getElementById('c-0-0-4').dispatchEvent(new MouseEvent('click', {bubbles: true}));
var box = function (e) { var b = e.getBoundingClientRect(); return [b.left, b.top, b.right, b.bottom]; };
document.body.setAttribute('data-layout', JSON.stringify({panel: box(document.getElementById('panel')),
  grid: box(document.querySelector('table.matrix')), height: window.innerHeight}));
</script></body>"""


def test_page_links_commits_and_pull_requests_says_when_and_keeps_the_detail_beside_the_grid(
    cli, project, upstream, tmp_path
):
    import json

    from support.gitrepos import git

    require(CHROMIUM is not None, "chromium is not installed (apt-get install chromium)")
    pin, (_moved, broke, absorbed) = tagged_upstream(project, upstream, "https://github.com/acme/lib.git")
    git(project.root, "init", "-q")
    git(project.root, "add", "-A")
    git(project.root, "commit", "-q", "-m", "the manifest")
    made = git(project.root, "log", "-1", "--format=%H", "--", "manifests/t.toml")
    page = tmp_path / "matrix.html"
    result = cli("matrix", "--target", "t", "--source", f"lib={upstream.path}", "--html", str(page))
    assert result.code == 1 and page.is_file(), result.err
    text = page.read_text()
    for fetches in ("<link", "src=", "@import", "url("):  # links to click, nothing fetched
        assert fetches not in text, fetches
    shown = tmp_path / "shown.html"
    shown.write_text(text.replace("</body>", LAYOUT))
    done = chromium(tmp_path, "--dump-dom", "--window-size=1400,900", f"file://{shown}")
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    dom = Page()
    dom.feed(done.stdout.decode())
    web = "https://github.com/acme/lib"
    # each column's commit, the first change's commit and its pull request (the subject's "#1234")
    for commit in (pin, broke, upstream.head()):
        assert f"{web}/commit/{commit}" in dom.hrefs, commit
    assert f"{web}/pull/1234" in dom.hrefs
    assert re.search(r"\(<a class=\"pr\" href=\"https://github.com/acme/lib/pull/1234\">#1234</a>\)", text)
    # the clicked cell (fix at v2.0.0, upstream: its reverse applies, no commit has its patch-id): the panel
    # links the column's commit, and no carrier
    assert dom.text["detail"].startswith("fix at v2.0.0: upstream\n"), dom.text["detail"]
    assert dom.text["links"] == "commit v2.0.0" and dom.hrefs[-1] == f"{web}/commit/{absorbed}"
    # when, from which manifest commit, and the verdict at the top
    assert re.fullmatch(
        rf"Made \d{{4}}-\d\d-\d\d \d\d:\d\d UTC from manifests/t.toml at commit {made[:12]}\.", dom.text["made"]
    ), dom.text["made"]
    assert dom.attrs["verdict"]["data-ok"] == "false"
    assert dom.text["verdict"].startswith("1 of 1 upstreams need attention at their newest release:")
    assert "lib at v2.0.0: 1 of 2 patches: fix (upstream)" in dom.text["verdict"]
    # the panel is beside the grid (to its right) and in the first screen, not below a long page
    body = re.search(r'<body data-layout="([^"]*)"', done.stdout.decode())
    assert body, "the layout script did not run"
    boxes = json.loads(body.group(1).replace("&quot;", '"'))
    assert boxes["panel"][0] >= boxes["grid"][2] and boxes["panel"][1] < boxes["height"], boxes
