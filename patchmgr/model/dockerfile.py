"""A Dockerfile read as Docker reads it: its instructions, and words with their variables substituted.

Pure functions on text, no file and no process:

- ``instructions``: the logical lines (a line ending in the escape character goes on on the next one;
  ``#`` lines are comments, also inside a continued instruction; the ``# escape=`` parser directive at
  the top picks the escape character, ``\\`` or the backtick);
- ``words``: a line cut into words and shell operators (``&&``, ``||``, ``;``, ``|``, ``<``, ``>`` ...),
  quotes honoured (nothing is substituted inside single quotes), with ``$VAR``, ``${VAR}``,
  ``${VAR:-default}``, ``${VAR-default}``, ``${VAR:+alt}`` and ``${VAR+alt}`` substituted from the values
  given. A variable that has no value is not an error here: the word keeps its name and the line it is
  used on (``Word.missing``), and the caller refuses the word only where it needs it (``needed``).
"""

from __future__ import annotations

import fnmatch
import posixpath
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace

from patchmgr.model.errors import UsageError
from patchmgr.model.shell_lines import Heredoc, take_heredocs

_DIRECTIVE = re.compile(r"^#\s*([a-zA-Z][a-zA-Z0-9_-]*)\s*=\s*(.*?)\s*$")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_HEREDOC_KEYWORDS = frozenset(("RUN", "COPY", "ADD"))
_GLOB = re.compile(r"[*?\[]")
OPERATORS = ("&&", "||", ">>", ";", "|", "&", "<<<", "<<-", "<<", "<", ">", "(", ")")


@dataclass(frozen=True)
class Instruction:
    """One logical line: its first physical line's number, the keyword (upper case) and the rest."""

    line: int  # counted from 1
    keyword: str
    rest: str  # continued lines joined without their escape characters
    heredocs: tuple[Heredoc, ...] = ()  # RUN, COPY and ADD: the here-documents the line opens, in order


@dataclass(frozen=True)
class Missing:
    """A variable with no value, and the Dockerfile line using it."""

    name: str
    line: int

    @property
    def shown(self) -> str:
        """``${NAME}``, or a command's output as written (``$(...)``, ``$1``)."""
        return self.name if self.name.startswith("$") else f"${{{self.name}}}"


@dataclass(frozen=True)
class Word:
    """A word after substitution; ``missing``: the variables it uses that have no value."""

    text: str
    missing: tuple[Missing, ...] = ()
    operator: bool = False  # a shell operator (``&&``), not a word


def needed(word: Word, where: str, what: str) -> str:
    """The word's text, or the one error naming its first variable without a value and where it is used."""
    if word.missing:
        first = word.missing[0]
        raise UsageError(
            f"{where}:{first.line}: {first.shown} has no value ({what}); nothing was written",
            (
                f"pass --build-arg {first.name}=VALUE, or give it a default in the Dockerfile (ARG {first.name}=...)"
                if not first.name.startswith("$")
                else "import reads the Dockerfile, it runs nothing: give the patch files with --git NAME=URL and "
                "--pin NAME=REF instead"
            ),
        )
    return word.text


def instructions(text: str) -> list[Instruction]:
    """The Dockerfile's instructions, in order (``text`` without a byte-order mark)."""
    lines = [raw.removesuffix("\r") for raw in text.split("\n")]
    escape = "\\"
    for raw in lines:  # parser directives: only at the very top, before any other line
        match = _DIRECTIVE.match(raw)
        if not match:
            break
        if match.group(1).lower() == "escape" and match.group(2) in ("\\", "`"):
            escape = match.group(2)
    out: list[Instruction] = []
    current: list[str] = []
    start = 0
    index = 0
    while index < len(lines):
        raw = lines[index]
        number = index + 1
        index += 1
        stripped = raw.strip()
        if stripped.startswith("#") or (current and not stripped):
            continue  # a comment, or an empty line inside a continued instruction
        if not current:
            if not stripped:
                continue
            start = number
        body = raw.rstrip()
        if body.endswith(escape) and not body.endswith(escape * 2):
            current.append(body[:-1])
            continue
        current.append(raw)
        instruction = _instruction(start, "".join(current))
        current = []
        if instruction.keyword in _HEREDOC_KEYWORDS:  # the lines after it are the bodies of its here-documents
            heredocs, index = take_heredocs(instruction.rest, lines, index, 1)
            instruction = replace(instruction, heredocs=heredocs)
        out.append(instruction)
    if current:
        out.append(_instruction(start, "".join(current)))
    return out


def _instruction(line: int, text: str) -> Instruction:
    keyword, _, rest = text.strip().partition(" ")
    if "\t" in keyword:
        keyword, _, more = keyword.partition("\t")
        rest = f"{more} {rest}"
    return Instruction(line, keyword.upper(), rest.strip())


def words(text: str, values: Mapping[str, Word], line: int, shell: bool = True) -> list[Word]:
    """``text`` cut into words (and, with ``shell``, operators), its variables substituted from ``values``."""
    return _Lexer(text, values, line, shell).run()


def expand(text: str, values: Mapping[str, Word], line: int) -> Word:
    """``text`` as one word (spaces kept), its variables substituted: an ENV or ARG value."""
    found = _Lexer(text, values, line, False, split=False).run()
    return found[0] if found else Word("")


class _Lexer:
    def __init__(self, text: str, values: Mapping[str, Word], line: int, shell: bool, split: bool = True) -> None:
        self.text, self.values, self.line, self.shell, self.split = text, values, line, shell, split
        self.pos = 0
        self.out: list[Word] = []
        self.buf: list[str] = []
        self.missing: list[Missing] = []
        self.started = False  # a word is being read (quotes make an empty word)

    def flush(self) -> None:
        if self.started:
            self.out.append(Word("".join(self.buf), tuple(self.missing)))
        self.buf, self.missing, self.started = [], [], False

    def run(self) -> list[Word]:
        text = self.text
        while self.pos < len(text):
            char = text[self.pos]
            if self.shell and char == "\n":
                self.flush()
                self.out.append(Word(";", operator=True))
                self.pos += 1
            elif self.split and char in " \t\n":
                self.flush()
                self.pos += 1
            elif self.shell and char == "#" and not self.started:
                break  # a shell comment
            elif self.shell and (op := next((o for o in OPERATORS if text.startswith(o, self.pos)), None)):
                if op in "<>>>" and self.started and "".join(self.buf).isdigit() and not self.missing:
                    self.buf, self.started = [], False  # a file descriptor: 2>/dev/null
                self.flush()
                self.out.append(Word(op, operator=True))
                self.pos += len(op)
            elif char == "'":
                end = text.find("'", self.pos + 1)
                end = len(text) if end < 0 else end
                self.buf.append(text[self.pos + 1 : end])
                self.started, self.pos = True, end + 1
            elif char == '"':
                self.double()
            elif char == "\\":
                self.buf.append(text[self.pos + 1 : self.pos + 2])
                self.started, self.pos = True, self.pos + 2
            elif char == "$":
                self.dollar()
            else:
                self.buf.append(char)
                self.started, self.pos = True, self.pos + 1
        self.flush()
        return self.out

    def double(self) -> None:
        self.started = True
        self.pos += 1
        text = self.text
        while self.pos < len(text) and text[self.pos] != '"':
            char = text[self.pos]
            if char == "\\" and text[self.pos + 1 : self.pos + 2] in ('"', "\\", "$", "`"):
                self.buf.append(text[self.pos + 1])
                self.pos += 2
            elif char == "$":
                self.dollar()
            else:
                self.buf.append(char)
                self.pos += 1
        self.pos += 1

    def dollar(self) -> None:
        text, start = self.text, self.pos + 1
        self.started = True
        if text.startswith("{", start):
            end = _closing(text, start + 1, "{}")
            self.braced(text[start + 1 : end])
            self.pos = end + 1
            return
        if text.startswith("(", start):  # a command's output: unknown here, but for a script's own folder
            end = min(_closing(text, start + 1, "()"), len(text) - 1)
            folder = self.folder_of(text[start + 1 : end])
            if folder is not None:
                self.buf.append(folder.text)
                self.missing.extend(folder.missing)
            else:
                self.missing.append(Missing(text[self.pos : end + 1], self.line))
            self.pos = end + 1
            return
        match = _NAME.match(text, start)
        if not match:
            special = text[start : start + 1]
            if special in self.values:  # $0: a script's path
                self.take(special)
                self.pos = start + 1
                return
            if special and (special.isdigit() or special in "@*#?$!-"):
                self.missing.append(Missing("$" + special, self.line))
                self.pos = start + 1
                return
            self.buf.append("$")
            self.pos = start
            return
        self.take(match.group(0))
        self.pos = match.end()

    def folder_of(self, command: str) -> Word | None:
        """``$(dirname X)`` and ``$(cd X && pwd)`` of an absolute X (a script's ``$0``): what the shell prints."""
        found = _Lexer(command, self.values, self.line, True).run()
        texts = [w.text for w in found]
        if len(found) == 2 and texts[0] == "dirname":
            folder, path = found[1], posixpath.dirname(posixpath.normpath(found[1].text))
        elif texts[0:1] == ["cd"] and texts[2:4] in (["&&", "pwd"], [";", "pwd"]) and texts[4:] in ([], ["-P"]):
            folder, path = found[1], posixpath.normpath(found[1].text)
        else:
            return None
        if folder.missing or not folder.text.startswith("/"):
            return None
        return Word(path)

    def take(self, name: str) -> None:
        value = self.values.get(name)
        if value is None:
            self.missing.append(Missing(name, self.line))
        else:
            self.buf.append(value.text)
            self.missing.extend(value.missing)

    def braced(self, inner: str) -> None:
        match = _NAME.match(inner)
        if not match:
            self.missing.append(Missing(inner, self.line))
            return
        name, rest = match.group(0), inner[match.end() :]
        if name == "BASH_SOURCE" and rest == "[0]":
            rest = ""
        if not rest:
            self.take(name)
            return
        operator = re.match(r":?[-+=?]", rest)
        if not operator:  # ${VAR%suffix} and the like: not worked out here
            self.missing.append(Missing(inner, self.line))
            return
        op, word = operator.group(0), rest[operator.end() :]
        value = self.values.get(name)
        unset = value is None or (op.startswith(":") and value.text == "" and not value.missing)
        alternative = expand(word, self.values, self.line)
        if op.endswith("+"):
            if not unset:
                self.buf.append(alternative.text)
                self.missing.extend(alternative.missing)
        elif unset and op.endswith(("-", "=")):
            self.buf.append(alternative.text)
            self.missing.extend(alternative.missing)
        elif unset:  # ${VAR:?message}
            self.missing.append(Missing(name, self.line))
        else:
            self.take(name)


def _closing(text: str, start: int, pair: str) -> int:
    depth = 1
    for index in range(start, len(text)):
        if text[index] == pair[0]:
            depth += 1
        elif text[index] == pair[1]:
            depth -= 1
            if depth == 0:
                return index
    return len(text)


@dataclass(frozen=True)
class Copied:
    """``COPY``/``ADD`` from the build context: its sources (as written, relative to the context) and dest."""

    sources: tuple[str, ...]
    dest: str
    line: int
    stage: int = 0  # the build stage it is in: its FROM line's place among the FROM lines (0: the first)
    # COPY --from=<stage>: the sources are paths in that stage's image, whose files came from these COPY lines;
    # a recipe's cp or mv: paths of its own image (or machine) as they were, these before it
    via: tuple[Copied, ...] | None = None
    where: str = ""  # the recipe file the line is in ("": the Dockerfile)
    clone: bool = False  # a git clone into ``dest``: the files under it are the clone's


@dataclass(frozen=True)
class InClone:
    """A file of a clone the recipe made: the clone's folder and the file's path inside it."""

    folder: str
    path: str


def context_candidates(copies: tuple[Copied, ...], image_path: str, host: bool = False) -> list[str | InClone]:
    """Where in the build context a file at ``image_path`` may come from, the last COPY reaching it first (the
    caller keeps the first that exists: a folder copied in, a file or a glob's match copied into a folder), or
    the file of a clone made into a folder holding it. ``host``: the recipe runs on the machine itself (a build
    script), so a file that nothing copied is that file itself."""
    found: list[str | InClone] = []
    reached = False
    for copy in reversed(copies):
        if copy.clone:
            prefix = copy.dest.rstrip("/") + "/"
            if image_path.startswith(prefix):  # a clone makes its folder afresh: nothing before it counts
                return list(dict.fromkeys([*found, InClone(copy.dest, image_path[len(prefix) :])]))
            continue
        sourced = _sources(copy, image_path)
        reached = reached or bool(sourced)
        found += (
            sourced if copy.via is None else [c for path in sourced for c in context_candidates(copy.via, path, host)]
        )
    if host and not reached:
        found.append(image_path)
    return list(dict.fromkeys(found))


def _sources(copy: Copied, image_path: str) -> list[str]:
    """Where ``copy`` may take a file at ``image_path`` from: paths in the build context (or, ``via``, in the
    image of the stage it copies from)."""
    dest = copy.dest
    if image_path == dest.rstrip("/"):
        return [posixpath.normpath(src) for src in copy.sources if not _GLOB.search(src)]
    prefix = dest.rstrip("/") + "/"
    if not image_path.startswith(prefix):
        return []
    rest = image_path[len(prefix) :]
    found = []
    for src in copy.sources:
        if not _GLOB.search(src):
            found.append(posixpath.normpath(posixpath.join(src, rest)))
        if "/" not in rest and fnmatch.fnmatchcase(rest, posixpath.basename(src)):
            found.append(posixpath.normpath(posixpath.join(posixpath.dirname(src), rest)))
    return found
