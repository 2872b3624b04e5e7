"""Monolithic patch sets as `git diff` in a dirty work tree prints them, on three-file upstreams: what
`patchmgr import` reads."""

from __future__ import annotations

import re
from pathlib import Path

from support.gitrepos import BASE_TEXT, UpstreamRepo, git, git_bytes

URL = "https://example.invalid/{}.git"


def import_args(lib: UpstreamRepo, *paths: Path | str, target="t", upstream=None, dockerfile=None) -> list[str]:
    """The words of ``import`` of ``paths`` for upstream ``lib`` (its source the repository ``lib``), its URL
    read from ``dockerfile`` when one is given, else the example URL."""
    words = ["import", *map(str, paths), *(["--upstream", upstream] if upstream else []), "--target", target]
    words += ["--dockerfile", str(dockerfile)] if dockerfile else ["--git", f"lib={URL.format('lib')}"]
    return [*words, "--source", f"lib={lib.path}"]


def text_with(changes: dict[int, str], base: str = BASE_TEXT) -> str:
    lines = base.splitlines(keepends=True)
    for number, new in changes.items():
        lines[number - 1] = new + "\n"
    return "".join(lines)


def dirty_diff(repo: UpstreamRepo, base: str, files: dict[str, str]) -> bytes:
    """What `git diff` in a dirty work tree at ``base`` prints (abbreviated index lines), the tree put back."""
    branch = git(repo.path, "rev-parse", "--abbrev-ref", "HEAD")
    git(repo.path, "checkout", "-q", "--detach", base)
    try:
        for name, content in files.items():
            (repo.path / name).parent.mkdir(parents=True, exist_ok=True)
            (repo.path / name).write_text(content)
        git(repo.path, "add", "-N", ".")
        return (git(repo.path, "diff") + "\n").encode()
    finally:
        git(repo.path, "reset", "-q", "--hard")
        git(repo.path, "clean", "-qfd")
        git(repo.path, "checkout", "-q", branch)


def fill_stubs(root: Path) -> None:
    for path in sorted((root / "patches").glob("*/*.patch")):
        text = path.read_text()
        text = re.sub(
            r"^Description: TODO: describe .*$",
            f"Description: Fix {path.stem}: the upstream code breaks our training runs here, so we "
            "carry this change until upstream takes it.",
            text,
            count=1,
            flags=re.M,
        )
        path.write_text(text)


def three_file_upstream(tmp_path: Path, name: str = "lib") -> UpstreamRepo:
    repo = UpstreamRepo(tmp_path / name)
    repo.commit({"src/a.py": BASE_TEXT, "src/b.py": BASE_TEXT, "src/c.py": BASE_TEXT}, "initial")
    repo.commit({"README": "docs\n"}, "docs")
    return repo


MONOLITH = {
    "src/a.py": text_with({5: "a fix"}),
    "src/b.py": text_with({10: "b fix one", 32: "b fix two"}),
    "src/c.py": text_with({20: "c fix"}),
}


def stacked_diff(repo: Path, base: str, first: dict[str, str], second: dict[str, str]) -> bytes:
    """What `git diff` prints for ``second`` made on top of ``first`` (both files' contents at ``base`` of the
    git work tree ``repo``): a diff whose preimage is the result of ``first``, as one made after `git add`
    of a first edit. The tree is put back."""
    branch = git(repo, "rev-parse", "--abbrev-ref", "HEAD")
    git(repo, "checkout", "-q", "--detach", base)
    try:
        for files in (first, second):
            for name, content in files.items():
                (repo / name).parent.mkdir(parents=True, exist_ok=True)
                (repo / name).write_text(content)
            if files is first:
                git(repo, "add", "-A")
        return git_bytes(repo, "diff")  # as git prints it: a last context line of one space keeps its space
    finally:
        git(repo, "reset", "-q", "--hard")
        git(repo, "clean", "-qfd")
        git(repo, "checkout", "-q", branch)


def applied_monolith(repo: Path, commit: str, patch: bytes, dest: Path, exclude=()) -> Path:
    """The upstream ``repo`` at ``commit`` with the monolithic patch applied by git, in a fresh clone."""
    git(dest.parent, "clone", "-q", "--shared", "--no-checkout", str(repo), dest.name)
    git(dest, "checkout", "-q", "--detach", commit)
    git(dest, "apply", *[f"--exclude={p}" for p in exclude], "-", input=patch)
    return dest


def same_files(left: Path, right: Path, paths) -> None:
    for path in paths:
        a, b = left / path, right / path
        assert a.is_file() == b.is_file(), path
        if a.is_file():
            assert a.read_bytes() == b.read_bytes(), path
