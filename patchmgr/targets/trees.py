"""Where each upstream's code is for the smoke tests: a checkout under DIR, patched and (on demand) unpatched.

An installed environment's trees come from ``targets.installed``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from patchmgr.io import scratch
from patchmgr.io.files import linked_tree, write_atomic
from patchmgr.io.git import GitRepo
from patchmgr.model.manifest import Target, Upstream
from patchmgr.targets.into_lock import STATE, locked_into
from patchmgr.targets.ledger import read_into_ledger


@dataclass
class SmokeTree:
    """Where one upstream's code is for the smoke tests, patched and (on demand) unpatched."""

    upstream: Upstream
    patched_root: Path | None  # the import root; None when the upstream is not there
    reason: str = ""  # why it is not there
    unpatched: Callable[[], AbstractContextManager[Path]] | None = None
    notes: list[str] = field(default_factory=list)  # e.g. that an interrupted apply was recovered first


def checkout_trees(target: Target, into: Path, only: Sequence[str] = ()) -> list[SmokeTree]:
    """The upstreams that ``apply --into`` checked out under ``into``."""
    into = into.resolve()
    notes: list[str] = []
    if (into / STATE).is_dir():
        with locked_into(into, notes):
            pass
    ledger = read_into_ledger(into) if into.is_dir() else None
    trees = []
    for upstream in target.upstreams:
        if only and upstream.name not in only:
            continue
        entry = ledger.upstream(upstream.name) if ledger else None
        if entry is None:
            trees.append(
                SmokeTree(
                    upstream,
                    None,
                    f"{upstream.name} is not applied into {into}: run `patchmgr apply` with a source for it",
                )
            )
            continue
        trees.append(checkout_tree(upstream, into / upstream.name, entry.checkout_part().base_commit))
    if trees:
        trees[0].notes += notes
    return trees


def checkout_tree(upstream: Upstream, checkout: Path, base_commit: str) -> SmokeTree:
    """The smoke tree of one checkout that patchmgr built (one commit per patch on ``base_commit``): its import
    root, and its unpatched view (a copy with every patched file put back to ``base_commit``)."""
    root = checkout / upstream.package_root if upstream.package_root else checkout
    return SmokeTree(
        upstream, root, unpatched=partial(_unpatched_checkout, checkout, base_commit, upstream.package_root)
    )


@contextmanager
def _unpatched_checkout(checkout: Path, base_commit: str, package_root: str) -> Iterator[Path]:
    """A throw-away copy of the checkout with every patched file put back to the base commit."""
    with scratch.folder("unpatched") as tmp:
        copy = Path(tmp) / checkout.name
        linked_tree(checkout, copy, ".git", "__pycache__")
        with GitRepo(checkout) as repo:
            changed = repo.run("diff", "-z", "--name-only", "--no-renames", base_commit, "HEAD", strip=False)
            for path in filter(None, changed.split("\0")):  # as they are: never quoted, never split on a CR
                put_back(copy / path, repo.read_path(base_commit, path))
        yield copy / package_root if package_root else copy


def put_back(target: Path, original: bytes | None) -> None:
    """``target`` (in a view ``linked_tree`` made) given its ``original`` bytes by replacing it, or removed when it had
    none: never a write into the file there, a hard link to the tree the view was made from."""
    if original is None:
        target.unlink(missing_ok=True)
    else:
        write_atomic(target, original)
