"""The edit kill-point suites (tests/test_kill_edit_*.py): SIGKILL at every step of ``edit --onto`` (into an
empty folder, and over an edit checkout at the pin), ``edit --continue``, ``edit --skip`` and ``edit --abort``
(with hand-made work that must be saved).

The upstream is a real git repository: a pin with a series of three patches, and a newer ref ``v2`` where
the first patch conflicts, the second applies, and the third's change was committed upstream (the move
leaves it out). Each command is killed at step 1, 2, 3, ... (PATCHMGR_FAULT_KILL_AT) until one gets
through. After each kill the next command recovers first and says so; the edit folder must then be
exactly as before the run (rolled back, or never started) or exactly as an uninterrupted run leaves it
(finished), as it said. The observer is a command that recovers and then refuses, changing nothing, in
both of those states: ``edit --continue`` where the state before has no move under way, else ``edit --onto``
without ``--force`` (the checkout holds work not yet exported, before and after). A command that recovers
must say so even when it then refuses: otherwise nobody learns that the checkout was rolled back.

What is compared (``edit_state``) is what a person and patchmgr see of the checkout, stable across runs:
its files, HEAD, every ref (branches, tags, the notes, the old series; a saved branch's UTC time
normalised), the index by content (unmerged stages included), git am's state, the config, and every file
under ``.git`` that patchmgr writes (the record, the queued mails, any journal); and whatever lies beside
the checkout (staging, a folder moved aside), a lock file alone not counting. Commit and note dates are
fixed (GIT_COMMITTER_DATE), so a resumed move makes the very commits an uninterrupted one does.

Each scenario asserts its own minimum of kill points (``MINIMUM``); tests/test_kill_point_minimums.py checks
that every scenario has one and that together they are at least ``MIN_TOTAL`` (issue 24).

A pytest plugin (tests/conftest.py registers it): the fixtures ``fixed_dates`` and ``edit_scene``.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

import pytest

from support.commands import edit_args
from support.gitrepos import BASE_TEXT, GIT_ENV, git, make_series
from support.reliability import kill_every_step, replace_tree, run

MIN_TOTAL = 40  # new kill points over edit --onto, --continue, --skip and --abort (issue 24)
MINIMUM = {  # scenario test -> the kill points it must reach on its own (it had 19, 19, 16, 16 and 10 when written)
    "test_kill_edit_onto_into_an_empty_folder": 16,
    "test_kill_edit_onto_over_an_edit_checkout": 16,
    "test_kill_edit_continue": 12,
    "test_kill_edit_skip": 12,
    "test_kill_edit_abort_keeps_hand_made_work": 8,
}
PATCHES = ["vendor-ten", "vendor-thirty", "readme-fix"]  # at v2: conflicts, applies, carried upstream
VENDOR = BASE_TEXT.replace("line 10\n", "vendor 10\n")
UPSTREAM = BASE_TEXT.replace("line 10\n", "upstream 10\n")
RESOLVED = BASE_TEXT.replace("line 10\n", "upstream 10, and vendor\n")
README_FIX = "upstream, with the vendor's fix\n"
SAVED = re.compile(r"patchmgr-saved/\d{8}T\d{6}Z")
WRITTEN_BY_PATCHMGR = re.compile(r"patchmgr")  # names under .git that patchmgr writes (record, mails, journal)
AM_STATE = ("rebase-apply", "rebase-merge", "MERGE_HEAD", "MERGE_MSG", "CHERRY_PICK_HEAD")


@pytest.fixture
def fixed_dates(monkeypatch):
    """git am and git notes stamp commits with the time; fixed, two runs make the same commits."""
    monkeypatch.setenv("GIT_COMMITTER_DATE", GIT_ENV["GIT_COMMITTER_DATE"])
    monkeypatch.setenv("GIT_AUTHOR_DATE", GIT_ENV["GIT_AUTHOR_DATE"])


class Scene:
    """The project, the upstream at the pin and at v2, and the edit folder in a folder of its own."""

    def __init__(self, tmp_path: Path, project, upstream) -> None:
        self.project, self.upstream = project, upstream
        self.pin = upstream.head()
        mails = make_series(
            upstream,
            self.pin,
            [
                ({"src/mod.py": VENDOR}, "Vendor line ten"),
                ({"src/mod.py": VENDOR.replace("line 30\n", "vendor 30\n")}, "Vendor line thirty"),
                ({"README": README_FIX}, "Fix the readme"),
            ],
        )
        for patch_id, mail in zip(PATCHES, mails, strict=True):
            project.add_patch("lib", patch_id, mail)
        project.manifest(
            "t", {"lib": {"git": "https://example.invalid/lib.git", "commit": self.pin, "patches": PATCHES}}
        )
        self.carrier = upstream.commit({"README": README_FIX}, "Take the vendor's readme fix (#7)")
        self.new = upstream.commit({"src/mod.py": UPSTREAM}, "Rewrite line ten")
        git(upstream.path, "tag", "v2")
        self.place = tmp_path / "edits"  # the edit folder and whatever a run leaves beside it
        self.into = self.place / "work"
        self.place.mkdir()
        self.saved = tmp_path / "saved-place"

    def edit(self, *more: str) -> list[str]:
        return [*edit_args(self.into, self.upstream.path, *more), "--root", str(self.project.root)]

    def onto(self) -> list[str]:
        return self.edit("--onto", "v2")

    def resume(self, action: str) -> list[str]:
        return ["edit", f"--{action}", "--into", str(self.into), "--root", str(self.project.root)]

    def must(self, args: list[str], code: int = 0) -> str:
        """Run ``args`` through the command line (in a forked process), expecting exit ``code``."""
        got, output = run(args)
        assert got == code, output
        return output

    def keep(self) -> dict[str, str]:
        """The place as it is now becomes the state to restore before each run; its snapshot."""
        replace_tree(self.place, self.saved)
        return edit_state(self.into)

    def restore(self) -> None:
        replace_tree(self.saved, self.place)

    def outcome_of(self, args: list[str], code: int, check=None) -> dict[str, str]:
        """The state an uninterrupted run of ``args`` leaves (exit ``code``), made here, looked at (``check``,
        given what the run said) and then undone."""
        output = self.must(args, code)
        after = edit_state(self.into)
        if check:
            check(" ".join(output.split()))
        self.restore()
        return after

    def observer(self, args: list[str]):
        """``observe`` for ``kill_every_step``: run ``args`` (which must refuse, exit 1), then the state and
        everything it said (its notes, wrapped or not, are found in the whole output)."""

        def observe():
            code, output = run(args)
            assert code == 1 and "Traceback" not in output, output
            return edit_state(self.into), [" ".join(output.split())]

        return observe

    def stopped(self) -> None:
        """The move to v2 stopped at vendor-ten, its conflict markers in src/mod.py."""
        self.must(self.onto(), 1)
        text = (self.into / "src/mod.py").read_text()
        assert "<<<<<<< " in text and "upstream 10" in text and "vendor 10" in text

    def resolved(self) -> None:
        """The conflict resolved by hand and git add-ed, not yet continued."""
        (self.into / "src/mod.py").write_text(RESOLVED)
        git(self.into, "add", "src/mod.py")


@pytest.fixture
def edit_scene(tmp_path, project, upstream, fixed_dates) -> Scene:
    """The upstream, the project and the edit folder of one scenario, commit dates fixed."""
    return Scene(tmp_path, project, upstream)


# -- what is compared --------------------------------------------------------------------------
def _digest(path: Path) -> str:
    if path.is_symlink():
        return "link:" + os.readlink(path)
    if path.is_dir():
        return "dir"
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _files(root: Path, prefix: str, skip_git: bool) -> dict[str, str]:
    found = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if skip_git and rel.parts[0] == ".git":
            continue
        if path.name == "lock" and path.is_file():
            continue  # a lock file is not state: patchmgr leaves it where it locked
        if path.is_dir() and not path.is_symlink() and all(p.name == "lock" for p in path.rglob("*")):
            continue  # a folder holding nothing but a lock
        found[prefix + rel.as_posix()] = _digest(path)
    return found


def _entry(path: Path, name: str) -> dict[str, str]:
    """A file (or link) as one entry, a folder as its files."""
    if path.is_dir() and not path.is_symlink():
        return _files(path, f"{name}/", skip_git=False)
    return {name: _digest(path)}


def edit_state(into: Path) -> dict[str, str]:
    """What the edit folder ``into`` holds, and what lies beside it (see the module's docstring)."""
    state: dict[str, str] = {}
    for entry in sorted(into.parent.iterdir()):
        if entry != into:
            state.update(_entry(entry, f"(beside) {entry.name}"))
    if not into.exists():
        return state
    state["."] = _digest(into)
    state.update(_files(into, "", skip_git=True))
    dot_git = into / ".git"
    if not dot_git.is_dir():
        return state
    head = git(into, "symbolic-ref", "-q", "HEAD") if (dot_git / "HEAD").read_text().startswith("ref:") else ""
    state["(git) HEAD"] = f"{head} {git(into, 'rev-parse', '-q', '--verify', 'HEAD^{commit}')}".strip()
    refs = git(into, "for-each-ref", "--format=%(refname) %(objectname)")
    state["(git) refs"] = SAVED.sub("patchmgr-saved/<UTC time>", refs)
    state["(git) index"] = git(into, "ls-files", "--stage")
    state["(git) config"] = _digest(dot_git / "config")
    for entry in sorted(dot_git.iterdir()):
        if entry.name in AM_STATE or WRITTEN_BY_PATCHMGR.search(entry.name):
            state.update(_entry(entry, f"(git) {entry.name}"))
    return state


def saved_branch(into: Path) -> str:
    """The one ``patchmgr-saved/...`` branch in ``into``."""
    (branch,) = git(into, "for-each-ref", "--format=%(refname:short)", "refs/heads/patchmgr-saved/").split()
    return branch


def kill_edit(
    name: str, scene: Scene, args: list[str], before: dict, after: dict, observer: list[str], exit_code: int = 0
) -> dict:
    assert after != before
    return kill_every_step(
        name, args, scene.restore, before, after, scene.observer(observer), minimum=MINIMUM[name], exit_code=exit_code
    )
