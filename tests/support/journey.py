"""The bump journey's upstream: v0.4.2 (the pin) with three patches, and v0.5.0 where one patch conflicts,
one patch's change was committed upstream, and one applies as it is."""

from __future__ import annotations

from support.gitrepos import git, make_series
from support.scenes import lines_with

ATTN_V1 = "def attention(q, k, mask):\n    mask = mask\n    return q @ k\n"
ATTN_FIXED = "def attention(q, k, mask):\n    mask = mask.bool()\n    return q @ k\n"
OTHER = "".join(f"other {i}\n" for i in range(1, 21))
RESOLVED = lines_with({5: "line 5 rewritten upstream, and patched"})
NEW_CALL = "torch.cuda.nvtx.range_push()"  # v0.5.0 adds it on line 30 (the whole journey only)
GUARD = "Guard: absent /range_push/ in src/mod.py"
FIELDS = "Origin: vendor\nUpstream-Status: Pending\nLast-Update: 2025-01-01"
MANIFEST = """# the test target
[target]
name = "t"
description = "test target"

[upstreams.lib]
git = "https://example.invalid/lib.git"
commit = "{pin}"  # v0.4.2
version = "0.4.2"
# keep this comment
patches = ["nvtx-ranges", "thd-bool-attention-mask", "other-fix"]
"""


def journey_project(project, upstream, new_call=False):
    """The pin v0.4.2 with three patches; v0.5.0 carries one of them and rewrote the line another one patches
    (and, with ``new_call``, added a call that patch's guard forbids)."""
    upstream.commit({"src/attn.py": ATTN_V1, "src/other.py": OTHER}, "add attention")
    git(upstream.path, "tag", "v0.4.2")
    pin = upstream.head()
    mails = make_series(
        upstream,
        pin,
        [
            ({"src/mod.py": lines_with({5: "line 5 patched"})}, "Use our ranges on line 5"),
            ({"src/attn.py": ATTN_FIXED}, "Use a bool attention mask"),
            ({"src/other.py": OTHER.replace("other 10\n", "other 10 fixed\n")}, "Fix other 10"),
        ],
        fields=FIELDS,
    )
    mails[0] = mails[0].replace(b"Last-Update: 2025-01-01\n", f"Last-Update: 2025-01-01\n{GUARD}\n".encode(), 1)
    for patch_id, data in zip(("nvtx-ranges", "thd-bool-attention-mask", "other-fix"), mails, strict=True):
        project.add_patch("lib", patch_id, data)
    (project.root / "manifests" / "t.toml").write_text(MANIFEST.format(pin=pin))
    upstream.commit({"src/mod.py": lines_with({5: "line 5 rewritten upstream"})}, "Rewrite line 5")
    if new_call:
        upstream.commit(
            {"src/mod.py": lines_with({5: "line 5 rewritten upstream", 30: NEW_CALL})}, "Add ranges to forward"
        )
    carrier = upstream.commit({"src/attn.py": ATTN_FIXED}, "Use a bool mask for THD attention (#123)")
    upstream.commit({"README": "upstream v0.5.0\n"}, "Release 0.5.0")
    git(upstream.path, "tag", "v0.5.0")
    return pin, upstream.head(), carrier


def resolve_the_stop(into) -> None:
    """Resolve the stop at nvtx-ranges (v0.5.0 rewrote its line) as a person does: src/mod.py written and added."""
    (into / "src/mod.py").write_text(RESOLVED)
    git(into, "add", "src/mod.py")
