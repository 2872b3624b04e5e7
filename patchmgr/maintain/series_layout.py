"""The old image-repository layout that ``export --format series`` writes, and the record ``import`` reads back.

An image repository keeps, in one folder (``docker/npu_patch/``): one monolithic patch per upstream, a
``series.conf`` (``target_worktree|image_patch|source_patch`` lines, applied top to bottom) and the pins in
its Dockerfile. Export writes exactly that, and the pins as Dockerfile ``ARG`` lines (``pins.dockerfile``).

A monolithic patch is ``git diff`` of the whole series: where one patch ends and the next begins is not in
it. So export also writes ``patchmgr-series/``: ``export.toml`` (per upstream its URL, pin, version, the
monolith's file name and sha256, and the series' patch ids) and each patch file as the project has it
(``patchmgr-series/<upstream>/<id>.patch``). ``import`` of the folder gives back these very patches, in
this order, when the monolith is still the one exported (its sha256) at the same pin, and only after
proving with git that they make the monolith's files; otherwise the monolith is split as any other.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import tomlkit

from patchmgr.model.errors import UsageError
from patchmgr.model.input_files import TomlProblem, parse_toml, read_input
from patchmgr.model.manifest import NAME, PATCH_ID, url_problem
from patchmgr.model.records import SHA256
from patchmgr.model.urls import FULL_SHA, control_character

PINS = "pins.dockerfile"
RECORD_DIR = "patchmgr-series"
RECORD = "export.toml"
WORKSPACE = "/workspace"  # where the Dockerfile lines clone each upstream
PATCHES_AT = "/workspace/npu_patch"  # where the Dockerfile lines expect this folder to be copied


@dataclass(frozen=True)
class SeriesUpstream:
    """One upstream as the layout writes it down."""

    name: str
    git: str
    commit: str
    version: str | None
    pypi: str | None  # with version: the release that stands in when git is out of reach
    patch: str  # the monolith's file name, in the folder
    sha256: str  # of the monolith's bytes
    patch_ids: tuple[str, ...]  # the series, in order


@dataclass(frozen=True)
class SeriesRecord:
    """``patchmgr-series/export.toml``: the target the folder was exported from, and its upstreams."""

    target: str
    upstreams: tuple[SeriesUpstream, ...]

    def upstream(self, name: str) -> SeriesUpstream | None:
        return next((u for u in self.upstreams if u.name == name), None)


def arg_prefix(name: str) -> str:
    """``megatron-bridge`` -> ``MEGATRON_BRIDGE``: the stem of its Dockerfile ``ARG`` names."""
    return re.sub(r"[^A-Z0-9]+", "_", name.upper()).strip("_") or "UPSTREAM"


def clone_folder(name: str, git: str) -> str:
    """The folder an upstream is cloned into: its repository's name (``Megatron-Bridge``) when import names the
    upstream after it again, else the upstream's own name."""
    base = PurePosixPath(git.rstrip("/")).name.removesuffix(".git")
    return base if base and base.lower().replace("_", "-") == name and NAME.fullmatch(name) else name


def prefix_problem(prefix: str) -> str | None:
    """Why ``series.conf`` cannot name patches under ``prefix`` (the folder's path in its repository), or None:
    its lines are ``|``-separated fields, ``#`` starts a comment, and each field is read stripped."""
    control = control_character(prefix)
    if control is not None:
        return f"{control}, and series.conf holds one patch a line"
    for char, role in (("|", "separates series.conf's fields"), ("#", "starts a comment in series.conf")):
        if char in prefix:
            return f"holds {char!r}, which {role}"
    if prefix != prefix.lstrip():
        return "starts with a space, which series.conf's reader strips"
    return None


def series_conf_text(target: str, upstreams: list[SeriesUpstream], prefix: str) -> str:
    """``series.conf``: one ``target_worktree|image_patch|source_patch`` line per upstream, in the target's order;
    ``prefix``: the folder's path in the repository holding it (``source_patch`` is relative to its root)."""
    lines = [
        f"# patch series of target {target}, written by patchmgr export --format series",
        "# target_worktree|image_patch|source_patch",
        "# applied top to bottom (git apply at each upstream's pin, see pins.dockerfile), reverted bottom to top",
    ]
    for upstream in upstreams:
        lines.append(
            f"<workspace>/{clone_folder(upstream.name, upstream.git)}|{upstream.patch}|{prefix}{upstream.patch}"
        )
    return "\n".join(lines) + "\n"


def pins_text(target: str, upstreams: list[SeriesUpstream]) -> str:
    """``pins.dockerfile``: each upstream's URL and pin as ``ARG`` lines, and the lines that clone it there and
    apply its monolithic patch, with how to use them."""
    lines = [
        f"# Pins of target {target}, written by patchmgr export --format series.",
        "# Put these lines into the image's Dockerfile after its FROM line, with this folder copied to",
        f"# {PATCHES_AT} (COPY <this folder> {PATCHES_AT}). Each upstream is cloned, checked out at its",
        "# pin and its monolithic patch applied with git apply, in series.conf's order; a build argument",
        "# (docker build --build-arg NAME_COMMIT=...) overrides a pin. The patches apply at these pins",
        "# only. To go back to patchmgr: patchmgr import <this folder>/series.conf --target NAME",
        f"# --dockerfile <this folder>/{PINS} gives back the target's patches ({RECORD_DIR}/ holds them).",
        "# A URL is written without credentials: a private repository gets them from git at build time",
        "# (a credential helper reading a build secret, see patchmgr's docs/images.md), never from here.",
    ]
    for upstream in upstreams:
        stem, folder = arg_prefix(upstream.name), f"{WORKSPACE}/{clone_folder(upstream.name, upstream.git)}"
        lines += [
            f"ARG {stem}_REPO={upstream.git}",
            f"ARG {stem}_COMMIT={upstream.commit}",
            f'RUN git clone "${{{stem}_REPO}}" {folder} \\',
            f' && git -C {folder} checkout "${{{stem}_COMMIT}}" \\',
            f" && git -C {folder} apply {PATCHES_AT}/{upstream.patch}",
        ]
    return "\n".join(lines) + "\n"


def record_text(record: SeriesRecord) -> str:
    document = tomlkit.document()
    document.add(tomlkit.comment("Written by patchmgr export --format series; read by patchmgr import. The patches of"))
    document.add(tomlkit.comment("each upstream are in the folder of its name, as the project keeps them."))
    document["target"] = record.target
    tables = tomlkit.table(is_super_table=True)
    for upstream in record.upstreams:
        table = tomlkit.table()
        table["git"] = upstream.git
        table["commit"] = upstream.commit
        if upstream.version:
            table["version"] = upstream.version
        if upstream.pypi:
            table["pypi"] = upstream.pypi
        table["patch"] = upstream.patch
        table["sha256"] = upstream.sha256
        table["patches"] = list(upstream.patch_ids)
        tables[upstream.name] = table
    document["upstreams"] = tables
    return tomlkit.dumps(document)


def piece_path(folder: Path, upstream: str, patch_id: str) -> Path:
    return folder / RECORD_DIR / upstream / f"{patch_id}.patch"


def read_record(folder: Path) -> SeriesRecord | None:
    """``folder``'s ``patchmgr-series/export.toml`` (None: there is none); one that is damaged is bad input."""
    path = folder / RECORD_DIR / RECORD
    if not os.path.lexists(path):
        return None
    hint = f"restore {path} as export wrote it, or remove {RECORD_DIR}/ to import the monolithic patches as they are"
    data = read_input(path, str(path), hint)  # a FIFO or a device there: said, never read
    try:
        raw = parse_toml(data.decode("utf-8"))
        target = raw["target"]
        upstreams = []
        for name, table in raw["upstreams"].items():
            upstreams.append(_upstream(name, table))
    except (UnicodeDecodeError, TomlProblem, KeyError, TypeError, AttributeError, ValueError) as exc:
        why = f"no {exc}" if isinstance(exc, KeyError) else getattr(exc, "strerror", None) or str(exc)
        raise UsageError(f"{path} is damaged ({why}); nothing was written", hint) from None
    if not isinstance(target, str) or not NAME.fullmatch(target):
        raise UsageError(f"{path} is damaged (its target {target!r} names no manifest); nothing was written", hint)
    return SeriesRecord(target, tuple(upstreams))


def _upstream(name: object, table: object) -> SeriesUpstream:
    if not isinstance(name, str) or not NAME.fullmatch(name) or not isinstance(table, dict):
        raise ValueError(f"upstream {name!r} is not an upstream's table")
    git, commit, patch, sha256 = (table[key] for key in ("git", "commit", "patch", "sha256"))
    version, pypi, ids = table.get("version"), table.get("pypi"), table["patches"]
    if not all(isinstance(v, str) for v in (git, commit, patch, sha256)) or not isinstance(ids, list):
        raise ValueError(f"upstream {name}: git, commit, patch and sha256 are text, patches a list")
    problem = url_problem(git)
    if problem:
        raise ValueError(f"upstream {name}: its git URL {problem}")
    if not FULL_SHA.fullmatch(commit) or not SHA256.fullmatch(sha256):
        raise ValueError(f"upstream {name}: commit is a full commit id and sha256 a sha256")
    if PurePosixPath(patch).name != patch or not patch.endswith(".patch") or patch.startswith("."):
        raise ValueError(f"upstream {name}: patch {patch!r} is not a file name of this folder")
    if not all(isinstance(i, str) and PATCH_ID.fullmatch(i) for i in ids) or len(set(ids)) != len(ids):
        raise ValueError(f"upstream {name}: patches are distinct patch ids")
    if any(value is not None and not isinstance(value, str) for value in (version, pypi)):
        raise ValueError(f"upstream {name}: version and pypi are text")
    return SeriesUpstream(name, git, commit, version, pypi, patch, sha256, tuple(ids))
