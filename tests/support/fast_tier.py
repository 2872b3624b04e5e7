"""The fast tier (``pytest -m fast``) kept honest: a test marked ``fast`` that starts a process (git, pip,
a Python) or opens a network connection fails, saying what it started, instead of quietly making the
tier slow. Fast tests exercise model, engine, parsers and render on values in memory and files in tmp_path.

A pytest plugin (tests/conftest.py registers it): an autouse fixture that acts only on tests marked fast.
"""

from __future__ import annotations

import os
import socket
import subprocess

import pytest


def _refuse(what: str):
    def refused(*args, **kwargs):
        shown = " ".join(str(a) for a in (args[1] if what == "subprocess" and len(args) > 1 else args))[:200]
        pytest.fail(f"a fast test started a process: {what} {shown}", pytrace=True)

    return refused


@pytest.fixture(autouse=True)
def fast_tests_start_no_process(request, monkeypatch):
    if request.node.get_closest_marker("fast") is None:
        return
    monkeypatch.setattr(subprocess.Popen, "_execute_child", _refuse("subprocess"))
    for name in ("posix_spawn", "posix_spawnp", "fork", "forkpty", "system", "execv", "execve", "execvp"):
        if hasattr(os, name):
            monkeypatch.setattr(os, name, _refuse(f"os.{name}"))

    def no_network(self, address, *args, **kwargs):
        if self.family in (socket.AF_INET, socket.AF_INET6):
            pytest.fail(f"a fast test reached the network: {address}", pytrace=True)
        return real_connect(self, address, *args, **kwargs)

    real_connect = socket.socket.connect
    monkeypatch.setattr(socket.socket, "connect", no_network)
