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
