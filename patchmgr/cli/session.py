"""The one setup path of every command: project, recovery, target, options, sources, output.

``Session`` opens the project, rolls back (or finishes) a refresh, bump or export that was
killed mid-write before any manifest is read, selects the target, checks the upstream names
the options give, opens and closes the cache (in the command's ``Sources``, with the ``--source``
locations), and prints the result for people or as one JSON document. Each command module only
calls the core with what it gets here.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple, TextIO

from patchmgr.cli.option_values import (
    Place,
    for_targets,
    missing,
    one_place,
    require_upstreams,
    required_ref,
    required_target,
    source_overrides,
)

if TYPE_CHECKING:
    from rich.console import Console

    from patchmgr.model.manifest import Target
    from patchmgr.model.project import Project
    from patchmgr.sources.settings import SourceSetting
    from patchmgr.sources.upstream import Sources


OptionMap = Mapping[str, str] | list[str] | tuple[str, ...]
"""The upstream names an option gives: ``NAME=VALUE`` options by name, or ``--upstream`` values."""


class AtRef(NamedTuple):
    """What bisect, bump and refresh work on: one upstream of one target, the ``--source`` overrides for that
    target's upstreams, and the ref ``--to`` names."""

    target: Target
    upstream: str
    overrides: dict[str, str]
    ref: str


class Sourced(NamedTuple):
    """What fetch and matrix work on: one target, the ``--source`` overrides for its upstreams, and the upstreams
    ``--upstream`` names (empty: every one)."""

    target: Target
    overrides: dict[str, str]
    only: list[str]


class Session:
    def __init__(
        self, command: str, root: Path, json_output: bool = False, data_on_stdout: bool = False, new: bool = False
    ) -> None:
        self.command = command
        self.json = json_output
        self.data_on_stdout = data_on_stdout  # stdout carries only data lines (roots): notes go to stderr
        # imported here, not at the top: `patchmgr <command> --help` loads the command's module and no core code
        from patchmgr.model.project import Project
        from patchmgr.targets.project_files import recover_project

        # new: a project being started (init), whose root need not hold manifests/ yet
        self.project: Project = Project(root.resolve()) if new else Project.at(root)
        self.notes: list[str] = []
        self.selected: list[Target] = []  # the targets the command works on, once their options are checked
        self.source_report: dict[str, SourceSetting] | None = None  # where each upstream's source comes from
        recovered = recover_project(self.project.root)  # before any manifest is read: takes the lock only then
        if recovered:
            self.notes.append(recovered)
            if not json_output:
                self.say_notes()

    # -- what the command works on --------------------------------------------------
    def target(self, name: str | None, *option_maps: OptionMap) -> Target:
        """The one target the command needs (``--target``), with the upstreams the options name checked."""
        selected = self.project.target(required_target(self.command, name, self.project.target_names))
        self._require_upstreams([selected], option_maps)
        return selected

    def placed_target(
        self, name: str | None, into: Path | None, python: str | None, *option_maps: OptionMap
    ) -> tuple[Target, Place]:
        """The target of a command that works on ``--into DIR`` or ``--python PATH`` (exactly one of them), and
        that place: a ``Path`` (``--into``) or a ``str`` (``--python``)."""
        place = one_place(self.command, into, python)
        return self.target(name, *option_maps), place

    def sourced_target(self, name: str | None, source: list[str] | None, upstreams: list[str] | None) -> Sourced:
        """The one target (``--target``), with ``--source`` and ``--upstream`` checked against it, the
        ``--source`` overrides for its upstreams, and the ``--upstream`` names."""
        given, only = source_overrides(source), upstreams or []
        selected = self.target(name, given, only)
        return Sourced(selected, for_targets([selected], given), only)

    def upstream_target(
        self, name: str | None, upstream: str | None, *option_maps: Mapping[str, str]
    ) -> tuple[Target, str]:
        """The target of a command on one upstream (``--upstream NAME``, required), and that upstream's name."""
        selected = self.project.target(required_target(self.command, name, self.project.target_names))
        if not upstream:
            raise missing(
                self.command, "--upstream NAME", f"name one of: {', '.join(u.name for u in selected.upstreams)}"
            )
        selected.upstream(upstream)  # a name the target lacks: its ManifestError
        self._require_upstreams([selected], option_maps)
        return selected, upstream

    def upstream_at_ref(
        self, name: str | None, upstream: str | None, source: list[str] | None, to: str | None
    ) -> AtRef:
        """``--target``, ``--upstream``, ``--source`` and ``--to`` of a command on one upstream at a ref, checked in
        that order (the first wrong one is the error)."""
        selected, upstream, overrides = self.sourced_upstream(name, upstream, source)
        return AtRef(selected, upstream, overrides, required_ref(self.command, to))

    def sourced_upstream(
        self, name: str | None, upstream: str | None, source: list[str] | None
    ) -> tuple[Target, str, dict[str, str]]:
        """``--source``, ``--target`` and ``--upstream`` of a command on one upstream, checked in that order, and
        the ``--source`` overrides for the target's upstreams."""
        given = source_overrides(source)
        selected, upstream = self.upstream_target(name, upstream, given)
        return selected, upstream, for_targets([selected], given)

    def _require_upstreams(self, targets: list[Target], option_maps: tuple[OptionMap, ...]) -> None:
        """The upstream names the options give, checked; ``--source``/``--against`` for an upstream only other
        targets have are dropped with a note (said now for people, in the JSON document's notes)."""
        names = cache(self.project.upstream_names)
        self.selected = targets
        self._note(require_upstreams(targets, *option_maps, elsewhere=names))

    def _note(self, notes: list[str]) -> None:
        """Notes for this run: said now for people, in the JSON document's notes."""
        if notes:
            self.notes += notes
            if not self.json:
                self.say_notes(notes)

    @contextmanager
    def sources(self, overrides: Mapping[str, str]) -> Iterator[Sources]:
        """Where the upstreams' files come from, as the one value the core takes: the cache of upstreams, and
        the locations that replace the manifests' URLs: ``overrides`` (the ``--source`` locations for the selected
        targets' upstreams) over those of ``PATCHMGR_SOURCES`` and the configuration files (``sources/settings``).
        Where each selected upstream's source comes from is said (a note for one set outside the command line)
        and put in the JSON document. The cache shows progress on a terminal, quiet with --json or off a
        terminal. The console is made at the first message: a run that says nothing loads no output code before
        its checks (``status`` loads it while the cached clones open)."""
        from patchmgr.render.status_plain import for_log
        from patchmgr.sources.store import Store
        from patchmgr.sources.upstream import Sources

        settings = self._source_settings(overrides)

        made: list[Console] = []

        def err() -> Console:
            if not made:
                made.append(self.console(stderr=True))
            return made[0]

        def progress(message: str) -> None:
            if not self.json and not for_log(sys.stderr):  # what rich calls a terminal, asked without rich
                err().print(f"… {message}", style="dim")

        store = Store(progress=progress, note=lambda message: say_notes(sys.stderr, [message], err))
        try:
            yield Sources(store, {name: setting.location for name, setting in settings.items()})
        finally:
            store.close()

    def _source_settings(self, overrides: Mapping[str, str]) -> dict[str, SourceSetting]:
        """The locations for this run by upstream name (``--source`` first), with the report of where the selected
        upstreams' sources come from, and its notes."""
        import os

        from patchmgr.sources.settings import FLAG, MANIFEST, SourceSetting, configured, for_report, unknown_names

        config = configured(self.project.root, os.environ)
        settings = {**config.settings, **{name: SourceSetting(name, at, FLAG) for name, at in overrides.items()}}
        upstreams = {u.name: u for t in self.selected for u in t.upstreams}
        report = {name: for_report(name, settings, u.urls) for name, u in upstreams.items()}
        self.source_report = report or {name: s for name, s in settings.items() if s.given_by == FLAG}
        notes = [
            f"{name}: source {s.location}, given by {s.given_by}"
            for name, s in report.items()
            if s.given_by not in (FLAG, MANIFEST)
        ]
        if self.selected:  # init and import name upstreams no manifest has yet: theirs is no typo
            notes += unknown_names(config, upstreams, self.project.upstream_names)
        self._note(notes + list(config.notes))
        return settings

    # -- output -----------------------------------------------------------------------
    @staticmethod
    def console(stderr: bool = False) -> Console:
        from patchmgr.render.console import make_console

        return make_console(stderr)

    @property
    def out(self) -> Console:
        """Where people's output goes: stdout, or stderr while stdout carries the JSON document."""
        return self.console(stderr=self.json)

    def say_notes(self, more: list[str] | None = None) -> None:
        to_stderr = self.data_on_stdout or self.json
        say_notes(
            sys.stderr if to_stderr else sys.stdout,
            self.notes if more is None else more,
            lambda: self.console(stderr=to_stderr),
        )

    def emit(self, code: int, as_json: Callable[..., dict], render: Callable[..., None], *values: object) -> int:
        """Print the result (one JSON document on stdout, or the rendering for people); return ``code``.

        Every JSON document carries ``command``, ``ok`` and ``notes`` (the recovery note first)."""
        if self.json:
            from patchmgr.render.outside import for_json

            doc = as_json(*values)
            doc = {"command": self.command, "ok": code == 0, **doc}
            if self.source_report is not None:
                doc["sources"] = {
                    name: {"location": s.location or None, "given_by": s.given_by}
                    for name, s in self.source_report.items()
                }
            doc["notes"] = self.notes + list(doc.get("notes") or [])
            print(json.dumps(for_json(doc), indent=2))  # every credential masked, every string valid Unicode
        else:
            render(self.out, *values)
        return code


def say_notes(stream: TextIO, notes: list[str], console: Callable[[], Console]) -> None:
    """``note:`` lines on ``stream``: in rich's yellow on a terminal (``console`` makes the one to print them
    with), as plain lines in a log, where rich is not loaded only to print them (it is most of a start-up)."""
    from patchmgr.render.status_plain import for_log

    if not for_log(stream):
        from patchmgr.render.console import notes as say

        say(console(), notes)
        return
    from patchmgr.render.outside import one_line

    stream.write("".join(f"note: {one_line(note)}\n" for note in notes))
