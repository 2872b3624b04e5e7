"""What a Dockerfile does to git checkouts: which it clones where, at which ref, and which patch files
it applies in which of them, in order (pure: the words of ``model.dockerfile``; a script a ``RUN`` calls is
read through the caller's reader).

Scoping as ``docker build`` does it: an ``ARG`` before the first ``FROM`` is global (seen by ``FROM``
lines; a stage sees it only where it declares ``ARG NAME`` again); a stage's ``ARG NAME=default`` takes
a ``--build-arg NAME=VALUE`` first; ``ENV`` wins over ``ARG`` of the same name; ``FROM <stage>`` goes on
with that stage's ``ENV`` and ``WORKDIR``. Each ``RUN`` starts in the ``WORKDIR``, with the stage's values and
no variable a ``RUN`` before it set; its commands are read by ``model.recipe_shell``. ``RUN <<'EOS'`` runs the
here-document's body as a script, its lines numbered as the Dockerfile's.
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Mapping
from dataclasses import dataclass, field

from patchmgr.model.dockerfile import Copied, Instruction, Word, expand, instructions, needed, words
from patchmgr.model.recipe import Applied, Built, Checkout, ScriptReader
from patchmgr.model.recipe_shell import Shell, join
from patchmgr.model.shell_lines import shell_lines

__all__ = ["Applied", "Built", "Checkout", "read_build"]


@dataclass
class _Stage:
    values: dict[str, Word] = field(default_factory=dict)  # ARG and ENV values in scope
    env: dict[str, Word] = field(default_factory=dict)
    workdir: str = "/"
    copies: tuple[Copied, ...] = ()  # what the stage's files hold so far (a stage FROM another: its too)
    number: int = 0
    image: str = ""  # the image it is built FROM ("": a stage of the Dockerfile's, or none)


def read_build(
    text: str,
    where: str,
    build_args: Mapping[str, str],
    scripts: ScriptReader | None = None,
    given: tuple[Checkout, ...] = (),
) -> Built:
    """The checkouts, applied patches and copies of the Dockerfile ``text`` (``where``: its name in errors);
    ``given``: checkouts the user names that no ``git clone`` of the Dockerfile makes (a base image's)."""
    state = _State(where, {k: Word(v) for k, v in build_args.items()}, scripts)
    state.checkouts.update({c.folder: c for c in given})
    for instruction in instructions(text):
        state.step(instruction)
    unused = tuple(sorted(set(build_args) - state.declared))
    return Built(tuple(state.checkouts.values()), tuple(state.applied), tuple(state.copies), unused)


class _State(Shell):
    def __init__(self, where: str, build_args: dict[str, Word], scripts: ScriptReader | None) -> None:
        super().__init__(where, scripts)
        self.build_args = build_args
        self.globals: dict[str, Word | None] = {}
        self.declared: set[str] = set()
        self.stages: dict[str, _Stage] = {}
        self.stage: _Stage | None = None
        self.copies: list[Copied] = []
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
        stage = _Stage(number=self.froms, image=found[0] if found and parent is None else "")
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
        absolute = join(self.stage.workdir, dest) + ("/" if dest.endswith("/") or len(texts) > 2 else "")
        sources = tuple(texts[:-1]) if source is None else tuple(join("/", t) for t in texts[:-1])
        copied = Copied(sources, absolute, ins.line, self.stage.number, source.copies if source else None)
        self.copies.append(copied)
        self.stage.copies += (copied,)

    do_add = do_copy

    def stage_number(self) -> int:
        return self.stage.number if self.stage else 0

    def image(self) -> str:
        return self.stage.image if self.stage else ""

    def provenance(self) -> tuple[Copied, ...]:
        return self.stage.copies if self.stage else ()

    def record(self, copied: Copied) -> None:
        if self.stage is not None:
            self.stage.copies += (copied,)

    def do_run(self, ins: Instruction) -> None:
        assert self.stage is not None
        self.variables = dict(self.stage.values)  # a RUN is a shell of its own: what one sets, the next lacks
        found = _json_or_words(ins, self.stage.values, shell=True)
        self.line = ins.line
        while found and not found[0].operator and found[0].text.startswith("--"):
            found = found[1:]  # RUN --mount=... --network=...
        if len(found) == 2 and found[0].text in ("<<", "<<-") and len(ins.heredocs) == 1:  # RUN <<EOS: a script
            self.run_lines(shell_lines(ins.heredocs[0].body, ins.heredocs[0].line), self.stage.workdir)
        else:
            self.run_words(found, self.stage.workdir, ins.heredocs)


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
