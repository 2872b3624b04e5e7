"""Trust, third sweep (issue 24): what patchmgr reuses from its cache, manifest values that reach a shell,
smoke requirements under the URL policy, and the output files a user names. Each through the real CLI."""

from __future__ import annotations

import os
import socket
import stat
from pathlib import Path

import pytest

from test_matrix import matrix, tagged_upstream


# -- 12. an output path is a regular file or absent ---------------------------------------------------------

def _device(path: Path) -> Path:
    """A character device node like /dev/null at ``path`` (root only), else /dev/null itself."""
    if os.geteuid() == 0:
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 3))
        return path
    return Path("/dev/null")


@pytest.mark.parametrize("kind", ["fifo", "device", "socket", "folder", "link-to-fifo", "link-to-device",
                                  "dangling-link", "proc", "sys", "under-a-file"])
def test_matrix_html_refuses_every_path_that_is_not_a_regular_file_and_writes_nothing(
        cli, project, upstream, tmp_path, kind):
    tagged_upstream(project, upstream)
    place = tmp_path / "out"
    place.mkdir()
    path, keep = place / "m.html", None
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "device":
        path = _device(path)
    elif kind == "socket":
        keep = socket.socket(socket.AF_UNIX)
        keep.bind(str(path))
    elif kind == "folder":
        path.mkdir()
    elif kind == "link-to-fifo":
        os.mkfifo(place / "fifo")
        path.symlink_to(place / "fifo")
    elif kind == "link-to-device":
        path.symlink_to(_device(place / "null"))
    elif kind == "dangling-link":
        path.symlink_to(place / "elsewhere.html")
    elif kind == "proc":
        path = Path("/proc/self/comm")
    elif kind == "sys":
        path = Path("/sys/kernel/m.html")
    elif kind == "under-a-file":
        (place / "file").write_text("x\n")
        path = place / "file" / "m.html"
    before = sorted((p.name, os.lstat(p).st_mode) for p in place.iterdir())
    try:
        result = matrix(cli, upstream, "--html", str(path))
    finally:
        if keep is not None:
            keep.close()
    assert result.code == 2, (kind, result.code, result.out, result.err)
    assert result.err.count("error: ") == 1 and "hint: " in result.err and str(path) in result.err, result.err
    assert "Traceback" not in result.err and result.out == ""
    assert sorted((p.name, os.lstat(p).st_mode) for p in place.iterdir()) == before  # nothing replaced or added


def test_matrix_html_still_replaces_a_regular_file(cli, project, upstream, tmp_path):
    tagged_upstream(project, upstream)
    page = tmp_path / "m.html"
    page.write_text("old\n")
    result = matrix(cli, upstream, "--html", str(page))
    assert result.code == 1 and page.read_text().startswith("<!DOCTYPE html>"), result.err
