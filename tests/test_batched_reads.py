"""Reads and writes of git in batches, and work shared (issue 38, item 6): a check at a ref asks its partial cache
for the blobs the series touches in one fetch (``GitRepo.prefetch_at`` in ``io/git_history.py``, called by
``history/at_ref.check_at_ref``), never one lazy fetch per file; ``apply`` puts every file of the series and every
commit through one ``git fast-import`` (``io/git_commits.py``), each commit the very object ``git commit`` made;
the engine splits a file into lines once per content; matrix columns share a walk where the files did not change.
Before, a cold ``status`` of 300 real Megatron-LM commits started 764 lazy fetches (18 s of its 19), and ``apply``
started a ``hash-object`` per file and four git processes per patch. Real repositories; git's own trace counts the
processes."""

from __future__ import annotations

from pathlib import Path

from support.gitrepos import make_series

FILES = 12


def traced(monkeypatch, tmp_path: Path, name: str) -> Path:
    trace = tmp_path / f"{name}.trace"
    monkeypatch.setenv("GIT_TRACE", str(trace))
    return trace


def commands(trace: Path, command: str) -> int:
    """How many git processes ran ``git COMMAND`` (each git process writes one ``built-in:`` line)."""
    if not trace.is_file():
        return 0
    return sum(1 for line in trace.read_text().splitlines() if f"built-in: git {command} " in line)


def wide_series(upstream, project) -> str:
    """A pin with ``FILES`` files and a series of three patches that touch all of them; the target ``t``."""
    files = {f"src/m{n:02d}.py": f"value = {n}\n" * 5 for n in range(FILES)}
    pin = upstream.commit(files, "many files")
    half = FILES // 2
    steps = [
        ({f"src/m{n:02d}.py": f"value = {n}\n" * 4 + "changed\n" for n in range(half)}, "First half"),
        ({f"src/m{n:02d}.py": f"value = {n}\n" * 4 + "changed\n" for n in range(half, FILES)}, "Second half"),
        ({f"src/m{n:02d}.py": f"value = {n}\n" * 4 + "again\n" for n in range(FILES)}, "All again"),
    ]
    ids = []
    for number, mail in enumerate(make_series(upstream, pin, steps)):
        ids.append(f"p{number}")
        project.add_patch("lib", ids[-1], mail)
    project.manifest("t", {"lib": {"git": "https://example.invalid/lib.git", "commit": pin, "patches": ids}})
    return pin


def test_a_cold_status_fetches_the_series_files_in_one_request(cli, upstream, project, tmp_path, monkeypatch):
    wide_series(upstream, project)
    trace = traced(monkeypatch, tmp_path, "status")
    result = cli("status", "--target", "t", "--json", "--source", f"lib={upstream.path}")
    assert result.code == 0, result.out + result.err
    assert [p["state"] for p in result.json["upstreams"][0]["patches"]] == ["clean", "clean", "clean"]
    # the commit (trees only: the cache is partial), then the touched files' blobs at once; before, one lazy fetch
    # per file read (FILES + 1 here)
    assert commands(trace, "fetch") <= 3, trace.read_text()


def test_apply_writes_the_series_files_and_commits_in_one_process(cli, upstream, project, tmp_path, monkeypatch):
    wide_series(upstream, project)
    into = tmp_path / "build"
    trace = traced(monkeypatch, tmp_path, "apply")
    result = cli("apply", "--target", "t", "--into", str(into), "--source", f"lib={upstream.path}")
    assert result.code == 0, result.out + result.err
    # 2 * FILES files written by three patches and their three commits, all in one fast-import (before: a
    # hash-object per file, and a git commit, an index update and a checkout-index per patch)
    assert (commands(trace, "hash-object"), commands(trace, "commit")) == (0, 0), trace.read_text()
    assert commands(trace, "fast-import") == 1, trace.read_text()
    monkeypatch.delenv("GIT_TRACE")
    assert cli("verify", "--target", "t", "--into", str(into)).code == 0
    assert (into / "lib" / "src" / "m03.py").read_text() == "value = 3\n" * 4 + "again\n"


# who, when and what, as patches write them: crud around names and addresses, a quote, trailing blanks and runs of
# empty lines in the message, the three date forms commit_spec gives (a mail's, a DEP-3 day's, the fixed one)
SPECS = [
    ("Ann Example", "ann@example.org", "Thu, 1 Jan 2026 10:00:00 +0100", "fix add\n\nWhy: it breaks.\n"),
    (' "Bob, Jr." ', "<bob@example.org>.", "2026-01-31T00:00:00+00:00", "Subject  \n\n\n\nbody line \t\n\n"),
    ("Céline Ünïcode", "c@example.org", "1970-01-01T00:00:00+00:00", "\n\nlead\n \nand\ttabs\t\r\n"),
    ("O'Neil <x>", "o@example.org", "Mon, 17 Sep 2001 00:00:00 -0700", "one\nline\nno end"),
]


def test_the_series_made_at_once_is_the_commits_git_commit_makes(tmp_path):
    from support.gitrepos import git

    from patchmgr.io.git import GitRepo, identity_env
    from patchmgr.io.git_commits import SeriesCommit, commit_series

    work = tmp_path / "work"
    repo = GitRepo.init(work)
    (work / "a.txt").write_text("a\n")
    git(work, "add", "a.txt")
    git(work, "commit", "-q", "-m", "base")
    base = git(work, "rev-parse", "HEAD")
    git(work, "checkout", "-q", "-b", "patchmgr")
    by_commit = []
    with GitRepo(work) as one_by_one:
        for number, (name, address, date, message) in enumerate(SPECS):
            (work / "a.txt").write_text(f"a{number}\n")
            git(work, "add", "a.txt")
            env = identity_env(name, address, date)
            one_by_one.run(
                "commit", "--quiet", "--no-verify", "--allow-empty", "-F", "-", stdin=message.encode(), env=env
            )
            by_commit.append(git(work, "rev-parse", "HEAD"))
    git(work, "reset", "-q", "--hard", base)
    commits = [
        SeriesCommit(name, address, date, message, (("a.txt", "100644", f"a{number}\n".encode()),))
        for number, (name, address, date, message) in enumerate(SPECS)
    ]
    assert commit_series(repo, "patchmgr", base, commits) == by_commit
    assert (work / "a.txt").read_text() == f"a{len(SPECS) - 1}\n"  # the work tree and index follow the last
    assert git(work, "status", "--porcelain") == ""
    repo.close()


def test_a_file_read_again_at_other_commits_is_split_into_lines_once(upstream, monkeypatch):
    """The engine splits a file's bytes into lines once per content (``engine/place.file_lines``): the matrix of
    53 openssh patches x 12 columns split 274,000 files, most of them the same blobs again."""
    from patchmgr.engine import classify, place
    from patchmgr.model.patchfile import parse_patch
    from patchmgr.model.text import split_lines

    pin = upstream.head()
    mail = upstream.make_patch(pin, {"src/mod.py": upstream.read("src/mod.py").replace("line 7\n", "seven\n")}, "Fix")
    patch = parse_patch(mail, Path("fix.patch"), "lib", "fix")
    content = upstream.read("src/mod.py").encode()
    splits = []

    def counted(text: str) -> list[str]:
        splits.append(len(text))
        return split_lines(text)

    monkeypatch.setattr(classify, "split_lines", counted)
    monkeypatch.setattr(place, "split_lines", counted, raising=False)
    # the cache lives as long as the process: an earlier test of this worker may have split these bytes already
    monkeypatch.setattr(place, "_LINES", type(place._LINES)())
    monkeypatch.setattr(place, "_lines_cost", 0)

    class AtACommit:  # the same file at each of six commits: equal bytes, a new object each time (as git reads it)
        def read(self, path: str) -> bytes | None:
            return bytes(bytearray(content)) if path == "src/mod.py" else None

        def read_blob(self, sha: str) -> bytes | None:
            return None

    states = {classify.check_patch(patch, AtACommit()).state.value for _ in range(6)}
    assert states == {"clean"}
    assert splits.count(len(content)) == 1, splits


def test_matrix_columns_share_the_walk_where_the_files_did_not_change(cli, upstream, project, monkeypatch):
    """Upstream makes the patch's change in a commit of its own (more in it, so no patch-id match): from there on
    the reverse applies, and each column names that commit after a walk from the merge base. Columns whose files
    did not change since an earlier column take its walk's answer (``matrix_share.same_walk``): one walk, not one per
    column; every cell still reads as ``status --against`` that column says."""
    from patchmgr.history import matrix

    pin = upstream.head()
    text = upstream.read("src/mod.py")
    fixed = text.replace("line 7\n", "seven\n")
    project.add_patch("lib", "fix", upstream.make_patch(pin, {"src/mod.py": fixed}, "Fix seven"))
    project.manifest("t", {"lib": {"git": "https://example.invalid/lib.git", "commit": pin, "patches": ["fix"]}})
    carrier = upstream.commit({"src/mod.py": fixed.replace("line 30\n", "thirty\n")}, "Upstream fixes seven and more")
    from support.gitrepos import git

    for number in range(1, 4):
        upstream.commit({"README": f"release {number}\n"}, f"release {number}")
        git(upstream.path, "tag", f"v1.{number}.0")
    walks = []
    real = matrix.explain_upstream

    def counted(*args, **kwargs):
        walks.append(args[2].commit)
        return real(*args, **kwargs)

    monkeypatch.setattr(matrix, "explain_upstream", counted)
    result = cli("matrix", "--target", "t", "--refs", "v1.*", "--json", "--source", f"lib={upstream.path}")
    assert result.code in (0, 1), result.out + result.err
    (doc,) = result.json["upstreams"]
    cells = doc["patches"][0]["cells"]
    columns = [c["name"] for c in doc["columns"]]
    assert columns[1:4] == ["v1.1.0", "v1.2.0", "v1.3.0"]
    assert len(walks) == 1, walks  # before: one per column (3)
    monkeypatch.setattr(matrix, "explain_upstream", real)
    for name, cell in zip(columns[1:4], cells[1:4], strict=True):
        against = cli(
            "status", "--target", "t", "--json", "--source", f"lib={upstream.path}", "--against", f"lib={name}"
        )
        (status,) = against.json["upstreams"][0]["patches"]
        assert cell["state"] == status["state"] == "upstream", (name, cell, status)
        assert carrier[:12] in str(cell) and carrier[:12] in str(status)
