"""The documents cannot drift from the tool: README.md and docs/ checked against what patchmgr does now.

- every console example runs in a scene the tests build and prints what the document shows
  (tests/support/doc_console.py), or is marked ``<!-- not-run: REASON -->`` above it;
- no shell command hides outside a console block;
- docs/reference.md is what the CLI says (``python -m patchmgr.cli.reference > docs/reference.md``);
- every relative link and anchor resolves;
- .ci/run runs the README's set-up and test commands.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

import pytest
from support.doc_console import doc_files, run_document

ROOT = Path(__file__).resolve().parents[1]
DOCS = doc_files(ROOT)
FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>```+|~~~+)(?P<info>[^\n`]*)$")
KNOWN_LANGUAGES = {"console", "toml", "dockerfile", "text", "yaml", "python", "diff", "json"}
LINK = re.compile(r"(?<!!)\[[^\]\n]*\]\((?P<target>[^)\s]+)\)|!\[[^\]\n]*\]\((?P<image>[^)\s]+)\)")


def split_fences(text: str) -> tuple[list[str], list[tuple[int, str, list[str]]]]:
    """The lines outside fenced blocks, and (line, language, lines) of each fenced block; the one reader of fences.

    A block closes at a fence line that starts with its opening fence, or runs to the end of the text.
    """
    kept: list[str] = []
    blocks: list[tuple[int, str, list[str]]] = []
    inside: str | None = None  # the opening fence of the block being read
    for number, line in enumerate(text.split("\n"), 1):
        fence = FENCE.match(line)
        if inside is None and fence is not None:
            inside = fence.group("fence")
            blocks.append((number, fence.group("info").strip(), []))
        elif inside is None:
            kept.append(line)
        elif fence is not None and line.strip().startswith(inside):
            inside = None
        else:
            blocks[-1][2].append(line)
    return kept, blocks


def prose(text: str) -> str:
    """The text without its fenced blocks (links and anchors are read from this)."""
    return "\n".join(split_fences(text)[0])


@functools.cache
def anchors_of(path: Path) -> set[str]:
    """The anchors of a linked document, read once however many links point into it."""
    return anchors(path.read_text())


def anchors(text: str) -> set[str]:
    """GitHub's anchors of a document's headings."""
    found: set[str] = set()
    for heading in re.findall(r"^#{1,6} +(.+?) *#*$", prose(text), re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        name, number = slug, 1
        while name in found:
            name, number = f"{slug}-{number}", number + 1
        found.add(name)
    return found


@pytest.mark.parametrize("document", DOCS, ids=lambda path: path.relative_to(ROOT).as_posix())
def test_console_examples_print_what_the_document_shows(document, tmp_path):
    outcome = run_document(document, tmp_path)
    print(f"{document.name}: {outcome.ran} console block(s) run, {len(outcome.not_run)} not run")
    for reason in outcome.not_run:
        print(f"  not run: {reason}")
    assert not outcome.failures, "\n\n".join(outcome.failures)


@pytest.mark.fast
@pytest.mark.parametrize("document", DOCS, ids=lambda path: path.relative_to(ROOT).as_posix())
def test_every_command_is_in_a_console_block(document):
    """A shell command outside a ```console block would escape the run above: every one is in one."""
    problems = []
    text = document.read_text()
    outside, blocks = split_fences(text)
    for line, language, body in blocks:
        where = f"{document.name}:{line}"
        if language not in KNOWN_LANGUAGES:
            problems.append(f"{where}: fence language {language!r}: use console (run or marked not-run) or text")
        elif language != "console" and any(row.startswith("$ ") for row in body):
            problems.append(f"{where}: a `$ ` command in a {language} block: make it a console block")
    indented = re.findall(r"^(?: {4}|\t)\$? ?patchmgr .*$", "\n".join(outside), re.M)
    problems += [f"{document.name}: an indented command, not in a console block: {row.strip()}" for row in indented]
    stray = [m for m in re.finditer(r"<!-- not-run:[^\n]*-->\n(?!```console\n)", text)]
    problems += [f"{document.name}: a not-run marker that is not directly above a console block" for _ in stray]
    reasons = re.findall(r"<!-- not-run:(.*?)-->", text)
    problems += [
        f"{document.name}: a not-run marker without a plain reason: {r!r}"
        for r in reasons
        if not r.strip() or "<!--" in r
    ]
    assert not problems, "\n".join(problems)


@pytest.mark.fast
def test_reference_is_what_the_cli_says():
    from patchmgr.cli.reference import reference

    committed = (ROOT / "docs/reference.md").read_text()
    assert committed == reference(), (
        "docs/reference.md differs from the CLI: run `python -m patchmgr.cli.reference > docs/reference.md`"
    )


@pytest.mark.fast
@pytest.mark.parametrize("document", DOCS, ids=lambda path: path.relative_to(ROOT).as_posix())
def test_links_and_anchors_resolve(document):
    problems = []
    for match in LINK.finditer(prose(document.read_text())):
        target = match.group("target") or match.group("image")
        if re.match(r"[a-z]+:", target):
            continue  # http(s), mailto: not checked (CI has no network)
        path_part, _, anchor = target.partition("#")
        linked = (document.parent / path_part).resolve() if path_part else document
        if not linked.exists():
            problems.append(f"{document.name}: {target}: no such file")
        elif anchor and linked.suffix == ".md" and anchor not in anchors_of(linked):
            problems.append(f"{document.name}: {target}: no heading #{anchor} in {linked.name}")
    assert not problems, "\n".join(problems)


@pytest.mark.fast
def test_ci_runs_the_readmes_set_up_and_test_commands():
    """.ci/run is what CI runs: its install steps are the README's set-up, its last line the README's tests."""
    readme = (ROOT / "README.md").read_text()
    commands = [line[2:] for line in readme.split("\n") if line.startswith("$ ")]
    ci = [line.strip() for line in (ROOT / ".ci/run").read_text().split("\n") if line.startswith(".venv/bin/")]
    tests = [line for line in commands if line.startswith(".venv/bin/python -m pytest")]
    assert tests and tests[0] == ci[-1], f"README's test command {tests[:1]} is not .ci/run's {ci[-1]!r}"
    setup = next(line for line in commands if line.startswith("python3 -m venv"))
    for step in ci:
        if "pip install" in step and "--upgrade pip" not in step:
            assert step.replace(" --quiet", "") in setup, f".ci/run's {step!r} is not in the README's set-up"


@pytest.mark.fast
def test_transcripts_are_read_as_a_shell_reads_them():
    from support.doc_console import matches, steps

    block = steps("$ cat > f <<'EOF'\n$ not a command\nEOF\n$ false \\\n  --flag   # exit 1\nout\n")
    assert [(step.command, step.expected, step.code) for step in block] == [
        ("cat > f <<'EOF'\n$ not a command\nEOF", [], 0),
        ("false \\\n  --flag   # exit 1", ["out"], 1),
    ]
    assert matches(["a", "...", "d …"], ["a", "b", "c", "d e f"])
    assert matches(["a", "...", "b"], ["a", "b"])
    assert not matches(["a", "b"], ["a", "b", "c"])
    assert not matches(["a …"], ["b c"])


@pytest.mark.fast
def test_commit_ids_made_at_run_time_are_ids_whatever_their_digits():
    """A commit made while the example runs has a new id each run; an all-digit one is still an id."""
    from support.doc_console import normalise

    shown = normalise("updated fix (79ec290b3ada)\n  -:  ------- > 1:  79ec290 Fix", {})
    for long, short in (("46950068d807", "4695006"), ("abcdefabcdef", "abcdefa")):
        assert normalise(f"updated fix ({long})\n  -:  ------- > 1:  {short} Fix", {}) == shown
    assert normalise("took 12 s, 3 files", {}) == ["took 12 s, 3 files"]


@pytest.mark.fast
def test_readme_stays_short():
    """The README is read in five minutes; the rest goes into a guide under docs/ (issue 30)."""
    lines = (ROOT / "README.md").read_text().count("\n")
    assert lines <= 260, f"README.md has {lines} lines: move the detail into a guide under docs/"
