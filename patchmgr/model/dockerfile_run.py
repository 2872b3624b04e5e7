"""What a Dockerfile does to git checkouts: which it clones where, at which ref, and which patch files
it applies in which of them, in order (pure: the words of ``model.dockerfile``, no file read).

Scoping as ``docker build`` does it: an ``ARG`` before the first ``FROM`` is global (seen by ``FROM``
lines; a stage sees it only where it declares ``ARG NAME`` again); a stage's ``ARG NAME=default`` takes
a ``--build-arg NAME=VALUE`` first; ``ENV`` wins over ``ARG`` of the same name; ``FROM <stage>`` goes on
with that stage's ``ENV`` and ``WORKDIR``. Each ``RUN`` starts in the ``WORKDIR``; ``cd X``, ``git -C X``,
``patch -d X`` and ``git apply --directory=X`` name folders relative to where the command runs.
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from patchmgr.model.dockerfile import Copied, Instruction, Word, expand, instructions, needed, words
from patchmgr.model.errors import UsageError
from patchmgr.model.urls import control_character


@dataclass(frozen=True)
class Checkout:
    """A ``git clone``: the folder in the image, the URL, and the ref checked out (``-b`` or a checkout)."""

    folder: str
    url: Word
    line: int
    ref: Word | None = None
    ref_line: int = 0
    branch: bool = False  # the ref is the clone's ``-b`` branch


@dataclass(frozen=True)
class Applied:
    """A patch file applied (``git apply``, ``git am``, ``patch``) in a checkout: its path in the image."""

    folder: str  # the checkout's folder ("": no clone of the Dockerfile's)
    patch: str  # "" when ``word`` uses a variable without a value
    line: int
    word: Word = Word("")  # the path as written, substituted
    run_in: str = ""  # the folder it runs in
    # the COPY lines whose files the image holds as the RUN runs: its stage's (and those of the stage it is
    # built FROM) before its line; docker build applies only those, a later or another stage's is not there yet
    copies: tuple[Copied, ...] = ()
    stage: int = 0


@dataclass(frozen=True)
class Built:
    """What the Dockerfile does, in order."""

    checkouts: tuple[Checkout, ...]
    applied: tuple[Applied, ...]
    copies: tuple[Copied, ...]
    unused_build_args: tuple[str, ...] = ()


@dataclass
class _Stage:
    values: dict[str, Word] = field(default_factory=dict)  # ARG and ENV values in scope
    env: dict[str, Word] = field(default_factory=dict)
    workdir: str = "/"
    copies: tuple[Copied, ...] = ()  # what the stage's files hold so far (a stage FROM another: its too)
    number: int = 0


_PREFIXES = frozenset(("sudo", "exec", "command", "time", "do", "then", "else", "elif", "!", "{"))
_UNKNOWN = "\x00unknown-"
_CLONE_VALUE_OPTIONS = frozenset(
    "-b --branch --depth -o --origin --reference --filter -c --config --shallow-since --shallow-exclude -j "
    "--jobs --separate-git-dir -u --upload-pack --template --reference-if-able --recurse-submodules=".split()
)


def read_build(text: str, where: str, build_args: Mapping[str, str]) -> Built:
    """The checkouts, applied patches and copies of the Dockerfile ``text`` (``where``: its name in errors)."""
    state = _State(where, {k: Word(v) for k, v in build_args.items()})
    for instruction in instructions(text):
        state.step(instruction)
    unused = tuple(sorted(set(build_args) - state.declared))
    return Built(tuple(state.checkouts.values()), tuple(state.applied), tuple(state.copies), unused)


class _State:
    def __init__(self, where: str, build_args: dict[str, Word]) -> None:
        self.where, self.build_args = where, build_args
        self.line = 0
        self.globals: dict[str, Word | None] = {}
        self.declared: set[str] = set()
        self.stages: dict[str, _Stage] = {}
        self.stage: _Stage | None = None
        self.checkouts: dict[str, Checkout] = {}
        self.applied: list[Applied] = []
        self.copies: list[Copied] = []
        self.unknown: list[Word] = []  # the folders of ``cd``s to a variable that has no value
        self.froms = -1  # FROM lines so far, less one: the number of the stage being read

    def step(self, ins: Instruction) -> None:
        handler = getattr(self, f"do_{ins.keyword.lower()}", None)
        if handler is None:
            return
        if self.stage is None and ins.keyword not in ("ARG", "FROM"):  # no FROM yet: read it leniently
            self.stage = _Stage({k: v for k, v in self.globals.items() if v is not None})
        handler(ins)

    def values(self) -> dict[str, Word]:
        if self.stage is None:
            return {k: v for k, v in self.globals.items() if v is not None}
        return self.stage.values

    def do_from(self, ins: Instruction) -> None:
        found = [w.text for w in words(ins.rest, self.values(), ins.line, shell=False)]
        found = [w for w in found if not w.startswith("--")]
        parent = self.stages.get(found[0].lower()) if found else None
        self.froms += 1
        stage = _Stage(number=self.froms)
        if parent:
            stage = _Stage(dict(parent.env), dict(parent.env), parent.workdir, parent.copies, self.froms)
        self.stage = stage
        self.stages[str(self.froms)] = stage  # COPY --from=0 names a stage by its place
        if len(found) >= 3 and found[1].lower() == "as":
            self.stages[found[2].lower()] = stage

    def do_arg(self, ins: Instruction) -> None:
        for word in words(ins.rest, self.values(), ins.line, shell=False):
            name, eq, _ = word.text.partition("=")
            default = Word(word.text.partition("=")[2], word.missing) if eq else None
            self.declared.add(name)
            value = self.build_args.get(name, default)
            if self.stage is None:
                self.globals[name] = value
                continue
            if value is None:
                value = self.globals.get(name)
            if name in self.stage.env:
                continue  # ENV wins over ARG
            if value is None:
                self.stage.values.pop(name, None)
            else:
                self.stage.values[name] = value

    def do_env(self, ins: Instruction) -> None:
        assert self.stage is not None
        found = words(ins.rest, self.stage.values, ins.line, shell=False)
        if found and "=" not in found[0].text:  # the old form: ENV NAME the rest of the line
            key, _, text = ins.rest.partition(" ")
            pairs = [(key.strip(), expand(text.strip(), self.stage.values, ins.line))]
        else:
            pairs = [(w.text.partition("=")[0], Word(w.text.partition("=")[2], w.missing)) for w in found]
        for name, value in pairs:
            self.stage.env[name] = value
            self.stage.values[name] = value

    def do_workdir(self, ins: Instruction) -> None:
        assert self.stage is not None
        word = expand(ins.rest.strip(), self.stage.values, ins.line)
        self.stage.workdir = self.cd(self.stage.workdir, word)

    def cd(self, cwd: str, word: Word) -> str:
        """The folder ``word`` names from ``cwd``; one a variable without a value names is an error only where a
        clone, checkout or patch is made in it."""
        if not word.missing:
            return _join(cwd, word.text)
        self.unknown.append(word)
        return f"/{_UNKNOWN}{len(self.unknown) - 1}"

    def do_copy(self, ins: Instruction) -> None:
        assert self.stage is not None
        found = _json_or_words(ins, self.stage.values, shell=False)
        source: _Stage | None = None
        for word in found:
            if word.text.startswith("--from="):
                source = self.stages.get(word.text.partition("=")[2].lower())
                if source is None:
                    return  # from an image, not from the build context
        paths = [w for w in found if not w.text.startswith("--")]
        if len(paths) < 2:
            return
        texts = [needed(w, self.where, f"in {ins.keyword}") for w in paths]
        dest = texts[-1]
        absolute = _join(self.stage.workdir, dest) + ("/" if dest.endswith("/") or len(texts) > 2 else "")
        sources = tuple(texts[:-1]) if source is None else tuple(_join("/", t) for t in texts[:-1])
        copied = Copied(sources, absolute, ins.line, self.stage.number, source.copies if source else None)
        self.copies.append(copied)
        self.stage.copies += (copied,)

    do_add = do_copy

    def do_run(self, ins: Instruction) -> None:
        assert self.stage is not None
        found = _json_or_words(ins, self.stage.values, shell=True)
        self.line = ins.line
        while found and not found[0].operator and found[0].text.startswith("--"):
            found = found[1:]  # RUN --mount=... --network=...
        self.run_words(found, self.stage.workdir)

    def run_words(self, found: list[Word], cwd: str) -> str:
        """A RUN line's commands, from the folder ``cwd``; the folder it ends in."""
        line = self.line
        fetched: dict[str, Word] = {}
        command: list[Word] = []
        stdin: Word | None = None
        pending = None
        for word in [*found, Word(";", operator=True)]:
            if pending is not None:
                if pending == "<" and not word.operator:
                    stdin = word
                pending = None if not word.operator else pending
                if not word.operator:
                    continue
            if word.operator and word.text in ("<", ">", ">>"):
                pending = word.text
                continue
            if not word.operator:
                command.append(word)
                continue
            if command:
                cwd = self.command(command, stdin, cwd, line, fetched)
            command, stdin = [], None
        return cwd

    def command(self, argv: list[Word], stdin: Word | None, cwd: str, line: int, fetched: dict[str, Word]) -> str:
        """One simple command of a RUN line; the folder the next one runs in."""
        while argv and (argv[0].text in _PREFIXES or ("=" in argv[0].text and not argv[0].text.startswith("="))):
            argv = argv[1:]  # VAR=value, sudo, a loop's do: the command comes after
        if not argv:
            return cwd
        name = argv[0].text
        if name in ("cd", "pushd") and len(argv) > 1:
            return self.cd(cwd, argv[1])
        if name in ("sh", "bash") and len(argv) > 2 and argv[1].text == "-c":
            script = words(argv[2].text, self.stage.values if self.stage else {}, line)
            return self.run_words(script, cwd) if not argv[2].missing else cwd
        if name == "git":
            self.git(argv[1:], stdin, cwd, line, fetched)
        elif name == "patch":
            self.patch(argv[1:], stdin, cwd, line)
        return cwd

    def need(self, word: Word, line: int, what: str) -> str:
        return needed(word, self.where, what)

    def known(self, folder: str, what: str) -> str:
        """``folder``, or the error for the variable of the ``cd`` that made it unknown."""
        if folder.startswith(f"/{_UNKNOWN}"):
            needed(self.unknown[int(folder[len(_UNKNOWN) + 1 :].split("/")[0])], self.where, f"in the folder of {what}")
        return folder

    def git(self, argv: list[Word], stdin: Word | None, cwd: str, line: int, fetched: dict[str, Word]) -> None:
        while argv and argv[0].text.startswith("-"):
            if argv[0].text == "-C" and len(argv) > 1:
                cwd = self.cd(cwd, argv[1])
                argv = argv[2:]
            else:
                argv = argv[2:] if argv[0].text in ("-c", "--git-dir", "--work-tree") else argv[1:]
        if not argv:
            return
        sub, args = argv[0].text, argv[1:]
        if sub == "clone":
            self.clone(args, cwd, line)
        elif sub in ("checkout", "switch") or (sub == "reset" and any(a.text == "--hard" for a in args)):
            self.checkout(sub, args, cwd, line, fetched)
        elif sub == "fetch":
            refs = [a for a in args if not a.text.startswith("-")][1:]
            if refs:
                fetched[self.owner(cwd, line)] = refs[0]
        elif sub in ("apply", "am"):
            self.apply(args, stdin, cwd, line, "--directory")

    def clone(self, args: list[Word], cwd: str, line: int) -> None:
        positional: list[Word] = []
        branch: Word | None = None
        skip = None
        for word in args:
            if skip is not None:
                branch = word if skip in ("-b", "--branch") else branch
                skip = None
            elif word.text in _CLONE_VALUE_OPTIONS:
                skip = word.text
            elif word.text.startswith("--branch="):
                branch = Word(word.text.partition("=")[2], word.missing)
            elif not word.text.startswith("-"):
                positional.append(word)
        if not positional:
            return
        url = positional[0]
        if len(positional) > 1:
            named = self.need(positional[1], line, "as the folder of git clone")
            control = control_character(named)
            if control:  # never a folder's name: said, rather than the clone read as naming no upstream
                raise UsageError(
                    f"{self.where}:{line}: the folder of `git clone` {named!r} {control}",
                    "remove the character from the Dockerfile's clone folder, or pass --git NAME=URL instead",
                )
            folder = _join(cwd, named)
        else:
            base = self.need(url, line, "in the URL of git clone, which names the clone's folder").rstrip("/")
            folder = _join(cwd, posixpath.basename(base).removesuffix(".git"))
        folder = self.known(folder, "git clone")
        self.checkouts[folder] = Checkout(folder, url, line, branch, line if branch else 0, branch is not None)

    def owner(self, folder: str, line: int) -> str:
        """The checkout holding ``folder`` (the deepest), or an error: a git command in no known clone."""
        holders = [c for c in self.checkouts if folder == c or folder.startswith(c.rstrip("/") + "/")]
        if not holders:
            return ""
        return max(holders, key=len)

    def checkout(self, sub: str, args: list[Word], cwd: str, line: int, fetched: dict[str, Word]) -> None:
        texts = [a.text for a in args]
        if "--" in texts or "--orphan" in texts:
            return  # files, or a new unrelated branch
        refs = [a for a in args if not a.text.startswith("-")]
        if any(t in ("-b", "-B", "-c", "-C") for t in texts):
            refs = refs[1:]  # the new branch's name, then where it starts
        folder = self.owner(self.known(cwd, "git checkout"), line)
        if len(refs) != 1 or not folder:
            return
        ref = refs[0]
        if ref.text == "FETCH_HEAD" and folder in fetched:
            ref = fetched[folder]
        if ref.text.startswith("origin/"):
            ref = replace(ref, text=ref.text.removeprefix("origin/"))
        self.checkouts[folder] = replace(self.checkouts[folder], ref=ref, ref_line=line, branch=False)

    def patch(self, argv: list[Word], stdin: Word | None, cwd: str, line: int) -> None:
        args: list[Word] = []
        skip = None
        for word in argv:
            text = word.text
            if skip is not None:
                if skip in ("-i", "--input"):
                    args.append(word)
                elif skip in ("-d", "--directory"):
                    cwd = self.cd(cwd, word)
                skip = None
            elif text in ("-i", "--input", "-d", "--directory", "-p", "-F", "-o", "-r", "-V", "-B", "-z", "-D"):
                skip = text
            elif text.startswith(("--input=", "--directory=")):
                key, _, value = text.partition("=")
                if key == "--input":
                    args.append(Word(value, word.missing))
                else:
                    cwd = self.cd(cwd, Word(value, word.missing))
            elif text.startswith("-i") and len(text) > 2:
                args.append(Word(text[2:], word.missing))
            elif text.startswith("-d") and len(text) > 2:
                cwd = self.cd(cwd, Word(text[2:], word.missing))
            elif not text.startswith("-") and not args:
                continue  # patch ORIGINALFILE: not a patch file
        self.apply(args, stdin, cwd, line, None)

    def apply(self, args: list[Word], stdin: Word | None, cwd: str, line: int, directory: str | None) -> None:
        files: list[Word] = []
        skip = False
        for word in args:
            text = word.text
            if skip:
                cwd, skip = self.cd(cwd, word), False
            elif directory and text == directory:
                skip = True
            elif directory and text.startswith(directory + "="):
                value = Word(text.partition("=")[2], word.missing)
                cwd = self.cd(cwd, value)
            elif text in ("--exclude", "--include", "-p", "-C"):
                continue
            elif not text.startswith("-"):
                files.append(word)
        if not files and stdin is not None:
            files = [stdin]
        run_in = cwd
        if cwd.startswith(f"/{_UNKNOWN}"):
            run_in = self.unknown[int(cwd[len(_UNKNOWN) + 1 :].split("/")[0])].missing[0].shown
        folder = self.owner(cwd, line)
        for word in files:  # a path with a variable without a value (a shell loop's): an error where it is needed
            patch = _join(cwd, word.text) if not word.missing else ""
            stage = self.stage or _Stage()
            self.applied.append(Applied(folder, patch, line, word, run_in, stage.copies, stage.number))


def _json_or_words(ins: Instruction, values: Mapping[str, Word], shell: bool) -> list[Word]:
    """The exec form ``["a", "b"]`` (``sh -c SCRIPT`` read as the script), else the shell form."""
    if ins.rest.startswith("["):
        try:
            parsed = json.loads(ins.rest)
        except ValueError:
            parsed = None
        if isinstance(parsed, list) and all(isinstance(p, str) for p in parsed):
            if len(parsed) >= 3 and parsed[1] == "-c" and posixpath.basename(parsed[0]) in ("sh", "bash"):
                return words(parsed[2], values, ins.line, shell)
            return [expand(p, values, ins.line) for p in parsed] if not shell else []
    return words(ins.rest, values, ins.line, shell)


def _join(cwd: str, path: str) -> str:
    """``path`` from the folder ``cwd``, normalised, absolute."""
    joined = posixpath.normpath(posixpath.join(cwd or "/", path))
    return "/" + joined.lstrip("/")
