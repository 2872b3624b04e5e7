"""A patchmgr project: ``manifests/`` and ``patches/`` under one root folder."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from patchmgr.model.errors import ManifestError, PatchmgrError, UsageError
from patchmgr.model.input_files import read_input
from patchmgr.model.manifest import Target, Upstream, load_target
from patchmgr.model.patchfile import PatchFile, read_patch

_UPSTREAM_TABLE = re.compile(r"""^\s*\[\s*upstreams\s*\.\s*("[^"]+"|'[^']+'|[A-Za-z0-9_.-]+)\s*\]""", re.M)


def _read(path: Path) -> bytes | None:
    """A manifest's bytes, or None where ``read_input`` refuses it (the manifest's loader says why)."""
    try:
        return read_input(path, str(path), "")
    except PatchmgrError:
        return None


@dataclass(frozen=True)
class Project:
    root: Path
    # each manifest as read and validated, by path, with the bytes it was read from: a command reads its target's
    # manifest more than once (the target, then every target for the unlisted patches)
    _loaded: dict[Path, tuple[bytes, Target]] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def at(cls, root: Path) -> Project:
        root = root.resolve()
        if not (root / "manifests").is_dir():
            raise UsageError(
                f"{root} has no manifests/ folder", "run patchmgr from the project root, or pass --root DIR"
            )
        return cls(root)

    @property
    def manifests_dir(self) -> Path:
        return self.root / "manifests"

    @property
    def patches_dir(self) -> Path:
        return self.root / "patches"

    def target_names(self) -> list[str]:
        return sorted(p.stem for p in self.manifests_dir.glob("*.toml"))

    def target(self, name: str) -> Target:
        path = self.manifests_dir / f"{name}.toml"
        if not os.path.lexists(path):  # anything else there is the loader's to name (a FIFO, a folder)
            known = ", ".join(self.target_names()) or "none"
            raise ManifestError(
                f"no target {name!r}: {path} does not exist (targets: {known})",
                "pick one of the targets listed (`patchmgr targets` shows their upstreams and pins)",
            )
        before = _read(path)
        kept = self._loaded.get(path)
        if before is not None and kept is not None and kept[0] == before and self._patch_files_exist(kept[1]):
            return kept[1]  # the same bytes and the same patch files: the same target
        target = load_target(path, self.patches_dir)
        if before is not None and _read(path) == before:
            self._loaded[path] = (before, target)
        return target

    def _patch_files_exist(self, target: Target) -> bool:
        """Whether every patch file ``target`` lists is still a file (what validation checks beyond the text)."""
        return all(self.patch_path(u.name, pid).is_file() for u in target.upstreams for pid in u.patch_ids)

    def targets(self, name: str | None = None) -> list[Target]:
        return [self.target(name)] if name else [self.target(n) for n in self.target_names()]

    def readable_targets(self) -> tuple[list[Target], list[str]]:
        """Every target whose manifest loads, and one line for each that does not (``path: what is wrong``).

        For what a command on one target reads of the others (which patch files some manifest lists, which
        upstream names exist): only the chosen target's manifest must parse; lint reports the broken ones."""
        targets, broken = [], []
        for name in self.target_names():
            try:
                targets.append(self.target(name))
            except PatchmgrError as exc:
                broken.append(
                    exc.message
                    if exc.message.startswith(str(self.manifests_dir))
                    else f"{self.manifests_dir / f'{name}.toml'}: {exc.message}"
                )
        return targets, broken

    def upstream_names(self) -> set[str]:
        """The upstream names of every manifest; a manifest that does not load is read for its
        ``[upstreams.NAME]`` tables as text."""
        names: set[str] = set()
        for name in self.target_names():
            path = self.manifests_dir / f"{name}.toml"
            try:
                names.update(u.name for u in self.target(name).upstreams)
            except PatchmgrError:
                data = _read(path)
                if data is None:
                    continue
                text = data.decode("utf-8", errors="replace")
                names.update(match.group(1).strip("\"'") for match in _UPSTREAM_TABLE.finditer(text))
        return names

    def patches(self, upstream: Upstream) -> list[PatchFile]:
        return [read_patch(self.patch_path(upstream.name, pid), upstream.name, pid) for pid in upstream.patch_ids]

    def patch_path(self, upstream: str, patch_id: str) -> Path:
        return self.patches_dir / upstream / f"{patch_id}.patch"

    def unlisted_patches(self, targets: list[Target]) -> list[Path]:
        """Patch files that no manifest lists: forgotten work or a typo in a series."""
        listed = {self.patch_path(u.name, pid) for t in targets for u in t.upstreams for pid in u.patch_ids}
        return sorted(p for p in self.patches_dir.glob("*/*.patch") if p not in listed)
