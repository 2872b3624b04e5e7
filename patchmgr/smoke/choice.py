"""Which interpreter and environment run one upstream's smoke tests (without ``--python``).

The running interpreter when it fits the upstream's Python (``smoke-python`` in the manifest, else its
``Requires-Python`` at the code under test) or the upstream declares none: in the smoke environment of its
``smoke-requirements`` when it names some, else as it is. Otherwise the highest interpreter of the machine that
fits (``smoke.pythons``), in a smoke environment made with it. The requirements are those of the version under
test: the first ``[[smoke-env]]`` of the manifest whose ``versions`` hold the release version of the upstream's
code (``tree.upstream.version``: the pin's ``version``; at another ref, the release version it resolves to, which
the caller puts there), else ``smoke-requirements``. When none fits, the running interpreter runs
them as before: what passes there proves the patch, anything else is not proven, with the range and the way
to an interpreter named.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from patchmgr.smoke.envs import Progress, SmokeEnv, smoke_env
from patchmgr.smoke.interpreter import PythonNeed, interpreter_version, python_need, python_range
from patchmgr.smoke.pythons import Interpreter, find_interpreter
from patchmgr.targets.trees import SmokeTree


@dataclass(frozen=True)
class UpstreamPython:
    python: str  # the program that runs the tests (an environment's bin/python, or an interpreter)
    need: PythonNeed | None  # None when the upstream's code is not there
    note: str  # which interpreter and environment ran them ("" when none ran)
    devices_python: str = ""  # whose device probe holds for it: the running one's, unless another Python runs it


def choose_python(tree: SmokeTree, progress: Progress | None = None) -> UpstreamPython:
    """Each upstream's interpreter and environment, built or reused here (before any test runs)."""
    running, version = interpreter_version(None)
    if tree.patched_root is None:
        return UpstreamPython(running, None, "", running)
    declared = python_range(tree)
    need = python_need(tree, running, version, declared)
    assert need is not None
    found: Interpreter | None = None
    if not need.fits and declared[0] is not None:
        found = find_interpreter(declared[0])
        need = need if found is not None else replace(need, searched=True)
    upstream = tree.upstream
    requirements = upstream.smoke_requirements_for(upstream.version)
    own = replace(upstream, smoke_requirements=requirements)
    env = smoke_env(own, progress, python=found) if found is not None or requirements else None
    if found is not None:
        need = python_need(tree, found.path, found.version, declared)
        assert need is not None
    interpreter = found.path if found is not None else running
    shown = found.version if found is not None else version
    said = f"{upstream.name}: smoke tests ran on Python {shown} ({interpreter})"
    if found is not None:
        said += f", the highest that fits {declared[0]} ({declared[1]})"
    if env is None:
        return UpstreamPython(running, need, said + " with its own packages", running)
    probed = env.python if found is not None else running  # a smoke environment of the running one borrows torch
    said += _in_env(env, _chosen_by(tree))
    return UpstreamPython(env.python, replace(need, environment=str(env.path)), said, probed)


def _in_env(env: SmokeEnv, chosen_by: str) -> str:
    how = f"built in {env.seconds:g}s" if env.built else "reused"
    return f" in the smoke environment {env.path} ({', '.join(env.requirements)}{chosen_by}; {how})"


def _chosen_by(tree: SmokeTree) -> str:
    """Which manifest entry gave the requirements, when a version range chose them (or passed them over)."""
    upstream = tree.upstream
    if not upstream.smoke_envs:
        return ""
    at = f" of {upstream.name} {upstream.version}" if upstream.version else f" (no release version for {upstream.name})"
    rule = upstream.smoke_env_rule(upstream.version)
    if rule is not None:
        return f": the manifest's smoke-env for versions {rule.versions}, chosen by the version{at}"
    return f": the manifest's smoke-requirements, no smoke-env's versions holding the version{at}"
