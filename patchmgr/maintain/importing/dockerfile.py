"""What ``import --dockerfile`` takes from a Dockerfile: the upstreams' URLs and pins, and the patch files
it applies to each checkout, in order.

The Dockerfile is read as ``docker build`` reads it (``model.dockerfile_run``, with ``--build-arg``).
An upstream is named after the folder its ``git clone`` makes (``/ws/Megatron-LM``: ``megatron-lm``);
a patch file applied there (``git apply``, ``git am``, ``patch -p1 <``) belongs to that upstream,
whatever its own name, and the files applied to one checkout are one series in the Dockerfile's order.
A patch file's path in the image is traced back through the ``COPY``/``ADD`` lines to the build
context: the Dockerfile's folder, or a folder above it inside its repository.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from patchmgr.maintain.importing.places import checked, repository_of
from patchmgr.maintain.importing.sources import (
    SERIES_CONF,
    Declared,
    Monolith,
    finish_inputs,
    name_or_none,
    read_inputs,
    read_monolith,
    read_text,
    version_of,
)
from patchmgr.model.dockerfile import context_candidates, needed
from patchmgr.model.dockerfile_run import Applied, Built, Checkout, read_build
from patchmgr.model.errors import UsageError

_COMMIT = re.compile(r"[0-9a-fA-F]{7,40}")


@dataclass(frozen=True)
class Inputs:
    """The patches to import, and the URLs and pins the Dockerfile gives their upstreams."""

    monoliths: list[Monolith]
    declared: dict[str, Declared]
    notes: tuple[str, ...] = ()


def read_dockerfile(path: Path, build_args: Mapping[str, str] | None = None) -> Built:
    text = read_text(path, f"--dockerfile {path}", "give the Dockerfile that clones the upstreams")
    return read_build(text, str(path), build_args or {})


def import_inputs(
    paths: Sequence[Path],
    dockerfile: Path | None,
    build_args: Mapping[str, str],
    upstream: str | None,
    version: str | None,
    only: Sequence[str],
) -> Inputs:
    """The patches the paths (or, with none, the Dockerfile's apply lines) name, those of ``only`` if given."""
    if dockerfile is None:
        if build_args:
            raise UsageError("--build-arg sets a Dockerfile's ARG, but no --dockerfile is given", "add --dockerfile")
        return Inputs(_only(read_inputs(list(paths), upstream, version), only), {})
    built = read_dockerfile(dockerfile, build_args)
    applied, skipped = _applied_files(dockerfile, built, not paths, only)
    if only:  # the patches of upstreams left out are never read: a broken one must not block the others
        _known(only, sorted({a.upstream for a in applied}), bool(paths))
    if paths:
        monoliths = _given(list(paths), applied, upstream, version, only)
    elif applied:
        monoliths = finish_inputs(
            [_monolith(a.upstream, a.file) for a in applied if a.file is not None and (not only or a.upstream in only)]
        )
    else:
        raise UsageError(
            f"--dockerfile {dockerfile}: applies no patch file in a checkout it clones (no `git apply FILE` or "
            "`patch -p1 < FILE` in a `git clone` folder, the file copied in with COPY)",
            skipped[0] if skipped else "give the patch files (or their folder or series.conf) too",
        )
    if only:
        _known(only, sorted({a.upstream for a in applied} | {m.upstream for m in monoliths}), False)
        monoliths = [m for m in monoliths if m.upstream in only]
    declared = {m.upstream: _declared(dockerfile, built, m.upstream) for m in monoliths}
    notes = tuple(skipped) + tuple(
        f"--build-arg {name}: the Dockerfile declares no ARG {name}" for name in built.unused_build_args
    )
    return Inputs(monoliths, {k: v for k, v in declared.items() if v is not None}, notes)


def _only(monoliths: list[Monolith], only: Sequence[str]) -> list[Monolith]:
    if not only:
        return monoliths
    _known(only, [m.upstream for m in monoliths], False)
    return [m for m in monoliths if m.upstream in only]


def _known(only: Sequence[str], names: list[str], more: bool) -> None:
    """``more``: patch files given beside the Dockerfile may name further upstreams, so a name that the
    Dockerfile's lines lack is not yet an error."""
    unknown = [name for name in only if name not in names]
    if unknown and not more:
        raise UsageError(
            f"--only {unknown[0]}: no patch here is for upstream {unknown[0]!r} (they are for "
            f"{', '.join(names) or 'none'})",
            "name one of those upstreams",
        )


def _monolith(name: str, file: Path, version: str | None = None) -> Monolith:
    return Monolith(name, file, str(file), read_monolith(file, name), version or version_of(file.parent.name))


@dataclass(frozen=True)
class _Applied:
    upstream: str
    file: Path | None  # in the build context; None: not found there
    image: str  # its path in the image
    line: int


def _given(
    paths: list[Path], applied: list[_Applied], upstream: str | None, version: str | None, only: Sequence[str]
) -> list[Monolith]:
    """The paths given, read with the Dockerfile: a file it applies (that file, else one of its name) is its
    checkout's upstream's; of a folder, the files it applies (its version folder, not the highest-sorting
    one); a series.conf as it says."""
    found: list[Monolith] = []
    for path in paths:
        real = path.resolve()
        if path.is_file() and path.name != SERIES_CONF and upstream is None:
            same = [a for a in applied if a.file == real] or [
                a for a in applied if a.file is None and posixpath.basename(a.image) == path.name
            ]
            if same:
                found.append(_monolith(same[0].upstream, path))
                continue
        elif path.is_dir() and not (path / SERIES_CONF).is_file() and version is None:
            inside = [a.file for a in applied if a.file is not None and real in a.file.parents]
            if inside:
                found += [
                    _monolith(a.upstream, a.file)
                    for a in applied
                    if a.file in inside and (not only or a.upstream in only)
                ]
                continue
        found += read_inputs([path], upstream, version)
    return finish_inputs(found)


def _applied_files(
    dockerfile: Path, built: Built, strict: bool, only: Sequence[str]
) -> tuple[list[_Applied], list[str]]:
    """Every patch the Dockerfile applies in its clones, in order, and notes on those applied elsewhere;
    ``strict``: one not found in the build context is an error (only for the upstreams ``only`` names, if any:
    one left out must not block the others)."""
    where = str(dockerfile)
    checkouts = {c.folder: c for c in built.checkouts}
    folder = dockerfile.resolve().parent
    repository = repository_of(folder)
    roots = [folder, *[p for p in folder.parents if p == repository or repository in p.parents]]
    out, notes = [], []
    for applied in built.applied:
        checkout = checkouts.get(applied.folder)
        name = name_or_none(checkout.folder) if checkout else None
        if checkout is None or name is None:
            notes.append(
                f"{where}:{applied.line}: {applied.patch or applied.word.text} is applied in {applied.run_in}, "
                "which no `git clone` of the Dockerfile makes: not imported from the Dockerfile (import the "
                "patch file with --upstream/--git/--pin)"
            )
            continue
        wanted = not only or name in only
        if not applied.patch:  # a variable without a value (a shell loop's): needed only with no paths given
            if strict and wanted:
                needed(applied.word, where, "in the path of the applied patch")
            continue
        file = _in_context(roots, repository, built, applied, where, strict and wanted, wanted)
        out.append(_Applied(name, file, applied.patch, applied.line))
    return out, notes


def _in_context(
    roots: list[Path], repository: Path, built: Built, applied: Applied, where: str, strict: bool, wanted: bool
) -> Path | None:
    """The build context's file that the COPY lines before ``applied`` (in its stage) put where it is applied;
    ``wanted``: one that only a later COPY (or another stage's) puts there is an error, ``strict``: any other
    not found too."""
    candidates = context_candidates(applied.copies, applied.patch)
    path = _first_file(roots, candidates)
    if path is not None:
        return checked(repository, path, f"{where}:{applied.line}", "the patch")
    if wanted:
        _copied_too_late(roots, built, applied, where)
    if not strict:
        return None
    copied = f"copied from {', '.join(candidates)}" if candidates else "copied in by no COPY line"
    raise UsageError(
        f"{where}:{applied.line}: applies {applied.patch}, {copied}, which is not a file in the build context "
        f"{roots[0]} (or a folder above it in its repository)",
        "give the patch files (or their folder) too, or --build-arg for the ARG that picks them",
    )


def _first_file(roots: list[Path], candidates: list[str]) -> Path | None:
    for root in roots:
        for relative in candidates:
            if not relative.startswith("..") and not posixpath.isabs(relative) and (root / relative).is_file():
                return root / relative
    return None


def _copied_too_late(roots: list[Path], built: Built, applied: Applied, where: str) -> None:
    """Refuse a patch file that a COPY puts where it is applied only after the RUN line, or in another build stage
    (one it is not built FROM): docker build fails there, the file is not in the image yet."""
    for copy in built.copies:
        if copy in applied.copies or _first_file(roots, context_candidates((copy,), applied.patch)) is None:
            continue
        when = "after it" if copy.stage == applied.stage else "in another build stage, not one this RUN is built on"
        raise UsageError(
            f"{where}:{applied.line}: applies {applied.patch}, which only the COPY at line {copy.line} puts in "
            f"the image, {when}: docker build fails there, the file is not there yet; nothing was written",
            "move the COPY line before the RUN line that applies the patch (in the same stage), then import again",
        )


def _declared(dockerfile: Path, built: Built, name: str) -> Declared | None:
    """The URL and pin of the checkout named ``name``: one error for a variable either uses that has no value."""
    checkout: Checkout | None = next((c for c in built.checkouts if name_or_none(c.folder) == name), None)
    if checkout is None:
        return None
    where = str(dockerfile)
    url = needed(checkout.url, where, f"in the URL of git clone of {name}")
    ref = needed(checkout.ref, where, f"in the ref {name} is checked out at") if checkout.ref else None
    branch = ref if ref and (checkout.branch or not _COMMIT.fullmatch(ref)) else None
    line = checkout.ref_line or checkout.line
    return Declared(url, ref, f"{where}:{line}", branch)
