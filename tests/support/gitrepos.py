"""Real git upstreams and patchmgr projects in temporary folders, for the tests."""

from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path

GIT_ENV = {
    "GIT_AUTHOR_NAME": "Upstream Dev",
    "GIT_AUTHOR_EMAIL": "dev@upstream.example",
    "GIT_COMMITTER_NAME": "Upstream Dev",
    "GIT_COMMITTER_EMAIL": "dev@upstream.example",
    "GIT_AUTHOR_DATE": "2026-01-01T00:00:00+00:00",
    "GIT_COMMITTER_DATE": "2026-01-01T00:00:00+00:00",
}


def git(cwd: Path, *args: str, input: bytes | None = None) -> str:
    env = {**os.environ, **GIT_ENV, "GIT_CONFIG_GLOBAL": os.devnull}
    done = subprocess.run(["git", *args], cwd=cwd, env=env, input=input, capture_output=True, check=True)
    return done.stdout.decode().strip()


class UpstreamRepo:
    """A real upstream git repository that tests grow commit by commit."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.mkdir(parents=True)
        git(path, "init", "-q", "-b", "main")

    def commit(self, files: dict[str, str | None], message: str = "change") -> str:
        for name, content in files.items():
            target = self.path / name
            if content is None:
                target.unlink()
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(content.encode())
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
        files: dict[str, str | None],
        subject: str,
        body: str = "Why: the upstream code breaks our training runs in a specific way here.",
        fields: str = "Origin: vendor\nUpstream-Status: Pending",
    ) -> bytes:
        """A real format-patch of ``files`` changed on top of ``base``; the repo's branch is untouched."""
        branch = git(self.path, "rev-parse", "--abbrev-ref", "HEAD")
        git(self.path, "checkout", "-q", "--detach", base)
        try:
            self.commit(files, f"{subject}\n\n{body}\n\n{fields}\n")
            return subprocess.run(
                ["git", "format-patch", "-1", "--stdout", "--zero-commit", "--full-index", "--no-signature", "HEAD"],
                cwd=self.path,
                capture_output=True,
                check=True,
                env={**os.environ, **GIT_ENV},
            ).stdout
        finally:
            git(self.path, "checkout", "-q", branch)


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
    branch = git(repo.path, "rev-parse", "--abbrev-ref", "HEAD")
    git(repo.path, "checkout", "-q", "--detach", base)
    mails = []
    try:
        for files, subject in steps:
            repo.commit(files, f"{subject}\n\nWhy: {subject.lower()} keeps our runs correct.\n\n{fields}\n")
            mails.append(
                subprocess.run(
                    [
                        "git",
                        "format-patch",
                        "-1",
                        "--stdout",
                        "--zero-commit",
                        "--full-index",
                        "--no-signature",
                        "HEAD",
                    ],
                    cwd=repo.path,
                    capture_output=True,
                    check=True,
                    env={**os.environ, **GIT_ENV},
                ).stdout
            )
    finally:
        git(repo.path, "checkout", "-q", branch)
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


def plain_git(cwd: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["git", *args],
        cwd=cwd,
        capture_output=True,
        env={**os.environ, **GIT_ENV, "GIT_CONFIG_GLOBAL": os.devnull, **(env or {})},
    )
