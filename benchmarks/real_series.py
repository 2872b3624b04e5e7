"""Real series for the real-size cases (``cases_real.py``), built once under the benchmark cache.

- Megatron-LM: ``patches`` consecutive real first-parent commits of the local mirror, ``git format-patch``ed into
  a series pinned at the commit before them (default: the 600th to the 301st first-parent commit before the
  mirror's default branch tip, so a ref 300 commits ahead of the series exists too).
- openssh: Debian's quilt series of openssh 9.2p1 (bookworm: 53 patches) from its source package (the
  ``.debian.tar.xz`` and the orig tarball, in a folder given by ``--debian-source``), pinned at the upstream tag
  ``V_9_2_P1`` of the local openssh-portable mirror, with the twelve release tags after it as matrix columns; and
  the pristine tree (the orig tarball unpacked) with the series under ``debian/patches`` for ``quilt push -a``.

Nothing here is fetched: the mirrors and the source package are found on this machine, or the case is skipped.
"""

from __future__ import annotations

import shutil
import tarfile
from dataclasses import dataclass
from pathlib import Path

import synth
from fixtures import Bench, git

MEGATRON = "NVIDIA+Megatron-LM"
OPENSSH = "openssh+openssh-portable"
OPENSSH_PIN_TAG = "V_9_2_P1"
OPENSSH_VERSION = "9.2p1"
OPENSSH_COLUMNS = 12  # the release tags after the pin that the matrix shows


@dataclass(frozen=True)
class RealSeries:
    name: str  # the target and the upstream name
    repo: Path  # the clone patchmgr is pointed at (--source NAME=repo)
    project: Path  # manifests/ and patches/
    pin: str
    ids: tuple[str, ...]
    note: str  # where it came from, in one line
    left_out: tuple[str, ...] = ()  # patches of the real series the project leaves out, each with why

    @property
    def patch_files(self) -> list[Path]:
        return [self.project / "patches" / self.name / f"{pid}.patch" for pid in self.ids]

    def source(self) -> list[str]:
        return ["--source", f"{self.name}={self.repo}"]


def mirror(mirrors: Path, folder: str) -> Path | None:
    repo = mirrors / folder / "repo"
    return repo if (repo / "HEAD").is_file() or (repo / ".git").exists() else None


def shared_clone(source: Path, dest: Path, tags: bool = True) -> Path:
    """A bare clone of a read-only mirror that borrows its objects (nothing is written into the mirror)."""
    if not (dest / "HEAD").is_file():
        shutil.rmtree(dest, ignore_errors=True)
        dest.parent.mkdir(parents=True, exist_ok=True)
        git("clone", "-q", "--bare", "--shared", *([] if tags else ["--no-tags"]), str(source), str(dest))
    return dest


def write_manifest(project: Path, name: str, pin: str, ids: list[str], extra: dict | None = None) -> None:
    synth.write_manifest(
        project / "manifests" / f"{name}.toml",
        name,
        {name: {"git": f"https://bench.invalid/{name}.git", "commit": pin, **(extra or {}), "patches": ids}},
    )


# -- Megatron-LM: consecutive real commits as a series -------------------------------------------------
def megatron_series(bench: Bench, mirrors: Path, patches: int, ahead: int = 300) -> RealSeries | str:
    """The series, or why it cannot be built here."""
    source = mirror(mirrors, MEGATRON)
    if source is None:
        return f"no local mirror {mirrors / MEGATRON / 'repo'} (--mirrors or $PATCHMGR_MIRRORS)"
    root = bench.cache / "real" / f"megatron-{patches}"
    repo = shared_clone(source, bench.cache / "real" / "megatron.git")
    tip = git("rev-parse", "HEAD", cwd=repo)
    first_parents = git("rev-list", "--first-parent", f"--max-count={patches + ahead + 1}", tip, cwd=repo).split()
    if len(first_parents) < patches + ahead + 1:
        return f"the mirror's default branch has fewer than {patches + ahead + 1} first-parent commits"
    pin = first_parents[patches + ahead]
    end = first_parents[ahead]
    ids_file = root / "ids.txt"
    if not (ids_file.is_file() and (root / "pin.txt").read_text() == pin):
        shutil.rmtree(root, ignore_errors=True)
        folder = root / "patches" / "megatron"
        folder.mkdir(parents=True)
        # --first-parent keeps the series linear even where the branch merged; merges themselves are skipped by
        # format-patch, so the range is checked to have none
        merges = git("rev-list", "--first-parent", "--merges", f"{pin}..{end}", cwd=repo).split()
        if merges:
            return f"the range {pin[:12]}..{end[:12]} has merges: {len(merges)}"
        # patchmgr keeps binary files and modes other than 100644 out of patches: the range's binary paths
        # (numstat "-") and executable or symbolic-link files are left out of every patch (a commit that touched
        # only those makes none); renames are written as a deletion and a creation
        numstat = git("log", "--first-parent", "--numstat", "--no-renames", "--format=", f"{pin}..{end}", cwd=repo)
        binary = {line.split("\t", 2)[2] for line in numstat.splitlines() if line.startswith("-\t-\t")}
        summary = git("log", "--first-parent", "--summary", "--no-renames", "--format=", f"{pin}..{end}", cwd=repo)
        # a created file of another mode, and every mode change (its line names 100644 too: 100755 => 100644)
        modes = {
            line.split()[-1]
            for line in summary.splitlines()
            if line.lstrip().startswith("mode change") or (" mode " in line and "100644" not in line)
        }
        binary = sorted(binary | modes)
        spec = ["--", ".", *(f":(exclude,literal){path}" for path in binary)]
        range_ = f"{pin}..{end}"
        flags = ["-q", "--zero-commit", "--no-signature", "--no-renames", "-o", str(folder)]
        git("format-patch", *flags, range_, *spec, cwd=repo)
        (root / "binary.txt").write_text("\n".join(binary))
        files = sorted(folder.glob("*.patch"))
        ids = [f"{index:04d}" for index in range(1, len(files) + 1)]
        for pid, path in zip(ids, files, strict=True):
            path.rename(folder / f"{pid}.patch")
        write_manifest(root, "megatron", pin, ids)
        ids_file.write_text("\n".join(ids))
        (root / "pin.txt").write_text(pin)
    ids = tuple(ids_file.read_text().split())
    binary = len((root / "binary.txt").read_text().split())
    note = (
        f"Megatron-LM: {len(ids)} first-parent commits {pin[:12]}..{end[:12]} (pin {pin[:12]}), format-patch; "
        f"{binary} binary or executable files left out of the patches (patchmgr refuses those)"
    )
    return RealSeries("megatron", repo, root, pin, ids, note)


# -- openssh: Debian's quilt series ------------------------------------------------------------------------
def debian_files(debian: Path | None) -> tuple[Path, Path] | str:
    if debian is None:
        return "no Debian source folder (--debian-source or $PATCHMGR_BENCH_DEBIAN)"
    debs = sorted(debian.glob(f"openssh_{OPENSSH_VERSION}-*.debian.tar.xz"))
    orig = debian / f"openssh_{OPENSSH_VERSION}.orig.tar.gz"
    if not debs or not orig.is_file():
        return (
            f"{debian} lacks openssh_{OPENSSH_VERSION}-*.debian.tar.xz or its orig tarball "
            "(`apt-get source --download-only openssh` with bookworm's deb-src)"
        )
    return debs[-1], orig


def openssh_series(bench: Bench, mirrors: Path, debian: Path | None) -> tuple[RealSeries, Path] | str:
    """The series as a patchmgr project and the pristine tree with ``debian/patches``, or why not here."""
    source = mirror(mirrors, OPENSSH)
    if source is None:
        return f"no local mirror {mirrors / OPENSSH / 'repo'} (--mirrors or $PATCHMGR_MIRRORS)"
    files = debian_files(debian)
    if isinstance(files, str):
        return files
    deb, orig = files
    root = bench.cache / "real" / f"openssh-{deb.name.removesuffix('.debian.tar.xz')}"
    repo = bench.cache / "real" / "openssh.git"
    tags = openssh_repo(source, repo)
    pin = git("rev-parse", f"{OPENSSH_PIN_TAG}^{{commit}}", cwd=repo)
    pristine = root / "pristine"
    if not (root / "ids.txt").is_file():
        shutil.rmtree(root, ignore_errors=True)
        unpacked = root / "unpacked"
        unpacked.mkdir(parents=True)
        with tarfile.open(orig) as archive:
            archive.extractall(unpacked, filter="tar")
        (top,) = unpacked.iterdir()
        top.rename(pristine)
        with tarfile.open(deb) as archive:
            archive.extractall(pristine, filter="tar")
        series = [
            line.split()[0]
            for line in (pristine / "debian" / "patches" / "series").read_text().splitlines()
            if line.strip() and not line.startswith("#")
        ]
        ids, left_out = load_into_project(root, pristine / "debian" / "patches", series)
        write_manifest(root, "openssh", pin, ids, {"tag-pattern": "V_*"})
        (root / "ids.txt").write_text("\n".join(ids))
        (root / "left-out.txt").write_text("\n".join(left_out))
    ids = tuple((root / "ids.txt").read_text().split())
    left = tuple(line for line in (root / "left-out.txt").read_text().splitlines() if line)
    note = (
        f"openssh: Debian's {deb.name.removesuffix('.debian.tar.xz')} quilt series, {len(ids)} patches pinned at "
        f"{OPENSSH_PIN_TAG} ({pin[:12]}); columns {', '.join(tags)}"
    )
    return RealSeries("openssh", repo, root, pin, ids, note, left), pristine


def openssh_repo(source: Path, repo: Path) -> list[str]:
    """A clone with the pin's tag and the twelve release tags after it only (so ``V_*`` picks exactly those, in
    whatever order the chooser takes them); its branch ends at the last of them."""
    listed = git("tag", "-l", "V_*", "--sort=v:refname", cwd=source).split()
    start = listed.index(OPENSSH_PIN_TAG)
    wanted = listed[start : start + OPENSSH_COLUMNS + 1]
    if not (repo / "HEAD").is_file():
        shared_clone(source, repo, tags=False)
        for tag in wanted:
            git("tag", tag, git("rev-parse", f"{tag}^{{commit}}", cwd=source), cwd=repo)
        head = git("symbolic-ref", "HEAD", cwd=repo)
        git("update-ref", head, f"{wanted[-1]}^{{commit}}", cwd=repo)
    return wanted[1:]


def load_into_project(root: Path, patches: Path, series: list[str]) -> tuple[list[str], list[str]]:
    """Copy each patch of the series that patchmgr reads into ``patches/openssh/``; the rest, with why."""
    from patchmgr.model.patchfile import read_patch

    folder = root / "patches" / "openssh"
    folder.mkdir(parents=True)
    ids, left_out = [], []
    for name in series:
        pid = Path(name).name.removesuffix(".patch").removesuffix(".diff")
        target = folder / f"{pid}.patch"
        shutil.copyfile(patches / name, target)
        try:
            read_patch(target, "openssh", pid)
        except Exception as error:  # noqa: BLE001 - any refusal leaves it out, said why
            target.unlink()
            left_out.append(f"{name}: {str(error).splitlines()[0]}")
            continue
        ids.append(pid)
    return ids, left_out


def quilt_ready() -> bool:
    return shutil.which("quilt") is not None
