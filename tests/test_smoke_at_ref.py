"""``--smoke`` at a ref (status --against, bump): each patch's smoke tests run in a scratch checkout at the ref, with
and without it, on real git repositories through the real CLI: proven, upstream (by smoke), partly upstream,
failed, and not proven for a patch that names no Smoke-Test."""

from __future__ import annotations

import pytest
from support.commands import edit_onto, export
from support.junit_schema import JUNIT_XSD
from support.smoke_ref_scene import FAILS_WITH_THE_PATCH_TOO, NEVER_DETECTS, TEST_FILE, RefScene, smoke_verdicts
from support.snapshot import snapshot


@pytest.fixture
def scene(tmp_path, project, cli, request):
    return RefScene(tmp_path, project, cli, request.param)


@pytest.fixture
def never_detects(tmp_path, project, cli):
    """v2 still has the bug (the patch applies there), and the patch's test passes whether add is fixed or not."""
    return RefScene(tmp_path, project, cli, "proven", tests=NEVER_DETECTS)


@pytest.mark.parametrize("scene", ["proven"], indirect=True)
def test_the_bug_still_there_at_the_ref_proves_the_patch(scene):
    result = scene.status("--json")
    assert result.code == 0, result.out + result.err
    found = smoke_verdicts(result.json)
    assert found["fix-calc"] == ("proven", "2 tests fail at v2 without the patch and pass with it")
    assert found["no-test"] == ("not-proven", "the patch names no Smoke-Test")
    assert result.json["smoke"]["summary"] == {
        "proven": 1,
        "upstream-by-smoke": 0,
        "partly-upstream": 0,
        "failed": 0,
        "not-proven": 1,
    }
    # off a terminal (a log), each run's progress on stderr, saying which run it is
    assert "smoke: with the patches: lib/fix-calc cpu: started" in result.err
    assert "smoke: without the patches: lib/fix-calc cpu: failed in" in result.err
    notes = result.json["smoke"]["notes"]
    assert any("lib: smoke at v2" in note and "2 of 2 patches applied" in note for note in notes)


@pytest.mark.parametrize("scene", ["upstream"], indirect=True)
def test_a_fix_upstream_in_other_words_is_upstream_by_smoke_naming_its_tests(scene):
    result = scene.status("--json")
    # the patch conflicts at v2 (status exits 1 for that), but its tests say the fix is there
    assert result.code == 1, result.out + result.err
    verdict, reason = smoke_verdicts(result.json)["fix-calc"]
    assert verdict == "upstream-by-smoke"
    assert reason == "every test passes at v2 without the patch, so the fix is there: test_add, test_mul"
    patch = next(p for p in result.json["smoke"]["patches"] if p["patch"] == "fix-calc")
    assert patch["passing_unpatched"] == ["test_add", "test_mul"] and patch["label"] == "upstream (by smoke)"
    text = scene.status()
    assert "upstream (by smoke): lib/fix-calc: every test passes at v2 without the patch" in text.out
    # off a terminal (a log) the status table is laid out for it, as status without --smoke writes it
    assert text.out.startswith("target t\nupstream  patch     state     detail\n") and "┃" not in text.out


@pytest.mark.parametrize("scene", ["partly"], indirect=True)
def test_a_fix_upstream_in_part_is_partly_upstream_naming_the_tests_that_pass(scene):
    result = scene.status("--json")
    assert result.code == 0, result.out + result.err  # the patch applies clean there; partly upstream is no failure
    verdict, reason = smoke_verdicts(result.json)["fix-calc"]
    assert verdict == "partly-upstream"
    assert reason.startswith("1 tests pass at v2 without the patch (test_add); 1 fail without it: that part")
    assert "review the patch" in reason


@pytest.mark.parametrize("scene", ["failed"], indirect=True)
def test_a_test_failing_with_the_patch_at_the_ref_is_failed_and_exits_1(scene):
    result = scene.status("--json")
    assert result.code == 1, result.out + result.err
    verdict, reason = smoke_verdicts(result.json)["fix-calc"]
    assert verdict == "failed" and reason.startswith("test_mul fails with the patch at v2:")
    assert result.json["upstreams"][0]["patches"][0]["state"] == "clean"  # status alone calls it clean


@pytest.mark.parametrize("scene", ["partly"], indirect=True)
def test_every_report_format_carries_the_smoke_verdicts(scene):
    junit = scene.status("--format", "junit")
    JUNIT_XSD.validate(junit.out)
    assert 'name="t.lib.smoke"' in junit.out and "partly upstream: 1 tests pass at v2 without the patch" in junit.out
    assert '<skipped message="not proven: the patch names no Smoke-Test"' in junit.out
    markdown = scene.status("--format", "markdown")
    assert "| lib | fix-calc | v2 | partly upstream | 1 tests pass at v2 without the patch (test\\_add)" in markdown.out
    github = scene.status("--format", "github")
    assert "::warning file=patches/lib/fix-calc.patch,line=1,title=patchmgr%3A lib/fix-calc partly upstream" in (
        github.out
    )


@pytest.mark.parametrize("scene", ["proven"], indirect=True)
def test_smoke_needs_a_ref_and_changes_nothing(scene):
    before = snapshot(scene.project.root)
    refused = scene.cli("status", "--target", "t", "--smoke", "--source", f"lib={scene.upstream.path}")
    assert refused.code == 2 and "--smoke runs the smoke tests at the --against or --newest-release refs" in refused.err
    assert scene.status().code == 0
    assert snapshot(scene.project.root) == before


@pytest.mark.parametrize("scene", ["upstream"], indirect=True)
def test_bump_smoke_says_so_before_the_pin_moves_and_drops_only_when_asked(scene):
    before = snapshot(scene.project.root)
    said = scene.bump("--smoke")
    assert said.code == 1, said.out + said.err  # the patch conflicts at v2: the bump refuses, as without --smoke
    assert "upstream (by smoke): lib/fix-calc: every test passes at v2 without the patch" in said.out
    assert (
        "upstream by smoke at v2: fix-calc (every smoke test passes there without it, and failed without it and passed "
        in said.out
    )
    assert "--drop-upstream-by-smoke" in said.out and "refused: lib stays at" in said.out
    assert snapshot(scene.project.root) == before

    planned = scene.bump("--smoke", "--drop-upstream-by-smoke", "--dry-run")
    assert planned.code == 0, planned.out + planned.err
    # the patch file and its smoke test leave together, both named
    assert "  would remove patches/lib/fix-calc.patch and its smoke test tests/smoke/lib/test_calc.py\n" in planned.out
    assert snapshot(scene.project.root) == before

    dropped = scene.bump("--smoke", "--drop-upstream-by-smoke", "--json")
    assert dropped.code == 0, dropped.out + dropped.err
    assert dropped.json["action"] == "bumped"
    assert dropped.json["dropped"] == ["fix-calc"] and list(dropped.json["dropped_by_smoke"]) == ["fix-calc"]
    assert dropped.json["tests_removed"] == {"fix-calc": [TEST_FILE]}
    manifest = (scene.project.root / "manifests/t.toml").read_text()
    assert f'commit = "{scene.v2}"' in manifest and '"fix-calc"' not in manifest
    assert "# dropped fix-calc at v2: upstream by smoke" in manifest  # the evidence, named where the series changed
    assert not (scene.project.root / "patches/lib/fix-calc.patch").exists()
    assert not (scene.project.root / TEST_FILE).exists()
    assert (scene.project.root / "tests/smoke/lib").is_dir()  # the folder, and whatever else it holds, stay


@pytest.mark.parametrize("scene", ["upstream"], indirect=True)
def test_a_smoke_test_another_patch_names_stays_when_the_patch_is_dropped(scene):
    # another patch file of lib (listed by no target here) names the same test file: it stays
    patches = scene.project.root / "patches/lib"
    (patches / "calc-too.patch").write_bytes((patches / "fix-calc.patch").read_bytes())
    dropped = scene.bump("--smoke", "--drop-upstream-by-smoke")
    assert dropped.code == 0, dropped.out + dropped.err
    assert "  removed patches/lib/fix-calc.patch\n" in dropped.out, dropped.out
    assert not (patches / "fix-calc.patch").exists() and (scene.project.root / TEST_FILE).is_file()


@pytest.mark.parametrize("scene", ["upstream"], indirect=True)
def test_drop_upstream_by_smoke_needs_smoke(scene):
    refused = scene.bump("--drop-upstream-by-smoke")
    assert refused.code == 2 and "--drop-upstream-by-smoke goes with --smoke" in refused.err


@pytest.mark.parametrize("scene", ["partly"], indirect=True)
def test_export_smoke_reports_the_edit_checkout_before_it_writes(scene, tmp_path, monkeypatch):
    into = tmp_path / "work"
    moved = edit_onto(scene.cli, scene.upstream, into, "v2")
    assert moved.code == 0, moved.out + moved.err
    # test_add passes in the checkout without its patch: the pin (read through the configured source) says
    # whether it detects the bug at all
    monkeypatch.setenv("PATCHMGR_SOURCES", f"lib={scene.upstream.path}")
    exported = export(scene.cli, into, "--smoke", "--json")
    assert exported.code == 0, exported.out + exported.err
    verdict, reason = smoke_verdicts(exported.json)["fix-calc"]
    assert verdict == "partly-upstream" and "(test_add)" in reason
    assert exported.json["smoke"]["at_pin"]["summary"] == {"proven": 1, "failed": 0, "not-proven": 0}
    assert f'commit = "{scene.v2}"' in (scene.project.root / "manifests/t.toml").read_text()


@pytest.mark.parametrize("scene", ["partly"], indirect=True)
def test_export_smoke_where_the_pin_cannot_be_had_is_not_proven_by_a_test_passing_without_the_patch(scene, tmp_path):
    into = tmp_path / "work"
    assert edit_onto(scene.cli, scene.upstream, into, "v2").code == 0
    exported = export(scene.cli, into, "--smoke", "--json")  # no source of lib but its unreachable URL
    assert exported.code == 0, exported.out + exported.err  # not proven is no failure: the export goes on
    verdict, reason = smoke_verdicts(exported.json)["fix-calc"]
    assert verdict == "not-proven", reason
    assert reason.startswith(f"its tests did not run at the pin: cannot check out lib at {scene.pin[:12]}"), reason


@pytest.mark.parametrize("scene", ["failed"], indirect=True)
def test_export_smoke_refuses_a_series_failing_its_tests_and_writes_nothing(scene, tmp_path):
    into = tmp_path / "work"
    assert edit_onto(scene.cli, scene.upstream, into, "v2").code == 0
    before = snapshot(scene.project.root)
    refused = export(scene.cli, into, "--smoke")
    assert refused.code == 1, refused.out + refused.err
    assert "failed: lib/fix-calc: test_mul fails with the patch at v2" in refused.out
    assert "refused: fix-calc fails its smoke tests in the edit checkout; nothing was written" in refused.out
    assert snapshot(scene.project.root) == before


@pytest.mark.parametrize("scene", ["upstream"], indirect=True)
def test_matrix_smoke_runs_at_the_newest_release_in_json_text_and_html(scene, tmp_path):
    page = tmp_path / "matrix.html"
    result = scene.cli(
        "matrix", "--target", "t", "--source", f"lib={scene.upstream.path}", "--smoke", "--html", str(page), "--json"
    )
    verdict, reason = smoke_verdicts(result.json)["fix-calc"]
    assert verdict == "upstream-by-smoke" and reason.startswith("every test passes at v2 without the patch")
    html = page.read_text()
    assert '<section class="smoke">' in html and "upstream (by smoke)" in html


@pytest.mark.parametrize("scene", ["proven"], indirect=True)
def test_status_newest_release_smoke_runs_at_that_release(scene):
    result = scene.cli(
        "status", "--target", "t", "--newest-release", "--smoke", "--source", f"lib={scene.upstream.path}", "--json"
    )
    assert result.code == 0, result.out + result.err
    patch = next(p for p in result.json["smoke"]["patches"] if p["patch"] == "fix-calc")
    assert (patch["ref"], patch["verdict"]) == ("v2", "proven")


def test_a_test_that_never_detected_the_bug_is_no_evidence_that_upstream_fixed_it(never_detects):
    scene = never_detects
    result = scene.status("--json")
    assert result.code == 0, result.out + result.err
    verdict, reason = smoke_verdicts(result.json)["fix-calc"]
    # it passes at v2 without the patch, and passed without it at the pin too: v2 still has the bug
    assert (verdict, reason) == (
        "not-proven",
        "its tests do not detect the bug at the pin: test_add passes there without the patch",
    )
    # the pin's own run, as --unpatched gives it, of the patch that needed it alone (no-test has no test to run)
    assert [(p["patch"], p["verdict"]) for p in result.json["smoke"]["at_pin"]["patches"]] == [("fix-calc", "failed")]
    assert "smoke: without the patches at the pin: lib/fix-calc cpu: passed in" in result.err
    assert any(
        "its smoke tests ran at the pin" in note and "with and without the patches" in note
        for note in result.json["smoke"]["notes"]
    )


def test_bump_does_not_drop_a_patch_whose_test_never_detected_its_bug(never_detects):
    scene = never_detects
    bumped = scene.bump("--smoke", "--drop-upstream-by-smoke", "--json")
    assert bumped.code == 0, bumped.out + bumped.err  # the patch applies at v2: the pin moves, the patch stays
    assert bumped.json["dropped"] == [] and bumped.json["dropped_by_smoke"] == {}
    assert '"fix-calc"' in (scene.project.root / "manifests/t.toml").read_text()
    assert (scene.project.root / "patches/lib/fix-calc.patch").is_file() and (scene.project.root / TEST_FILE).is_file()


def test_at_the_pin_itself_the_run_without_the_patches_is_the_pins(never_detects):
    scene = never_detects
    result = scene.cli(
        "status",
        "--target",
        "t",
        "--against",
        f"lib={scene.pin}",
        "--source",
        f"lib={scene.upstream.path}",
        "--smoke",
        "--json",
    )
    verdict, reason = smoke_verdicts(result.json)["fix-calc"]
    assert verdict == "not-proven" and reason.startswith("its tests do not detect the bug at the pin: test_add"), reason
    assert result.json["smoke"]["at_pin"] is None and "at the pin:" not in result.err  # no third run


def test_matrix_smoke_takes_no_pass_of_a_test_that_never_detected_the_bug_as_evidence(never_detects):
    scene = never_detects
    result = scene.cli("matrix", "--target", "t", "--source", f"lib={scene.upstream.path}", "--smoke", "--json")
    verdict, reason = smoke_verdicts(result.json)["fix-calc"]
    assert (verdict, reason) == (
        "not-proven",
        "its tests do not detect the bug at the pin: test_add passes there without the patch",
    )


def test_a_test_that_fails_with_the_patch_at_the_pin_too_is_no_evidence_and_bump_keeps_the_patch(
    tmp_path, project, cli
):
    # v2 still has the bug; the patch's test checks what only v2 has, so it fails at the pin with the patch as without
    # it, and passes at v2 either way: it never showed that it detects the patch's bug, whose fix v2 does not have
    scene = RefScene(tmp_path, project, cli, "proven", tests=FAILS_WITH_THE_PATCH_TOO)
    result = scene.status("--json")
    verdict, reason = smoke_verdicts(result.json)["fix-calc"]
    assert (verdict, reason.split(" there too:")[0]) == (
        "not-proven",
        "its tests do not detect the bug at the pin: test_add fails with the patch",
    ), reason
    at_pin_patched = result.json["smoke"]["at_pin_patched"]
    assert [(p["patch"], p["verdict"]) for p in at_pin_patched["patches"]] == [("fix-calc", "failed")]
    assert "smoke: with the patches at the pin: lib/fix-calc cpu: failed in" in result.err

    bumped = scene.bump("--smoke", "--drop-upstream-by-smoke", "--json")
    assert bumped.code == 0, bumped.out + bumped.err  # the patch applies at v2: the pin moves, the patch stays
    assert bumped.json["dropped"] == [] and bumped.json["dropped_by_smoke"] == {}
    assert (scene.project.root / "patches/lib/fix-calc.patch").is_file() and (scene.project.root / TEST_FILE).is_file()
