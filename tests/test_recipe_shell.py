"""Shell text as a shell cuts it (logical lines, here-documents) and what a recipe's commands do to checkouts: the
pure readers under import's build scripts and Dockerfile here-documents (no file, no process)."""

from __future__ import annotations

import pytest

from patchmgr.model.dockerfile import InClone, context_candidates, instructions
from patchmgr.model.dockerfile_run import read_build
from patchmgr.model.errors import UsageError
from patchmgr.model.recipe import Script
from patchmgr.model.recipe_shell import read_script
from patchmgr.model.shell_lines import shell_lines

pytestmark = pytest.mark.fast


def test_logical_lines_keep_here_document_bodies_with_the_line_that_opens_them():
    text = (
        "set -e  # not a <<MARK in a comment\n"
        "git apply <<'EOP' && echo '<<NOT' \\\n  done\n"
        "diff --git a/x b/x\n$HOME stays\nEOP\n"
        "cat <<-EOF >out\n\tindented\n\tEOF\n"
        "echo 'an open\nquote'\n"
    )
    lines = shell_lines(text, first_line=10)
    assert [(line.line, line.text) for line in lines] == [
        (10, "set -e  # not a <<MARK in a comment"),
        (11, "git apply <<'EOP' && echo '<<NOT'   done"),
        (16, "cat <<-EOF >out"),
        (19, "echo 'an open\nquote'"),
    ]
    (patch,) = lines[1].heredocs
    assert (patch.delimiter, patch.quoted, patch.body, patch.line) == (
        "EOP",
        True,
        "diff --git a/x b/x\n$HOME stays\n",
        13,
    )
    assert patch.literal("f", "the patch") == patch.body
    (tabbed,) = lines[2].heredocs
    assert (tabbed.quoted, tabbed.strip_tabs, tabbed.body) == (False, True, "indented\n")
    with pytest.raises(UsageError, match=r"^f:14: the here-document <<X holding the patch has an unquoted delimiter"):
        shell_lines("cat <<X\nok\n$HOME\nX\n", 12)[0].heredocs[0].literal("f", "the patch")


def test_a_dockerfile_here_document_is_not_read_as_instructions():
    text = "FROM b\nRUN cd /ws && git apply <<'EOP'\n RUN not an instruction\nEOP\nWORKDIR /x\n"
    found = instructions(text)
    assert [(i.line, i.keyword) for i in found] == [(1, "FROM"), (2, "RUN"), (5, "WORKDIR")]
    assert found[1].heredocs[0].body == " RUN not an instruction\n"


def test_a_script_sets_variables_follows_cd_subshells_and_its_own_folder():
    text = (
        'cd "$(dirname "$0")"\nROOT="$(cd "$(dirname "$0")" && pwd)"\nPIN=abc1234\n'
        "git clone https://h/lib.git\n(cd lib && git checkout $PIN)\ngit -C lib apply ../p/one.diff\n"
        'cd lib && patch -p1 < "$ROOT/p/two.diff"\n'
    )
    built = read_script(text, "build.sh", "/repo/scripts/build.sh")
    assert [(c.folder, c.ref.text if c.ref else None) for c in built.checkouts] == [("/repo/scripts/lib", "abc1234")]
    assert [(a.folder, a.patch, a.line) for a in built.applied] == [
        ("/repo/scripts/lib", "/repo/scripts/p/one.diff", 6),
        ("/repo/scripts/lib", "/repo/scripts/p/two.diff", 7),
    ]


def test_a_copy_out_of_a_clone_is_traced_to_it_and_a_called_script_is_read_with_its_lines():
    scripts = {"/ws/build.sh": Script("cd /ws/lib\ngit apply /tmp/fix.diff\n", "build.sh")}
    text = (
        "FROM b\nWORKDIR /ws\nRUN git clone https://h/patches.git /src/p && git clone https://h/lib.git\n"
        "RUN cp /src/p/lib/fix.diff /tmp/ && bash build.sh\n"
    )
    built = read_build(text, "Dockerfile", {}, lambda path, copies: scripts.get(path))
    (applied,) = built.applied
    assert (applied.folder, applied.patch, applied.line, applied.where) == ("/ws/lib", "/tmp/fix.diff", 2, "build.sh")
    found = context_candidates(applied.copies, applied.patch)
    assert InClone("/src/p", "lib/fix.diff") in found and all(isinstance(c, InClone) for c in found)
    assert context_candidates((), "/etc/x.diff", host=True) == ["/etc/x.diff"]  # a script's own machine
