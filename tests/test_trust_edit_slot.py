"""Issue 24, items 1, 2, 3, 5 (a failed move changes nothing) and 14: the edit checkout goes through the one
checkout slot, its record is typed and checked, and no move loses work or drops a patch unasked.

Every test runs the command as a user would (the ``cli`` fixture) on the synthetic journey of
test_bump_journey: v0.4.2 pinned with three patches, v0.5.0 where the first one conflicts.
"""

from __future__ import annotations

import json
import os

import pytest
from support.commands import edit, edit_args, edit_onto, export, gitenv, resume
from support.gitrepos import git
from support.journey import RESOLVED, journey_project, resolve_the_stop
from support.snapshot import snapshot


def tree_bytes(folder):
    """Every entry under ``folder`` (and the folder itself), byte for byte: kind, mode, content or link target."""
    if not os.path.lexists(folder):
        return None
    found = {}
    for root, dirs, files in os.walk(folder):
        for name in dirs + files:
            path = os.path.join(root, name)
            rel = os.path.relpath(path, folder)
            info = os.lstat(path)
            if os.path.islink(path):
                found[rel] = ("link", os.readlink(path))
            elif os.path.isdir(path):
                found[rel] = ("dir", info.st_mode)
            else:
                with open(path, "rb") as handle:
                    found[rel] = ("file", info.st_mode, handle.read())
    return found


def stopped_move(tmp_path, cli, project, upstream):
    journey_project(project, upstream)
    into = tmp_path / "work"
    started = edit_onto(cli, upstream, into)
    assert started.code == 1 and "stopped at patch 1 of 2, nvtx-ranges" in started.out, started.out + started.err
    return into


def record_of(into):
    return json.loads((into / ".git" / "patchmgr-edit.json").read_text())


# ---- item 1: the record is typed and checked; a damaged one is one error, never a traceback


@pytest.mark.parametrize(
    "damage",
    [
        "onto-is-a-string",
        "queue-entry-not-an-object",
        "missing-pin",
        "bad-json",
        "unknown-format",
        "patches-is-a-number",
        "old-tip-is-an-option",
        "queue-id-is-a-path",
    ],
)
def test_a_damaged_edit_record_is_one_error_for_every_command(tmp_path, cli, project, upstream, damage):
    into = stopped_move(tmp_path, cli, project, upstream)
    path = into / ".git" / "patchmgr-edit.json"
    record = record_of(into)
    if damage == "onto-is-a-string":
        record["onto"] = "v0.5.0"
    elif damage == "queue-entry-not-an-object":
        record["onto"]["queue"] = ["other-fix"]
    elif damage == "missing-pin":
        del record["pin"]
    elif damage == "unknown-format":
        record["format"] = 99
    elif damage == "patches-is-a-number":
        record["patches"] = 3
    elif damage == "old-tip-is-an-option":  # it reaches git's command line at --abort
        record["onto"]["old_tip"] = "--orphan=x"
    elif damage == "queue-id-is-a-path":  # it names the mail file that the move reads and removes
        record["onto"]["queue"][0]["id"] = "../../../outside"
    path.write_text("{not json" if damage == "bad-json" else json.dumps(record))
    before = tree_bytes(into)
    for args in (
        ("edit", "--continue", "--into", str(into)),
        ("edit", "--skip", "--into", str(into)),
        ("edit", "--abort", "--into", str(into)),
        ("export", "--target", "t", "--upstream", "lib", "--from", str(into)),
        tuple(edit_args(into, upstream.path, "--force")),
    ):
        result = cli(*args)
        assert result.code == 2, (args, result.out, result.err)
        assert "Traceback" not in result.err and "bug in patchmgr" not in result.err, result.err
        assert "patchmgr-edit.json is damaged" in result.err and "hint:" in result.err, result.err
        assert tree_bytes(into) == before, args


def test_the_record_is_versioned_and_written_whole(tmp_path, cli, project, upstream):
    into = stopped_move(tmp_path, cli, project, upstream)
    record = record_of(into)
    assert record["format"] == 2 and record["onto"]["ref"] == "v0.5.0"
    assert not list((into / ".git").glob("*.patchmgr-tmp")), "the record is replaced by a rename"
    assert not (tmp_path / ".work.patchmgr-edit").exists(), "the slot is gone once the run ends"


def test_edit_and_apply_into_share_the_slot_and_its_recovery(tmp_path, cli, project, upstream):
    """A swap killed half way (the journal left prepared, the old checkout moved aside) is undone by the next
    command on that checkout, whichever it is: the old checkout is back, byte for byte."""
    into = stopped_move(tmp_path, cli, project, upstream)
    before = tree_bytes(into)
    state = tmp_path / ".work.patchmgr-edit"
    (state / "replaced").mkdir(parents=True)
    (state / "staging").mkdir()
    os.rename(into, state / "replaced" / "lib")
    (state / "journal" / "saved").mkdir(parents=True)
    (state / "journal" / "journal.json").write_text(
        json.dumps(
            {
                "state": "prepared",
                "entries": [],
                "moves": [[str(into), str(state / "replaced" / "lib")], [str(state / "staging" / "lib"), str(into)]],
                "discard": [str(state / "staging"), str(state / "replaced")],
                "made": [],
            }
        )
    )
    result = resume(cli, into, "continue")
    assert result.code == 1 and "still has conflicts" in result.err, result.out + result.err
    assert tree_bytes(into) == before
    assert not state.exists()


# ---- item 2: --abort keeps every commit, staged and unstaged change made since the stop


def saved_branch(result):
    lines = [line for line in result.out.splitlines() if "kept on branch" in line]
    assert lines, result.out + result.err
    branch = lines[0].split("kept on branch ")[1].strip()
    assert branch.startswith("patchmgr-saved/") and branch.removeprefix("patchmgr-saved/")[:8].isdigit()
    return branch


def test_abort_keeps_a_commit_made_by_hand_and_the_changes_after_it(tmp_path, cli, project, upstream):
    into = stopped_move(tmp_path, cli, project, upstream)
    resolve_the_stop(into)
    done = gitenv(into, "commit", "-q", "-m", "My resolution, committed by hand")
    assert done.returncode == 0, done.stderr
    hand = git(into, "rev-parse", "HEAD")
    (into / "src/other.py").write_text("staged change\n")
    git(into, "add", "src/other.py")
    (into / "README").write_text("unstaged change\n")
    (into / "notes.txt").write_text("a new file\n")
    aborted = resume(cli, into, "abort")
    assert aborted.code == 0, aborted.out + aborted.err
    branch = saved_branch(aborted)
    assert git(into, "merge-base", "--is-ancestor", hand, branch) == ""  # the hand commit is on a ref again
    assert git(into, "show", f"{branch}:src/other.py") == "staged change"
    assert git(into, "show", f"{branch}:README") == "unstaged change"
    assert git(into, "show", f"{branch}:notes.txt") == "a new file"
    assert "Use our ranges on line 5" in git(into, "log", "--format=%s", "-3", "HEAD")


def test_abort_keeps_a_lone_commit_made_by_hand(tmp_path, cli, project, upstream):
    """The commit alone, nothing else changed: going back to the pin would leave it on no ref."""
    into = stopped_move(tmp_path, cli, project, upstream)
    assert gitenv(into, "am", "--quit").returncode == 0
    resolve_the_stop(into)
    assert gitenv(into, "commit", "-q", "-m", "Resolved by hand").returncode == 0
    hand = git(into, "rev-parse", "HEAD")
    aborted = resume(cli, into, "abort")
    assert aborted.code == 0, aborted.out + aborted.err
    assert git(into, "rev-parse", saved_branch(aborted)) == hand


def test_abort_keeps_a_resolution_that_was_added_but_not_continued(tmp_path, cli, project, upstream):
    into = stopped_move(tmp_path, cli, project, upstream)
    resolve_the_stop(into)
    aborted = resume(cli, into, "abort")
    assert aborted.code == 0, aborted.out + aborted.err
    branch = saved_branch(aborted)
    assert git(into, "show", f"{branch}:src/mod.py") + "\n" == RESOLVED


def test_abort_with_nothing_done_since_the_stop_saves_nothing(tmp_path, cli, project, upstream):
    into = stopped_move(tmp_path, cli, project, upstream)
    aborted = resume(cli, into, "abort")
    assert aborted.code == 0 and "kept on branch" not in aborted.out, aborted.out + aborted.err
    assert git(into, "branch", "--list", "patchmgr-saved/*") == ""


# ---- item 3: a git am ended by hand is noticed; only --skip leaves a patch out; export names every drop


def test_continue_after_a_git_am_abort_by_hand_refuses_and_says_how_to_restart(tmp_path, cli, project, upstream):
    into = stopped_move(tmp_path, cli, project, upstream)
    assert gitenv(into, "am", "--abort").returncode == 0
    before = tree_bytes(into)
    result = resume(cli, into, "continue")
    assert result.code == 1, result.out + result.err
    assert "ended outside patchmgr" in result.err and "nvtx-ranges" in result.err
    assert "patchmgr edit --abort" in result.err and "--onto v0.5.0" in result.err and "--skip" in result.err
    assert tree_bytes(into) == before
    refused = export(cli, into)
    assert refused.code == 1 and "stopped at nvtx-ranges" in refused.err, refused.out + refused.err
    skipped = resume(cli, into, "skip")
    assert skipped.code == 0 and "skipped nvtx-ranges" in skipped.out, skipped.out + skipped.err
    exported = export(cli, into, "--json")
    assert exported.code == 0, exported.out + exported.err
    assert {d["id"]: d["reason"] for d in exported.json["dropped"]} == {
        "nvtx-ranges": "skipped during edit --onto v0.5.0",
        "thd-bool-attention-mask": exported.json["dropped"][1]["reason"],
    }
    assert "upstream carries it" in exported.json["dropped"][1]["reason"]


def test_continue_after_a_git_am_abort_and_an_unrelated_commit_refuses(tmp_path, cli, project, upstream):
    """A commit made by hand after ``git am --abort`` is not the stopped patch resolved: git am's commit of it
    carries the patch's subject and author, this one does not."""
    into = stopped_move(tmp_path, cli, project, upstream)
    assert gitenv(into, "am", "--abort").returncode == 0
    (into / "NOTES.txt").write_text("mine\n")
    assert gitenv(into, "add", "NOTES.txt").returncode == 0
    assert gitenv(into, "commit", "-q", "-m", "my own notes").returncode == 0
    before = tree_bytes(into)
    result = resume(cli, into, "continue")
    assert result.code == 1, result.out + result.err
    assert "not git am's commit of nvtx-ranges" in result.err and "my own notes" in result.err, result.err
    assert "patchmgr edit --abort" in result.err
    assert tree_bytes(into) == before
    aborted = resume(cli, into, "abort")
    assert aborted.code == 0 and "patchmgr-saved/" in aborted.out, aborted.out + aborted.err


def test_export_names_every_patch_it_drops_and_why(tmp_path, cli, project, upstream):
    journey_project(project, upstream)
    into = tmp_path / "work"
    assert edit(cli, upstream, into).code == 0
    git(into, "rebase", "-q", "--onto", "HEAD~2", "HEAD~1")  # drop the second patch's commit by hand
    result = export(cli, into, "--json")
    assert result.code == 0, result.out + result.err
    assert result.json["removed"] == ["thd-bool-attention-mask"]
    assert [d["id"] for d in result.json["dropped"]] == ["thd-bool-attention-mask"]
    assert "no commit" in result.json["dropped"][0]["reason"]


# ---- item 5 (part): a failed edit --onto changes nothing


@pytest.mark.parametrize("earlier", ["absent", "absent-parents", "empty", "pin-checkout"])
def test_a_failed_edit_onto_leaves_the_folder_exactly_as_it_was(tmp_path, cli, project, upstream, earlier):
    _pin, new, _carrier = journey_project(project, upstream)
    assert cli("fetch", "--target", "t", "--source", f"lib={upstream.path}").code == 0  # the pin, whole
    first = edit_onto(cli, upstream, tmp_path / "first", new)  # the cache now knows the new commit too
    assert first.code == 1, first.out + first.err
    into = tmp_path / "new" / "deeper" / "work" if earlier == "absent-parents" else tmp_path / "work"
    if earlier == "empty":
        into.mkdir()
    elif earlier == "pin-checkout":
        assert edit(cli, upstream, into).code == 0
    # the source now lacks the new commit's objects: the move's own fetch fails (the cache served the plan)
    os.rename(upstream.path, tmp_path / "gone")
    git(tmp_path, "init", "-q", str(upstream.path))
    before, listing = tree_bytes(into), sorted(os.listdir(tmp_path))
    files_before = snapshot(project.root)
    result = edit_onto(cli, upstream, into, new, "--force")
    assert result.code == 1, result.out + result.err
    assert tree_bytes(into) == before
    assert sorted(os.listdir(tmp_path)) == listing
    assert "Traceback" not in result.err and "not our ref" in result.err and "nothing in" in result.err
    assert snapshot(project.root) == files_before
    nothing = resume(cli, into, "abort")
    if earlier == "pin-checkout":
        assert nothing.code == 1 and "no edit --onto to abort" in nothing.err, nothing.out + nothing.err


# ---- item 14: a ref that cannot be fetched as given is bad input, before anything is written


@pytest.mark.parametrize("ref", ["HEAD@{1}", "main~1", "v0.5.0^", "@", "x.lock", "a//b"])
def test_edit_onto_a_revision_expression_is_bad_input(tmp_path, cli, project, upstream, ref):
    journey_project(project, upstream)
    into = tmp_path / "work"
    files_before = snapshot(project.root)
    result = edit_onto(cli, upstream, into, ref)
    assert result.code == 2, result.out + result.err
    assert "is not a valid git ref, one the upstream's source can be asked for" in result.err
    assert "hint:" in result.err and "Traceback" not in result.err
    assert not into.exists() and not (tmp_path / ".work.patchmgr-edit").exists()
    assert snapshot(project.root) == files_before


# ---- the slot's journal moves and removes only inside the slot: a planted one naming anything else is damaged


@pytest.mark.parametrize("slot", ["apply-into", "edit"])
def test_a_journal_planted_in_a_slot_touches_nothing_outside_it(tmp_path, cli, project, upstream, slot):
    journey_project(project, upstream)
    into = tmp_path / "work"
    if slot == "edit":
        made = edit(cli, upstream, into)
        state, again = tmp_path / ".work.patchmgr-edit", lambda: edit(cli, upstream, into)
    else:
        made = cli("apply", "--target", "t", "--into", str(into), "--source", f"lib={upstream.path}")
        state, again = into / ".patchmgr-state", lambda: cli("verify", "--target", "t", "--into", str(into))
    assert made.code == 0, made.out + made.err
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("mine\n")
    journal = state / "journal"
    journal.mkdir(parents=True, exist_ok=True)
    (journal / "journal.json").write_text(
        json.dumps({"state": "committed", "moves": [], "made": [], "entries": [], "discard": [str(outside)]})
    )
    result = again()
    assert result.code == 1 and "damaged" in result.err and str(outside) in result.err, result.out + result.err
    assert (outside / "keep.txt").read_text() == "mine\n"


# ---- hostile review: git's own reason is said when git am --continue refuses


def test_continue_after_a_reset_hard_says_gits_reason(tmp_path, cli, project, upstream):
    """git am --continue says why on standard output ("No changes - did you forget to use 'git add'?")."""
    into = stopped_move(tmp_path, cli, project, upstream)
    assert gitenv(into, "reset", "-q", "--hard", "HEAD").returncode == 0
    result = resume(cli, into, "continue")
    assert result.code == 1, result.out + result.err
    assert "git am --continue refused: No changes - did you forget to use 'git add'?" in result.err, result.err
    assert "exit code" not in result.err


# ---- hostile review: a patch resolved and committed by hand (git am --continue) is never lost


def resolved_by_hand(tmp_path, cli, project, upstream):
    """The stop resolved and git am --continue run by hand: the commit lands on the patchmgr branch only."""
    into = stopped_move(tmp_path, cli, project, upstream)
    resolve_the_stop(into)
    done = gitenv(into, "am", "--continue")
    assert done.returncode == 0, done.stdout + done.stderr
    return into, git(into, "rev-parse", "HEAD")


@pytest.mark.parametrize(
    "away",
    [
        ("switch", "-q", "-c", "try", "HEAD~1"),
        ("checkout", "-q", "--detach", "HEAD~1"),
        ("reset", "-q", "--hard", "HEAD~1"),
        (),
    ],
)
def test_abort_keeps_a_patch_resolved_by_hand_wherever_head_went(tmp_path, cli, project, upstream, away):
    into, resolved = resolved_by_hand(tmp_path, cli, project, upstream)
    if away:
        assert gitenv(into, *away).returncode == 0
    aborted = resume(cli, into, "abort")
    assert aborted.code == 0, aborted.out + aborted.err
    branch = saved_branch(aborted)
    assert git(into, "rev-parse", branch) == resolved
    assert git(into, "show", f"{branch}:src/mod.py") + "\n" == RESOLVED


@pytest.mark.parametrize(
    "away, said",
    [
        (("switch", "-q", "-c", "try", "HEAD~1"), "is no longer on the move's branch patchmgr (it is on branch try)"),
        (("checkout", "-q", "--detach", "HEAD~1"), "is no longer on the move's branch patchmgr (it is detached at"),
        (("reset", "-q", "--hard", "HEAD~1"), "the move's branch patchmgr was moved back; the commit"),
    ],
)
@pytest.mark.parametrize("action", ["continue", "skip"])
def test_continue_and_skip_say_where_head_went_and_the_abort_they_offer_keeps_the_work(
    tmp_path, cli, project, upstream, away, said, action
):
    into, resolved = resolved_by_hand(tmp_path, cli, project, upstream)
    assert gitenv(into, *away).returncode == 0
    before = tree_bytes(into)
    refused = resume(cli, into, action)
    assert refused.code == 1, refused.out + refused.err
    assert said in refused.err and "ended outside patchmgr" not in refused.err, refused.err
    assert "patchmgr-saved" in refused.err and tree_bytes(into) == before
    aborted = resume(cli, into, "abort")  # what the hint offers
    assert aborted.code == 0, aborted.out + aborted.err
    assert git(into, "rev-parse", saved_branch(aborted)) == resolved


def test_abort_saves_each_lost_tip_on_its_own_branch(tmp_path, cli, project, upstream):
    """Two lines of work: the resolved patch left behind on patchmgr, and a commit made on a detached HEAD."""
    into, resolved = resolved_by_hand(tmp_path, cli, project, upstream)
    assert gitenv(into, "checkout", "-q", "--detach", "HEAD~1").returncode == 0
    (into / "README").write_text("an idea\n")
    assert gitenv(into, "commit", "-q", "-am", "An idea tried on the side").returncode == 0
    idea = git(into, "rev-parse", "HEAD")
    aborted = resume(cli, into, "abort")
    assert aborted.code == 0, aborted.out + aborted.err
    branches = [
        line.split("kept on branch ")[1].strip() for line in aborted.out.splitlines() if "kept on branch" in line
    ]
    assert sorted(git(into, "rev-parse", b) for b in branches) == sorted([resolved, idea])
    assert len(set(branches)) == 2 and all(b.startswith("patchmgr-saved/") for b in branches)
