"""A real-sized, reproducible upstream history and patch set for the benchmarks.

Everything comes from a fixed seed, so every machine builds the same repositories,
commit ids included. Histories are written with one ``git fast-import`` process
(tens of thousands of commits in seconds) instead of one ``git commit`` each.

Layout of an upstream: ``src/pkg<seed>/sub<k>/mod<n>.py`` files of a few hundred
lines of Python-like text, each line unique enough that hunks place as in real
code. Each commit edits one to three files (replace, insert or delete lines), now
and then adds or removes a file. A "hot" set of files gets a large share of the
edits, the way real patches sit in the code that keeps moving; the patches touch
hot files, one file per patch, so patches of a series are independent and
``git apply --check`` of each alone gives the same answer as the series.
"""

from __future__ import annotations

import hashlib
import json
import random
import subprocess
from dataclasses import dataclass
from pathlib import Path

EPOCH = 1_767_225_600  # 2026-01-01T00:00:00Z
GIT_ENV = {"GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}
WORDS = (
    "value",
    "count",
    "total",
    "index",
    "buffer",
    "weight",
    "scale",
    "offset",
    "state",
    "mask",
    "layer",
    "token",
    "shard",
    "rank",
    "stream",
    "grad",
    "bias",
    "query",
    "key",
    "cache",
)


@dataclass(frozen=True)
class HistorySpec:
    seed: int
    files: int
    commits: int
    hot: int  # files that get HOT_SHARE of the edits

    @property
    def name(self) -> str:
        return f"up{self.seed}-f{self.files}-c{self.commits}-h{self.hot}"


HOT_SHARE = 0.3


def _line(rng: random.Random) -> str:
    bits = rng.getrandbits(60)
    a, b = WORDS[bits % 20], WORDS[(bits >> 5) % 20]
    return f"    {a}_{(bits >> 10) & 0xFFFFF:x} = {b}_{(bits >> 30) & 0xFFFFF:x} * {bits >> 50}\n"


def _file_text(rng: random.Random, number: int) -> list[str]:
    lines = [f'"""Module {number}: generated for the patchmgr benchmarks."""\n', "\n"]
    for func in range(rng.randrange(4, 16)):
        lines.append(f"def f{number}_{func}(x):\n")
        lines += [_line(rng) for _ in range(rng.randrange(3, 12))]
        lines += ["    return x\n", "\n"]
    return lines


def _path(seed: int, number: int) -> str:
    return f"src/pkg{seed}/sub{number % 37}/mod{number}.py"


def _blob(lines: list[str]) -> bytes:
    return "".join(lines).encode()


def _data(payload: bytes) -> bytes:
    return b"data %d\n" % len(payload) + payload + b"\n"


def build_history(spec: HistorySpec, repo: Path) -> list[str]:
    """Create the bare repository ``repo`` (if it is not there yet); return its commits, oldest first."""
    commits_file = repo / "bench-commits.txt"
    if commits_file.is_file():
        return commits_file.read_text().split()
    repo.parent.mkdir(parents=True, exist_ok=True)
    tmp = repo.with_name(repo.name + ".tmp")
    subprocess.run(["rm", "-rf", str(tmp)], check=True)
    subprocess.run(["git", "init", "-q", "--bare", str(tmp)], check=True, env=_env())
    rng = random.Random(spec.seed)
    files = {_path(spec.seed, n): _file_text(rng, n) for n in range(spec.files)}
    hot = [_path(spec.seed, n) for n in range(spec.hot)]
    next_number = spec.files
    importer = subprocess.Popen(["git", "fast-import", "--quiet", "--done"], cwd=tmp, stdin=subprocess.PIPE, env=_env())
    out = importer.stdin
    for number in range(spec.commits):
        when = EPOCH + number * 600
        changed: dict[str, bytes | None] = {}
        if number == 0:
            changed = {path: _blob(lines) for path, lines in files.items()}
            subject = "initial import"
        else:
            subject = _mutate(rng, files, hot, changed)
            if rng.random() < 0.01:
                path = _path(spec.seed, next_number)
                next_number += 1
                files[path] = _file_text(rng, next_number)
                changed[path] = _blob(files[path])
                subject += f"; add {path}"
        message = f"{subject} (#{number})\n".encode()
        out.write(b"commit refs/heads/main\n")
        out.write(b"mark :%d\n" % (number + 1))
        out.write(b"committer Bench Dev <dev@bench.example> %d +0000\n" % when)
        out.write(_data(message))
        if number:
            out.write(b"from :%d\n" % number)
        for path, payload in changed.items():
            if payload is None:
                out.write(f"D {path}\n".encode())
            else:
                out.write(f"M 100644 inline {path}\n".encode())
                out.write(_data(payload))
        out.write(b"\n")
    out.write(b"done\n")
    out.close()
    if importer.wait() != 0:
        raise RuntimeError("git fast-import failed")
    subprocess.run(["git", "-C", str(tmp), "repack", "-adq"], check=True, env=_env())
    shas = subprocess.run(
        ["git", "-C", str(tmp), "rev-list", "--reverse", "main"], check=True, capture_output=True, text=True, env=_env()
    ).stdout.split()
    (tmp / "bench-commits.txt").write_text("\n".join(shas) + "\n")
    tmp.rename(repo)
    return shas


def _mutate(rng: random.Random, files: dict[str, list[str]], hot: list[str], changed: dict) -> str:
    """Edit one to three files in place; return a commit subject."""
    paths = list(files)
    edits = []
    for _ in range(rng.choice((1, 1, 2, 3))):
        path = rng.choice(hot) if hot and rng.random() < HOT_SHARE else rng.choice(paths)
        if path not in files:
            continue
        lines = files[path]
        roll = rng.random()
        if roll < 0.002 and path not in hot:
            del files[path]
            paths.remove(path)
            changed[path] = None
            edits.append(f"remove {path}")
            continue
        at = rng.randrange(2, max(3, len(lines) - 1))
        if roll < 0.45:
            lines[at : at + rng.randrange(1, 3)] = [_line(rng) for _ in range(rng.randrange(1, 3))]
            verb = "rework"
        elif roll < 0.8:
            lines[at:at] = [_line(rng) for _ in range(rng.randrange(1, 6))]
            verb = "extend"
        else:
            del lines[at : at + rng.randrange(1, 4)]
            verb = "trim"
        changed[path] = _blob(lines)
        edits.append(f"{verb} {path.rsplit('/', 1)[1]}")
    return ", ".join(edits) or "touch nothing"


def _env() -> dict[str, str]:
    import os

    return {**os.environ, **GIT_ENV}


def read_file(repo: Path, commit: str, path: str) -> bytes:
    return subprocess.run(
        ["git", "-C", str(repo), "cat-file", "blob", f"{commit}:{path}"], check=True, capture_output=True, env=_env()
    ).stdout


def blob_id(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def make_patch(rng: random.Random, path: str, old: bytes, number: int, upstream: str) -> bytes:
    """A format-patch mail that changes a few lines of ``path`` (3 lines of context, full index)."""
    import difflib

    lines = old.decode().splitlines(keepends=True)
    at = rng.randrange(3, len(lines) - 4)
    new = list(lines)
    new[at : at + rng.randrange(1, 3)] = [
        f"    patched_{number} = {rng.randrange(10**6)}  # {upstream} fix\n",
        _line(rng),
    ]
    data = "".join(new).encode()
    hunks = list(difflib.unified_diff(lines, new, n=3))[2:]
    body = "".join(hunks)
    mail = (
        "From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\n"
        "From: Bench Dev <dev@bench.example>\n"
        "Date: Thu, 1 Jan 2026 00:00:00 +0000\n"
        f"Subject: [PATCH] bench fix {number} in {path.rsplit('/', 1)[1]}\n\n"
        f"Why: generated for the patchmgr benchmarks; changes {path}.\n\n"
        "Origin: vendor\nUpstream-Status: Inappropriate benchmark data\n"
        "---\n"
        f"diff --git a/{path} b/{path}\n"
        f"index {blob_id(old)}..{blob_id(data)} 100644\n"
        f"--- a/{path}\n+++ b/{path}\n{body}"
        "-- \n2.39.5\n\n"
    )
    return mail.encode()


def write_patches(
    repo: Path, pin: str, upstream: str, count: int, seed: int, spec: HistorySpec, patches_dir: Path, prefix: str
) -> list[str]:
    """``count`` patches against ``pin``, on distinct files (hot ones first); return their ids."""
    rng = random.Random(seed)
    listing = subprocess.run(
        ["git", "-C", str(repo), "ls-tree", "-r", "--name-only", pin],
        check=True,
        capture_output=True,
        text=True,
        env=_env(),
    ).stdout.split()
    hot = [_path(spec.seed, n) for n in range(spec.hot)]
    cold = sorted(set(listing) - set(hot))
    rng.shuffle(cold)
    chosen = [p for p in hot if p in set(listing)][:count] + cold
    ids = []
    folder = patches_dir / upstream
    folder.mkdir(parents=True, exist_ok=True)
    for number, path in enumerate(chosen[:count]):
        patch_id = f"{prefix}-{number:03d}"
        (folder / f"{patch_id}.patch").write_bytes(make_patch(rng, path, read_file(repo, pin, path), number, upstream))
        ids.append(patch_id)
    return ids


def write_manifest(path: Path, target: str, upstreams: dict[str, dict]) -> None:
    lines = ["[target]", f'name = "{target}"', 'description = "patchmgr benchmark target"', ""]
    for name, spec in upstreams.items():
        lines.append(f"[upstreams.{name}]")
        lines += [f"{key} = {json.dumps(value)}" for key, value in spec.items()]
        lines.append("")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines))


def big_hunks_case(
    lines: int = 80_000, hunks: int = 20_000, shift: int = 7, resize: bool = True
) -> tuple[bytes, bytes, bytes, str]:
    """One file of ``lines`` lines, a patch of ``hunks`` one-context-line hunks against it, and an upstream
    that moved on by ``shift`` lines added at the top (every hunk lands at an offset).

    Returns (original file, upstream file, patch mail, path). Deterministic: no randomness, no git. The
    hunks replace one line by one, by two (the file grows) or remove one, in turn, so hunk placement
    works on a file whose length changes as it goes (``resize=False``: every hunk replaces one line by
    one, the case where git's own placement is fastest); every eighth line is blank (a line that
    repeats throughout the file, as in real code).
    """
    path = "src/big/generated.py"
    step = max(4, lines // hunks)

    def text(number: int) -> str:
        return "\n" if number % 8 == 7 else f"v{number} = c{number % 97}\n"

    old = [text(n) for n in range(lines)]
    parts = []
    delta = 0
    for k in range(min(hunks, (lines - 4) // step + 1)):
        at = k * step + 2  # 0-based line changed, one context line on each side (none at line 1: git
        # anchors a hunk that starts there at the file's beginning)
        change = k % 3 if resize else 0
        new_lines = {0: [f"v{at} = p\n"], 1: [f"v{at} = p\n", f"w{at} = 0\n"], 2: []}[change]
        body = [" " + old[at - 1], "-" + old[at], *("+" + line for line in new_lines), " " + old[at + 1]]
        new_count = 2 + len(new_lines)
        parts.append(f"@@ -{at},3 +{at + delta},{new_count} @@\n" + "".join(body))
        delta += len(new_lines) - 1
    upstream = [f"# upstream header line {n}\n" for n in range(shift)] + old
    mail = (
        "From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\n"
        "From: Bench Dev <dev@bench.example>\n"
        "Date: Thu, 1 Jan 2026 00:00:00 +0000\n"
        f"Subject: [PATCH] {len(parts):,} hunks in one file\n\n"
        "Why: generated for the patchmgr benchmarks (hunk placement at scale).\n\n"
        "Origin: vendor\nUpstream-Status: Inappropriate benchmark data\n"
        "---\n"
        f"diff --git a/{path} b/{path}\n"
        f"--- a/{path}\n+++ b/{path}\n" + "".join(parts) + "-- \n2.39.5\n\n"
    )
    return "".join(old).encode(), "".join(upstream).encode(), mail.encode(), path
