"""Real Debian source packages' quilt series (issue 40), fetched with ``apt-get source`` (opt-in: needs apt's
deb-src lines and the network; skips with the reason).

- openssh's ``debian/patches`` (53 patches in bookworm) imported at the upstream release tag of its real
  history (``PATCHMGR_TEST_MIRRORS``): linted (DEP-3 profile), applied (the same files as ``dpkg-source -x``
  unpacked, but those only the release tarball holds, such as ``configure``), exported back as quilt
  (byte-identical to Debian's own folder) and pushed with real quilt.
- The issue's "done when" on recode, groff, ncurses and openssh (92 patches in bookworm, recode's two of them
  Latin-1, not UTF-8), each pinned at a git repository made of its ``.orig`` tarball, the release Debian
  builds from: ``import`` of the series, ``lint``, ``apply`` identical to the tree ``dpkg-source -x`` unpacked
  (every file, but ``debian/`` and quilt's ``.pc/``), ``export --format quilt`` byte-identical to
  ``debian/patches`` (its ``series`` too), ``quilt push -a`` of it on the pristine tree identical to ``apply``,
  and ``import`` of the exported folder giving the same patch files back.
"""

from __future__ import annotations

import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest
from support.quilt_tool import files_of, need_quilt, pristine, quilt_push_all, quilt_series
from support.real_histories import real_history

from patchmgr.cli import main
from patchmgr.model.quilt_series import patch_id_of

pytestmark = pytest.mark.slow


# the Debian release these packages were checked on (apt-get source takes the newest of every deb-src line)
SUITE = "bookworm"


def debian_source(package: str, into: Path) -> Path:
    """The package of ``SUITE`` unpacked by ``apt-get source`` (dpkg-source -x, its patches applied), or skip."""
    if shutil.which("apt-get") is None or shutil.which("dpkg-source") is None:
        pytest.skip("apt-get and dpkg-source are not installed")
    into.mkdir()
    try:
        done = subprocess.run(
            ["apt-get", "source", f"{package}/{SUITE}"], cwd=into, capture_output=True, text=True, timeout=600
        )
    except subprocess.TimeoutExpired:
        pytest.skip("apt-get source took over 10 minutes")
    if done.returncode != 0:
        pytest.skip(
            f"apt-get source {package}/{SUITE} failed (no {SUITE} deb-src line or no network): "
            f"{done.stderr.strip()[-300:]}"
        )
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


# Debian's packages for the done-when: small, DEP-3 headers on every patch, recode's 02 and 07 in Latin-1
DONE_WHEN = ("recode", "groff", "ncurses", "openssh")


def release_repo(download: Path, into: Path) -> Path:
    """The upstream release Debian builds from, its ``.orig`` tarball, as a git repository (one commit, tagged
    ``orig``): the pin of a package whose upstream has no history here."""
    tarball = next(p for p in download.glob("*.orig.tar.*") if p.suffix != ".asc")  # not its signature
    into.mkdir()
    with tarfile.open(tarball) as tar:
        tar.extractall(into, filter="data")  # owned by whoever runs the test, as git wants its work tree
    (top,) = into.iterdir()  # the tarball's one folder
    for step in (["init", "-q"], ["add", "-A", "-f"], ["commit", "-qm", tarball.name], ["tag", "orig"]):
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.org", *step], cwd=top, check=True)
    return top


def debian_files(unpacked: Path) -> dict[str, bytes]:
    """The upstream's files as ``dpkg-source -x`` left them, patches applied: without ``debian/`` and ``.pc/``."""
    return {path: data for path, data in files_of(unpacked).items() if not path.startswith(("debian/", ".pc/"))}


@pytest.fixture(scope="module")
def packages(tmp_path_factory) -> dict[str, tuple[Path, Path]]:
    """Each package of the done-when: (the tree dpkg-source -x unpacked, the release as a git repository)."""
    if shutil.which("quilt") is None:
        pytest.skip("quilt is not installed (apt-get install quilt; .ci/run installs it)")
    found = {}
    for package in DONE_WHEN:
        download = tmp_path_factory.mktemp(package)
        unpacked = debian_source(package, download / "deb")
        found[package] = (unpacked, release_repo(download / "deb", download / "release"))
    return found


def test_the_done_when_packages_hold_50_patches_some_not_utf8(packages):
    names = {package: quilt_series_names(unpacked) for package, (unpacked, _) in packages.items()}
    assert sum(len(n) for n in names.values()) >= 50
    not_utf8 = []
    for package, (unpacked, _) in packages.items():
        for name in names[package]:
            try:
                (unpacked / "debian/patches" / name).read_bytes().decode("utf-8")
            except UnicodeDecodeError:
                not_utf8.append(name)
    assert not_utf8, "none of the packages' patches is Latin-1 any more: pick another package"


@pytest.mark.parametrize("package", DONE_WHEN)
def test_import_lint_apply_and_quilt_round_trip_as_dpkg_source_and_quilt_do(packages, package, tmp_path, capsys):
    unpacked, release = packages[package]
    root = tmp_path / "proj"
    (root / "manifests").mkdir(parents=True)
    (root / "patches").mkdir()
    source = ["--source", f"{package}={release}"]

    def pm(*args: str) -> tuple[int, str]:
        code = main([*args, "--root", str(root), *(source if args[0] != "lint" else [])])
        captured = capsys.readouterr()
        return code, captured.out + captured.err

    pin = ["--git", f"{package}=https://example.org/{package}.git", "--pin", f"{package}=orig"]
    code, out = pm("import", "--target", "debian", str(unpacked / "debian/patches"), *pin)
    assert code == 0, out
    code, out = pm("lint")
    assert code == 0, out
    code, out = pm("apply", "--target", "debian", "--into", str(tmp_path / "build"))
    assert code == 0, out
    ours = files_of(tmp_path / "build" / package)
    assert ours == debian_files(unpacked)
    out_dir = tmp_path / "out"
    code, out = pm("export", "--target", "debian", "--format", "quilt", "--into", str(out_dir))
    assert code == 0, out
    assert files_of(out_dir) == files_of(unpacked / "debian/patches")
    quilted = pristine(release, "orig", tmp_path / "quilted")
    quilt_push_all(quilted, out_dir)
    assert files_of(quilted) == ours
    code, out = pm("import", "--target", "again", str(out_dir), "--upstream", package, *pin)
    assert code == 0, out
    held = root / "patches" / package
    for name in quilt_series_names(unpacked):
        assert (held / f"{patch_id_of(name)}.patch").read_bytes() == (out_dir / name).read_bytes()


def quilt_series_names(unpacked: Path) -> list[str]:
    """The patches of the package's series, as quilt lists them."""
    return quilt_series(unpacked / "debian/patches")
