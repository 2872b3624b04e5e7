"""Real git upstreams and patchmgr projects in temporary folders, for the tests."""

from __future__ import annotations

import json
import os
import stat
import subprocess
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

GIT_ENV = {
    "GIT_AUTHOR_NAME": "Upstream Dev",
    "GIT_AUTHOR_EMAIL": "dev@upstream.example",
    "GIT_COMMITTER_NAME": "Upstream Dev",
    "GIT_COMMITTER_EMAIL": "dev@upstream.example",
    "GIT_AUTHOR_DATE": "2026-01-01T00:00:00+00:00",
    "GIT_COMMITTER_DATE": "2026-01-01T00:00:00+00:00",
}


def git_bytes(cwd: Path, *args: str, input: bytes | None = None) -> bytes:
    """What ``git args`` writes, as it wrote it: the fixed author and dates, no user config; it must succeed."""
    env = {**os.environ, **GIT_ENV, "GIT_CONFIG_GLOBAL": os.devnull}
    return subprocess.run(["git", *args], cwd=cwd, env=env, input=input, capture_output=True, check=True).stdout


def git(cwd: Path, *args: str, input: bytes | None = None) -> str:
    return git_bytes(cwd, *args, input=input).decode().strip()


def format_patch_of_head(cwd: Path) -> bytes:
    """The mail ``git format-patch`` writes for HEAD, as the tests' patches are made (no commit id, no signature)."""
    return git_bytes(cwd, "format-patch", "-1", "--stdout", "--zero-commit", "--full-index", "--no-signature", "HEAD")


def write_files(root: Path, files: Mapping[str, str | bytes | None]) -> None:
    """Write ``files`` below ``root`` (text as UTF-8, bytes as they are); None deletes the file."""
    for name, content in files.items():
        target = root / name
        if content is None:
            target.unlink()
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content.encode() if isinstance(content, str) else content)


@contextmanager
def detached_at(repo: Path, base: str, force: bool = False) -> Iterator[None]:
    """HEAD detached at ``base`` for the block (commits made there leave the branch alone), then the branch back."""
    branch = git(repo, "rev-parse", "--abbrev-ref", "HEAD")
    git(repo, "checkout", "-q", "--detach", base)
    try:
        yield
    finally:
        git(repo, "checkout", "-q", *(["-f"] if force else []), branch)


class UpstreamRepo:
    """A real upstream git repository that tests grow commit by commit."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.mkdir(parents=True)
        git(path, "init", "-q", "-b", "main")

    def commit(self, files: Mapping[str, str | bytes | None], message: str = "change") -> str:
        write_files(self.path, files)
        git(self.path, "add", "-A")
        git(self.path, "commit", "-q", "--allow-empty", "-m", message)
        return self.head()

    def head(self) -> str:
        return git(self.path, "rev-parse", "HEAD")

    def read(self, name: str, ref: str = "HEAD") -> str:
        return git(self.path, "show", f"{ref}:{name}") + "\n"

    def make_patch(
        self,
        base: str,
        files: Mapping[str, str | bytes | None],
        subject: str,
        body: str = "Why: the upstream code breaks our training runs in a specific way here.",
        fields: str = "Origin: vendor\nUpstream-Status: Pending",
    ) -> bytes:
        """A real format-patch of ``files`` changed on top of ``base``; the repo's branch is untouched."""
        with detached_at(self.path, base):
            self.commit(files, f"{subject}\n\n{body}\n\n{fields}\n")
            return format_patch_of_head(self.path)


class Project:
    """A patchmgr project folder with manifests and patches."""

    def __init__(self, root: Path) -> None:
        self.root = root
        (root / "manifests").mkdir(parents=True)
        (root / "patches").mkdir()

    def add_patch(self, upstream: str, patch_id: str, data: bytes) -> Path:
        path = self.root / "patches" / upstream / f"{patch_id}.patch"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        return path

    def manifest(self, target: str, upstreams: dict[str, dict], extra: str = "") -> Path:
        lines = ["[target]", f'name = "{target}"', 'description = "test target"', extra]
        for name, spec in upstreams.items():
            lines.append(f"[upstreams.{name}]")
            for key, value in spec.items():
                lines.append(f"{key} = {json.dumps(value)}")
        path = self.root / "manifests" / f"{target}.toml"
        path.write_text("\n".join(lines) + "\n")
        return path


BASE_TEXT = "".join(f"line {i}\n" for i in range(1, 41))


def make_series(
    repo: UpstreamRepo,
    base: str,
    steps: list[tuple[dict[str, str | None], str]],
    fields: str = "Origin: vendor\nUpstream-Status: Pending",
) -> list[bytes]:
    """format-patch mails of ``steps`` committed one on top of the other from ``base``, as a real series."""
    mails = []
    with detached_at(repo.path, base):
        for files, subject in steps:
            repo.commit(files, f"{subject}\n\nWhy: {subject.lower()} keeps our runs correct.\n\n{fields}\n")
            mails.append(format_patch_of_head(repo.path))
    return mails


def merge_no_ff(repo: UpstreamRepo, branch: str, message: str) -> str:
    git(repo.path, "merge", "-q", "--no-ff", "-m", message, branch)
    return repo.head()


def spy(path: Path, marker: Path) -> Path:
    """An executable that records that it ran."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\necho \"$0 $*\" >> '{marker}'\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


def plain_git(
    cwd: Path, *args: str, env: dict | None = None, input: bytes | None = None
) -> subprocess.CompletedProcess:
    """``git args`` as ``git`` runs it, but its exit status is the caller's to judge."""
    return subprocess.run(
        ["git", *args],
        cwd=cwd,
        input=input,
        capture_output=True,
        env={**os.environ, **GIT_ENV, "GIT_CONFIG_GLOBAL": os.devnull, **(env or {})},
    )
