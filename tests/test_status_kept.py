"""A status at the pin kept in the cache (``check/verdicts``): read back only while nothing it was made from
changed; every input is part of its key, and each one changed makes the next status check again."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import pytest
from support.gitrepos import UpstreamRepo
from support.scenes import lines_with, pin_fixes

import patchmgr.check.status as check_status
from patchmgr.check import verdicts
from patchmgr.model.project import Project
from patchmgr.sources.store import Store
from patchmgr.sources.upstream import Sources

PATCH = b"""From: A <a@example.org>
Subject: [PATCH] Fix

Why: it breaks.

Origin: vendor
Upstream-Status: Pending
---
 src/mod.py | 2 +-
 1 file changed, 1 insertion(+), 1 deletion(-)

diff --git a/src/mod.py b/src/mod.py
--- a/src/mod.py
+++ b/src/mod.py
@@ -1,3 +1,3 @@
 line 1
-line 2
+fixed 2
 line 3
"""


def scene(tmp_path: Path, commit: str = "a" * 40, location: str = "/srv/lib", patch: bytes = PATCH):
    """A project with target ``t`` (upstream ``lib`` pinned at ``commit``, one patch), its cached clone's folder,
    and the ``Sources`` a status of it would use: all without git."""
    root = tmp_path / "project"
    (root / "manifests").mkdir(parents=True, exist_ok=True)
    (root / "patches" / "lib").mkdir(parents=True, exist_ok=True)
    (root / "patches" / "lib" / "fix.patch").write_bytes(patch)
    (root / "manifests" / "t.toml").write_text(
        f'[target]\nname = "t"\ndescription = "x"\n[upstreams.lib]\ngit = "https://example.invalid/lib.git"\n'
        f'commit = "{commit}"\npatches = ["fix"]\n'
    )
    store = Store(tmp_path / "cache")
    clone = store.repo_path("lib")
    for part in ("objects/pack", "objects/info", "refs"):
        (clone / part).mkdir(parents=True, exist_ok=True)
    if not (clone / "config").exists():
        (clone / "config").write_text("[core]\n\tbare = true\n")
        (clone / "HEAD").write_text("ref: refs/heads/main\n")
    project = Project(root)
    return project, project.target("t").upstreams[0], Sources(store, {"lib": location})


def key_of(tmp_path: Path, **changes) -> str | None:
    project, upstream, sources = scene(tmp_path, **changes)
    return verdicts.key(project, upstream, sources)


@pytest.mark.fast
def test_every_input_is_in_the_key(tmp_path):
    first = key_of(tmp_path)
    assert first is not None and key_of(tmp_path) == first  # the same inputs, the same key
    changed = {
        "the pin": key_of(tmp_path, commit="b" * 40),
        "the source": key_of(tmp_path, location="/srv/other"),
        "a patch's bytes": key_of(tmp_path, patch=PATCH.replace(b"fixed 2", b"fixed 2!")),
        "a guard": key_of(tmp_path, patch=PATCH.replace(b"Upstream-Status", b"Guard: absent cuda in src/mod.py\nUp")),
    }
    assert all(value not in (None, first) for value in changed.values()), changed
    assert len(set(changed.values())) == len(changed)


@pytest.mark.fast
def test_the_cached_clone_is_in_the_key(tmp_path):
    first = key_of(tmp_path)
    _project, _upstream, sources = scene(tmp_path)
    config = sources.store.repo_path("lib") / "config"
    config.write_text(config.read_text() + "\tfilemode = true\n")  # a changed config: checked (and trusted) again
    assert key_of(tmp_path) != first
    second = key_of(tmp_path)
    (sources.store.repo_path("lib") / "objects" / "pack" / "pack-1.pack").write_bytes(b"")  # a fetch or a repack
    assert key_of(tmp_path) != second
    shutil.rmtree(sources.store.repo_path("lib"))
    project, upstream, sources = scene(tmp_path)
    shutil.rmtree(sources.store.repo_path("lib"))
    assert verdicts.key(project, upstream, sources) is None  # no clone: nothing to recall


@pytest.mark.fast
def test_the_code_and_its_version_are_in_the_key(tmp_path):
    code = tmp_path / "code"
    (code / "engine").mkdir(parents=True)
    (code / "engine" / "classify.py").write_text("x = 1\n")
    first = verdicts.fingerprint(code, "0.1.0")
    assert verdicts.fingerprint(code, "0.1.0") == first
    assert verdicts.fingerprint(code, "0.1.1") != first
    os.utime(code / "engine" / "classify.py", ns=(1, 1))  # the engine changed (here: only its time)
    assert verdicts.fingerprint(code, "0.1.0") != first
    assert verdicts.code_fingerprint() != verdicts.fingerprint(
        Path(verdicts.patchmgr.__file__).parent, verdicts.patchmgr.__version__
    )  # the libraries the engine checks with are in it too


def status_out(cli, upstream: UpstreamRepo, *extra: str):
    return cli("status", "--target", "t", "--source", f"lib={upstream.path}", *extra)


def test_a_warm_status_is_read_back_and_a_changed_patch_is_checked_again(cli, project, upstream, monkeypatch, tmp_path):
    pin_fixes(project, upstream, {"fix": {20: "fixed 20"}})
    first = status_out(cli, upstream, "--json")  # fetches: nothing kept
    second = status_out(cli, upstream, "--json")  # from the cache alone: kept
    assert first.code == second.code == 0
    checked = []
    real = check_status.check_upstream
    monkeypatch.setattr(check_status, "check_upstream", lambda *a, **k: checked.append(1) or real(*a, **k))
    third = status_out(cli, upstream, "--json")
    assert checked == [] and third.out == second.out  # read back, word for word
    patch = project.root / "patches" / "lib" / "fix.patch"
    pin = upstream.head()
    patch.write_bytes(upstream.make_patch(pin, {"src/mod.py": lines_with({25: "fixed 25"})}, "Fix"))
    fourth = status_out(cli, upstream, "--json")
    assert checked == [1] and fourth.code == 0
    assert len(list((tmp_path / "cache" / "verdicts").iterdir())) == 1  # the new status replaced the old one
    assert fourth.json["upstreams"][0]["patches"][0]["sha256"] != third.json["upstreams"][0]["patches"][0]["sha256"]
    text = status_out(cli, upstream)
    assert "lib: " in text.out and "(cached)" in text.out


def test_a_kept_status_another_user_could_write_is_refused(cli, project, upstream, tmp_path):
    pin_fixes(project, upstream, {"fix": {20: "fixed 20"}})
    status_out(cli, upstream)
    status_out(cli, upstream)
    (entry,) = (tmp_path / "cache" / "verdicts").iterdir()
    entry.chmod(entry.stat().st_mode | stat.S_IWOTH)
    refused = status_out(cli, upstream)
    assert refused.code == 1  # as a cached clone another user could write: the cache is refused, nothing checked
    assert refused.out == "" and "can be written by every user" in refused.err and "a kept status" in refused.err


def test_a_kept_status_holds_what_status_shows_not_the_bytes_it_checked(cli, project, upstream, tmp_path):
    """Issue 39, item 7: the kept status pickled every patch's post-image bytes and its parsed diffs (90 MB for
    299 real patches). It keeps what status shows: read back, the output is the same word for word, and the
    entry is far smaller than the file the patches rewrite."""
    big = "".join(f"value_{i} = {i}\n" for i in range(60_000))  # about 1 MB
    upstream.commit({"src/big.py": big}, "a big file")
    pin = upstream.head()
    for number in range(3):
        changed = big.replace(f"value_{number * 1000} = ", f"value_{number * 1000} = -")
        project.add_patch("lib", f"fix{number}", upstream.make_patch(pin, {"src/big.py": changed}, f"Fix {number}"))
    spec = {"git": "https://example.invalid/lib.git", "commit": pin, "patches": ["fix0", "fix1", "fix2"]}
    project.manifest("t", {"lib": spec})
    status_out(cli, upstream, "--json")
    checked = status_out(cli, upstream, "--json")  # from the cache alone: kept now
    (entry,) = (tmp_path / "cache" / "verdicts").iterdir()
    size = (entry / verdicts.ENTRY).stat().st_size
    assert size < 20_000, f"the kept status is {size} bytes"
    again = status_out(cli, upstream, "--json")
    assert again.out == checked.out and again.code == checked.code == 0
    assert status_out(cli, upstream).out == status_out(cli, upstream).out
