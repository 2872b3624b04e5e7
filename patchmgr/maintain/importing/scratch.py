"""A scratch git repository for import: the pieces' diffs, and ``git apply`` for the proof.

Nothing here writes to the cache or to the project: trees and folders live in a temporary folder
that is removed when the import is done.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from patchmgr.io import scratch
from patchmgr.io.git import LITERAL_PATHS, GitRepo


class Scratch:
    def __init__(self) -> None:
        self._tmp = scratch.folder("import")
        self.root = Path(self._tmp.name)
        self.repo = GitRepo.init(self.root / "objects.git", bare=True)
        self._count = 0

    def close(self) -> None:
        self.repo.close()
        self._tmp.cleanup()

    def __enter__(self) -> Scratch:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def diff(
        self, before: Mapping[str, bytes | None], after: Mapping[str, bytes | None], modes: Mapping[str, str]
    ) -> str:
        """``git diff --full-index`` from the files ``before`` to the files ``after`` (None: absent)."""
        trees = []
        env = {**LITERAL_PATHS, "GIT_INDEX_FILE": str(self.root / "index")}
        for files in (before, after):
            self.repo.run("read-tree", "--empty", env=env)
            listing = []
            for path, data in files.items():
                if data is not None:
                    sha = self.repo.run("hash-object", "-w", "--stdin", stdin=bytes(data))
                    listing.append(f"{modes.get(path, '100644')} {sha}\t{path}\n")
            if listing:
                self.repo.run("update-index", "--index-info", stdin="".join(listing).encode(), env=env)
            trees.append(self.repo.run("write-tree", env=env))
        return self.repo.full_diff(*trees)

    def folder(self, files: Mapping[str, bytes | None]) -> GitRepo:
        """A new work tree holding ``files``."""
        self._count += 1
        path = self.root / f"tree-{self._count}"
        repo = GitRepo.init(path)
        for name, data in files.items():
            if data is not None:
                target = path / name
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(bytes(data))
        return repo


def apply(repo: GitRepo, patch: bytes, exclude: Iterable[str] = ()) -> None:
    """``git apply`` into ``repo``'s work tree (a GitError says why not)."""
    repo.run("apply", "--whitespace=nowarn", *[f"--exclude={path}" for path in exclude], "-", stdin=patch)


def holds_postimage(repo: GitRepo, patch: bytes, paths: Iterable[str]) -> None:
    """``git apply -R --check`` of ``patch``'s changes to ``paths``: every one of them is in ``repo``'s work tree."""
    repo.run(
        "apply", "-R", "--check", "--whitespace=nowarn", *[f"--include={path}" for path in paths], "-", stdin=patch
    )


def read_tree(repo: GitRepo, paths: Iterable[str]) -> dict[str, bytes | None]:
    out = {}
    for path in paths:
        file = repo.path / path
        out[path] = file.read_bytes() if file.is_file() and not os.path.islink(file) else None
    return out
