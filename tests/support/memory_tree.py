"""A ``TreeReader`` (patchmgr.engine.results) over a dict of path -> bytes, for the engine's tests: no git."""

from __future__ import annotations


class Files:
    """The files of a tree held in memory; it knows no blobs and, unlike a real tree, no folders."""

    def __init__(self, files: dict[str, bytes]) -> None:
        self.files = files

    def read(self, path: str) -> bytes | None:
        return self.files.get(path)

    def read_blob(self, sha: str) -> bytes | None:
        return None


class FilesAndFolders(Files):
    """``Files`` that also knows its folders (``TreeReader.is_folder``): a patch may not create a file there."""

    def is_folder(self, path: str) -> bool:
        return any(name.startswith(path + "/") for name in self.files)
