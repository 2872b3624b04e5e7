"""A real Debian source package's quilt series (issue 40): openssh's ``debian/patches`` (53 patches in bookworm),
fetched with ``apt-get source``, imported at the upstream release tag, linted (DEP-3 profile), applied (the
same files as ``dpkg-source -x`` unpacked, but those only the release tarball holds, such as ``configure``),
exported back as quilt (byte-identical to Debian's own folder) and pushed with real quilt. Opt-in: needs
``PATCHMGR_TEST_MIRRORS`` (openssh-portable's history) and apt's deb-src lines; skips with the reason."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from support.quilt_tool import files_of, need_quilt, pristine, quilt_push_all
from support.real_histories import real_history

from patchmgr.cli import main

pytestmark = pytest.mark.slow


def debian_source(package: str, into: Path) -> Path:
    """The package unpacked by ``apt-get source`` (dpkg-source -x, its patches applied), or skip."""
    if shutil.which("apt-get") is None or shutil.which("dpkg-source") is None:
        pytest.skip("apt-get and dpkg-source are not installed")
    into.mkdir()
    try:
        done = subprocess.run(["apt-get", "source", package], cwd=into, capture_output=True, text=True, timeout=600)
    except subprocess.TimeoutExpired:
        pytest.skip("apt-get source took over 10 minutes")
    if done.returncode != 0:
        pytest.skip(f"apt-get source {package} failed (no deb-src line or no network): {done.stderr.strip()[-300:]}")
    return next(p for p in into.iterdir() if p.is_dir())


def test_openssh_debian_patches_import_lint_apply_and_quilt_round_trip(tmp_path, capsys):
    need_quilt()
    mirror = real_history("openssh")
    unpacked = debian_source("openssh", tmp_path / "deb")
    version = unpacked.name.removeprefix("openssh-")  # 9.2p1
    tag = "V_" + version.upper().replace(".", "_").replace("P", "_P")
    root = tmp_path / "proj"
    (root / "manifests").mkdir(parents=True)
    (root / "patches").mkdir()
    source = ["--source", f"openssh={mirror}", "--root", str(root)]

    def pm(*args: str) -> tuple[int, str]:
        code = main([*args, *(source if args[0] != "lint" else source[2:])])
        captured = capsys.readouterr()
        return code, captured.out + captured.err

    git = ["--git", "openssh=https://github.com/openssh/openssh-portable.git", "--pin", f"openssh={tag}"]
    code, out = pm("import", "--target", "debian", str(unpacked / "debian/patches"), *git)
    assert code == 0, out
    names = [n for n in (unpacked / "debian/patches/series").read_text().split() if not n.startswith("#")]
    assert len(names) >= 50
    code, out = pm("lint")
    assert code == 0, out
    code, out = pm("apply", "--target", "debian", "--into", str(tmp_path / "build"))
    assert code == 0, out
    ours, debians = files_of(tmp_path / "build/openssh"), files_of(unpacked)
    debians = {path: data for path, data in debians.items() if not path.startswith(("debian/", ".pc/"))}
    assert set(ours) <= set(debians)
    assert [path for path in ours if ours[path] != debians[path]] == []
    out_dir = tmp_path / "out/patches"
    code, out = pm("export", "--target", "debian", "--format", "quilt", "--into", str(out_dir))
    assert code == 0, out
    assert files_of(out_dir) == {n: (unpacked / "debian/patches" / n).read_bytes() for n in [*names, "series"]}
    quilted = pristine(mirror, tag, tmp_path / "quilted")
    quilt_push_all(quilted, out_dir)
    assert files_of(quilted) == ours
