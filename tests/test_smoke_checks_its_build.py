"""smoke tests only what apply wrote: every mode checks the build against its ledger first, as verify does.

A patch changed since apply, a patch added to or removed from the series, a moved pin or a file of the build
edited by hand: the build no longer holds the patches smoke would name, so ``smoke``, ``--unpatched``, ``--both``
(and ``--into DIR --python``, and ``--python`` alone over an environment ``apply --python`` patched) refuse it,
exit 1, with verify's own words for what differs and the apply that rebuilds it. Never ``proven``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from support.bad_inputs import assert_one_error
from support.reliability import site_packages
from support.smoke_scene import DETECTS, FIELDS, FIXED, Scene
from support.tinydist import core_with

pytestmark = pytest.mark.usefixtures("no_package_index")  # tinydist is made up: never looked up on an index

REFUSED = "differs from what `patchmgr apply` wrote for target t, so smoke would not test these patches"
MODES = {
    "patched": (),
    "unpatched": ("--unpatched",),
    "both": ("--both",),
    "json": ("--json",),
    "into-with-python": ("--python", sys.executable),
}


@pytest.fixture
def scene(tmp_path, project, cli) -> Scene:
    return Scene(tmp_path, project, cli)  # smoke runs with --device cpu: no device probe imports torch


def edit_the_patch(scene: Scene) -> str:
    path = scene.project.root / "patches/lib/fix-add.patch"
    path.write_bytes(path.read_bytes().replace(b"Fix add", b"Fix add (reworded)"))
    return "lib: patch fix-add changed since apply"


def edit_the_build(scene: Scene) -> str:
    with open(scene.into / "lib" / "lib/calc.py", "a") as handle:
        handle.write("# tried by hand\n")
    return "lib: lib/calc.py was changed after apply"


def move_the_pin(scene: Scene) -> str:
    applied = scene.pin
    scene.pin = scene.upstream.commit({"README": "lib, next release\n"}, "next")
    scene.manifest()
    return f"lib: applied for pin {applied[:12]}, but the pin is now {scene.pin[:12]}"


def add_a_patch(scene: Scene) -> str:
    scene.patch(smoke_tests=None, patch_id="readme", files={"README": "lib, patched\n"})
    scene.manifest(("fix-add", "readme"))
    return "lib: patch readme was added to the series since apply"


def remove_a_patch(scene: Scene) -> str:
    scene.manifest(("readme",))
    return "lib: patch fix-add was removed from the series since apply"


def reorder_the_series(scene: Scene) -> str:
    scene.manifest(("readme", "fix-add"))
    return "lib: the series was reordered since apply (now readme, fix-add)"


CHANGES = {
    "patch-edited": edit_the_patch,
    "file-edited-by-hand": edit_the_build,
    "pin-moved": move_the_pin,
    "patch-added": add_a_patch,
    "patch-removed": remove_a_patch,
    "series-reordered": reorder_the_series,
}


def applied(scene: Scene, change: str) -> Scene:
    """``fix-add`` (and, to be removed or moved, ``readme``) applied into the build, whose tests pass: a proven
    patch."""
    two = change in ("patch-removed", "series-reordered")
    scene.patch()
    if two:
        scene.patch(smoke_tests=None, patch_id="readme", files={"README": "lib, patched\n"})
    scene.smoke_test(DETECTS)
    scene.manifest(("fix-add", "readme") if two else ("fix-add",))
    scene.apply()
    return scene


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_every_smoke_mode_refuses_a_build_that_differs_from_its_ledger_in_verifys_words(scene, change):
    applied(scene, change)
    differs = CHANGES[change](scene)
    hint = f"hint: apply it again: `patchmgr apply --target t --into {scene.into.resolve()}`"
    for mode, args in MODES.items():
        result = scene.smoke(*args)
        assert_one_error(result, 1, str(scene.into.resolve()), REFUSED, differs)
        assert result.err.splitlines()[1] == hint, (mode, result.err)
    verify = scene.cli("verify", "--target", "t", "--into", str(scene.into))
    assert verify.code == 1 and f"differs: {differs}" in verify.out.splitlines(), verify.out
    assert verify.out.splitlines()[-1] == hint  # verify's next step is the one smoke gives


def test_applied_again_the_build_is_proven_again(scene):
    applied(scene, "patch-edited")
    edit_the_patch(scene)
    assert scene.smoke().code == 1
    scene.apply()
    result = scene.smoke()
    assert result.code == 0 and "1 proven, 0 failed, 0 not proven" in result.out, result.out + result.err


def test_a_hand_made_fix_in_the_build_proves_nothing(scene):
    """The patch does not fix add; someone fixes the build by hand, and the tests pass there: still refused."""
    scene.patch(files={"lib/calc.py": "def add(a, b):\n    return a - b  # still wrong\n"})
    scene.smoke_test(DETECTS)
    scene.manifest()
    scene.apply()
    assert scene.smoke().code == 1  # the patch's tests fail with it: failed
    (scene.into / "lib" / "lib/calc.py").write_text(FIXED)
    for args in MODES.values():
        assert_one_error(scene.smoke(*args), 1, REFUSED, "lib: lib/calc.py was changed after apply")


def test_a_ledger_of_another_target_is_refused(scene):
    applied(scene, "patch-edited")
    manifest = scene.project.root / "manifests" / "t.toml"
    (scene.project.root / "manifests" / "other.toml").write_text(manifest.read_text().replace('"t"', '"other"'))
    result = scene.cli("smoke", "--target", "other", "--into", str(scene.into), "--device", "cpu")
    assert_one_error(result, 1, f"{scene.into.resolve()} holds target t, not other")
    assert "--target other" in result.err.splitlines()[1]


# -- --python: an environment apply --python patched ---------------------------------------------


def test_smoke_python_refuses_an_environment_that_differs_from_its_ledger(tiny, cli):
    tiny.series(({"tinydist/core.py": core_with(500)}, "Core five"))
    assert cli("apply", *tiny.src()).code == 0
    python = str(tiny.venv / "bin" / "python")
    hint = f"hint: apply it again: `patchmgr apply --target t --python {python}`"
    patch = tiny.project.root / "patches/tinydist/fix-1.patch"
    data = patch.read_bytes()
    patch.write_bytes(data.replace(b"Core five", b"Core five (reworded)"))
    for args in ((), ("--unpatched",), ("--both",)):
        result = cli("smoke", *tiny.args("--device", "cpu", *args))
        assert_one_error(result, 1, f"{python}'s environment {REFUSED}", "tinydist: patch fix-1 changed since apply")
        assert result.err.splitlines()[1] == hint
    verify = cli("verify", *tiny.args())
    assert verify.code == 1 and verify.out.splitlines()[-1] == hint, verify.out
    patch.write_bytes(data)
    installed = next(tiny.venv.glob("lib/python*/site-packages/tinydist/core.py"))
    installed.write_text(core_with(5))  # the original put back by hand
    result = cli("smoke", *tiny.args("--device", "cpu"))
    assert_one_error(result, 1, REFUSED, f"tinydist: {installed} differs from what apply wrote")


def test_smoke_python_of_an_environment_apply_never_patched_proves_nothing(tiny, cli):
    """Its installed code is the upstream's own: tested as the patched code, the patch would fail, and its tests
    failing there would prove it by --unpatched. Neither: not proven, it was never applied there."""
    test = "tests/smoke/tinydist/test_core.py"
    tiny.series(({"tinydist/core.py": core_with(500)}, "Core five"), fields=f"{FIELDS}\nSmoke-Test: {test}")
    (tiny.project.root / test).parent.mkdir(parents=True)
    (tiny.project.root / test).write_text(
        "import os\nfrom pathlib import Path\n\n\ndef test_core():\n"
        "    core = (Path(os.environ['PATCHMGR_SMOKE_ROOT']) / 'tinydist' / 'core.py').read_text()\n"
        "    assert 'VALUE_5 = 500' in core\n"
    )
    # the environment borrows this interpreter's pytest, so the tests could run there
    (site_packages(tiny.venv) / "borrowed-pytest.pth").write_text(str(Path(pytest.__file__).parent.parent) + "\n")
    python = str(tiny.venv / "bin" / "python")
    for args in ((), ("--unpatched",), ("--both",)):
        result = cli("smoke", *tiny.args("--device", "cpu", *args))
        assert result.code == 1, result.out + result.err
        assert f"tinydist is not applied in {python}'s environment" in result.out, result.out
        assert "1 not proven" in result.out and "1 proven" not in result.out, result.out
