"""What ``import --dockerfile`` (or ``--script``) takes from a recipe: the upstreams' URLs and pins, and the
patches it applies to each checkout, in order.

A Dockerfile is read as ``docker build`` reads it (``model.dockerfile_run``, with ``--build-arg``), a build
script as a shell reads it (``model.recipe_shell``); a script a ``RUN`` calls (``bash build.sh``) is read where
the build context has it. An upstream is named after the folder its ``git clone`` makes (``/ws/Megatron-LM``:
``megatron-lm``), or as ``--checkout FOLDER=NAME[@REF]`` names a folder the recipe does not clone (one a base
image holds); a patch applied there (``git apply``, ``git am``, ``patch -p1 <``) belongs to that upstream,
whatever its own name, and the patches applied to one checkout are one series in the recipe's order. A patch
file is traced back (``recipe_files``) through ``COPY``/``ADD``, ``cp`` and ``mv`` to the build context (the
Dockerfile's folder, or a folder above it inside its repository), the script's folder, or a clone the recipe
makes; a patch written in a here-document (``git apply <<'EOP'``) is taken as the recipe writes it.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from patchmgr.maintain.importing.places import checked, repository_of
from patchmgr.maintain.importing.recipe_files import InCloneFile, RecipeFiles
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
from patchmgr.model.dockerfile import Word, context_candidates, needed
from patchmgr.model.dockerfile_run import read_build
from patchmgr.model.errors import UsageError
from patchmgr.model.manifest import NAME
from patchmgr.model.patchfile import parse_patch
from patchmgr.model.recipe import Applied, Built, Checkout
from patchmgr.model.recipe_shell import join, read_script
from patchmgr.sources.upstream import Sources

_COMMIT = re.compile(r"[0-9a-fA-F]{7,40}")


@dataclass(frozen=True)
class Inputs:
    """The patches to import, and the URLs and pins the Dockerfile gives their upstreams."""

    monoliths: list[Monolith]
    declared: dict[str, Declared]
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Recipe:
    """What the user names of the recipe: a Dockerfile or a build script, ``--build-arg`` values, and
    ``--checkout FOLDER=NAME[@REF]``: the folders it applies patches in that it does not clone."""

    dockerfile: Path | None = None
    script: Path | None = None
    build_args: Mapping[str, str] = field(default_factory=dict)
    checkouts: Mapping[str, str] = field(default_factory=dict)

    @property
    def path(self) -> Path | None:
        return self.dockerfile or self.script

    @property
    def option(self) -> str:
        return f"--dockerfile {self.dockerfile}" if self.dockerfile else f"--script {self.script}"


def read_dockerfile(path: Path, build_args: Mapping[str, str] | None = None) -> Built:
    return read_recipe(Recipe(dockerfile=path, build_args=build_args or {}))[1]


def read_recipe(recipe: Recipe, sources: Sources | None = None) -> tuple[RecipeFiles, Built]:
    """The recipe read, and where its files come from (``sources``: to read a file out of a clone it makes)."""
    path = recipe.path
    assert path is not None
    text = read_text(path, recipe.option, "give the Dockerfile or the build script that clones the upstreams")
    folder = path.resolve().parent
    files = RecipeFiles(folder, repository_of(folder), recipe.script is not None, sources=sources)
    given = _given_checkouts(recipe, folder)
    if recipe.dockerfile is not None:
        built = read_build(text, str(path), recipe.build_args, files.script, given)
    else:
        built = read_script(text, str(path), path.resolve().as_posix(), files.script, given)
    files.checkouts.update({c.folder: c for c in built.checkouts})
    return files, built


def _given_checkouts(recipe: Recipe, folder: Path) -> tuple[Checkout, ...]:
    """``--checkout FOLDER=NAME[@REF]``: a folder the recipe applies patches in that it does not clone."""
    found = []
    for place, value in recipe.checkouts.items():
        name, _, ref = value.partition("@")
        where = f"--checkout {place}={value}"
        if not NAME.fullmatch(name) or (not ref and "@" in value):
            raise UsageError(
                f"{where}: {value!r} is not NAME or NAME@REF (the upstream, and the ref the checkout is at)",
                "for example --checkout /vllm-workspace/vllm-ascend=vllm-ascend@v0.11.0",
            )
        if recipe.dockerfile is not None and not place.startswith("/"):
            raise UsageError(
                f"{where}: {place} is not a folder of the image (an absolute path, as the Dockerfile's cd names it)",
                "for example --checkout /vllm-workspace/vllm-ascend=vllm-ascend@v0.11.0",
            )
        at = join("/", place) if recipe.dockerfile is not None else join(folder.as_posix(), place)
        found.append(Checkout(at, Word(""), 0, Word(ref) if ref else None, 0, False, where, True, name))
    return tuple(found)


def import_inputs(
    paths: Sequence[Path],
    recipe: Recipe,
    upstream: str | None,
    version: str | None,
    only: Sequence[str],
    sources: Sources | None = None,
) -> Inputs:
    """The patches the paths (or, with none, the recipe's apply lines) name, those of ``only`` if given."""
    if recipe.path is None:
        if recipe.build_args or recipe.checkouts:
            option = "--build-arg" if recipe.build_args else "--checkout"
            raise UsageError(f"{option} is about a recipe, but no --dockerfile or --script is given", "add one")
        return Inputs(_only(read_inputs(list(paths), upstream, version), only), {})
    if recipe.dockerfile is not None and recipe.script is not None:
        raise UsageError("--dockerfile and --script both name the recipe", "give one: a RUN's `bash X` is followed")
    if recipe.script is not None and recipe.build_args:
        raise UsageError("--build-arg sets a Dockerfile's ARG, but --script names a build script", "leave it out")
    files, built = read_recipe(recipe, sources)
    recipe_path = recipe.path
    _every_checkout_used(built)
    applied, skipped = _applied_files(recipe_path, files, built, not paths, only)
    if only:  # the patches of upstreams left out are never read: a broken one must not block the others
        _known(only, sorted({a.upstream for a in applied}), bool(paths))
    if paths:
        monoliths = _given(list(paths), applied, upstream, version, only)
    elif applied:
        monoliths = finish_inputs(
            [a.monolith for a in applied if a.monolith is not None and (not only or a.upstream in only)]
        )
    else:
        raise UsageError(
            f"{recipe.option}: applies no patch in a checkout it clones (no `git apply FILE` or "
            "`patch -p1 < FILE` in a `git clone` folder, the file copied in with COPY or written in a here-document)",
            skipped[0] if skipped else "give the patch files (or their folder or series.conf) too",
        )
    if only:
        _known(only, sorted({a.upstream for a in applied} | {m.upstream for m in monoliths}), False)
        monoliths = [m for m in monoliths if m.upstream in only]
    declared = {m.upstream: _declared(recipe_path, built, m.upstream) for m in monoliths}
    notes = tuple(skipped) + tuple(
        f"--build-arg {name}: the Dockerfile declares no ARG {name}" for name in built.unused_build_args
    )
    return Inputs(monoliths, {k: v for k, v in declared.items() if v is not None}, notes)


def _every_checkout_used(built: Built) -> None:
    """A --checkout folder the recipe applies no patch in is a typo, not something to ignore."""
    used = {a.folder for a in built.applied}
    for checkout in built.checkouts:
        if checkout.given and checkout.folder not in used:
            places = sorted({a.run_in for a in built.applied}) or ["none"]
            raise UsageError(
                f"{checkout.where}: the recipe applies no patch in {checkout.folder} (it applies patches in "
                f"{', '.join(places)}); nothing was written",
                "name the folder as the recipe's cd names it",
            )


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
    file: Path | None  # in the build context (or the script's folder); None: not found there, or not a file
    image: str  # its path in the image ("": written in a here-document)
    line: int
    monolith: Monolith | None = None  # read (only for the upstreams imported)


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
                    a.monolith for a in applied if a.file in inside and a.monolith and (not only or a.upstream in only)
                ]
                continue
        found += read_inputs([path], upstream, version)
    return finish_inputs(found)


def _applied_files(
    recipe: Path, files: RecipeFiles, built: Built, strict: bool, only: Sequence[str]
) -> tuple[list[_Applied], list[str]]:
    """Every patch the recipe applies in its checkouts, in order, and notes on those applied elsewhere;
    ``strict``: one not found (or applied in a folder no clone makes) is an error (only for the upstreams ``only``
    names, if any: one left out must not block the others)."""
    checkouts = {c.folder: c for c in built.checkouts}
    out, notes = [], []
    for applied in built.applied:
        where = applied.where or str(recipe)
        checkout = checkouts.get(applied.folder)
        name = (checkout.name or name_or_none(checkout.folder)) if checkout else None
        if checkout is None or name is None:
            error = _not_cloned(applied, where, "Dockerfile" if not files.host and where == str(recipe) else "recipe")
            if strict and not only:
                raise error
            notes.append(f"{error.message}: not imported from the recipe ({error.hint})")
            continue
        wanted = not only or name in only
        if applied.inline is not None:
            out.append(_Applied(name, None, "", applied.line, _written(name, applied, where) if wanted else None))
            continue
        if not applied.patch:  # a variable without a value (a shell loop's): needed only with no paths given
            if strict and wanted:
                needed(applied.word, where, "in the path of the applied patch")
            continue
        found = _located(files, built, applied, where, strict and wanted, wanted)
        if isinstance(found, InCloneFile):
            monolith = Monolith(
                name, Path(found.shown), found.shown, parse_patch(found.data, Path(found.shown), name, name),
                commit=found.commit, placed=True,
            )  # fmt: skip
            out.append(_Applied(name, None, applied.patch, applied.line, monolith))
        else:
            out.append(
                _Applied(name, found, applied.patch, applied.line, _monolith(name, found) if found and wanted else None)
            )
    return out, notes


def _not_cloned(applied: Applied, where: str, kind: str) -> UsageError:
    """The error for a patch applied in a folder no clone of the recipe makes: what to pass."""
    patch = applied.patch or applied.word.text
    if applied.inline is not None:
        patch = f"the patch in the here-document {applied.word.text}"
    said = f"{where}:{applied.line}: {patch} is applied in {applied.run_in}, which no `git clone` of the "
    if applied.run_in.startswith("/"):
        name = name_or_none(applied.run_in) or "NAME"
        tag = applied.image.rpartition(":")[2] if ":" in applied.image.rpartition("/")[2] else ""
        base = f" (the base image {applied.image} holds it? its tag {tag} may be the pin)" if tag else ""
        return UsageError(
            f"{said}{kind} makes",
            f"name its upstream and pin: --checkout {applied.run_in}={name}@REF --git {name}=URL{base}; "
            "or import the other upstreams with --only NAME",
        )
    return UsageError(
        f"{said}{kind} makes (a folder import cannot work out: it runs nothing)",
        "import that patch file by itself (--upstream, --git, --pin), and the others with --only NAME",
    )


def _written(name: str, applied: Applied, where: str) -> Monolith:
    """A patch the recipe writes in a here-document (``git apply <<'EOP'``): taken as written there."""
    assert applied.inline is not None
    text = applied.inline.literal(where, "the patch")
    path = Path(where)
    return Monolith(name, path, str(path), parse_patch(text.encode(), path, name, name), at=f":{applied.line}")


def _located(
    files: RecipeFiles, built: Built, applied: Applied, where: str, strict: bool, wanted: bool
) -> Path | InCloneFile | None:
    """The file that the copies before ``applied`` put where it is applied: of the build context (or the script's
    folder), or of a clone the recipe made; ``wanted``: one that only a later COPY (or another stage's) puts there
    is an error, ``strict``: any other not found too."""
    candidates = files.candidates(applied.copies, applied.patch)
    found = files.locate(candidates, where) if wanted else files.local(candidates)
    if isinstance(found, Path):
        return checked(files.repository, found, f"{where}:{applied.line}", "the patch")
    if found is not None:
        return found
    if wanted and not files.host:
        _copied_too_late(files.roots, built, applied, where)
    if not strict:
        return None
    shown = [c if isinstance(c, str) else f"{c.path} of the clone {c.folder}" for c in candidates]
    copied = f"copied from {', '.join(shown)}" if candidates else "copied in by no COPY line"
    if files.host:
        raise UsageError(
            f"{where}:{applied.line}: applies {applied.patch}, which is not a file in {files.folder} (the folder the "
            "script runs in) or a folder above it in its repository; nothing was written",
            "give the patch files (or their folder) too, with --upstream, --git and --pin",
        )
    raise UsageError(
        f"{where}:{applied.line}: applies {applied.patch}, {copied}, which is not a file in the build context "
        f"{files.roots[0]} (or a folder above it in its repository)",
        "give the patch files (or their folder) too, or --build-arg for the ARG that picks them"
        + (
            ", or --source NAME=LOCATION for the clone it copies from"
            if any(not isinstance(c, str) for c in candidates)
            else ""
        ),
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
        context = [c for c in context_candidates((copy,), applied.patch) if isinstance(c, str)]
        if copy in applied.copies or _first_file(roots, context) is None:
            continue
        when = "after it" if copy.stage == applied.stage else "in another build stage, not one this RUN is built on"
        raise UsageError(
            f"{where}:{applied.line}: applies {applied.patch}, which only the COPY at line {copy.line} puts in "
            f"the image, {when}: docker build fails there, the file is not there yet; nothing was written",
            "move the COPY line before the RUN line that applies the patch (in the same stage), then import again",
        )


def _declared(recipe: Path, built: Built, name: str) -> Declared | None:
    """The URL and pin of the checkout named ``name``: one error for a variable either uses that has no value."""
    checkout: Checkout | None = next((c for c in built.checkouts if (c.name or name_or_none(c.folder)) == name), None)
    if checkout is None:
        return None
    where = checkout.where or str(recipe)
    if checkout.given:  # --checkout: its URL comes from --git (or the manifest)
        return Declared(None, checkout.ref.text if checkout.ref else None, where)
    url = needed(checkout.url, where, f"in the URL of git clone of {name}")
    ref = needed(checkout.ref, where, f"in the ref {name} is checked out at") if checkout.ref else None
    branch = ref if ref and (checkout.branch or not _COMMIT.fullmatch(ref)) else None
    line = checkout.ref_line or checkout.line
    return Declared(url, ref, f"{where}:{line}", branch)
