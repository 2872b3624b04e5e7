"""The console examples of README.md and docs/, run as tests: Sybil finds them, this module runs and compares them.

A ```` ```console ```` block is a transcript: each ``$ `` line is a command (``\\`` continues it on the next line,
a here-document's lines belong to it), the lines after it up to the next ``$ `` are what it prints, stdout and
stderr together as CI's log shows them. A command exits 0 unless its last line ends in ``# exit N`` (a shell
comment, so the line still runs as it is written). Before comparing, both sides are normalised: the scene's
folders become ``~``, commit ids ``<hash>``, durations ``<time>``, dates ``<date>``. In the document, a line
``...`` stands for any lines (none included) and ``…`` inside a line for any text.

A block that cannot run here is marked, directly above it, ``<!-- not-run: REASON -->``; the reason shows in
the test's output. ``<!-- scene: NAME -->`` starts a fresh scene (``tests/support/doc_scenes.py``) for the
blocks after it in that document; the blocks of a document share their scene, folder and exported variables.
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sybil import Document, Example, Region
from sybil.parsers.markdown import CodeBlockParser
from sybil.parsers.markdown.lexers import DirectiveInHTMLCommentLexer

from support.doc_scenes import build_scene

NOT_RUN = re.compile(r"<!-- not-run: (?P<reason>[^\n]+?) -->\s*$")
EXIT = re.compile(r"#\s*exit (?P<code>\d+)\s*$")
HEREDOC = re.compile(r"<<-?\s*['\"]?(?P<word>\w+)['\"]?")
# any hex run: a commit id made at run time is all digits one time in 27 (CI saw "4695006")
HASH = re.compile(r"\b[0-9a-f]{7,40}\b")
TIME = re.compile(r"\b\d+\.\d+ ?s\b")
DATE = re.compile(r"\b\d{4}-\d{2}-\d{2}\b")
PYTHON = re.compile(r"\bPython 3\.\d+\.\d+\b")
MARK = "@@doc-console-rc "
BLOCK_TIMEOUT = 300


@dataclass(frozen=True)
class Step:
    """One command of a transcript and what the document says it prints and exits with."""

    command: str
    expected: list[str]
    code: int


def steps(source: str) -> list[Step]:
    """The commands of a console block, with their expected output and exit code."""
    found: list[Step] = []
    lines = source.splitlines()
    index = 0
    while index < len(lines):
        line = lines[index]
        if not line.startswith("$ "):
            if found:
                found[-1].expected.append(line)
            elif line.strip():
                raise ValueError(f"a console block must start with a `$ ` command line, not {line!r}")
            index += 1
            continue
        command = [line[2:]]
        while command[-1].endswith("\\") and index + 1 < len(lines):
            index += 1
            command.append(lines[index])
        here = HEREDOC.search(command[-1])
        if here is not None:
            while index + 1 < len(lines):
                index += 1
                command.append(lines[index])
                if lines[index].strip() == here.group("word"):
                    break
        exit_code = EXIT.search(command[0] if here is not None else command[-1])
        found.append(Step("\n".join(command), [], int(exit_code.group("code")) if exit_code else 0))
        index += 1
    return found


def not_run_reason(example: Example) -> str | None:
    """The reason given just above the block for not running it, or None."""
    before = example.document.text[: example.start].rstrip()
    last = before.rsplit("\n", 1)[-1]
    marked = NOT_RUN.search(last)
    return marked.group("reason") if marked else None


def shown(text: str, scene: dict[str, Any]) -> str:
    """Text as a reader's screen would show it: the scene's folders as ``~``, lines stripped."""
    for folder, name in scene.get("folders", {}).items():
        text = text.replace(folder, name)
    return "\n".join(line.rstrip() for line in text.rstrip("\n").split("\n"))


def masked(text: str) -> list[str]:
    """The lines of ``shown`` text as they are compared: commit ids, durations, dates and Python versions masked."""
    text = HASH.sub("<hash>", text)
    text = TIME.sub("<time>", text)
    text = DATE.sub("<date>", text)
    text = PYTHON.sub("Python 3.x", text)
    lines = [line.rstrip() for line in text.split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def normalise(text: str, scene: dict[str, Any]) -> list[str]:
    """Text as it is compared: ``shown``, then ``masked``."""
    return masked(shown(text, scene))


def matches(expected: list[str], actual: list[str]) -> bool:
    """Whether ``actual`` is what ``expected`` shows, its ``...`` lines and ``…`` in lines being wildcards."""
    parts = []
    for line in expected:
        if line.strip() in ("...", "…"):
            parts.append(r"(?:[^\n]*\n)*?")
        else:
            parts.append(".*".join(re.escape(piece) for piece in line.split("…")) + r"\n")
    return re.fullmatch("".join(parts), "".join(line + "\n" for line in actual), re.S) is not None


def run_block(example: Example) -> str | None:
    """Run a console block in its document's scene; a failure message, or None when every step matched."""
    scene: dict[str, Any] | None = example.namespace.get("scene")
    if scene is None:
        return "no <!-- scene: NAME --> comment before this console block"
    block = steps(str(example.parsed))
    state: Path = scene["state"]
    script = ["exec 2>&1", f'cd "$(cat {state}/cwd)"', f". {state}/env"]
    for step in block:
        script += [step.command, f'printf "\\n{MARK}%s\\n" "$?"']
    script += [f"pwd > {state}/cwd", f"export -p > {state}/env"]
    done = subprocess.run(
        ["bash", "-c", "\n".join(script)],
        env=scene["env"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=BLOCK_TIMEOUT,
    )
    outputs = done.stdout.split(f"\n{MARK}")
    problems = []
    rewritten: list[str] = []
    for number, step in enumerate(block):
        if number + 1 >= len(outputs):
            problems.append(f"`{step.command}` did not finish: {done.stdout[-2000:]}")
            break
        printed = outputs[number]
        if number:
            printed = printed.partition("\n")[2]
        code = int(outputs[number + 1].partition("\n")[0])
        printed_shows = shown(printed, scene)
        document_shows = shown("\n".join(step.expected), scene)
        if code != step.code:
            problems.append(f"`{step.command}` exited {code}, the document says {step.code}")
        rewritten += ["$ " + step.command, *step.expected]
        stale = (  # DOC_CONSOLE_UPDATE=all: also the outputs that differ only in ids, times and dates
            os.environ.get("DOC_CONSOLE_UPDATE") == "all"
            and not any("…" in line or line.strip() == "..." for line in step.expected)
            and printed_shows != document_shows
        )
        if stale or not matches(masked(document_shows), masked(printed_shows)):
            if step.expected or printed.strip():
                rewritten[len(rewritten) - len(step.expected) :] = printed_shows.split("\n") if printed.strip() else []
            problems.append(f"`{step.command}` printed:\n{printed_shows}\n--- the document shows:\n{document_shows}")
    if problems and os.environ.get("DOC_CONSOLE_UPDATE"):
        example.namespace.setdefault("updates", []).append((example.region.lexemes["source"], "\n".join(rewritten)))
    return "\n\n".join(problems) or None


def start_scene(example: Example) -> None:
    name = str(example.region.lexemes["arguments"]).strip()
    number = example.namespace.get("scenes", 0) + 1
    example.namespace["scenes"] = number
    root: Path = example.namespace["tmp"] / f"scene-{number}-{name}"
    example.namespace["scene"] = build_scene(name, root)


def scene_parser(document: Document) -> list[Region]:
    regions = []
    for region in DirectiveInHTMLCommentLexer(directive="scene", arguments=r"[\w-]+")(document):
        region.evaluator = start_scene
        regions.append(region)
    return regions


PARSERS = [CodeBlockParser(language="console", evaluator=run_block), scene_parser]


def parse(path: Path) -> Document:
    return Document.parse(str(path), *PARSERS)


@dataclass
class Outcome:
    ran: int = 0
    not_run: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)


def run_document(path: Path, tmp: Path) -> Outcome:
    """Every example of the document in order: scenes built, console blocks run or (marked) left out."""
    document = parse(path)
    document.namespace["tmp"] = tmp
    outcome = Outcome()
    for example in document.examples():
        where = f"{path.name}:{example.line}"
        if example.region.evaluator is run_block:
            reason = not_run_reason(example)
            if reason is not None:
                outcome.not_run.append(f"{where}: {reason}")
                continue
            outcome.ran += 1
        try:
            example.evaluate()
        except AssertionError as failure:
            outcome.failures.append(f"{where}: {getattr(failure, 'result', failure)}")
            if example.region.evaluator is not run_block:
                break
    if document.namespace.get("updates"):  # DOC_CONSOLE_UPDATE=1: write what the commands print now
        text = path.read_text()
        for before, after in document.namespace["updates"]:
            text = text.replace(before.rstrip("\n"), after, 1)
        path.write_text(text)
    return outcome


def doc_files(root: Path) -> list[Path]:
    return [
        root / "README.md",
        root / "RELIABILITY.md",
        root / "examples/README.md",
        *sorted((root / "docs").glob("*.md")),
    ]
