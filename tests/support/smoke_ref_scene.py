"""A tiny project for ``--smoke`` at a ref: an upstream whose ``add`` subtracts and whose ``mul`` adds, a patch
that fixes both (its smoke tests: one per function), a patch that names no Smoke-Test, and a tag ``v2`` whose
code the scene chooses: the bug still there, fixed upstream in other words, fixed in part, or broken anew; and the
smoke tests, those that detect the bug unless the scene is given others."""

from __future__ import annotations

from pathlib import Path

from support.gitrepos import UpstreamRepo, git
from support.smoke_scene import FIELDS, LOAD

FILLER = "".join(f"# filler line {n}\n" for n in range(8))
BUGGY = f"def add(a, b):\n    return a - b\n\n{FILLER}\ndef mul(a, b):\n    return a + b\n\n{FILLER}"
FIXED = f"def add(a, b):\n    return a + b\n\n{FILLER}\ndef mul(a, b):\n    return a * b\n\n{FILLER}"
TESTS = (
    LOAD
    + """

def test_add():
    assert load_calc().add(2, 3) == 5


def test_mul():
    assert load_calc().mul(2, 3) == 6
"""
)
TEST_FILE = "tests/smoke/lib/test_calc.py"
# a test that passes whether add subtracts or adds: it never detected the bug, at the pin or anywhere
NEVER_DETECTS = LOAD + "\n\ndef test_add():\n    assert load_calc().add(2, 0) == 2\n"
# a test of something only v2 has (its README), not of the patch's fix: it fails at the pin with the patch as
# without it, and passes at v2 either way, though v2 still has the bug
FAILS_WITH_THE_PATCH_TOO = LOAD + (
    '\n\ndef test_add():\n    readme = Path(os.environ["PATCHMGR_SMOKE_ROOT"]) / "README"\n'
    '    assert readme.read_text() == "lib 2\\n"\n'
)

# what v2 holds in lib/calc.py, per verdict the fix-calc patch should get there
AT_V2 = {
    "proven": BUGGY,  # the bug is still there: the tests fail without the patch, pass with it
    # fixed upstream in other words: the patch conflicts, every test passes without it
    "upstream": BUGGY.replace("return a - b", "return b + a").replace("return a + b", "return b * a"),
    # add fixed upstream below the patch's hunks (the patch still applies): test_add passes without it
    "partly": BUGGY + "\ndef add(a, b):\n    return b + a\n",
    # upstream breaks mul anew below the patch's hunks: test_mul fails with the patch
    "failed": BUGGY + "\ndef mul(a, b):\n    return 0\n",
}


class RefScene:
    def __init__(self, tmp_path: Path, project, cli, v2: str, tests: str = TESTS) -> None:
        self.project, self.cli = project, cli
        self.upstream = UpstreamRepo(tmp_path / "lib-upstream")
        self.pin = self.upstream.commit({"lib/calc.py": BUGGY, "lib/other.py": "X = 1\n", "README": "lib\n"}, "v1")
        fix = self.upstream.make_patch(
            self.pin,
            {"lib/calc.py": FIXED},
            "Fix add and mul",
            body="Why: add subtracted and mul added, so every result of our runs came out wrong.",
            fields=f"{FIELDS}\nSmoke-Test: {TEST_FILE}",
        )
        project.add_patch("lib", "fix-calc", fix)
        other = self.upstream.make_patch(
            self.pin, {"lib/other.py": "X = 2\n"}, "Set X to 2", body="Why: our runs need X at 2.", fields=FIELDS
        )
        project.add_patch("lib", "no-test", other)
        project.manifest(
            "t",
            {"lib": {"git": "https://example.invalid/lib.git", "commit": self.pin, "patches": ["fix-calc", "no-test"]}},
        )
        path = project.root / TEST_FILE
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(tests)
        self.v2 = self.upstream.commit({"lib/calc.py": AT_V2[v2], "README": "lib 2\n"}, "v2")
        git(self.upstream.path, "tag", "v2", self.v2)

    def status(self, *args: str):
        return self.cli(
            "status", "--target", "t", "--against", "lib=v2", "--source", f"lib={self.upstream.path}", "--smoke", *args
        )

    def bump(self, *args: str):
        return self.cli(
            "bump", "--target", "t", "-u", "lib", "--to", "v2", "--source", f"lib={self.upstream.path}", *args
        )


def smoke_verdicts(doc: dict) -> dict[str, tuple[str, str]]:
    return {p["patch"]: (p["verdict"], p["reason"]) for p in doc["smoke"]["patches"]}
