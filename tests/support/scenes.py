"""Projects on the standard upstream (tests/conftest.py's ``upstream``: ``src/mod.py`` of 40 numbered lines):
one patch or a series pinned in target ``t``, two upstreams, release tags that move a patch through its states."""

from __future__ import annotations

from support.commands import edit
from support.gitrepos import BASE_TEXT, UpstreamRepo, git, make_series

FIELDS = "Origin: vendor\nUpstream-Status: Pending"


def lines_with(changes: dict[int, str], text: str = BASE_TEXT, insert_top: int = 0) -> str:
    lines = text.splitlines(keepends=True)
    for number, value in changes.items():
        lines[number - 1] = value + "\n"
    return "".join([f"new top {i}\n" for i in range(insert_top)] + lines)


def setup(project, upstream, patches: dict[str, bytes], extra_spec=None):
    pin = upstream.head()
    for patch_id, data in patches.items():
        project.add_patch("lib", patch_id, data)
    spec = {"git": "https://example.invalid/lib.git", "commit": pin, "patches": list(patches)}
    spec.update(extra_spec or {})
    project.manifest("t", {"lib": spec})
    return pin


def pin_fixes(project, upstream, fixes: dict[str, dict[int, str]], extra_spec=None, fields=FIELDS):
    """Target ``t`` pinned at the upstream's head with one patch per entry of ``fixes``, in that order: the
    lines of src/mod.py it changes, its title the patch id capitalized, ``fields`` its DEP-3 fields. Returns
    the pin."""
    pin = upstream.head()
    patches = {
        patch_id: upstream.make_patch(pin, {"src/mod.py": lines_with(lines)}, patch_id.capitalize(), fields=fields)
        for patch_id, lines in fixes.items()
    }
    return setup(project, upstream, patches, extra_spec)


def series_project(project, upstream):
    """Three format-patch mails made as a real series on top of each other, like patches/*/*.patch."""
    pin = upstream.head()
    upstream.commit({"src/other.py": "a = 1\n"}, "add other")
    pin = upstream.head()
    mails = make_series(
        upstream,
        pin,
        [
            ({"src/mod.py": lines_with({5: "first"})}, "First fix"),
            ({"src/mod.py": lines_with({5: "first", 30: "second"})}, "Second fix"),
            ({"src/other.py": "a = 2\n"}, "Third fix"),
        ],
    )
    for patch_id, data in zip(("first", "second", "third"), mails, strict=True):
        project.add_patch("lib", patch_id, data)
    project.manifest(
        "t", {"lib": {"git": "https://example.invalid/lib.git", "commit": pin, "patches": ["first", "second", "third"]}}
    )
    return pin


def reworked_series(tmp_path, cli, project, upstream, subject: str):
    """``series_project`` checked out by ``edit`` into tmp_path/work and reworked there: the second patch's
    commit dropped, and a commit ``subject`` adding src/new.py. Returns the checkout."""
    series_project(project, upstream)
    into = tmp_path / "work"
    assert edit(cli, upstream, into).code == 0
    git(into, "rebase", "-q", "--onto", "HEAD~2", "HEAD~1")  # drop the second patch's commit
    (into / "src/new.py").write_text("print('new')\n")
    git(into, "add", "src/new.py")
    git(into, "commit", "-q", "-m", f"{subject}\n\nUpstream-Status: Pending")
    return into


def two_upstreams(tmp_path, project, second_conflicts=False):
    lib = UpstreamRepo(tmp_path / "lib")
    pin_lib = lib.commit({"src/mod.py": BASE_TEXT}, "lib initial")
    tool = UpstreamRepo(tmp_path / "tool")
    pin_tool = tool.commit({"tool.py": BASE_TEXT}, "tool initial")
    project.add_patch("lib", "one", lib.make_patch(pin_lib, {"src/mod.py": lines_with({5: "one"})}, "Lib one"))
    project.add_patch("lib", "two", lib.make_patch(pin_lib, {"src/mod.py": lines_with({30: "two"})}, "Lib two"))
    tool_patch = tool.make_patch(pin_tool, {"tool.py": lines_with({10: "tool fix"})}, "Tool fix")
    if second_conflicts:
        tool_patch = tool_patch.replace(b"-line 10\n", b"-line 10 is not there\n")
    project.add_patch("tool", "fix", tool_patch)
    project.manifest(
        "t",
        {
            "lib": {"git": "https://example.invalid/lib.git", "commit": pin_lib, "patches": ["one", "two"]},
            "tool": {"git": "https://example.invalid/tool.git", "commit": pin_tool, "patches": ["fix"]},
        },
    )
    sources = ["--source", f"lib={lib.path}", "--source", f"tool={tool.path}"]
    return lib, tool, sources


def tagged_upstream(project, upstream, git_url: str | None = None):
    """fix: clean at v1.0.0, offset at v1.1.0, conflict at v1.2.0, upstream at v2.0.0; other: clean throughout.
    ``git_url``: the manifest's ``git`` (its web pages name the links of ``matrix --html``).

    Returns the pin and the commits that changed ``fix``: (offset, conflict, upstream)."""
    pin = upstream.head()
    fix = upstream.make_patch(pin, {"src/mod.py": lines_with({20: "fixed 20"})}, "Fix line 20")
    other = upstream.make_patch(pin, {"README": "upstream, patched\n"}, "Patch the readme")
    setup(project, upstream, {"fix": fix, "other": other}, {"git": git_url} if git_url else None)
    git(upstream.path, "tag", "v0.9.0")  # the pin's own release
    upstream.commit({"docs.txt": "one\n"}, "docs: unrelated")
    git(upstream.path, "tag", "v1.0.0")
    moved = upstream.commit({"src/mod.py": lines_with({}, insert_top=3)}, "add a header (#11)")
    git(upstream.path, "tag", "v1.1.0")
    broke = upstream.commit(
        {"src/mod.py": lines_with({20: "rewritten 20"}, insert_top=3)}, "refactor: rewrite line 20 (#1234)"
    )
    git(upstream.path, "tag", "-a", "-m", "release 1.2.0", "v1.2.0")  # an annotated tag: peeled to its commit
    absorbed = upstream.commit({"src/mod.py": lines_with({20: "fixed 20"}, insert_top=3)}, "take the fix (#77)")
    git(upstream.path, "tag", "v2.0.0")
    upstream.commit({"docs.txt": "two\n"}, "docs: more")
    git(upstream.path, "tag", "v2.1.0rc1")  # a pre-release: not a column unless --refs asks for it
    upstream.commit({"docs.txt": "three\n"}, "docs: tip")
    return pin, (moved, broke, absorbed)


def guarded_fix(project, upstream, line: int, text: str, subject: str, guard: str, patch_id: str = "fix") -> str:
    """Target ``t`` pinned at the upstream's head with one patch: line ``line`` of src/mod.py made ``text``, and
    ``Guard: {guard}`` among its fields. Returns the pin."""
    pin = upstream.head()
    patch = upstream.make_patch(
        pin, {"src/mod.py": lines_with({line: text})}, subject, fields=f"{FIELDS}\nGuard: {guard}"
    )
    return setup(project, upstream, {patch_id: patch})
