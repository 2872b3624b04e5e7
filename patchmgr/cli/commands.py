"""The command table: each command's name, the module that holds it, and its one-line help.

Nothing here imports a command module, typer or rich: ``patchmgr --help`` and ``--version`` are answered from
this table alone (``cli/toplevel.py``), and a command's module is imported only when that command runs or shows
its own help (``cli/app.py``), the way pip's command table works.
"""

from __future__ import annotations

from typing import NamedTuple

EXIT_CODES = "Exit codes, the same for every command: 0 fine; 1 the check ran and found trouble; 2 bad input or usage."
APP_HELP = "Keep .patch files against pinned upstream commits: check, apply, verify. " + EXIT_CODES
VERSION_HELP = "Print patchmgr's version and exit."


class Command(NamedTuple):
    module: str
    """The module under ``patchmgr.cli`` whose ``command`` function runs it."""
    help: str


COMMANDS: dict[str, Command] = {
    "init": Command(
        "init",
        "Start a project in the current folder (or --root): manifests/<target>.toml with one upstream from --git "
        "URL pinned at --pin REF (resolved to its full commit; version from a release tag), patches/<upstream>/, "
        "tests/smoke/<upstream>/conftest.py and a pre-commit config running patchmgr lint. Never overwrites a file.",
    ),
    "add": Command(
        "add",
        "Turn a change into a documented patch at the end of an upstream's series: the new commits of an edit "
        "checkout (--from-edit DIR), a commit or range of any clone (--commit REV[..REV] --repo DIR), or a diff file "
        "(--diff FILE). DEP-3 fields from the commits, Last-Update today, a Smoke-Test stub; checked to apply "
        "exactly at the pin first, then written in one transaction.",
    ),
    "targets": Command(
        "list_targets",
        "List each target with its upstreams and their pins (--json for scripts); exit 1 when a manifest does not "
        "load.",
    ),
    "status": Command("status", "Classify every patch of a target at its pins (or --against refs)."),
    "apply": Command("apply", "Check out each upstream at its pin under DIR and apply the series, all or nothing."),
    "verify": Command("verify", "Prove that DIR holds exactly the pinned upstreams with exactly the target's patches."),
    "lint": Command("lint", "Check manifests and patch files: well-formed, documented (DEP-3), all listed."),
    "smoke": Command(
        "smoke",
        "Run each patch's smoke tests against the upstream code in DIR; exit 0 only when every patch is proven by "
        "tests that ran (--unpatched: against the pinned upstream without the patches, which must fail). "
        "--into DIR --python PATH runs DIR's tests on that interpreter (one the upstream's Requires-Python fits).",
    ),
    "fetch": Command(
        "fetch",
        "Fill the cache with each upstream at its pin (every file of the commit, or the pinned release), so a later "
        "apply needs no network: the download layer of an image build.",
    ),
    "revert": Command(
        "revert", "Put back the original bytes of every file `apply --python` changed, and the original RECORD."
    ),
    "bisect": Command(
        "bisect",
        "Name the upstream commit between the pin and --to where each patch stops applying, with its state there "
        "and its pull request; no checkout.",
    ),
    "refresh": Command(
        "refresh",
        "Rewrite the patches that apply with offsets at --to so they apply exactly there, keeping their messages; "
        "refuses fuzz and 3-way merges unless allowed (--allow-fuzz, --allow-three-way), and conflicts; a rewritten "
        "patch's Last-Update is set to today.",
    ),
    "bump": Command(
        "bump",
        "Refresh the patches at --to, then move the pin (and version) there; drops patches that are upstream unless "
        "--keep; refuses while a patch is conflict, missing or nothing-to-delete.",
    ),
    "edit": Command(
        "edit",
        "Check the upstream out at its pin in DIR with each patch as one commit, to edit them with git; write them "
        "back with export. With --onto REF, move the series onto a new upstream ref there (git am -3, patch by "
        "patch), stopping at a conflict; then --continue, --skip or --abort.",
    ),
    "export": Command(
        "export",
        "Write the commits of an edit checkout back as patch files and update the series; an unchanged commit "
        "leaves its file byte for byte. From an edit --onto checkout also move the pin (and version), drop patches "
        "upstream carries, and show a range-diff of old against new. With --format series --into DIR, write the "
        "target as an image repository keeps it: one monolithic patch per upstream, series.conf, the pins as "
        "Dockerfile ARG lines; import of DIR gives the same patches back.",
    ),
    "roots": Command(
        "roots",
        "Print `NAME ROOT` for each upstream that apply checked out into DIR: ROOT is the folder to put on sys.path "
        "(the checkout, or its package-root). Exit 1 when none is applied there. Scripts read --json: a folder "
        "name may hold any character, a newline included, and only JSON keeps it one value.",
    ),
    "matrix": Command(
        "matrix",
        "Show every patch (rows) at the pin, each release tag since it and the branch tip (columns), with the first "
        "upstream commit where each changed; --html FILE writes one self-contained page. Exit 1 when a patch does "
        "not apply (or a guard breaks) at the column its track decides by: the newest release tag shown (the pin "
        "when none is newer), or the branch tip with track = branch.",
    ),
    "import": Command(
        "import_",
        "Adopt a monolithic patch set (series.conf, per-version folder or patch files): find each patch's base "
        "commit, split it into pieces with DEP-3 stubs, leave out what upstream carries, prove the series equals "
        "the patch, and write the manifest and patch files.",
    ),
}
