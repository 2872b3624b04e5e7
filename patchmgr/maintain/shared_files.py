"""Patch files that other targets list: rewritten for one target only when the command line says how.

``patches/<upstream>/<id>.patch`` is one file for every target whose series lists it. A rewrite made for one
target (refreshed at a new ref, exported from its edit checkout) changes what every other target applies at its
own pin: a patch clean there silently goes fuzz. So ``refresh``, ``bump`` and ``export`` hand the patches they
rewrite to ``own_copies`` before anything is written, and by default it refuses (exit 1, nothing written),
naming each other target and the ways on:

- ``--own-copy``: each such patch is written as this target's own copy, ``<id>-<target>.patch`` (the name
  ``import`` gives a piece whose file holds another target's patch), listed in this target's series in the
  shared file's place; the other targets keep the file byte for byte, and can move later on their own.
- ``--also-target NAME``: NAME moves with this target (``Movers``): the same rewritten files, the same manifest
  change, when it lists the same series of the upstream at the same pin (commit and version), so that its
  status is this target's, before and after.

A target whose manifest does not load may list the file: it counts as listing it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from patchmgr.maintain import manifest_edit
from patchmgr.model.errors import PatchmgrError, StateError, UsageError
from patchmgr.model.manifest import Target, Upstream
from patchmgr.model.project import Project


@dataclass(frozen=True)
class Sharing:
    """What the command line says about files other targets list: ``--own-copy`` and ``--also-target``."""

    own_copy: bool = False
    also: tuple[str, ...] = ()

    @classmethod
    def given(cls, own_copy: bool, also_target: Sequence[str] | None) -> Sharing:
        """As the command line gives them (``--also-target`` absent: None)."""
        return cls(own_copy, tuple(also_target or ()))


@dataclass(frozen=True)
class Movers:
    """The targets one upstream's rewrite is made for: the command's own first, then each ``--also-target``."""

    targets: tuple[Target, ...]
    own_copy: bool = False

    @property
    def target(self) -> Target:
        return self.targets[0]

    @property
    def names(self) -> frozenset[str]:
        return frozenset(t.name for t in self.targets)

    @property
    def also(self) -> tuple[str, ...]:
        return tuple(t.name for t in self.targets[1:])


def movers(project: Project, target: Target, upstream: str, sharing: Sharing) -> Movers:
    """``target`` and the ``--also-target`` ones, each checked to list ``upstream`` at the same pin with the same
    series (bad input otherwise, exit 2, before anything is read from a source)."""
    mine = target.upstream(upstream)
    targets = [target]
    for name in dict.fromkeys(sharing.also):
        if name == target.name:
            raise UsageError(
                f"--also-target {name} is the target the command runs on; nothing was written",
                "name another target that lists the same series, or leave --also-target out",
            )
        other = project.target(name)  # an unknown target: its manifest error, exit 2
        if not _same_pin_and_series(other, mine):
            theirs = next((u for u in other.upstreams if u.name == upstream), None)
            said = "has no upstream " + upstream if theirs is None else f"lists {upstream} {_pin_words(theirs)}"
            raise UsageError(
                f"--also-target {name}: target {name} {said}, target {target.name} {_pin_words(mine)}: they do not "
                "move as one; nothing was written",
                f"give target {target.name} its own copies with --own-copy instead; {name} moves on its own afterwards",
            )
        targets.append(other)
    return Movers(tuple(targets), sharing.own_copy)


def others(project: Project, moving: Movers, upstream: str, patch_id: str) -> list[str]:
    """The targets outside ``moving`` whose series of ``upstream`` list ``patch_id``: they share its file."""
    return manifest_edit.listed_elsewhere(project, moving.target.name, upstream, patch_id, besides=moving.names)


def own_copies(
    project: Project,
    moving: Movers,
    upstream: Upstream,
    rewritten: Iterable[str],
    command: str,
    taken: Collection[str] = (),
) -> dict[str, str]:
    """For each of ``rewritten`` (the patches whose files ``command`` rewrites) that a target outside ``moving``
    lists: with ``--own-copy``, the id of the movers' own copy (patch id -> copy id); without, the refusal
    (``StateError``, exit 1). ``taken``: ids the command writes besides (never given to a copy)."""
    shared = {pid: users for pid in rewritten if (users := others(project, moving, upstream.name, pid))}
    if not shared:
        return {}
    if not moving.own_copy:
        raise _refusal(project, moving, upstream, shared, command)
    used = {*taken, *upstream.patch_ids}
    copies = {}
    for patch_id in shared:
        copies[patch_id] = copy = _copy_id(project, upstream.name, patch_id, moving.target.name, used)
        used.add(copy)
    return copies


def renamed(patch_ids: Iterable[str], copies: dict[str, str]) -> list[str]:
    """The series with each patch that got an own copy named by it, in its place."""
    return [copies.get(pid, pid) for pid in patch_ids]


def copies_said(project: Project, moving: Movers, upstream: str, copies: dict[str, str]) -> list[str]:
    """One line per own copy, and one per target that moves along: what the output says was done."""
    lines = []
    for patch_id, copy in copies.items():
        users = others(project, moving, upstream, patch_id)
        path = project.patch_path(upstream, copy).relative_to(project.root)
        lines.append(
            f"{copy}: target {moving.target.name}'s own copy of {patch_id} ({path}), in its place in the series; "
            f"{_targets(users)} keep{'s' if len(users) == 1 else ''} {patch_id} as it is"
        )
    for name in moving.also:
        lines.append(
            f"target {name} takes the same change as {moving.target.name} (the same {upstream} pin and series)"
        )
    return lines


def manifest_changes(
    project: Project, moving: Movers, edit: Callable[[str, Path], str], planned: Collection[Path] = ()
) -> tuple[dict[Path, bytes | None], dict[Path, bytes | None]]:
    """Each mover's manifest with ``edit`` (text, path -> new text) made to it, validated as a manifest
    (``planned``: patch files the same transaction creates): the files that change, and what each held."""
    writes: dict[Path, bytes | None] = {}
    expected: dict[Path, bytes | None] = {}
    for target in moving.targets:
        try:
            data = target.path.read_bytes()
            text = data.decode("utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise StateError(f"cannot read {target.path}: {exc}", "fix the file (UTF-8 text), then run again") from None
        new_text = edit(text, target.path)
        manifest_edit.check_manifest(target.path, new_text, project.patches_dir, planned)
        if new_text != text:
            writes[target.path] = new_text.encode("utf-8")
            expected[target.path] = data
    return writes, expected


def _same_pin_and_series(other: Target, mine: Upstream) -> bool:
    theirs = next((u for u in other.upstreams if u.name == mine.name), None)
    return theirs is not None and (theirs.commit, theirs.version, theirs.patch_ids) == (
        mine.commit,
        mine.version,
        mine.patch_ids,
    )


def _pin_words(upstream: Upstream) -> str:
    version = f" (version {upstream.version})" if upstream.version else ""
    return f"at {upstream.commit[:12]}{version} with the series {', '.join(upstream.patch_ids) or '(none)'}"


def _copy_id(project: Project, upstream: str, patch_id: str, target: str, used: Collection[str]) -> str:
    base = f"{patch_id}-{target}"
    copy, number = base, 2
    while copy in used or os.path.lexists(project.patch_path(upstream, copy)):
        copy, number = f"{base}-{number}", number + 1
    return copy


def _targets(names: Sequence[str]) -> str:
    return f"target{'s' if len(names) > 1 else ''} {', '.join(names)}"


def _refusal(
    project: Project, moving: Movers, upstream: Upstream, shared: dict[str, list[str]], command: str
) -> StateError:
    target, name = moving.target.name, upstream.name
    paths = {pid: project.patch_path(name, pid).relative_to(project.root) for pid in shared}
    listers = list(dict.fromkeys(user.split(" ", 1)[0] for users in shared.values() for user in users))
    pins = {user: pin for user in listers if (pin := _pin_of(project, user, name, next(iter(shared)))) is not None}
    at = " (" + name + " at " + ", ".join(f"{user}'s pin {pin[:12]}" for user, pin in pins.items()) + ")"
    if len(shared) == 1:
        ((patch_id, users),) = shared.items()
        what = f"{paths[patch_id]}, which {_targets(users)} list{'s' if len(users) == 1 else ''} too"
    else:
        what = f"{len(shared)} patch files other targets list too: " + ", ".join(
            f"{paths[pid]} ({_targets(users)})" for pid, users in shared.items()
        )
    alike = [user for user in pins if _moves_along(project, user, upstream)]
    unread = [user for user in listers if user not in pins]
    copy = project.patch_path(name, f"{next(iter(shared))}-{target}").relative_to(project.root)
    keep = f"{', '.join(listers)} keep{'s' if len(listers) == 1 else ''} {'its file' if len(shared) == 1 else 'theirs'}"
    hint = f"give target {target} its own copy with --own-copy ({copy}; {keep} as it is)"
    if alike:
        hint += (
            f", or move {', '.join(alike)} with it: the same command with "
            + " ".join(f"--also-target {user}" for user in alike)
            + f" (same {name} pin and series)"
        )
    if rest := [user for user in pins if user not in alike]:
        hint += f"; {', '.join(rest)} can move on its own afterwards (bump, or edit --onto and export)"
    if unread:
        hint += f"; or fix the manifest of {', '.join(unread)} (patchmgr lint says what is wrong), then run again"
    return StateError(
        f"{command} would rewrite {what}{at if pins else ''}: made for target {target}, it would change the status of "
        f"{', '.join(listers)} there; nothing was written",
        hint,
    )


def _pin_of(project: Project, name: str, upstream: str, patch_id: str) -> str | None:
    try:
        other = project.target(name)
    except PatchmgrError:
        return None  # "b (its manifest does not load)": no pin to name
    theirs = manifest_edit.listing(project, other, upstream, patch_id)  # another upstream may list it by a link
    return (
        theirs.commit if theirs is not None else next((u.commit for u in other.upstreams if u.name == upstream), None)
    )


def _moves_along(project: Project, name: str, upstream: Upstream) -> bool:
    try:
        return _same_pin_and_series(project.target(name), upstream)
    except PatchmgrError:
        return False
