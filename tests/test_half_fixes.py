"""Half-fixes: each plausible wrong or partial version of a shipped patch must turn smoke red, for the bug's reason.

A smoke test proves a patch only if it also fails on a realistic half-fix, not only on the untouched upstream
(issue 16). ``tests/halffixes/<upstream>/<patch-id>/<name>.patch`` is such a variant of
``patches/<upstream>/<patch-id>.patch``: same headers, a different change, and it still applies clean at the
pin. The patch's smoke test module (the file its ``Smoke-Test`` names) lists them at its top, with what each
gets wrong and why the tests catch it, and the text smoke's failure reason must contain::

    HALF_FIXES = {
        "int32-only": "preprocess_packed_seqs converts only int32 masks: the int64 mask of a tokenizer ...",
    }
    HALF_FIX_REASONS = {
        "int32-only": "as a fancy index",
    }

For each file, in a copy of the project (manifests, patches, smoke tests) whose real patch is replaced by the
half-fix, the upstream's series up to that patch is applied into a fresh folder, so the half-fix sits where the
patch sits (the patches after it say nothing about this one, and smoke tests only a build that holds exactly
the manifest's series: the series is cut in the copy before apply, never after); then ``patchmgr smoke`` runs
those patches' tests, and this patch's verdict is the one looked at. Required: exit 1,
the verdict ``failed`` (an error is no catch: ``not-proven``), no test of the patch erring, and the failure
reason containing the text given, so a stand-in's AttributeError or an unrelated exception cannot pass for a
catch.

Upstreams with a PyPI release at the pin come from git or, where git is out of reach (CI), from the release.
A git-only upstream (MindSpeed, mbridge) runs only where ``PATCHMGR_HALF_FIX_SOURCES`` names a local clone
(``mindspeed=/path/to/MindSpeed mbridge=/path/to/mbridge``, the form of ``--source``); elsewhere, CI
included, its half-fixes are skipped with that reason, as CI can never get the code.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
HALF_FIX_DIR = ROOT / "tests" / "halffixes"
TARGET = "ascend"  # it lists every shipped patch (the cuda target is a subset)
MIN_PER_PATCH = 2
SOURCES_ENV = "PATCHMGR_HALF_FIX_SOURCES"
COPIED = ("manifests", "patches", "tests/smoke", "pyproject.toml")
# a failure reason that is an exception other than the assertion: a stand-in lacking a method, a wrong call
OTHER_EXCEPTION = re.compile(r"^(?!AssertionError\b)(?:\w+\.)*\w*(?:Error|Exception)\b")


@dataclass(frozen=True)
class HalfFix:
    """``tests/halffixes/<upstream>/<patch>/<name>.patch``: a wrong fix of one shipped patch, named by its path."""

    path: Path

    @property
    def upstream(self) -> str:
        return self.path.parent.parent.name

    @property
    def patch(self) -> str:
        return self.path.parent.name

    @property
    def name(self) -> str:
        return self.path.stem

    @property
    def id(self) -> str:
        return f"{self.upstream}/{self.patch}/{self.name}"


def half_fix_files() -> list[HalfFix]:
    return [HalfFix(p) for p in sorted(HALF_FIX_DIR.glob("*/*/*.patch"))]


def manifest_upstreams() -> dict[str, dict]:
    return tomllib.loads((ROOT / "manifests" / f"{TARGET}.toml").read_text())["upstreams"]


def smoke_modules(upstream: str, patch: str) -> list[Path]:
    """The smoke test files the real patch names in its Smoke-Test fields."""
    path = ROOT / "patches" / upstream / f"{patch}.patch"
    if not path.is_file():
        return []
    text = path.read_text(encoding="utf-8", errors="replace")
    header = text.split("\n---\n", 1)[0]
    values = re.findall(r"^Smoke-Test:\s*(\S+)", header, re.MULTILINE)
    return list(dict.fromkeys(ROOT / v.split("::", 1)[0] for v in values))


def declared(module: Path) -> dict[str, tuple[str, str]]:
    """HALF_FIXES and HALF_FIX_REASONS of a smoke test module, read without importing it:
    name -> (what it gets wrong, the text its failure reason contains; "" where none is given)."""
    found: dict[str, object] = {}
    for node in ast.parse(module.read_text()).body:
        targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
        for target in targets:
            if isinstance(target, ast.Name) and target.id in ("HALF_FIXES", "HALF_FIX_REASONS"):
                found[target.id] = ast.literal_eval(node.value)
    fixes, reasons = found.get("HALF_FIXES", {}), found.get("HALF_FIX_REASONS", {})
    return {name: (what, reasons.get(name, "")) for name, what in fixes.items()}


def expectations(fix: HalfFix) -> dict[str, tuple[str, str]]:
    found: dict[str, tuple[str, str]] = {}
    for module in smoke_modules(fix.upstream, fix.patch):
        if module.is_file():
            found |= declared(module)
    return found


def git_sources() -> dict[str, str]:
    pairs = (item.split("=", 1) for item in os.environ.get(SOURCES_ENV, "").split() if "=" in item)
    return {name: location for name, location in pairs}


def unavailable(upstream: str) -> str | None:
    """Why this upstream's code cannot be had here; None when it can."""
    entry = manifest_upstreams().get(upstream)
    if entry is None:
        return f"the {TARGET} manifest has no upstream {upstream!r}"
    if "pypi" in entry or upstream in git_sources():
        return None
    return (
        f"{upstream} is git only (no PyPI release at its pin) and git is out of reach in CI: "
        f"set {SOURCES_ENV}='{upstream}=<local clone>' to run its half-fixes"
    )


# ---------------------------------------------------------------- the declarations, checked without upstreams


def test_every_half_fix_is_declared_by_its_smoke_test_and_every_declared_one_exists():
    fixes = half_fix_files()
    assert fixes, f"no half-fix under {HALF_FIX_DIR}"
    problems = []
    for fix in fixes:
        if not (ROOT / "patches" / fix.upstream / f"{fix.patch}.patch").is_file():
            problems.append(f"{fix.id}: no patches/{fix.upstream}/{fix.patch}.patch to stand in for")
            continue
        entry = expectations(fix).get(fix.name)
        if entry is None:
            modules = [str(m.relative_to(ROOT)) for m in smoke_modules(fix.upstream, fix.patch)]
            problems.append(f"{fix.id}: not in HALF_FIXES of {modules}")
        elif not entry[1].strip():
            problems.append(f"{fix.id}: HALF_FIX_REASONS gives no text its failure reason must contain")
    on_disk = {f.id for f in fixes}
    for upstream, entry in manifest_upstreams().items():
        for patch in entry.get("patches", []):
            count = sum(f.upstream == upstream and f.patch == patch for f in fixes)
            if count < MIN_PER_PATCH:
                problems.append(
                    f"{upstream}/{patch}: {count} half-fixes under tests/halffixes/{upstream}/{patch}/, "
                    f"a smoke test proves the patch only with at least {MIN_PER_PATCH} caught"
                )
            for name in {n for m in smoke_modules(upstream, patch) if m.is_file() for n in declared(m)}:
                if f"{upstream}/{patch}/{name}" not in on_disk:
                    problems.append(
                        f"{upstream}/{patch}: HALF_FIXES names {name!r}, but "
                        f"tests/halffixes/{upstream}/{patch}/{name}.patch does not exist"
                    )
    assert not problems, "\n".join(problems)


# ---------------------------------------------------------------- each half-fix applied and smoked


def project_copy(fix: HalfFix, where: Path) -> Path:
    project = where / "project"
    for name in COPIED:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, project / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            (project / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, project / name)
    shutil.copyfile(fix.path, project / "patches" / fix.upstream / f"{fix.patch}.patch")
    return project


def series_up_to_this_patch(project: Path, fix: HalfFix) -> None:
    """Cut the upstream's series in the copy's manifest after the patch, before apply (smoke refuses a build whose
    series changed since apply)."""
    manifest = project / "manifests" / f"{TARGET}.toml"
    text = manifest.read_text()
    ids = tomllib.loads(text)["upstreams"][fix.upstream]["patches"]
    kept = ids[: ids.index(fix.patch) + 1]
    section = re.search(rf"^\[upstreams\.{re.escape(fix.upstream)}\]\s*$", text, re.MULTILINE)
    series = re.compile(r"^patches\s*=\s*\[[^\]]*\]", re.MULTILINE | re.DOTALL).search(text, section.end())
    manifest.write_text(text[: series.start()] + f"patches = {json.dumps(kept)}" + text[series.end() :])
    assert tomllib.loads(manifest.read_text())["upstreams"][fix.upstream]["patches"] == kept


def patchmgr(project: Path, cache: Path, *args: str, environ: dict[str, str] | None = None) -> tuple[int, str, str]:
    """``environ``: the environment to start from (a worker thread passes a copy made before it started: reading
    os.environ there races with the fixtures that set and unset variables around each test)."""
    env = {**(os.environ if environ is None else environ), "PATCHMGR_CACHE": str(cache), "PYTHONDONTWRITEBYTECODE": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "patchmgr", *args, "--root", str(project)],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    return done.returncode, done.stdout, done.stderr


def run_half_fix(fix: HalfFix, where: Path, cache: Path, environ: dict[str, str]) -> dict:
    """Apply the series up to the half-fix in place of the patch, then smoke it."""
    project = project_copy(fix, where)
    series_up_to_this_patch(project, fix)
    into = where / "build"
    sources = [a for n, loc in git_sources().items() if n == fix.upstream for a in ("--source", f"{n}={loc}")]
    code, out, err = patchmgr(
        project, cache, "apply", "--target", TARGET, "--into", str(into), "-u", fix.upstream, *sources, environ=environ
    )
    if code != 0:
        return {"stage": "apply", "code": code, "output": out + err}
    code, out, err = patchmgr(
        project,
        cache,
        "smoke",
        "--target",
        TARGET,
        "--into",
        str(into),
        "-u",
        fix.upstream,
        "--device",
        "cpu",
        "--json",
        environ=environ,
    )
    try:
        doc = json.loads(out)
    except ValueError:
        return {"stage": "smoke", "code": code, "output": out + err}
    return {"stage": "smoke", "code": code, "doc": doc, "output": out + err}


@pytest.fixture(scope="session")
def half_fix_runs(request, tmp_path_factory, release_cache, smoke_extras) -> dict[str, Future]:
    """Every selected half-fix run, started at once on a few workers: each is a pytest process of its own."""
    selected = [
        item.callspec.params["fix"]
        for item in request.session.items
        if getattr(item, "originalname", "") == "test_half_fix_turns_smoke_red_for_the_bugs_reason"
    ]
    # only those the test will look at: an available upstream, and declared in HALF_FIXES
    runnable = [fix for fix in selected if unavailable(fix.upstream) is None and fix.name in expectations(fix)]
    # fill the release cache once per upstream first, so the parallel applies only read it
    for upstream in dict.fromkeys(fix.upstream for fix in runnable):
        if "pypi" in manifest_upstreams()[upstream] and upstream not in git_sources():
            patchmgr(ROOT, release_cache, "fetch", "--target", TARGET, "-u", upstream)  # apply says if it failed
    pool = ThreadPoolExecutor(max_workers=max(2, min(4, os.cpu_count() or 2)))
    request.addfinalizer(lambda: pool.shutdown(wait=True, cancel_futures=True))
    base = tmp_path_factory.mktemp("half-fixes")
    environ = dict(os.environ)  # copied here, in the main thread, before any worker starts
    return {
        fix.id: pool.submit(run_half_fix, fix, base / fix.id.replace("/", "__"), release_cache, environ)
        for fix in runnable
    }


@pytest.mark.parametrize("fix", half_fix_files(), ids=lambda fix: fix.id)
def test_half_fix_turns_smoke_red_for_the_bugs_reason(fix, request):
    why_not = unavailable(fix.upstream)
    if why_not:
        pytest.skip(why_not)
    entry = expectations(fix).get(fix.name)
    assert entry is not None, f"{fix.id} is not in its smoke test module's HALF_FIXES"
    what, expected = entry
    run = request.getfixturevalue("half_fix_runs")[fix.id].result()
    assert run["stage"] == "smoke" and "doc" in run, (
        f"{fix.id} did not get to a smoke verdict ({run['stage']} exit {run['code']}); a half-fix must apply "
        f"clean in the series:\n{run['output'][-3000:]}"
    )
    doc = run["doc"]
    verdicts = {v["patch"]: v for v in doc["patches"]}
    verdict = verdicts[fix.patch]
    mine = [r for r in doc["results"] if r["patch"] == fix.patch]
    shown = json.dumps({"verdict": verdict, "results": mine}, indent=1)
    print(f"{fix.id}: {verdict['verdict']}: {verdict['reason']}")  # shown with pytest -rP
    assert run["code"] == 1, f"smoke passed with the half-fix {fix.id} ({what}):\n{shown}"
    assert verdict["verdict"] == "failed", f"{fix.id}: the smoke test did not fail by assertion:\n{shown}"
    assert not [r for r in mine if r["result"] == "error"], f"{fix.id}: a test erred, which proves nothing:\n{shown}"
    if expected:
        assert expected in verdict["reason"], (
            f"{fix.id}: smoke failed, but not for the bug's reason (expected {expected!r}):\n{shown}"
        )
    else:  # no text declared (the declaration test says so): at least no exception other than an assertion
        reason = verdict["reason"].split(" failed: ", 1)[-1]
        assert not OTHER_EXCEPTION.match(reason), f"{fix.id}: smoke failed by an exception, not an assertion:\n{shown}"
