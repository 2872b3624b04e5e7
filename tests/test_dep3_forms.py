"""DEP-3 as Debian defines it (issue 27, item 4): ``Subject`` is an alias of ``Description``, ``From`` of
``Author``; a mail-style header block is read with or without git format-patch's mbox ``From <sha> <date>``
line; lint names a broken manifest's path once."""

from __future__ import annotations

from pathlib import Path

import pytest

from patchmgr.cli import main
from patchmgr.model.mail import commit_spec, with_diffstat
from patchmgr.model.patchfile import parse_patch

INDEX = "index " + "1" * 40 + ".." + "2" * 40 + " 100644\n"
DIFF = "diff --git a/x.py b/x.py\n" + INDEX + "--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a = 1\n+a = 2\n"
WHY = "The sum was off by one for every input, so the training loss diverged after the first step."
MBOX = "From " + "0" * 40 + " Mon Sep 17 00:00:00 2001\n"

FORMS = {
    # Debian's own examples (https://dep-team.pages.debian.net/deps/dep3/): Subject for Description, From
    "Subject for Description": f"Subject: fix add\nOrigin: vendor\nUpstream-Status: Pending\n\n{WHY}\n---\n{DIFF}",
    "From and Subject, mail style": (
        f"From: Ann Example <ann@example.org>\nSubject: fix add\n\n{WHY}\n\nOrigin: vendor\n"
        f"Upstream-Status: Pending\n---\n{DIFF}"
    ),
    "mail without the mbox line": (
        "From: Ann Example <ann@example.org>\nDate: Thu, 1 Jan 2026 10:00:00 +0000\nSubject: [PATCH] fix add\n\n"
        f"{WHY}\n\nOrigin: vendor\nUpstream-Status: Pending\n---\n{DIFF}"
    ),
    "mail with the mbox line": (
        f"{MBOX}From: Ann Example <ann@example.org>\nDate: Thu, 1 Jan 2026 10:00:00 +0000\n"
        f"Subject: [PATCH] fix add\n\n{WHY}\n\nOrigin: vendor\nUpstream-Status: Pending\n---\n{DIFF}"
    ),
    "Description and Author": (
        f"Description: fix add\n {WHY}\nAuthor: Ann Example <ann@example.org>\nOrigin: vendor\n"
        f"Upstream-Status: Pending\n---\n{DIFF}"
    ),
}


@pytest.mark.fast
@pytest.mark.parametrize("text", FORMS.values(), ids=FORMS.keys())
def test_each_form_gives_the_subject_and_the_fields(text):
    patch = parse_patch(text.encode(), Path("fix.patch"))
    assert patch.subject == "fix add"
    assert patch.field("Origin") == "vendor" and patch.field("Upstream-Status") == "Pending"
    assert WHY.split()[0] in patch.body


@pytest.mark.fast
@pytest.mark.parametrize("form", [f for f in FORMS if f != "Subject for Description"])
def test_the_author_from_from_or_author_and_the_date_from_the_header(form):
    patch = parse_patch(FORMS[form].encode(), Path("fix.patch"))
    spec = commit_spec(patch)
    assert (spec.name, spec.address) == ("Ann Example", "ann@example.org")
    if "Date:" in FORMS[form]:
        assert patch.date == "Thu, 1 Jan 2026 10:00:00 +0000" and spec.date == patch.date
    assert spec.message.startswith("fix add\n\n")  # [PATCH] taken off as git am does, with or without the mbox line


@pytest.mark.fast
def test_a_plain_patch_beginning_with_another_field_is_not_read_as_a_mail():
    text = f"Date: someday\nDescription: fix add\nOrigin: vendor\n\n{DIFF}"
    patch = parse_patch(text.encode(), Path("fix.patch"))
    assert patch.date is None and patch.author is None and patch.subject == "fix add"


@pytest.mark.fast
def test_an_encoded_subject_without_the_mbox_line_is_decoded():
    text = f"From: =?UTF-8?q?J=C3=BCrgen?= <j@example.org>\nSubject: [PATCH v2 1/3] =?UTF-8?q?fix_add?=\n\n{DIFF}"
    patch = parse_patch(text.encode(), Path("fix.patch"))
    assert patch.subject == "fix add" and patch.author == "Jürgen <j@example.org>"


def write_project(root: Path, patch: str | None, manifest: str) -> None:
    (root / "manifests").mkdir(parents=True)
    (root / "patches/lib").mkdir(parents=True)
    (root / "manifests/t.toml").write_text(manifest)
    if patch is not None:
        (root / "patches/lib/fix.patch").write_text(patch)


MANIFEST = '[target]\nname = "t"\n[upstreams.lib]\ngit = "https://example.invalid/lib.git"\ncommit = "{sha}"\n'


@pytest.mark.fast
@pytest.mark.parametrize("form", FORMS)
def test_lint_passes_each_form(tmp_path, capsys, form):
    write_project(tmp_path, FORMS[form], MANIFEST.format(sha="a" * 40) + 'patches = ["fix"]\n')
    assert main(["lint", "--root", str(tmp_path)]) == 0, capsys.readouterr().out


@pytest.mark.fast
def test_lint_names_a_broken_manifest_once(tmp_path, capsys):
    write_project(tmp_path, None, MANIFEST.format(sha="abc"))
    assert main(["lint", "--root", str(tmp_path)]) == 1
    (line,) = capsys.readouterr().out.splitlines()
    path = str(tmp_path / "manifests/t.toml")
    assert line.startswith(f"{path}: ") and line.count(path) == 1, line
    (tmp_path / "manifests/t.toml").write_text("[target\n")
    assert main(["lint", "--root", str(tmp_path), "--json"]) == 1
    import json

    (problem,) = json.loads(capsys.readouterr().out)["problems"]
    assert problem["path"] == path and problem["message"].startswith("invalid TOML"), problem


@pytest.mark.fast
def test_a_mails_diffstat_is_replaced_up_to_its_summary_and_a_plain_diff_is_left_as_it_is():
    mail = ["Subject: [PATCH] Fix\n", "\n", "---\n", " a.py | 2 +-\n", " 1 file changed, 1 insertion(+)\n", "\n"]
    stat = " a.py | 4 ++--\n b.py | 1 +\n 2 files changed, 3 insertions(+), 2 deletions(-)\n"
    assert with_diffstat(mail, stat) == [*mail[:3], *stat.splitlines(keepends=True), "\n"]
    plain = ["Description: Fix\n", "---\n"]  # a DEP-3 header's --- with no diffstat after it
    assert with_diffstat(plain, stat) == plain
