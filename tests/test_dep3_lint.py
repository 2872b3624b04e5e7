"""lint as the DEP-3 specification defines it (issue 40, item 3), chosen per target with ``lint-profile``:
the specification's own example headers pass the ``dep3`` profile on plain ``diff -u`` patches (no ``index``
lines) and still fail the ``strict`` one, the default; what DEP-3 requires is still asked for; ``add --diff``
accepts what lint accepts. The headers are the examples of https://dep-team.pages.debian.net/deps/dep3/ (its
"Examples" section), whitespace and all."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from support.gitrepos import UpstreamRepo, git

from patchmgr.cli import main

OLD = "".join(f"line {n}\n" for n in range(1, 21))
NEW = OLD.replace("line 10\n", "line ten\n")

# DEP-3's four examples, character for character as the specification gives them (its "Examples" section; checked
# against two copies of it: the Ubuntu Packaging Guide's "DEP 3 - Patch file headers" page, which quotes them
# with the text's indentation flattened, and the test data of the Rust crate that parses them for Debian's tools,
# which keeps the one-space continuation lines); then one header for the field rules the specification states
SPEC_EXAMPLES = {
    "a patch cherry-picked from upstream": (
        "From: Ulrich Drepper <drepper@redhat.com>\n"
        "Subject: Fix regex problems with some multi-bytes characters\n"
        "\n"
        "* posix/bug-regex17.c: Add testcases.\n"
        "* posix/regcomp.c (re_compile_fastmap_iter): Rewrite COMPLEX_BRACKET\n"
        "  handling.\n"
        "\n"
        "Origin: upstream, http://sourceware.org/git/?p=glibc.git;a=commitdiff;h=bdb56bac\n"
        "Bug: http://sourceware.org/bugzilla/show_bug.cgi?id=9697\n"
        "Bug-Debian: http://bugs.debian.org/510219\n"
    ),
    "a patch created by the Debian maintainer, forwarded and rejected": (
        "Description: Use FHS compliant paths by default\n"
        " Upstream is not interested in switching to those paths.\n"
        " .\n"
        " But we will continue using them in Debian nevertheless to comply with\n"
        " our policy.\n"
        "Forwarded: http://lists.example.com/oct-2006/1234.html\n"
        "Author: John Doe <johndoe-guest@users.alioth.debian.org>\n"
        "Last-Update: 2006-12-21\n"
    ),
    "a vendor specific patch not meant for upstream, submitted on the BTS": (
        "Description: Workaround for broken symbol resolving on mips/mipsel\n"
        " The correct fix will be done in etch and it will require toolchain\n"
        " fixes.\n"
        "Forwarded: not-needed\n"
        "Origin: vendor, http://bugs.debian.org/cgi-bin/bugreport.cgi?msg=80;bug=265678\n"
        "Bug-Debian: http://bugs.debian.org/265678\n"
        "Author: Thiemo Seufer <ths@debian.org>\n"
    ),
    "a patch submitted and applied upstream": (
        "Description: Fix widget frobnication speeds\n"
        " Frobnicating widgets too quickly tended to cause explosions.\n"
        "Forwarded: http://lists.example.com/2010/03/1234.html\n"
        "Author: John Doe <johndoe-guest@users.alioth.debian.org>\n"
        "Applied-Upstream: 1.2, http://bzr.example.com/frobnicator/trunk/revision/123\n"
        "Last-Update: 2010-03-29\n"
    ),
    # RFC-2822-like fields: names in any case; "Author" used "multiple times if several people authored the
    # patch"; Reviewed-by and Acked-by; a Bug-<Vendor> of another vendor
    "field names in any case, two authors, reviews": (
        "subject: Fix the tenth line\n"
        "author: Ann Example <ann@example.org>\n"
        "Author: Bob Example <bob@example.org>\n"
        "Reviewed-by: Carol Example <carol@example.org>\n"
        "Acked-by: Dan Example <dan@example.org>\n"
        "Bug-Ubuntu: https://launchpad.net/bugs/1\n"
    ),
}


def plain_diff(folder: Path) -> str:
    """``diff -u`` of the upstream's file and the fixed one: a plain diff, no ``index`` line."""
    for side, text in (("a", OLD), ("b", NEW)):
        (folder / side).mkdir(parents=True, exist_ok=True)
        (folder / side / "mod.txt").write_text(text)
    done = subprocess.run(["diff", "-u", "a/mod.txt", "b/mod.txt"], cwd=folder, capture_output=True, text=True)
    assert done.returncode == 1, done.stderr
    return done.stdout


def project_with(tmp_path: Path, header: str, profile: str | None) -> Path:
    root = tmp_path / "proj"
    (root / "manifests").mkdir(parents=True)
    (root / "patches" / "lib").mkdir(parents=True)
    (root / "patches" / "lib" / "fix.patch").write_text(header + "---\n" + plain_diff(tmp_path))
    chosen = f'lint-profile = "{profile}"\n' if profile else ""
    (root / "manifests" / "t.toml").write_text(
        f'[target]\nname = "t"\ndescription = "x"\n{chosen}\n[upstreams.lib]\ngit = "https://example.org/lib.git"\n'
        f'commit = "{"a" * 40}"\npatches = ["fix"]\n'
    )
    return root


def lint(capsys, root: Path) -> tuple[int, str]:
    code = main(["lint", "--root", str(root)])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


@pytest.mark.parametrize("example", SPEC_EXAMPLES)
def test_the_specifications_examples_pass_the_dep3_profile_and_fail_the_strict_one(tmp_path, capsys, example):
    root = project_with(tmp_path, SPEC_EXAMPLES[example], "dep3")
    code, out = lint(capsys, root)
    assert code == 0, out
    (root / "manifests" / "t.toml").write_text(
        (root / "manifests" / "t.toml").read_text().replace('lint-profile = "dep3"\n', "")
    )
    code, out = lint(capsys, root)
    assert code == 1 and "Upstream-Status" in out and "index lines" in out, out


@pytest.mark.parametrize(
    ("header", "said"),
    [
        ("Origin: vendor\nForwarded: no\n", "no Description or Subject field"),
        ("Description: Fix the tenth line\nForwarded: not-needed\n", "no Origin field, and no Author or From"),
        ("Description:\nOrigin: vendor\n", "no Description or Subject field"),
        ("Description:\n Only a long description.\nOrigin: vendor\n", "the Description's first line is empty"),
    ],
)
def test_what_dep3_requires_is_still_asked_for(tmp_path, capsys, header, said):
    code, out = lint(capsys, project_with(tmp_path, header, "dep3"))
    assert code == 1 and said in out, out


def test_a_lint_profile_dep3_does_not_know_is_one_clear_error(tmp_path, capsys):
    code, out = lint(capsys, project_with(tmp_path, SPEC_EXAMPLES["a patch submitted and applied upstream"], "loose"))
    assert code == 1 and "lint-profile" in out and "'loose' is not one of: strict, dep3" in out, out
    assert "Traceback" not in out


def test_add_diff_takes_an_author_for_origin_under_the_dep3_profile(tmp_path, capsys):
    repo = UpstreamRepo(tmp_path / "lib")
    repo.commit({"mod.txt": OLD}, "release")
    git(repo.path, "tag", "v1.0")
    root = tmp_path / "proj"
    root.mkdir()
    run = ["--root", str(root), "--source", f"lib={repo.path}"]
    assert main(["init", "--target", "t", "--git", "https://example.org/lib.git", "--pin", "v1.0", *run]) == 0
    manifest = root / "manifests" / "t.toml"
    manifest.write_text(manifest.read_text().replace("[target]\n", '[target]\nlint-profile = "dep3"\n', 1))
    diff = tmp_path / "fix.diff"
    diff.write_text(SPEC_EXAMPLES["a patch submitted and applied upstream"] + "---\n" + plain_diff(tmp_path / "d"))
    capsys.readouterr()
    code = main(["add", "fix", "--target", "t", "--upstream", "lib", "--diff", str(diff), *run])
    captured = capsys.readouterr()
    assert code == 0, captured.out + captured.err
    text = (root / "patches" / "lib" / "fix.patch").read_text()
    assert text.startswith(SPEC_EXAMPLES["a patch submitted and applied upstream"].split("Last-Update")[0])
    assert "Upstream-Status" not in text and "\nOrigin:" not in text
