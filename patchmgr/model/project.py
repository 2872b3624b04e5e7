"""A patchmgr project: ``manifests/`` and ``patches/`` under one root folder."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from patchmgr.model.errors import ManifestError, UsageError
from patchmgr.model.manifest import Target, Upstream, load_target
from patchmgr.model.patchfile import PatchFile, read_patch


@dataclass(frozen=True)
class Project:
    root: Path

    @classmethod
    def at(cls, root: Path) -> Project:
        root = root.resolve()
        if not (root / "manifests").is_dir():
            raise UsageError(f"{root} has no manifests/ folder",
                             "run patchmgr from the project root, or pass --root DIR")
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
        if not path.is_file():
            known = ", ".join(self.target_names()) or "none"
            raise ManifestError(f"no target {name!r}: {path} does not exist (targets: {known})",
                                "pick one of the targets listed")
        return load_target(path, self.patches_dir)

    def targets(self, name: str | None = None) -> list[Target]:
        return [self.target(name)] if name else [self.target(n) for n in self.target_names()]

    def patches(self, upstream: Upstream) -> list[PatchFile]:
        return [read_patch(self.patch_path(upstream.name, pid), upstream.name, pid)
                for pid in upstream.patch_ids]

    def patch_path(self, upstream: str, patch_id: str) -> Path:
        return self.patches_dir / upstream / f"{patch_id}.patch"

    def unlisted_patches(self, targets: list[Target]) -> list[Path]:
        """Patch files that no manifest lists: forgotten work or a typo in a series."""
        listed = {self.patch_path(u.name, pid) for t in targets for u in t.upstreams for pid in u.patch_ids}
        return sorted(p for p in self.patches_dir.glob("*/*.patch") if p not in listed)
