"""Patches in and out of a repository: diffs and diffstats of two texts, a commit as a patch mail,
``git am`` of a mail (edit --onto), range-diff and patch-ids. One part of ``GitRepo`` (``git``)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from patchmgr.io import scratch
from patchmgr.io.git_run import LITERAL_PATHS, GitCommands
from patchmgr.model.errors import GitError


class PatchOperations(GitCommands):
    """Making patches with git, and applying them with ``git am``."""

    def patch_id(self, diff: bytes) -> str | None:
        """The stable patch-id of a diff or a format-patch mail, or None when it changes nothing."""
        out = self.run("patch-id", "--stable", stdin=diff)
        return out.split()[0] if out else None

    def diff_texts(self, old: bytes, new: bytes, context: int) -> str:
        """The hunks (from the first ``@@``) that turn ``old`` into ``new``, as git writes them."""
        old_sha = self.run("hash-object", "-w", "--stdin", stdin=old)
        new_sha = self.run("hash-object", "-w", "--stdin", stdin=new)
        out = self.run(
            "diff", f"-U{context}", "--no-color", "--no-ext-diff", "--no-textconv", old_sha, new_sha, strip=False
        )
        start = out.find("\n@@ ")
        return out[start + 1 :] if start >= 0 else ""

    def diffstat(self, before: Mapping[str, bytes | None], after: Mapping[str, bytes | None]) -> str:
        """The diffstat lines that ``git format-patch`` writes for a change from ``before`` to ``after``."""
        trees = []
        with scratch.folder("stat") as tmp:
            env = {**LITERAL_PATHS, "GIT_INDEX_FILE": os.path.join(tmp, "index")}
            for files in (before, after):
                self.run("read-tree", "--empty", env=env)
                for path, data in files.items():
                    if data is not None:
                        sha = self.run("hash-object", "-w", "--stdin", stdin=data)
                        self.run("update-index", "--add", "--cacheinfo", f"100644,{sha},{path}", env=env)
                trees.append(self.run("write-tree", env=env))
        return self.run("diff", "--stat=72", "--no-color", "--no-renames", *trees, strip=False)

    def full_diff(self, old: str, new: str) -> str:
        """``git diff --full-index`` from tree-ish ``old`` to ``new`` in patchmgr's format (a/ and b/ prefixes, no
        renames, three lines of context, binary files as git binary patches), whatever the user's git config
        says."""
        return self.run(
            "diff",
            "--full-index",
            "--binary",
            "--no-renames",
            "-U3",
            "--no-color",
            "--no-ext-diff",
            "--no-textconv",
            "--src-prefix=a/",
            "--dst-prefix=b/",
            old,
            new,
            strip=False,
        )

    def format_patch(self, commit: str) -> str:
        """``commit`` as one patch mail in patchmgr's format (binary files as git binary patches, which git apply
        and the engine apply), whatever the user's git config says."""
        return self.run(
            "format-patch",
            "-1",
            "--stdout",
            "--zero-commit",
            "--full-index",
            "--binary",
            "--no-signature",
            "--no-numbered",
            "--no-color",
            "--no-thread",
            "--no-attach",
            "--no-cover-letter",
            "--no-to",
            "--no-cc",
            "--no-add-header",
            "--no-base",
            "--src-prefix=a/",
            "--dst-prefix=b/",
            "--stat=72",
            commit,
            strip=False,
        )

    def am_apply(self, mail: Path, env: Mapping[str, str] | None = None) -> bool:
        """``git am -3`` of one patch mail: True when it committed, False when it stopped for a person
        (conflict markers in place, or no base to merge on); other failures are a GitError."""
        try:
            self.run(
                "am",
                "--3way",
                "--keep-cr",
                "--no-scissors",
                "--no-message-id",
                "--whitespace=nowarn",
                "--no-gpg-sign",
                "--",
                str(mail),
                env=env,
            )
            return True
        except GitError:
            if self.am_in_progress():
                return False
            raise

    def am_resume(self, action: str, env: Mapping[str, str] | None = None) -> None:
        """``git am --continue``, ``--skip`` or ``--abort``."""
        self.run("am", f"--{action}", env=env)

    def am_in_progress(self) -> bool:
        """Whether a ``git am`` stopped in this checkout and waits for --continue, --skip or --abort."""
        return (Path(self.run("rev-parse", "--absolute-git-dir")) / "rebase-apply").is_dir()

    def unmerged_paths(self) -> list[str]:
        """Paths with conflicts not yet resolved (``git add``) in the index."""
        out = self.run("diff", "--name-only", "--diff-filter=U", "-z", strip=False)
        return list(dict.fromkeys(path for path in out.split("\0") if path))

    def range_diff(self, old: str, new: str) -> str:
        """``git range-diff old new`` (two ``base..tip`` ranges), without colour."""
        return self.run("range-diff", "--no-color", "--no-dual-color", old, new, strip=False)
