"""``patchmgr lint``: manifests and patch files well-formed, every patch documented.

Two profiles, chosen per target in its manifest (``lint-profile``): ``strict``, the default, patchmgr's own
rules (a subject and a message that says why, ``Upstream-Status`` and ``Origin``, git's full ``index``
lines, a final newline), and ``dep3``, what the DEP-3 specification itself asks (``Description`` or
``Subject``; ``Origin`` unless ``Author`` or ``From`` says who wrote it; field names in any case; plain
diffs). Both refuse patchmgr's own stubs and check ``Smoke-Test``. A patch that several targets list is
held to the strict rules when any of them is strict.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from patchmgr.model.dep3 import read_header
from patchmgr.model.errors import PatchmgrError
from patchmgr.model.input_files import read_input
from patchmgr.model.manifest import LINT_PROFILES, Target
from patchmgr.model.patchfile import UPSTREAM_STATUSES, PatchFile, diff_line_index, read_patch
from patchmgr.model.project import Project
from patchmgr.model.text import split_lines

STRICT_PROFILE, DEP3_PROFILE = LINT_PROFILES

_FULL_INDEX = re.compile(r"^index [0-9a-f]{40}\.\.[0-9a-f]{40}", re.M)
_ANY_INDEX = re.compile(r"^index ([0-9a-f]+)\.\.([0-9a-f]+)", re.M)
# the marker `patchmgr import` leaves in each piece's DEP-3 stub: lint reports it until a person describes the patch
IMPORT_STUB = "TODO: describe"


def is_stub(text: str) -> bool:
    """Whether a patch's header (what comes before its first diff) still holds the stub import and add leave."""
    return IMPORT_STUB in text.split("\ndiff --git ", 1)[0]


# the marker of the smoke test stub `patchmgr add` writes (maintain/start_files.py): lint reports it until replaced
SMOKE_STUB = "patchmgr: smoke test stub"


@dataclass(frozen=True)
class LintProblem:
    path: Path
    message: str  # without the path (shown before it)
    line: int | None = None  # the line of ``path`` it is on, when known

    @classmethod
    def of_error(cls, path: Path, message: str) -> LintProblem:
        """The problem an error's message says: ``PATH: what`` or ``PATH:LINE: what`` (the path said once)."""
        rest = message.removeprefix(str(path))
        if rest == message or not rest.startswith(":"):
            return cls(path, message)
        line = re.match(r":(\d+):\s*", rest)
        return cls(path, rest[line.end() :], int(line[1])) if line else cls(path, rest[1:].lstrip())

    @property
    def where(self) -> str:
        """``path`` or ``path:line``, as compilers and editors write it."""
        return f"{self.path}:{self.line}" if self.line else str(self.path)


def lint_project(project: Project) -> tuple[list[LintProblem], int]:
    """All problems found, and how many patch files were checked."""
    problems: list[LintProblem] = []
    targets: list[Target] = []
    for name in project.target_names():
        try:
            targets.append(project.target(name))
        except PatchmgrError as exc:
            path = project.manifests_dir / f"{name}.toml"
            problems.append(LintProblem.of_error(path, exc.message))
    checked: dict[Path, tuple[str, str, str]] = {}  # path -> (upstream, id, profile)
    for target in targets:
        for upstream in target.upstreams:
            for patch_id in upstream.patch_ids:
                path = project.patch_path(upstream.name, patch_id)
                profile = checked.get(path, ("", "", target.lint_profile))[2]
                strictest = STRICT_PROFILE if STRICT_PROFILE in (profile, target.lint_profile) else DEP3_PROFILE
                checked[path] = (upstream.name, patch_id, strictest)
    for path, (upstream_name, patch_id, profile) in checked.items():
        problems += lint_patch(project, path, upstream_name, patch_id, profile)
    for path in project.unlisted_patches(targets):
        problems.append(LintProblem(path, "no manifest lists this patch"))
    return problems, len(checked)


def lint_patch(
    project: Project, path: Path, upstream: str, patch_id: str, profile: str = STRICT_PROFILE
) -> list[LintProblem]:
    try:
        patch = read_patch(path, upstream, patch_id)
    except PatchmgrError as exc:
        return [LintProblem.of_error(path, exc.message)]
    messages = _strict_messages(patch) if profile == STRICT_PROFILE else dep3_messages(patch.data)
    return [LintProblem(path, message) for message in messages + _shared_messages(project, patch)]


def dep3_messages(data: bytes) -> list[str]:
    """What the DEP-3 specification finds missing in a patch's header (``data``: the patch file's bytes)."""
    lines = split_lines(data.decode("utf-8", "replace"))
    start = diff_line_index(lines)
    header = read_header("".join(lines[: len(lines) if start is None else start]))
    messages = []
    described = header.first("Description", "Subject")
    if described is None:
        messages.append("no Description or Subject field: DEP-3 asks for one, a short description on its first line")
    elif not described.split("\n", 1)[0].strip():  # only continuation lines: DEP-3's first line is the summary
        messages.append("the Description's first line is empty: DEP-3 asks for a short description there")
    if header.first("Origin", "Author", "From") is None:
        messages.append("no Origin field, and no Author or From to stand for it: DEP-3 asks for one of them")
    return messages


def _shared_messages(project: Project, patch: PatchFile) -> list[str]:
    """What every profile checks: patchmgr's own stub, and the Smoke-Test fields patchmgr runs."""
    messages = []
    if is_stub(patch.data.decode("utf-8", "replace")):
        messages.append(
            f"DEP-3 stub left by patchmgr import or add ({IMPORT_STUB!r}): say what the patch fixes and why "
            "in Description, then remove the marker"
        )
    for smoke in patch.field_values("Smoke-Test"):
        problem = smoke_test_problem(project, patch.upstream, smoke.strip())
        if problem:
            messages.append(f"Smoke-Test {smoke.strip()!r} {problem}")
    return messages


def _strict_messages(patch: PatchFile) -> list[str]:
    messages = []
    text = patch.text
    if not text.endswith("\n"):
        messages.append("no newline at the end of the file")
    if not patch.subject:
        messages.append("no subject or Description: say what the patch does")
    if len(patch.body.replace("\n", " ").split()) < 12:
        messages.append("the message does not say why the patch exists (what broke, how it showed)")
    status = patch.field("Upstream-Status")
    if not status:
        messages.append("no Upstream-Status field (Pending, Submitted <url>, Backport <url>, ...)")
    elif status.split()[0] not in UPSTREAM_STATUSES:
        messages.append(f"Upstream-Status {status.split()[0]!r} is not one of {', '.join(UPSTREAM_STATUSES)}")
    elif status.split()[0] in ("Submitted", "Backport", "Accepted") and len(status.split()) < 2:
        messages.append(f"Upstream-Status {status} needs the URL or ref it refers to")
    if not patch.field("Origin"):
        messages.append("no Origin field (vendor, upstream or backport, and where from)")
    if lacks_full_index(text):
        messages.append("index lines lack full 40-hex blob ids: regenerate with git format-patch --full-index")
    return messages


def lacks_full_index(text: str) -> bool:
    """Whether a patch's diff lacks git's full blob ids on an ``index`` line (or has none): what
    ``git format-patch --full-index`` writes, and what lets ``git am -3`` merge."""
    indexes = _ANY_INDEX.findall(text)
    return len(_FULL_INDEX.findall(text)) != len(indexes) or not indexes


SMOKE_DIR = ("tests", "smoke")
# A Smoke-Test value: a pytest node id, relative to the project root, of a .py file under
# tests/smoke/<upstream>/, optionally followed by ::names (identifiers) and, on the last name,
# one [parameter id] without whitespace or control characters.
_PATH_PART = r"[A-Za-z0-9_][A-Za-z0-9_.-]*"
_NAMES = r"(?:(?:::[A-Za-z_][A-Za-z0-9_]*)+(?:\[[^\s\x00-\x1f\x7f]+\])?)?"


def smoke_test_problem(project: Project, upstream: str, value: str) -> str | None:
    """Why ``value`` is not an acceptable Smoke-Test for a patch of ``upstream``; None when it is."""
    folder = "/".join((*SMOKE_DIR, upstream)) + "/"
    form = f"a test id of the form {folder}<file>.py[::name...]"
    if not value:
        return f"is empty: give {form}"
    if value.startswith("-"):
        return f"looks like a pytest option, not {form}"
    path = value.split("::", 1)[0]
    if path.startswith(("/", "~", "\\")) or re.match(r"[A-Za-z]:", path):
        return f"is an absolute path: give {form}, relative to the project root"
    if ".." in re.split(r"[/\\]", path):
        return f"climbs out with '..': give {form}"
    match = re.fullmatch(rf"(?P<path>{re.escape(folder)}(?:{_PATH_PART}/)*{_PATH_PART}\.py){_NAMES}", value)
    if match is None:
        return f"is not {form}"
    root = project.root.resolve()
    smoke_dir = root.joinpath(*SMOKE_DIR)
    file = (root / match["path"]).resolve()
    if not file.is_relative_to(smoke_dir):
        return f"leaves {'/'.join(SMOKE_DIR)}/ (it resolves outside it through a link)"
    if not file.is_file():
        return "does not exist"
    try:
        stub = SMOKE_STUB in read_input(file, str(file), "").decode("utf-8", errors="replace")
    except PatchmgrError as exc:
        return exc.message.removeprefix(f"{file}: ")
    if stub:
        return "is the stub patchmgr add wrote: write the test (the stub fails until then) and remove its marker line"
    return None
