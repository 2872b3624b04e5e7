"""A repository's history, for bisect, refresh, the matrix and patch-id evidence: commits, their order,
the commits that touch some paths and their patch-ids. One part of ``GitRepo`` (``git``)."""

from __future__ import annotations

from collections.abc import Sequence

from patchmgr.io.git_objects import COMMIT_RECORD, CommitInfo, commit_records
from patchmgr.io.git_run import LITERAL_PATHS, GitCommands
from patchmgr.model.errors import GitError


class HistoryQueries(GitCommands):
    """Walks of a repository's commits (``git log``, ``rev-list``, ``merge-base``)."""

    def commit_info(self, sha: str) -> CommitInfo:
        out = self.run("show", "-s", "--format=%H%x00%P%x00%s", sha)
        full, parents, subject = out.split("\x00", 2)
        return CommitInfo(full, subject, tuple(parents.split()))

    def commit_time(self, sha: str) -> int:
        """The committer time of ``sha``, in seconds since the epoch."""
        return int(self.run("show", "-s", "--format=%ct", sha))

    def first_parent_path(self, base: str, tip: str) -> list[str]:
        """Commits from just after ``base`` up to ``tip`` along first parents, oldest first."""
        out = self.run("rev-list", "--first-parent", "--reverse", f"{base}..{tip}")
        return out.split() if out else []

    def merge_base(self, a: str, b: str) -> str | None:
        try:
            return self.run("merge-base", a, b) or None
        except GitError:
            return None

    def commits_touching(self, base: str, tip: str, paths: Sequence[str]) -> list[CommitInfo]:
        """Commits after ``base`` up to ``tip`` on ``tip``'s first-parent line that change ``paths``.

        Oldest first. A merge on that line counts when its change against its
        first parent touches the paths (git includes it under --first-parent).
        """
        return self.log_commits("--first-parent", "--reverse", f"{base}..{tip}", "--", *paths)

    def log_commits(self, *args: str) -> list[CommitInfo]:
        """``git log args`` as commits (id, parents, subject), parsed on git's own separators (NUL, LF), never
        on a CR or a form feed that a subject holds; paths after ``--`` are file names, never pathspec magic."""
        return commit_records(self.run("log", "-z", f"--format={COMMIT_RECORD}", *args, env=LITERAL_PATHS, strip=False))

    def blobs_introduced(self, revisions: Sequence[str], paths: Sequence[str]) -> list[tuple[str, str, str]]:
        """``(commit, path, blob)``, newest first, for each commit reachable from ``revisions`` whose change against
        one of its parents leaves ``path`` holding ``blob``: one ``git log`` over every line (merges against each
        parent), so a commit where some set of blobs first stands together is among them."""
        out = self.run(
            "log",
            "--full-history",
            "--diff-merges=separate",
            "--raw",
            "-z",
            "--no-renames",
            "--no-abbrev",
            "--format=%x01%H",
            *revisions,
            "--",
            *paths,
            env=LITERAL_PATHS,
            strip=False,
        )
        found: list[tuple[str, str, str]] = []
        commit, meta = "", ""
        for token in out.split("\0"):
            token = token.lstrip("\n")
            if token.startswith("\x01"):
                commit = token[1:]
            elif token.startswith(":"):
                meta = token
            elif meta:
                fields = meta.split()
                if len(fields) >= 4 and set(fields[3]) != {"0"}:
                    found.append((commit, token, fields[3]))
                meta = ""
        return found

    def paths_changed(self, base: str, tip: str) -> set[str]:
        """Every path some commit after ``base`` up to ``tip`` on its first-parent line changes (a merge against
        its first parent, as ``commits_touching`` counts it; both sides of a rename): empty when none does."""
        out = self.run(
            "log",
            "--first-parent",
            "--diff-merges=first-parent",
            "--no-renames",
            "--name-only",
            "-z",
            "--format=",
            f"{base}..{tip}",
            strip=False,
        )
        return {path.lstrip("\n") for path in out.split("\0") if path.lstrip("\n")}

    def prefetch_at(self, commit: str, paths: Sequence[str]) -> int:
        """Fetch in one request the blobs of ``paths`` at ``commit`` that a partial clone lacks: read one by one,
        each would start a lazy fetch of its own (a cold check of a 300-patch series started hundreds). Asked
        without a lazy fetch (one tree walk, ``--missing=print``); the trees are there, so one ``ls-tree`` names
        the blobs. Best effort: what cannot be fetched now is fetched (or found missing) when read. Returns how
        many blobs were asked for."""
        out = self.run("rev-list", "--objects", "--no-object-names", "--missing=print", "--no-walk", commit)
        lacking = {line[1:] for line in out.split("\n") if line.startswith("?")}
        if not lacking:
            return 0
        listed = self.tree_listing(commit, *sorted(set(paths)))
        wanted = sorted({sha for kind, sha, _path in listed if kind == "blob" and sha in lacking})
        if wanted:
            self.fetch_objects(wanted)
        return len(wanted)

    def prefetch_blobs(self, base: str, tip: str, paths: Sequence[str]) -> int:
        """Fetch in one request the blobs of ``paths`` in base..tip that a partial clone lacks.

        Reading them one by one would start one lazy fetch per blob. Best effort:
        what cannot be fetched now is fetched (or found missing) when read.
        """
        out = self.run(
            "rev-list",
            "--objects",
            "--no-object-names",
            "--missing=print",
            "--first-parent",
            tip,
            f"^{base}",
            "--",
            *paths,
            env=LITERAL_PATHS,
        )
        missing = [line[1:] for line in out.split("\n") if line.startswith("?")]
        if not missing:
            return 0
        missing += [sha for kind, sha, _path in self.tree_listing(base, *paths) if kind == "blob"]
        self.fetch_objects(missing)
        return len(missing)

    def fetch_objects(self, shas: Sequence[str]) -> None:
        """Fetch ``shas`` from origin in one request, as a partial clone's lazy fetch would one by one (best
        effort: what cannot be fetched now is fetched, or found missing, when read)."""
        try:
            self.run(
                "-c",
                "fetch.negotiationAlgorithm=noop",
                "fetch",
                "--quiet",
                "--no-tags",
                "--no-write-fetch-head",
                "--recurse-submodules=no",
                "--filter=blob:none",
                "--stdin",
                "origin",
                stdin="".join(f"{sha}\n" for sha in dict.fromkeys(shas)).encode(),
            )
        except GitError:
            pass

    def path_patch_ids(self, base: str, tip: str, paths: Sequence[str], context: int = 3) -> list[tuple[str, str]]:
        """``(patch-id, commit)`` for each commit of ``commits_touching``, its diff limited to ``paths``."""
        return self.log_patch_ids([f"{base}..{tip}"], paths, context)

    def log_patch_ids(self, revisions: Sequence[str], paths: Sequence[str], context: int = 3) -> list[tuple[str, str]]:
        """``(patch-id, commit)`` for each commit on the first-parent lines ``revisions`` name (as ``git log`` reads
        them: tips, ``^base``, ``base..tip``), its diff limited to ``paths``.

        Stable patch-ids (``git patch-id --stable``) ignore line numbers and
        whitespace, so a commit carrying a patch's change has the patch's id.
        """
        log = self.run(
            "log",
            "--first-parent",
            "--diff-merges=first-parent",
            "-p",
            f"-U{context}",
            "--no-color",
            "--no-ext-diff",
            "--no-textconv",
            "--full-index",
            "--src-prefix=a/",
            "--dst-prefix=b/",
            "--format=commit %H",
            *revisions,
            "--",
            *paths,
            env=LITERAL_PATHS,
            strip=False,
        )
        if not log.strip():
            return []
        out = self.run("patch-id", "--stable", stdin=log.encode("utf-8", "surrogateescape"))
        return [(pid, commit) for pid, commit in (line.split() for line in out.split("\n") if line)]
