"""Asking another Python interpreter (``--python PATH``) about itself: run a probe script in it, and read its
answer strictly. An interpreter that cannot run, fails, or answers anything but the JSON asked for is bad input
(exit 2), named with the reason."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TypeVar

from patchmgr.io import children
from patchmgr.model.errors import UsageError

T = TypeVar("T")

_NOT_PYTHON_HINT = "give the path of a Python 3 interpreter, e.g. VENV/bin/python"


def interpreter_answer(python: str, output: bytes, read: Callable[[object], T]) -> T:
    """What ``python`` printed for one of patchmgr's probe scripts, read strictly by ``read``.

    Anything but UTF-8 JSON of the shape ``read`` expects (it raises ``KeyError``,
    ``TypeError`` or ``ValueError`` otherwise) means ``python`` is not a Python
    interpreter patchmgr can work with: bad input, exit 2.
    """

    def refused(why: str) -> UsageError:
        return UsageError(f"--python {python} did not answer as a Python interpreter ({why})", _NOT_PYTHON_HINT)

    try:
        text = output.decode("utf-8")
    except UnicodeDecodeError:
        raise refused("its output is not UTF-8 text") from None
    if not text.strip():
        raise refused("it printed nothing")
    try:
        raw = json.loads(text)
    except (ValueError, RecursionError):
        raise refused(f"its output is not JSON: {_excerpt(text)}") from None
    try:
        return read(raw)
    except KeyError as exc:
        raise refused(f"its answer has no {exc}") from None
    except (TypeError, ValueError, RecursionError) as exc:
        raise refused(f"its answer is not what the probe prints: {exc}") from None


def run_probe(
    python: str,
    script: str,
    *args: str,
    timeout: float = 120,
    env: Mapping[str, str] | None = None,
    cwd: str | Path | None = None,
) -> bytes:
    """Run ``script`` in ``python`` (in ``cwd``, with ``env``: None, this process's) and return its standard output;
    bad input (exit 2) when it cannot run."""
    try:
        done = children.run([python, "-c", script, *args], capture_output=True, timeout=timeout, env=env, cwd=cwd)
    except subprocess.TimeoutExpired:
        raise UsageError(f"--python {python}: it did not answer within {timeout:g}s", _NOT_PYTHON_HINT) from None
    except (OSError, ValueError) as exc:
        raise UsageError(f"--python {python}: cannot run it ({cannot_run(python, exc)})", _NOT_PYTHON_HINT) from None
    if done.returncode != 0:
        lines = done.stderr.decode("utf-8", "replace").strip().splitlines()
        last = lines[-1].strip() if lines else f"exit status {done.returncode}, no output"
        raise UsageError(
            f"--python {python}: the interpreter failed ({last[:300]})",
            "give a working Python 3 interpreter (3.8 or later)",
        )
    said: bytes = done.stdout
    return said


def cannot_run(python: str, exc: OSError | ValueError) -> str:
    """Why running ``python`` failed, in words: a folder, a file that is not executable, or the system's reason."""
    if os.path.isdir(python):
        return "it is a folder"
    if os.path.isfile(python) and not os.access(python, os.X_OK):
        return "it is not executable"
    return exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)


def _excerpt(text: str, length: int = 60) -> str:
    text = text.strip()
    return repr(text[:length]) + ("..." if len(text) > length else "")
