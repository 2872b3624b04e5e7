"""What a recipe's shell commands do to git checkouts: which they clone where, at which ref, which patches they
apply in which of them, and where a file they copy comes from (pure: words and lines, no file read here).

The same reader serves a Dockerfile's ``RUN`` lines (``model.dockerfile_run``) and a build script
(``read_script``): ``cd X``, ``pushd X``, ``git -C X``, ``patch -d X`` and ``git apply --directory=X`` name
folders relative to where the command runs; ``NAME=value`` (also ``export``) sets a variable for the lines
after it; ``bash X``, ``sh X``, ``source X``, ``. X`` and ``./X.sh`` read the script X (through ``scripts``, the
caller's reader: the recipe's files are the caller's business), from the folder they are called in;
``cp``/``mv``/``install`` record where the file they write comes from, so that a patch copied out of another
clone is traced back to it; a patch given on stdin in a here-document (``git apply <<'EOP'``) is taken as
written in the recipe.
"""

from __future__ import annotations

import posixpath
from dataclasses import replace

from patchmgr.model.dockerfile import Copied, Word, needed, words
from patchmgr.model.errors import UsageError
from patchmgr.model.recipe import Applied, Built, Checkout, ScriptReader
from patchmgr.model.shell_lines import Heredoc, ShellLine, shell_lines
from patchmgr.model.urls import control_character

_PREFIXES = frozenset(("sudo", "exec", "command", "time", "do", "then", "else", "elif", "!", "{", "env"))
_DECLARE = frozenset(("export", "local", "readonly", "declare", "typeset"))
_SHELLS = frozenset(("sh", "bash", "dash", "zsh"))
_UNKNOWN = "\x00unknown-"
_CLONE_VALUE_OPTIONS = frozenset(
    "-b --branch --depth -o --origin --reference --filter -c --config --shallow-since --shallow-exclude -j "
    "--jobs --separate-git-dir -u --upload-pack --template --reference-if-able --recurse-submodules=".split()
)
_DEPTH = 8  # scripts calling scripts: deeper is a loop


class Shell:
    """The effects of shell commands, read in order; a Dockerfile's state adds its stages (``values`` and the
    provenance of files are the hooks it overrides)."""

    def __init__(self, where: str, scripts: ScriptReader | None = None) -> None:
        self.where = where
        self.scripts = scripts
        self.line = 0
        self.variables: dict[str, Word] = {}
        self.checkouts: dict[str, Checkout] = {}
        self.applied: list[Applied] = []
        self.unknown: list[Word] = []  # the folders of ``cd``s to a variable that has no value
        self.trail: tuple[Copied, ...] = ()  # where the files came from so far: copies, clones, cp and mv
        self.depth = 0

    # the hooks a Dockerfile's stages fill
    def stage_number(self) -> int:
        return 0

    def image(self) -> str:
        return ""

    def provenance(self) -> tuple[Copied, ...]:
        return self.trail

    def record(self, copied: Copied) -> None:
        self.trail += (copied,)

    def run_lines(self, lines: list[ShellLine], cwd: str) -> str:
        """A script's logical lines, from the folder ``cwd``; the folder it ends in."""
        for shell_line in lines:
            self.line = shell_line.line
            found = words(shell_line.text, self.variables, shell_line.line)
            cwd = self.run_words(found, cwd, shell_line.heredocs)
        return cwd

    def run_words(self, found: list[Word], cwd: str, heredocs: tuple[Heredoc, ...] = ()) -> str:
        """One line's commands, from the folder ``cwd``; the folder it ends in."""
        line = self.line
        fetched: dict[str, Word] = {}
        command: list[Word] = []
        stdin: Word | Heredoc | None = None
        pending = None
        bodies = list(heredocs)
        outer: list[str] = []  # the folders of the subshells' callers
        for word in [*found, Word(";", operator=True)]:
            if pending is not None:
                if not word.operator:
                    if pending == "<":
                        stdin = word
                    elif pending in ("<<", "<<-"):
                        stdin = bodies.pop(0) if bodies else stdin
                    pending = None
                    continue
                pending = None
            if word.operator and word.text in ("<", ">", ">>", "<<", "<<-", "<<<"):
                pending = word.text
                continue
            if not word.operator:
                command.append(word)
                continue
            if command:
                cwd = self.command(command, stdin, cwd, line, fetched)
            command, stdin = [], None
            if word.text == "(":  # a subshell: its cd ends with it
                outer.append(cwd)
            elif word.text == ")" and outer:
                cwd = outer.pop()
        return cwd

    def command(
        self, argv: list[Word], stdin: Word | Heredoc | None, cwd: str, line: int, fetched: dict[str, Word]
    ) -> str:
        """One simple command; the folder the next one runs in."""
        if argv and argv[0].text in _DECLARE:
            argv = argv[1:]
            if all("=" in w.text for w in argv):
                self.assign(argv)
                return cwd
        assignments = []
        while argv and (argv[0].text in _PREFIXES or ("=" in argv[0].text and not argv[0].text.startswith("="))):
            if "=" in argv[0].text:
                assignments.append(argv[0])
            argv = argv[1:]  # VAR=value, sudo, a loop's do: the command comes after
        if not argv:
            self.assign(assignments)  # alone on its line: the shell keeps them
            return cwd
        name = argv[0].text
        if name in ("cd", "pushd") and len(argv) > 1:
            return self.cd(cwd, argv[1])
        if name in _SHELLS and len(argv) > 2 and argv[1].text == "-c":
            script = words(argv[2].text, self.variables, line)
            return self.run_words(script, cwd) if not argv[2].missing else cwd
        if name in _SHELLS or name in ("source", ".") or (name.endswith(".sh") and "/" in name):
            return self.call(name, argv, cwd, line)
        if name == "git":
            self.git(argv[1:], stdin, cwd, line, fetched)
        elif name == "patch":
            self.patch(argv[1:], stdin, cwd, line)
        elif name in ("cp", "mv", "install"):
            self.copy(argv[1:], cwd, line)
        return cwd

    def assign(self, found: list[Word]) -> None:
        for word in found:
            key, _, value = word.text.partition("=")
            self.variables[key] = Word(value, word.missing)

    def call(self, name: str, argv: list[Word], cwd: str, line: int) -> str:
        """``bash X``, ``source X``, ``./X.sh``: the script X read from ``cwd`` (sourced: its ``cd`` stays)."""
        rest = argv if name.endswith(".sh") else argv[1:]
        rest = [w for w in rest if not w.text.startswith("-") or w.text == "-"]
        if not rest or rest[0].text == "-" or self.scripts is None:
            return cwd
        path = self.known(self.cd(cwd, rest[0]), "the script it calls")
        script = self.scripts(path, self.provenance())
        if script is None:
            return cwd
        if self.depth >= _DEPTH:
            raise UsageError(
                f"{self.where}:{line}: calls {path}, scripts calling scripts {_DEPTH} deep: a loop",
                "give the script that clones and applies with --script",
            )
        caller, caller_variables = (self.where, self.line), dict(self.variables)
        self.where, self.depth = script.where, self.depth + 1
        self.variables.update({"0": Word(path), "BASH_SOURCE": Word(path)})
        try:
            end = self.run_lines(shell_lines(script.text), cwd)
        finally:
            (self.where, self.line), self.depth = caller, self.depth - 1
            if name not in ("source", "."):
                self.variables = caller_variables
        return end if name in ("source", ".") else cwd

    def cd(self, cwd: str, word: Word) -> str:
        """The folder ``word`` names from ``cwd``; one a variable without a value names is an error only where a
        clone, checkout or patch is made in it."""
        if not word.missing:
            return join(cwd, word.text)
        self.unknown.append(word)
        return f"/{_UNKNOWN}{len(self.unknown) - 1}"

    def known(self, folder: str, what: str) -> str:
        """``folder``, or the error for the variable of the ``cd`` that made it unknown."""
        if folder.startswith(f"/{_UNKNOWN}"):
            needed(self.unknown[int(folder[len(_UNKNOWN) + 1 :].split("/")[0])], self.where, f"in the folder of {what}")
        return folder

    def shown_folder(self, folder: str) -> str:
        """``folder`` as the recipe writes it, where a variable without a value made it unknown."""
        if folder.startswith(f"/{_UNKNOWN}"):
            return self.unknown[int(folder[len(_UNKNOWN) + 1 :].split("/")[0])].missing[0].shown
        return folder

    def copy(self, argv: list[Word], cwd: str, line: int) -> None:
        """``cp``/``mv``/``install`` SOURCE... DEST: the files at DEST come from the sources, as they were then."""
        paths = [w for w in argv if not w.text.startswith("-")]
        if len(paths) < 2 or any(w.missing for w in paths):
            return
        texts = [w.text for w in paths]
        folder = texts[-1].endswith("/") or len(texts) > 2
        dest = join(cwd, texts[-1]) + ("/" if folder else "")
        sources = tuple(join(cwd, t) for t in texts[:-1])
        self.record(Copied(sources, dest, line, self.stage_number(), self.provenance(), self.where))

    def git(
        self, argv: list[Word], stdin: Word | Heredoc | None, cwd: str, line: int, fetched: dict[str, Word]
    ) -> None:
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
            self.checkout(args, cwd, fetched)
        elif sub == "fetch":
            refs = [a for a in args if not a.text.startswith("-")][1:]
            if refs:
                fetched[self.owner(cwd)] = refs[0]
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
            named = needed(positional[1], self.where, "as the folder of git clone")
            control = control_character(named)
            if control:  # never a folder's name: said, rather than the clone read as naming no upstream
                raise UsageError(
                    f"{self.where}:{line}: the folder of `git clone` {named!r} {control}",
                    "remove the character from the recipe's clone folder, or pass --git NAME=URL instead",
                )
            folder = join(cwd, named)
        else:
            base = needed(url, self.where, "in the URL of git clone, which names the clone's folder").rstrip("/")
            folder = join(cwd, posixpath.basename(base).removesuffix(".git"))
        folder = self.known(folder, "git clone")
        ref_line = line if branch else 0
        self.checkouts[folder] = Checkout(folder, url, line, branch, ref_line, branch is not None, self.where)
        self.record(Copied((), folder, line, self.stage_number(), None, self.where, clone=True))

    def owner(self, folder: str) -> str:
        """The checkout holding ``folder`` (the deepest), or "" when no known clone holds it."""
        holders = [c for c in self.checkouts if folder == c or folder.startswith(c.rstrip("/") + "/")]
        return max(holders, key=len) if holders else ""

    def checkout(self, args: list[Word], cwd: str, fetched: dict[str, Word]) -> None:
        texts = [a.text for a in args]
        if "--" in texts or "--orphan" in texts:
            return  # files, or a new unrelated branch
        refs = [a for a in args if not a.text.startswith("-")]
        if any(t in ("-b", "-B", "-c", "-C") for t in texts):
            refs = refs[1:]  # the new branch's name, then where it starts
        folder = self.owner(self.known(cwd, "git checkout"))
        if len(refs) != 1 or not folder:
            return
        ref = refs[0]
        if ref.text == "FETCH_HEAD" and folder in fetched:
            ref = fetched[folder]
        if ref.text.startswith("origin/"):
            ref = replace(ref, text=ref.text.removeprefix("origin/"))
        self.checkouts[folder] = replace(
            self.checkouts[folder], ref=ref, ref_line=self.line, branch=False, where=self.where
        )

    def patch(self, argv: list[Word], stdin: Word | Heredoc | None, cwd: str, line: int) -> None:
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

    def apply(self, args: list[Word], stdin: Word | Heredoc | None, cwd: str, line: int, directory: str | None) -> None:
        files: list[Word] = []
        skip = False
        for word in args:
            text = word.text
            if skip:
                cwd, skip = self.cd(cwd, word), False
            elif directory and text == directory:
                skip = True
            elif directory and text.startswith(directory + "="):
                cwd = self.cd(cwd, Word(text.partition("=")[2], word.missing))
            elif text in ("--exclude", "--include", "-p", "-C"):
                continue
            elif not text.startswith("-") and text != "-":
                files.append(word)
        folder = self.owner(cwd)
        applied = Applied(
            folder, "", line, Word(""), self.shown_folder(cwd), self.provenance(), self.stage_number(), self.where,
            image=self.image(),
        )  # fmt: skip
        if not files and isinstance(stdin, Heredoc):
            self.applied.append(replace(applied, word=Word(f"<<{stdin.delimiter}"), inline=stdin))
            return
        if not files and isinstance(stdin, Word):
            files = [stdin]
        for word in files:  # a path with a variable without a value (a shell loop's): an error where it is needed
            self.applied.append(replace(applied, patch=join(cwd, word.text) if not word.missing else "", word=word))


def read_script(
    text: str, where: str, path: str, scripts: ScriptReader | None = None, given: tuple[Checkout, ...] = ()
) -> Built:
    """What the build script ``text`` at ``path`` does, run from its own folder (``where``: its name in errors);
    ``given``: checkouts the user names that the script does not clone."""
    shell = Shell(where, scripts)
    shell.checkouts.update({c.folder: c for c in given})
    shell.variables.update({"0": Word(path), "BASH_SOURCE": Word(path)})
    shell.run_lines(shell_lines(text), posixpath.dirname(path))
    return Built(tuple(shell.checkouts.values()), tuple(shell.applied), ())


def join(cwd: str, path: str) -> str:
    """``path`` from the folder ``cwd``, normalised, absolute."""
    joined = posixpath.normpath(posixpath.join(cwd or "/", path))
    return "/" + joined.lstrip("/")
