"""matrix keeps each column's results in the cache by row: a warm run checks nothing again, says the same, a
changed patch is checked again with the rows that stand on it and no other, a new column is checked; an entry
another user could write is refused, as cached clones are."""

from __future__ import annotations

import os

from support.commands import matrix
from support.scenes import lines_with, setup, tagged_upstream

import patchmgr.engine.classify as classify
import patchmgr.history.matrix as matrix_module


def entries(tmp_path):
    folder = tmp_path / "cache" / "matrix-cells"
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []


def test_a_warm_matrix_checks_nothing_again_and_says_the_same(cli, project, upstream, tmp_path, monkeypatch):
    tagged_upstream(project, upstream)
    cold = matrix(cli, upstream, "--json")
    assert cold.code == 1 and len(entries(tmp_path)) == 6  # pin, four tags, tip: one entry per column

    def no_check(*args, **kwargs):
        raise AssertionError("a cached column was checked again")

    monkeypatch.setattr(matrix_module, "_check_columns", no_check)
    monkeypatch.setattr(matrix_module, "_first_change", no_check)
    warm = matrix(cli, upstream, "--json")
    assert (warm.code, warm.json) == (cold.code, cold.json)
    assert matrix(cli, upstream).out == matrix(cli, upstream).out


def test_a_changed_patch_or_a_new_column_is_checked_not_taken_from_the_cache(cli, project, upstream, tmp_path):
    tagged_upstream(project, upstream)
    before = matrix(cli, upstream, "--json").json["upstreams"][0]
    kept = entries(tmp_path)
    # the patch now changes line 21 too: at v1.2.0 (line 20 rewritten) it still conflicts, but it is another series
    patch = project.root / "patches" / "lib" / "fix.patch"
    pin = before["columns"][0]["commit"]
    data = upstream.make_patch(pin, {"src/mod.py": lines_with({20: "fixed 20", 30: "fixed 30"})}, "Fix line 20")
    patch.write_bytes(data)
    after = matrix(cli, upstream, "--json").json["upstreams"][0]
    assert set(kept) == set(entries(tmp_path))  # one entry per column: the changed patch is another row in each
    assert after["patches"][0]["cells"][0]["state"] == "clean"
    # a new tag is one new column, checked
    upstream.commit({"src/mod.py": lines_with({20: "rewritten again"}, insert_top=3)}, "rewrite again (#99)")
    from support.gitrepos import git

    git(upstream.path, "tag", "v3.0.0")
    newest = matrix(cli, upstream, "--json").json["upstreams"][0]
    assert [c["name"] for c in newest["columns"]][-2:] == ["v3.0.0", "main"]
    assert newest["patches"][0]["cells"][-2]["state"] == "conflict"


def test_an_entry_another_user_could_write_is_refused(cli, project, upstream, tmp_path):
    tagged_upstream(project, upstream)
    assert matrix(cli, upstream).code == 1
    folder = tmp_path / "cache" / "matrix-cells" / entries(tmp_path)[0]
    os.chmod(folder, 0o777)  # every user may put a file there: its results prove nothing
    result = matrix(cli, upstream)
    assert result.code == 1 and result.out == ""  # a cache this machine cannot use: one error, as for a clone
    assert result.err.startswith("error: a cached matrix result (") and "can be written by every user" in result.err
    assert result.err.splitlines()[1].startswith("hint: remove it") and "Traceback" not in result.err
    os.chmod(folder, 0o700)


def test_an_entry_that_cannot_be_read_back_is_checked_again(cli, project, upstream, tmp_path):
    tagged_upstream(project, upstream)
    cold = matrix(cli, upstream, "--json").json
    for name in entries(tmp_path):
        (tmp_path / "cache" / "matrix-cells" / name / "cells.pickle").write_bytes(b"cut off")
    assert matrix(cli, upstream, "--json").json == cold


def checked_patches(monkeypatch) -> list[str]:
    """The ids of the patches the engine checks from now on (every check, a walk's too), in order."""
    seen: list[str] = []
    real = classify.check_patch

    def counting(patch, reader, merge3=None):
        seen.append(patch.id)
        return real(patch, reader, merge3)

    monkeypatch.setattr(classify, "check_patch", counting)
    return seen


def test_an_edited_message_checks_that_row_and_the_rows_that_stand_on_it_again(
    cli, project, upstream, tmp_path, monkeypatch
):
    # four patches: "mod" and "mod-later" change the same file (the later one applies on top of the earlier one),
    # "readme" and "other" each a file of their own
    pin = upstream.head()
    patches = {
        "readme": upstream.make_patch(pin, {"README": "upstream, patched\n"}, "Patch the readme"),
        "mod": upstream.make_patch(pin, {"src/mod.py": lines_with({20: "fixed 20"})}, "Fix line 20"),
        "other": upstream.make_patch(pin, {"src/other.py": "other, patched\n"}, "Patch other"),
        "mod-later": upstream.make_patch(pin, {"src/mod.py": lines_with({40: "fixed 40"})}, "Fix line 40"),
    }
    setup(project, upstream, patches)
    upstream.commit({"src/mod.py": lines_with({}, insert_top=3)}, "add a header (#11)")
    from support.gitrepos import git

    git(upstream.path, "tag", "v1.0.0")
    upstream.commit({"src/mod.py": lines_with({20: "rewritten 20"}, insert_top=3)}, "rewrite line 20 (#12)")
    git(upstream.path, "tag", "v1.1.0")
    matrix(cli, upstream, "--json")
    folder = project.root / "patches" / "lib"

    def edit_message(patch_id: str) -> None:
        path = folder / f"{patch_id}.patch"
        path.write_bytes(path.read_bytes().replace(b"Why: the upstream", b"Why, edited: the upstream", 1))

    seen = checked_patches(monkeypatch)
    edit_message("other")
    edited = matrix(cli, upstream, "--json")
    assert set(seen) == {"other"}  # its row alone: no other patch reads its file
    seen.clear()
    edit_message("mod")
    edited = matrix(cli, upstream, "--json")
    assert set(seen) == {"mod", "mod-later"}  # its row and the later row that applies on top of it
    seen.clear()
    # the same verdicts as the whole series checked afresh
    for name in entries(tmp_path):
        (tmp_path / "cache" / "matrix-cells" / name / "cells.pickle").unlink()
    assert matrix(cli, upstream, "--json").json == edited.json
    assert set(seen) == set(patches)
