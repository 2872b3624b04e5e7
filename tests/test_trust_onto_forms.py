"""Issue 24, items 4 and 5 (part): every patch form moves through edit --onto and comes back in its own form;
blobs a source lacks are left out at every path the checked-out ref has them, and said so.

Real upstream repositories and real patch files: a plain diff with DEP-3 fields (what ``patchmgr import``
writes, and what people write by hand), the same without the ``---`` line, a ``diff -u`` with fields, a bare
``git diff``, one that names itself with DEP-3's ``Subject``/``From`` aliases, and one with a byte-order mark.
"""

from __future__ import annotations

import pytest
from support.commands import edit_args, gitenv
from support.gitrepos import BASE_TEXT, git
from support.scenes import lines_with

from patchmgr.model.dep3_edit import today

PATCHED = lines_with({20: "line 20 patched"})
MOVED = lines_with({}, insert_top=3)  # the new ref: three lines on top, so the patch lands 3 lines lower
MANIFEST = """[target]
name = "t"
description = "test target"

[upstreams.lib]
git = "https://example.invalid/lib.git"
commit = "{pin}"
version = "0.4.2"
patches = ["plain-fix"]
"""
FIELDS = (
    "Description: Fix line 20 for our training runs\n"
    " The upstream value breaks the runs on our cluster in a specific way.\n"
    "Author: Jane Doe <jane@example.com>\n"
    "Origin: vendor\n"
    "Upstream-Status: Pending\n"
    "Last-Update: 2025-01-01\n"
)
ALIASES = (
    "From: Jane Doe <jane@example.com>\n"
    "Subject: Fix line 20 for our training runs\n"
    " The upstream value breaks the runs on our cluster in a specific way.\n"
    "Origin: vendor\n"
    "Upstream-Status: Pending\n"
    "Last-Update: 2025-01-01\n"
)


def git_diff(upstream, pin) -> str:
    """The real ``git diff --full-index`` of the fix at the pin (cut out of a real format-patch)."""
    mail = upstream.make_patch(pin, {"src/mod.py": PATCHED}, "Fix line 20").decode()
    return mail[mail.index("diff --git ") :]


def traditional(diff: str) -> str:
    """The same change as ``diff -u`` writes it: no ``diff --git`` or ``index`` line."""
    return "".join(line for line in diff.splitlines(keepends=True) if not line.startswith(("diff --git ", "index ")))


FORMS = {
    "import form (fields, ---, git diff)": lambda diff: FIELDS + "---\n" + diff,
    "fields then git diff": lambda diff: FIELDS + diff,
    "fields then diff -u": lambda diff: FIELDS + "diff -u a/src/mod.py b/src/mod.py\n" + traditional(diff),
    "bare git diff": lambda diff: diff,
    "Subject and From aliases": lambda diff: ALIASES + "---\n" + diff,
    "byte-order mark": lambda diff: "\ufeff" + FIELDS + "---\n" + diff,
    "fields written with CRLF": lambda diff: (FIELDS + "---\n").replace("\n", "\r\n") + diff,
    "fields, ---, a diffstat, git diff": lambda diff: FIELDS + "---\n" + STAT.format(2, "+-", 1, 1, s="") + diff,
}
STAT = " src/mod.py | {} {}\n 1 file changed, {} insertion{s}(+), {} deletion{s}(-)\n\n"


def plain_project(project, upstream, form: str) -> tuple[str, bytes]:
    """The pin with one plain-form patch; v0.5.0 moved the patched line down (the patch applies with an offset)."""
    git(upstream.path, "tag", "v0.4.2")
    pin = upstream.head()
    data = FORMS[form](git_diff(upstream, pin)).encode()
    project.add_patch("lib", "plain-fix", data)
    (project.root / "manifests" / "t.toml").write_text(MANIFEST.format(pin=pin))
    upstream.commit({"src/mod.py": MOVED}, "Three lines on top")
    git(upstream.path, "tag", "v0.5.0")
    return pin, data


def head_of(data: bytes) -> bytes:
    """A patch's message part: everything before its diff."""
    for marker in (b"\ndiff --git ", b"\n--- "):
        if marker in b"\n" + data:
            return (b"\n" + data)[1 : (b"\n" + data).index(marker) + 1]
    raise AssertionError(data)


def fields_of(data: bytes) -> bytes:
    """A patch's DEP-3 fields: its message part up to the ``---`` line."""
    return head_of(data).split(b"\n---")[0]


def edit(cli, upstream, into, *more):
    return cli(
        "edit", "--target", "t", "--upstream", "lib", "--into", str(into), "--source", f"lib={upstream.path}", *more
    )


def export(cli, into, *more):
    return cli("export", "--target", "t", "--upstream", "lib", "--from", str(into), *more)


@pytest.mark.parametrize("form", list(FORMS))
def test_edit_onto_moves_every_plain_form_and_export_keeps_the_form(tmp_path, cli, project, upstream, form):
    pin, data = plain_project(project, upstream, form)
    path = project.root / "patches/lib/plain-fix.patch"
    into = tmp_path / "work"
    moved = edit(cli, upstream, into, "--onto", "v0.5.0")
    assert moved.code == 0, moved.out + moved.err
    assert "Patch format detection failed" not in moved.out + moved.err
    assert (into / "src/mod.py").read_text() == lines_with({20: "line 20 patched"}, insert_top=3)
    bare = form == "bare git diff"
    subject, author = git(into, "log", "-1", "--format=%s%x00%an <%ae>").split("\0")
    assert subject == ("plain-fix" if bare else "Fix line 20 for our training runs")
    assert author == ("patchmgr <patchmgr@localhost>" if bare else "Jane Doe <jane@example.com>")

    exported = export(cli, into)
    assert exported.code == 0, exported.out + exported.err
    written = path.read_bytes()
    assert not written.startswith(b"From "), written.decode()  # it stays a plain diff, not a mail
    if form == "bare git diff":
        assert written.startswith(f"Last-Update: {today()}\ndiff --git ".encode()), written.decode()
    else:
        # its fields as they were, byte for byte, but for the day of the change
        assert head_of(written) == head_of(data).replace(b"2025-01-01", today().encode()).replace(
            b"diff -u a/src/mod.py b/src/mod.py\n", b""
        )
    assert written.endswith(git_diff_at(upstream, "v0.5.0").encode())
    after = cli("status", "--target", "t", "--source", f"lib={upstream.path}", "--json")
    assert after.code == 0 and after.json["upstreams"][0]["patches"][0]["state"] == "clean", after.out


def git_diff_at(upstream, ref: str) -> str:
    """The fix as git writes it at ``ref``: the tail of the exported patch (its hunk at line 23)."""
    new = lines_with({20: "line 20 patched"}, insert_top=3)
    mail = upstream.make_patch(git(upstream.path, "rev-parse", ref), {"src/mod.py": new}, "x").decode()
    return mail[mail.index("diff --git ") :]


@pytest.mark.parametrize("form", list(FORMS))
def test_plain_edit_of_every_form_exports_byte_identical_then_keeps_the_form(tmp_path, cli, project, upstream, form):
    _pin, data = plain_project(project, upstream, form)
    path = project.root / "patches/lib/plain-fix.patch"
    into = tmp_path / "work"
    made = edit(cli, upstream, into)
    assert made.code == 0, made.out + made.err
    assert export(cli, into).code == 0 and path.read_bytes() == data  # untouched: not a byte changed

    # the change is amended: the file keeps its form and fields, gets the new diff and today's Last-Update
    (into / "src/mod.py").write_text(lines_with({20: "line 20 patched", 21: "line 21 patched"}))
    git(into, "commit", "-q", "-a", "--amend", "--no-edit")
    changed = export(cli, into)
    assert changed.code == 0, changed.out + changed.err
    written = path.read_bytes()
    assert not written.startswith(b"From ") and b"+line 21 patched\n" in written, written.decode()
    if form != "bare git diff":
        assert fields_of(written) == fields_of(data).replace(b"2025-01-01", today().encode()).replace(
            b"diff -u a/src/mod.py b/src/mod.py\n", b""
        )
    if "diffstat" in form:  # the diffstat is the new diff's
        assert STAT.format(4, "++--", 2, 2, s="s").encode() + b"diff --git " in written, written.decode()
    lint = cli("lint")
    assert "Traceback" not in lint.out + lint.err


def test_a_reworded_plain_patch_says_the_new_words_and_keeps_its_other_fields(tmp_path, cli, project, upstream):
    _pin, data = plain_project(project, upstream, "import form (fields, ---, git diff)")
    into = tmp_path / "work"
    assert edit(cli, upstream, into).code == 0
    git(into, "commit", "-q", "--amend", "-m", "Fix line 20 for every run\n\nThe old value overflows on 8 GPUs.")
    assert export(cli, into).code == 0
    written = (project.root / "patches/lib/plain-fix.patch").read_text()
    assert written.startswith(
        "Description: Fix line 20 for every run\n The old value overflows on 8 GPUs.\n"
        "Author: Jane Doe <jane@example.com>\nOrigin: vendor\nUpstream-Status: Pending\n"
        f"Last-Update: {today()}\n---\ndiff --git "
    ), written


def test_a_plain_patch_that_conflicts_is_resolved_continued_and_exported_plain(tmp_path, cli, project, upstream):
    """The way the issue's user went: the plain patch stops at a conflict; resolved and continued (not skipped),
    export writes it back as the plain DEP-3 diff it was, with the resolved diff."""
    git(upstream.path, "tag", "v0.4.2")
    pin = upstream.head()
    data = FORMS["import form (fields, ---, git diff)"](git_diff(upstream, pin)).encode()
    path = project.add_patch("lib", "plain-fix", data)
    (project.root / "manifests" / "t.toml").write_text(MANIFEST.format(pin=pin))
    upstream.commit({"src/mod.py": lines_with({20: "line 20 rewritten upstream"})}, "Rewrite line 20")
    git(upstream.path, "tag", "v0.5.0")
    into = tmp_path / "work"
    stopped = edit(cli, upstream, into, "--onto", "v0.5.0")
    assert stopped.code == 1 and "stopped at patch 1 of 1, plain-fix" in stopped.out, stopped.out + stopped.err
    (into / "src/mod.py").write_text(lines_with({20: "line 20 rewritten upstream, and patched"}))
    git(into, "add", "src/mod.py")
    done = cli("edit", "--continue", "--into", str(into))
    assert done.code == 0, done.out + done.err
    assert git(into, "log", "-1", "--format=%an|%s") == "Jane Doe|Fix line 20 for our training runs"
    exported = export(cli, into)
    assert exported.code == 0, exported.out + exported.err
    written = path.read_bytes()
    assert head_of(written) == head_of(data).replace(b"2025-01-01", today().encode())
    assert b"-line 20 rewritten upstream\n+line 20 rewritten upstream, and patched\n" in written


def commits_of_edit_and_onto(tmp_path, cli, project, upstream, pin) -> dict:
    """The commit plain ``edit`` and ``edit --onto v0.5.0`` each make of the one patch (author, date, message);
    asserted equal."""
    (project.root / "manifests" / "t.toml").write_text(MANIFEST.format(pin=pin))
    upstream.commit({"src/mod.py": MOVED}, "Three lines on top")
    git(upstream.path, "tag", "v0.5.0")
    made = {}
    for name, more in (("edit", ()), ("onto", ("--onto", "v0.5.0"))):
        result = edit(cli, upstream, tmp_path / name, *more)
        assert result.code == 0, result.out + result.err
        made[name] = git(tmp_path / name, "log", "-1", "--format=%an <%ae>|%ad|%B", "--date=iso-strict")
    assert made["edit"] == made["onto"]
    return made


def test_fields_beyond_ascii_make_the_same_commit_in_edit_and_edit_onto(tmp_path, cli, project, upstream):
    git(upstream.path, "tag", "v0.4.2")
    pin = upstream.head()
    fields = FIELDS.replace("Jane Doe", "Müller, Jörg").replace("Fix line 20", "Fix line 20 (café)")
    project.add_patch("lib", "plain-fix", (fields + "---\n" + git_diff(upstream, pin)).encode())
    made = commits_of_edit_and_onto(tmp_path, cli, project, upstream, pin)
    assert made["edit"].startswith(
        "Müller, Jörg <jane@example.com>|2025-01-01T00:00:00+00:00|"
        "Fix line 20 (café) for our training runs\n\nDescription: Fix line 20 (café)"
    )


# -- item 5 (part): blobs a source lacks ------------------------------------------------------------------------

GIF = "GIF89a a large picture, in the real mirror over 4 MiB\n"
FERN = "docs/fern/ddp [café].gif"  # the same blob at v0.5.0, under a name git quotes and a pattern must escape


def mirror_without_the_picture(tmp_path, project, upstream, touching=False):
    """The pin has docs/images/ddp.gif; v0.5.0 has the same blob under docs/fern/ too. The mirror (a copy of the
    upstream whose loose object of that blob is deleted) lacks it: at the pin, at one path; at v0.5.0, at two."""
    upstream.commit({"docs/images/ddp.gif": GIF}, "a picture")
    git(upstream.path, "tag", "v0.4.2")
    pin = upstream.head()
    files = {"docs/images/ddp.gif": GIF + "patched\n"} if touching else {"src/mod.py": PATCHED}
    project.add_patch("lib", "plain-fix", upstream.make_patch(pin, files, "Fix line 20"))
    (project.root / "manifests" / "t.toml").write_text(MANIFEST.format(pin=pin))
    upstream.commit({"src/mod.py": MOVED, FERN: GIF}, "Three lines on top, and the docs for fern")
    git(upstream.path, "tag", "v0.5.0")
    mirror = tmp_path / "mirror"
    import shutil

    shutil.copytree(upstream.path, mirror)
    git(mirror, "config", "uploadpack.allowFilter", "true")
    git(mirror, "config", "uploadpack.allowAnySHA1InWant", "true")
    blob = git(mirror, "rev-parse", f"{pin}:docs/images/ddp.gif")
    (mirror / ".git" / "objects" / blob[:2] / blob[2:]).unlink()
    assert git(upstream.path, "rev-parse", f"v0.5.0:{FERN}") == blob
    return pin, mirror


def left_out(note_text: str, *paths: str) -> bool:
    return any(
        "left out of the checkout" in line and "the source lacks" in line and all(p in line for p in paths)
        for line in note_text.splitlines()
    )


def test_apply_and_edit_say_which_files_the_source_lacks(tmp_path, cli, project, upstream):
    _pin, mirror = mirror_without_the_picture(tmp_path, project, upstream)
    source = f"lib={mirror}"
    applied = cli("apply", "--target", "t", "--into", str(tmp_path / "build"), "--source", source)
    assert applied.code == 0, applied.out + applied.err
    assert left_out(applied.out, "docs/images/ddp.gif"), applied.out
    as_json = cli("apply", "--target", "t", "--into", str(tmp_path / "build2"), "--source", source, "--json")
    assert as_json.code == 0 and left_out("\n".join(as_json.json["notes"]), "docs/images/ddp.gif"), as_json.out

    into = tmp_path / "work"
    edited = cli("edit", "--target", "t", "--upstream", "lib", "--into", str(into), "--source", source)
    assert edited.code == 0 and left_out(edited.out, "docs/images/ddp.gif"), edited.out + edited.err
    assert not (into / "docs/images/ddp.gif").exists() and git(into, "status", "--porcelain") == ""
    again = cli(
        "edit", "--target", "t", "--upstream", "lib", "--into", str(tmp_path / "w2"), "--source", source, "--json"
    )
    assert again.code == 0 and left_out("\n".join(again.json["notes"]), "docs/images/ddp.gif"), again.out


@pytest.mark.parametrize("cached", [False, True], ids=["from the mirror", "after patchmgr fetch"])
def test_edit_onto_leaves_out_the_lacking_blob_at_every_path_of_the_new_ref(tmp_path, cli, project, upstream, cached):
    _pin, mirror = mirror_without_the_picture(tmp_path, project, upstream)
    into = tmp_path / "work"
    if cached:  # the pin's checkout then comes from the cache, with the paths fetch recorded as lacking
        fetched = cli("fetch", "--target", "t", "--source", f"lib={mirror}")
        assert fetched.code == 0 and "docs/images/ddp.gif" in fetched.out, fetched.out + fetched.err
    moved = cli(*edit_args(into, mirror, "--json", onto="v0.5.0"))
    assert moved.code == 0, moved.out + moved.err
    notes = "\n".join(moved.json["notes"])
    assert left_out(notes, FERN, "docs/images/ddp.gif"), notes  # both paths at v0.5.0
    assert left_out(notes, "docs/images/ddp.gif")  # and the pin's, when edit made the checkout there
    assert (into / "src/mod.py").read_text() == lines_with({20: "line 20 patched"}, insert_top=3)
    assert not (into / FERN).exists() and not (into / "docs/images/ddp.gif").exists()
    assert git(into, "status", "--porcelain") == ""

    back = cli("edit", "--abort", "--into", str(into))  # back to the pin: its lacking file still left out
    assert back.code == 0, back.out + back.err
    assert git(into, "status", "--porcelain") == "" and (into / "src/mod.py").read_text() == PATCHED

    text = cli(*edit_args(tmp_path / "w2", mirror, onto="v0.5.0"))
    assert text.code == 0 and left_out(text.out, FERN, "docs/images/ddp.gif"), text.out
    exported = cli("export", "--target", "t", "--upstream", "lib", "--from", str(tmp_path / "w2"))
    assert exported.code == 0, exported.out + exported.err
    assert git(upstream.path, "rev-parse", "v0.5.0") in (project.root / "manifests/t.toml").read_text()


def test_a_patch_of_a_file_the_source_lacks_is_refused_clearly(tmp_path, cli, project, upstream):
    _pin, mirror = mirror_without_the_picture(tmp_path, project, upstream, touching=True)
    into = tmp_path / "build"
    for command in (
        ["apply", "--target", "t", "--into", str(into)],
        ["edit", "--target", "t", "--upstream", "lib", "--into", str(tmp_path / "work")],
        ["edit", "--target", "t", "--upstream", "lib", "--into", str(tmp_path / "w2"), "--onto", "v0.5.0"],
    ):
        result = cli(*command, "--source", f"lib={mirror}")
        assert result.code in (1, 2), (command, result.out, result.err)
        assert "Traceback" not in result.out + result.err
        assert "docs/images/ddp.gif" in result.out + result.err, (command, result.out, result.err)
        assert not into.exists() and not (tmp_path / "work").exists() and not (tmp_path / "w2").exists()


def test_what_import_writes_moves_through_edit_onto_and_export_keeps_it_plain(tmp_path, cli, project):
    """The whole way a new user goes: import a monolithic diff, describe the pieces, move them to a newer
    upstream commit with edit --onto, export. Every piece stays the plain DEP-3 diff import wrote."""
    from support.monolith import MONOLITH, URL, dirty_diff, fill_stubs, three_file_upstream

    lib = three_file_upstream(tmp_path)
    pin = lib.head()
    patch_file = tmp_path / "team" / "lib.patch"
    patch_file.parent.mkdir()
    patch_file.write_bytes(dirty_diff(lib, pin, MONOLITH))
    dockerfile = tmp_path / "team" / "Dockerfile"
    dockerfile.write_text(
        f"FROM base\nRUN git clone {URL.format('lib')} /ws/lib && cd /ws/lib && git checkout {pin}\n"
        "RUN cd /ws/lib && git apply /tmp/lib.patch\n"
    )
    source = ["--source", f"lib={lib.path}"]
    imported = cli("import", str(patch_file), "--target", "t", "--dockerfile", str(dockerfile), *source)
    assert imported.code == 0, imported.out + imported.err
    fill_stubs(project.root)
    pieces = {p.stem: p.read_bytes() for p in (project.root / "patches/lib").iterdir()}
    assert sorted(pieces) == ["a", "b", "c"] and not any(d.startswith(b"From ") for d in pieces.values())
    new = lib.commit({"src/b.py": "# moved\n" + BASE_TEXT}, "b: a line on top")
    git(lib.path, "tag", "v2")

    into = tmp_path / "work"
    moved = cli("edit", "--target", "t", "--upstream", "lib", "--into", str(into), "--onto", "v2", *source)
    assert moved.code == 0, moved.out + moved.err
    assert git(into, "log", "--format=%s", f"{new}..HEAD").splitlines() == [
        "Fix c: the upstream code breaks our training runs here, so we carry this change until upstream takes it.",
        "Fix b: the upstream code breaks our training runs here, so we carry this change until upstream takes it.",
        "Fix a: the upstream code breaks our training runs here, so we carry this change until upstream takes it.",
    ]
    exported = cli("export", "--target", "t", "--upstream", "lib", "--from", str(into))
    assert exported.code == 0, exported.out + exported.err
    after = {p.stem: p.read_bytes() for p in (project.root / "patches/lib").iterdir()}
    assert after["a"] == pieces["a"] and after["c"] == pieces["c"]  # unchanged there: not a byte moved
    assert head_of(after["b"]) == head_of(pieces["b"]).replace(  # b's fields kept, dated today, new diff
        b"Upstream-Status: Pending\n", f"Upstream-Status: Pending\nLast-Update: {today()}\n".encode(), 1
    )
    assert b"\n@@ -7,7 +7,7 @@ " in pieces["b"] and b"\n@@ -8,7 +8,7 @@ " in after["b"]  # a line lower at v2
    assert cli("lint").code == 0
    assert cli("status", "--target", "t", *source).code == 0


# -- hostile review: a mail's headers are read as git am reads them -------------------------------------------

LONG = "Fix café for the training runs on the cluster, where the upstream value of line twenty breaks them"
SUBJECTS = {  # how the mail's Subject is written -> the commit's subject git am makes of it
    "encoded": (None, "Fix café"),
    "folded": (None, LONG),
    "prefixes": ("Subject: Re: [PATCH v2 3/7] [RFC]  Fix   the\n\tthing", "Fix the thing"),
    "encoded-by-hand": ("Subject: [PATCH] =?ISO-8859-1?q?Fix_caf=E9?= =?UTF-8?b?IGFnYWlu?=", "Fix café again"),
}


@pytest.mark.parametrize("form", list(SUBJECTS))
def test_a_mails_subject_makes_the_same_commit_in_edit_and_edit_onto(tmp_path, cli, project, upstream, form):
    git(upstream.path, "tag", "v0.4.2")
    pin = upstream.head()
    written, subject = SUBJECTS[form]
    mail = upstream.make_patch(pin, {"src/mod.py": PATCHED}, LONG if form == "folded" else "Fix café")
    head, _, rest = mail.decode().partition("\nMIME-Version:")
    if written is not None:
        head = head[: head.index("\nSubject: ")] + "\n" + written
    head = head.replace("From: Upstream Dev", "From: =?UTF-8?q?M=C3=BCller=2C_J=C3=B6rg?=")
    mail = (head + "\nMIME-Version:" + rest).encode()
    project.add_patch("lib", "plain-fix", mail)
    made = commits_of_edit_and_onto(tmp_path, cli, project, upstream, pin)
    assert made["edit"].startswith(f"Müller, Jörg <dev@upstream.example>|2026-01-01T00:00:00+00:00|{subject}\n\n")
    exported = export(cli, tmp_path / "edit")
    assert exported.code == 0 and "no patch changed" in exported.out, exported.out + exported.err
    assert (project.root / "patches/lib/plain-fix.patch").read_bytes() == mail  # unchanged: byte for byte
    amended = tmp_path / "edit"
    (amended / "src/mod.py").write_text(PATCHED.replace("line 20 patched", "line 20 patched again"))
    assert gitenv(amended, "commit", "-q", "-a", "--amend", "--no-edit").returncode == 0
    assert export(cli, amended).code == 0
    new = (project.root / "patches/lib/plain-fix.patch").read_bytes()
    if written is None:  # format-patch's own Subject (encoded, folded) is written again as it was
        assert (
            new[new.index(b"\nSubject: ") : new.index(b"\nMIME-Version:")]
            == mail[mail.index(b"\nSubject: ") : mail.index(b"\nMIME-Version:")]
        )
    again = edit(cli, upstream, tmp_path / "again")
    assert again.code == 0, again.out + again.err
    assert git(tmp_path / "again", "log", "-1", "--format=%s") == subject  # the new file says it, encoded right


def test_in_body_headers_make_the_same_commit_in_edit_and_edit_onto(tmp_path, cli, project, upstream):
    """git format-patch --from writes the author at the top of the body; git am takes it over the header."""
    git(upstream.path, "tag", "v0.4.2")
    pin = upstream.head()
    mail = upstream.make_patch(pin, {"src/mod.py": PATCHED}, "Fix line 20").decode()
    at = mail.index("\n\n") + 2
    mail = (
        mail[:at]
        + (
            "From: =?UTF-8?q?Ann=20Oth=C3=A9r?= <ann@example.com>\nDate: Fri, 2 Jan 2026 10:00:00 +0100"
            "\nSubject: [PATCH] Fix line 20 in body\n\n"
        )
        + mail[at:]
    )
    project.add_patch("lib", "plain-fix", mail.encode())
    made = commits_of_edit_and_onto(tmp_path, cli, project, upstream, pin)
    assert made["edit"].startswith("Ann Othér <ann@example.com>|2026-01-02T10:00:00+01:00|Fix line 20 in body\n\nWhy: ")
    exported = export(cli, tmp_path / "edit")
    assert exported.code == 0 and "no patch changed" in exported.out, exported.out + exported.err
