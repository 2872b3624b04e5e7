"""Issue 38's review on a real history, against independent oracles (slow, opt-in).

Debian's openssh carries a quilt series on 9.2p1 in bookworm and on 10.0p1 in trixie. Bookworm's series is
imported pinned at openssh-portable's ``V_9_2_P1`` and ``status --against ssh=V_10_0_P1 --json`` is checked, every
verdict of it, against what does not come from patchmgr:

(a) the patches trixie no longer carries, with the reason Debian's changelogs give (parsed here; a small table
    only where their words are ambiguous, each row quoting the changelog line, which the test finds): each one
    that upstream carries reads ``upstream``, its carrier the commit its Origin names (when ``V_10_0_P1`` reaches
    it) or one with its ``git patch-id``, and where neither exists, the commit ``bisect`` names;
(b) the patches trixie still carries are never ``upstream``, and where trixie had to change the lines a patch
    needs from upstream (its context and removed lines), bookworm's version does not read ``clean``;
(c) the others agree with git and GNU patch replaying the series at ``V_10_0_P1`` without the ``upstream`` ones:
    ``clean``/``offset`` where ``git apply --check`` applies, ``fuzz`` where only ``patch -F2`` (quilt push)
    does, ``conflict`` where neither does nor ``git apply --3way`` merges;
(d) whatever ``bisect --to V_10_0_P1`` finds upstream, status finds, and names the same commit.

Each disagreement is listed in ``KNOWN`` with its evidence, which the test checks too; RELIABILITY.md gives the
numbers ("Reviewed on a real history"). Needs ``PATCHMGR_TEST_MIRRORS`` and apt's deb-src lines for bookworm and
trixie (``PATCHMGR_TEST_DEBSRC``: a folder that keeps the downloads); skips with the reason otherwise.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from support.debian_sources import cached_debian_source
from support.real_histories import real_history
from support.replay import Replayed, replay

pytestmark = pytest.mark.slow

PIN, REF = "V_9_2_P1", "V_10_0_P1"
FORK = "1:9.2p1-2"  # the last entry bookworm's and trixie's changelogs share
SHA = re.compile(r"\b[0-9a-f]{40}\b")


@dataclass(frozen=True)
class Drop:
    """Why Debian dropped a patch: ``carried`` (upstream has this change), ``replaced`` (upstream fixed it in
    other code: the patch's own lines are not there), ``unneeded`` (nothing upstream did); ``version``: the
    changelog entry, bookworm's or trixie's, that holds ``words``."""

    verdict: str
    version: str
    words: str
    absent: str = ""  # replaced: a line the patch adds that REF does not hold anywhere
    by: str = ""  # replaced: the upstream commit that did it in its own way


# Only where the changelogs do not say it in words a rule below reads (a CVE of the patch's name in a new
# upstream release's notes; a "Drop ... patch" line with its reason).
TABLE = {
    # 9.4p1's notes, not the patch's name; bookworm's entry 1:9.2p1-2+deb12u7 backported both upstream commits
    "openssl-3-abi-compatibility": Drop("carried", "1:9.4p1-1", "relax libcrypto version checks for OpenSSL >=3"),
    "openssl-3-abi-compatibility-test": Drop("carried", "1:9.6p1-4", "OpenSSH relaxed its checks for OpenSSL >= 3"),
    # the drop is silent: the patch came in with 9.2p1-2 (its Bug: bugzilla 3536) and left with the 9.3p1 import,
    # whose upstream has the fix as its own commit ("Patch from cjwatson at debian.org vi bz#3536")
    "remove-spurious-ssh-agent-options": Drop(
        "carried", "1:9.3p1-1", "New upstream release (https://www.openssh.com/releasenotes.html#9.3p1)"
    ),
    "sntrup761x25519-sha512": Drop("carried", "1:9.9p1-1", 'available under this name "sntrup761x25519-sha512"'),
    # bookworm split upstream's one commit in two; 9.9p2's notes name only the CVE half
    "incorrect-return-values": Drop("carried", "1:9.2p1-2+deb12u5", "Fix incorrect return values on a number"),
    "fix-disable-forwarding": Drop("carried", "1:10.0p1-1", "CVE-2025-32728: sshd(8): fix the DisableForwarding"),
    "prohibit-comma-in-hostnames": Drop("carried", "1:10.0p1-1", "prohibit the comma character in hostnames"),
    # upstream's own notification (08f579231, 9.8p1) has no libsystemd; the patch links it
    "systemd-readiness": Drop(
        "replaced",
        "1:9.7p1-4",
        "Rework systemd readiness notification and socket activation patches to not link against libsystemd",
        absent="#include <systemd/sd-daemon.h>",
        by="08f579231cd38a1c657aaa6ddeb8ab57a1fd4f5c",
    ),
    # a workaround for CVE-2024-6387; 9.8p1 removed sshsigdie() itself (94b9d3710, "retire unused API"), and the
    # drop is silent (1:9.8p1-1 names neither the patch nor the CVE)
    "Disable-async-signal-unsafe-code-from-the-sshsigdie-": Drop(
        "replaced",
        "1:9.7p1-7",
        "This is a minimal workaround for a regression from CVE-2006-5051",
        absent="sshsigdie(",
        by="94b9d37100f6fa536aaa1d1a0e4926fe44fbf04d",
    ),
    # not upstream at V_10_0_P1: trixie later cherry-picked upstream's newer IPQoS handling instead of reverting
    "revert-ipqos-defaults": Drop("unneeded", "1:10.0p1-7+deb13u3", "Cherry-pick IPQoS handling updates from upstream"),
}

# Where trixie's version differs only in lines the patch adds (Debian's own fix of its patch), bookworm's reads
# clean rightly: upstream did not move. Each quotes the changelog line that says so.
OWN_FIXES = {"dnssec-sshfp": ("1:9.3p1-1", "Fix incorrect RRSET_FORCE_EDNS0 flags validation in SSHFP DNSSEC patch")}

# Disagreements with the oracle that are patchmgr's, not the oracle's, with what the test checks of them.
KNOWN = {
    # Upstream's 0832aac carries both bookworm patches (CVE-2025-26465 and the rest of "Fix cases where error
    # codes were not correctly set", as Debian split it), but krl.c's context had already changed upstream
    # (05c08e5f6), so the reverse applies at no commit without fuzz; no patch-id matches (upstream's commit has
    # the other half and the RCS ids), and the patch names no commit. GNU patch reverses it at V_10_0_P1 with
    # fuzz 1. status reads conflict; so does bisect.
    ("a", "incorrect-return-values"): "conflict"
}


def test_bookworm_series_at_10_0_agrees_with_debian_and_git(tmp_path):
    mirror = real_history("openssh")
    bookworm = cached_debian_source("openssh", "bookworm", tmp_path / "debsrc")
    trixie = cached_debian_source("openssh", "trixie", tmp_path / "debsrc")
    if not bookworm.name.startswith("openssh-9.2p1") or not trixie.name.startswith("openssh-10.0p1"):
        pytest.skip(f"needs bookworm's 9.2p1 and trixie's 10.0p1, apt gave {bookworm.name} and {trixie.name}")
    ids = series(bookworm)
    kept = set(series(trixie))
    pm = Patchmgr(tmp_path, mirror)
    pm(
        "import",
        "--target",
        "deb",
        str(bookworm / "debian/patches/series"),
        "--upstream",
        "ssh",
        "--git",
        "ssh=https://github.com/openssh/openssh-portable.git",
        "--pin",
        f"ssh={PIN}",
    )
    status = {p["id"]: p for p in pm("status", "--target", "deb", "--against", f"ssh={REF}", "--json", check=False)}
    assert list(status) == ids
    dropped = [i for i in ids if i not in kept]
    why = reasons(dropped, bookworm, trixie)
    found = pm(
        "bisect", "--target", "deb", "--upstream", "ssh", "--to", REF, "--json", *patch_args(dropped), check=False
    )
    bisected = {p["id"]: bisect_commit(p) for p in found}
    patches = tmp_path / "proj/patches/ssh"
    disagree: dict[tuple[str, str], str] = {}

    # (a) what Debian dropped
    for patch_id in dropped:
        got, drop = status[patch_id], why[patch_id]
        if drop.verdict != "carried":
            if drop.verdict == "replaced":  # the evidence that upstream did it otherwise
                assert not git_out(mirror, "grep", "-F", "-l", drop.absent, REF, check=False), patch_id
                assert drop.absent in (patches / f"{patch_id}.patch").read_text(errors="replace"), patch_id
                assert is_ancestor(mirror, drop.by, REF) and not is_ancestor(mirror, drop.by, PIN), patch_id
            if got["state"] == "upstream":
                disagree[("a", patch_id)] = "upstream"
            continue
        if got["state"] != "upstream":
            disagree[("a", patch_id)] = got["state"]
            continue
        carriers = origin_carriers(mirror, got) | patch_id_carriers(mirror, patches / f"{patch_id}.patch")
        if carriers:
            assert got["carrier"] in carriers, (patch_id, got["carrier"], carriers)
        else:
            assert got["carrier"] is None, patch_id
            assert SHA.findall(got["evidence"])[:1] == [bisected[patch_id]], (patch_id, got["evidence"])

    # (b) what Debian kept
    for patch_id in ids:
        if patch_id not in kept:
            continue
        assert status[patch_id]["state"] != "upstream", patch_id
        ours, theirs = (f / "debian/patches" / f"{patch_id}.patch" for f in (bookworm, trixie))
        if needed_lines(ours) != needed_lines(theirs):
            assert status[patch_id]["state"] != "clean", patch_id
        elif changed_lines(ours) != changed_lines(theirs) and status[patch_id]["state"] == "clean":
            assert patch_id in OWN_FIXES, (patch_id, "differs only in its added lines: say why in OWN_FIXES")
    for patch_id, (version, words) in OWN_FIXES.items():
        assert words in flat(entries(trixie)[version]), (patch_id, version, words)
        assert status[patch_id]["state"] == "clean", patch_id

    # (c) the replay oracle, without the patches status reads upstream (bump drops them)
    left = {i: patches / f"{i}.patch" for i in ids if status[i]["state"] != "upstream"}
    replayed = replay(tmp_path, mirror, left, REF, fuzz=True)
    for patch_id, tools in replayed.items():
        if not agrees(status[patch_id]["state"], tools):
            disagree[("c", patch_id)] = f"{status[patch_id]['state']} against {tools}"

    # (d) whatever bisect finds, status finds
    for patch_id, commit in bisected.items():
        got = status[patch_id]
        named = got.get("carrier") or next(iter(SHA.findall(got.get("evidence") or "")), None)
        if (commit is not None) != (got["state"] == "upstream") or (commit and named != commit):
            disagree[("d", patch_id)] = f"bisect {commit}, status {got['state']} {named}"

    # the known disagreement's evidence: the commit that carries its sibling touches all its files, and GNU patch
    # reverses it at REF with fuzz
    sibling = SHA.findall(status["CVE-2025-26465"]["evidence"])[0]
    assert set(status["incorrect-return-values"]["files"]) <= set(
        git_out(mirror, "show", "--name-only", "--format=", sibling).split()
    )
    assert bisected["incorrect-return-values"] is None
    reversed_at_ref = tmp_path / "reversed"
    git_out(tmp_path, "clone", "-q", "--shared", "--no-checkout", str(mirror), str(reversed_at_ref))
    git_out(reversed_at_ref, "checkout", "-q", REF)
    command = ["patch", "-R", "-p1", "-F2", "--dry-run", "-i", str(patches / "incorrect-return-values.patch")]
    assert subprocess.run(command, cwd=reversed_at_ref, capture_output=True).returncode == 0

    report(ids, kept, status, why, replayed, disagree)
    assert disagree == KNOWN, "a disagreement with the oracle changed: update KNOWN and RELIABILITY.md's numbers"


# -- the oracles ---------------------------------------------------------------------------------------------------
def series(unpacked: Path) -> list[str]:
    lines = (unpacked / "debian/patches/series").read_text().splitlines()
    return [line.split()[0].removesuffix(".patch") for line in lines if line.strip() and not line.startswith("#")]


def entries(unpacked: Path) -> dict[str, list[str]]:
    """The changelog's entries newer than the fork, by version: each entry's lines."""
    found: dict[str, list[str]] = {}
    version = None
    for line in (unpacked / "debian/changelog").read_text().splitlines():
        if head := re.match(r"openssh \(([^)]+)\)", line):
            version = head.group(1)
            if version == FORK:
                break
            found[version] = []
        elif version is not None:
            found[version].append(line)
    return found


def bullets(lines: list[str]) -> list[str]:
    """An entry's ``*`` items, each with its sub-items and wrapped lines, as one line of words."""
    items: list[list[str]] = []
    for line in lines:
        if line.startswith("  * "):
            items.append([line])
        elif items and line.startswith("    "):
            items[-1].append(line)
    return [flat(item) for item in items]


def flat(lines: list[str]) -> str:
    return " ".join(" ".join(lines).split())


def subject(patch: Path) -> str:
    for line in patch.read_text(errors="replace").splitlines():
        if head := re.match(r"(?i)(subject|description):\s*(.*)", line):
            return head.group(2).strip()
    return ""


def reasons(dropped: list[str], bookworm: Path, trixie: Path) -> dict[str, Drop]:
    """Why Debian dropped each patch, from trixie's changelog (rules) or TABLE (found in the changelog)."""
    newer = entries(trixie)
    found: dict[str, Drop] = {}
    for patch_id in dropped:
        cve = re.match(r"CVE-\d{4}-\d+", patch_id)
        title = subject(bookworm / "debian/patches" / f"{patch_id}.patch").lower()
        for version, lines in newer.items():
            for item in bullets(lines):
                if cve and item.startswith("* New upstream release") and cve.group(0) in item:
                    found[patch_id] = Drop("carried", version, item[:60])
                elif item.startswith("* Drop") and title and title in item.lower():
                    verdict = "unneeded" if "no longer needed" in item else "carried"
                    found[patch_id] = Drop(verdict, version, item)
        if patch_id in found:
            assert patch_id not in TABLE, (patch_id, "the changelog says it plainly: no table row")
            continue
        assert patch_id in TABLE, (patch_id, "dropped by Debian without a reason the test reads: add a table row")
        row = TABLE[patch_id]
        text = flat(newer.get(row.version) or entries(bookworm).get(row.version, []))
        assert row.words in text, (patch_id, row.version, row.words)
        found[patch_id] = row
    return found


def origin_carriers(mirror: Path, result: dict) -> set[str]:
    """The commits the patch's Origin names that REF reaches and the pin does not."""
    named = SHA.findall(result.get("origin") or "")
    return {c for c in named if has(mirror, c) and is_ancestor(mirror, c, REF) and not is_ancestor(mirror, c, PIN)}


def patch_id_carriers(mirror: Path, patch: Path) -> set[str]:
    """The commits of PIN..REF whose change to the patch's files has its ``git patch-id --stable``."""
    own = git_out(mirror, "patch-id", "--stable", input=patch.read_bytes()).split()[:1]
    files = sorted(set(re.findall(r"^\+\+\+ b/(\S+)", patch.read_text(errors="replace"), re.M)))
    log = subprocess.run(
        ["git", "log", "-p", "--first-parent", "--format=commit %H", f"{PIN}..{REF}", "--", *files],
        cwd=mirror,
        capture_output=True,
        check=True,
    ).stdout
    ids = git_out(mirror, "patch-id", "--stable", input=log).splitlines()
    return {commit for pid, commit in (line.split() for line in ids) if [pid] == own}


def hunks(patch: Path) -> list[list[str]]:
    """Each hunk's lines, read by the counts of its header (a blank line is a blank context line)."""
    found, lines, i = [], patch.read_text(errors="replace").splitlines(), 0
    while i < len(lines):
        head = re.match(r"@@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@", lines[i])
        i += 1
        if not head:
            continue
        old, new = (int(n) if n is not None else 1 for n in head.groups())
        hunk = []
        while (old > 0 or new > 0) and i < len(lines):
            line = lines[i] or " "
            i += 1
            if line[0] not in " -+":
                continue  # "\ No newline at end of file"
            old -= line[0] in " -"
            new -= line[0] in " +"
            hunk.append(line)
        found.append(hunk)
    return found


def needed_lines(patch: Path) -> list[list[str]]:
    """What the patch needs of the upstream file: its context and removed lines, hunk by hunk."""
    return [[line for line in hunk if line[0] in " -"] for hunk in hunks(patch)]


def changed_lines(patch: Path) -> list[list[str]]:
    return hunks(patch)


def agrees(state: str, tools: Replayed) -> bool:
    if state in ("clean", "offset"):
        return tools.plain
    if state == "fuzz":
        return not tools.plain and bool(tools.fuzzed)
    if state == "three-way":
        return not tools.plain and tools.merged
    return not (tools.plain or tools.merged or tools.fuzzed)  # conflict


def bisect_commit(history: dict) -> str | None:
    """The commit where bisect saw the patch turn upstream (its carrier, else the walk's transition)."""
    if history.get("carried_by"):
        return history["carried_by"]["commit"]
    turned = [t["commit"] for t in history.get("transitions", []) if t["state"] == "upstream"]
    return turned[-1] if turned else None


def patch_args(ids: list[str]) -> list[str]:
    return [word for patch_id in ids for word in ("--patch", patch_id)]


# -- running things ------------------------------------------------------------------------------------------------
class Patchmgr:
    """The CLI as a person runs it, on a project of its own, its cache in the test's folder."""

    def __init__(self, tmp_path: Path, mirror: Path) -> None:
        self.root = tmp_path / "proj"
        (self.root / "manifests").mkdir(parents=True)
        (self.root / "patches").mkdir()
        git_out(self.root, "init", "-q")
        self.mirror = mirror
        self.env = {k: v for k, v in os.environ.items() if k != "PATCHMGR_SOURCES"}
        self.env.update(
            PATCHMGR_CACHE=str(tmp_path / "cache"), GIT_CONFIG_GLOBAL=os.devnull, XDG_CONFIG_HOME=str(tmp_path / "xdg")
        )

    def __call__(self, *args: str, check: bool = True) -> list[dict]:
        words = [sys.executable, "-m", "patchmgr", *args, "--source", f"ssh={self.mirror}", "--root", str(self.root)]
        done = subprocess.run(words, capture_output=True, text=True, env=self.env, timeout=3000)
        assert done.returncode in ((0,) if check else (0, 1)), done.stdout[-2000:] + done.stderr[-2000:]
        if "--json" not in args:
            return []
        document = json.loads(done.stdout)
        return document["upstreams"][0]["patches"] if "upstreams" in document else document["patches"]


def git_out(cwd: Path, *args: str, input: bytes | None = None, check: bool = True) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, input=input, capture_output=True, check=check)
    return done.stdout.decode(errors="replace").strip()


def has(repo: Path, commit: str) -> bool:
    return (
        subprocess.run(["git", "cat-file", "-e", f"{commit}^{{commit}}"], cwd=repo, capture_output=True).returncode == 0
    )


def is_ancestor(repo: Path, commit: str, ref: str) -> bool:
    done = subprocess.run(["git", "merge-base", "--is-ancestor", commit, ref], cwd=repo, capture_output=True)
    return done.returncode == 0


def report(ids, kept, status, why, replayed, disagree) -> None:
    """The review's numbers and its table of disagreements (``pytest -s`` shows them; RELIABILITY.md quotes them)."""
    dropped = [i for i in ids if i not in kept]
    carried = [i for i in dropped if why[i].verdict == "carried"]
    agreeing = [i for i in carried if status[i]["state"] == "upstream"]
    print(
        f"\n{len(ids)} patches: {len(dropped)} dropped by trixie ({len(carried)} carried upstream, "
        f"{sum(why[i].verdict == 'replaced' for i in dropped)} replaced by other code, "
        f"{sum(why[i].verdict == 'unneeded' for i in dropped)} unneeded), {len(ids) - len(dropped)} kept"
    )
    print(
        f"(a) upstream: {len(agreeing)} of {len(carried)} carried; "
        f"{sum(bool(status[i].get('carrier')) for i in agreeing)} with a carrier commit"
    )
    ours = [i for i in ids if i in kept]
    print(f"(b) kept, not upstream: {sum(status[i]['state'] != 'upstream' for i in ours)} of {len(ours)}")
    print(f"(c) replayed: {len(replayed) - sum(k[0] == 'c' for k in disagree)} of {len(replayed)} agree")
    for (part, patch_id), what in sorted(disagree.items()):
        print(f"disagreement ({part}) {patch_id}: {what} ({why.get(patch_id, Drop('', '', '')).verdict})")
