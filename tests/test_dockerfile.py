"""A Dockerfile read as docker build reads it: logical lines, ARG/ENV scoping, substitution, and what its RUN
lines do to git checkouts (pure functions: no file, no process)."""

from __future__ import annotations

import pytest

from patchmgr.model.dockerfile import Word, context_candidates, instructions, needed, words
from patchmgr.model.dockerfile_run import read_build
from patchmgr.model.errors import UsageError
from patchmgr.model.urls import url_problem

pytestmark = pytest.mark.fast


def texts(line: str, values: dict[str, str], shell: bool = True) -> list[str]:
    return [w.text for w in words(line, {k: Word(v) for k, v in values.items()}, 1, shell)]


def checkouts(text: str, **build_args: str) -> dict[str, tuple[str, str | None, bool]]:
    built = read_build(text, "Dockerfile", build_args)
    return {
        c.folder: (c.url.text, c.ref.text if c.ref else None, c.branch) for c in built.checkouts if not c.url.missing
    }


def test_logical_lines_join_continuations_and_skip_comments_inside_them():
    text = "FROM base\n# a comment\nRUN a && \\\n    # inside\n\n    b \\\n  c\nWORKDIR /x\n"
    found = [(i.line, i.keyword, i.rest.split()) for i in instructions(text)]
    assert found == [(1, "FROM", ["base"]), (3, "RUN", ["a", "&&", "b", "c"]), (8, "WORKDIR", ["/x"])]
    assert instructions("FROM b\nRUN git clone https://h/lo\\\nng.git\n")[1].rest == "git clone https://h/long.git"
    backtick = instructions("# escape=`\nFROM base\nRUN a `\n  b\nRUN c:\\path\\\n")
    assert [(i.line, i.rest.split()) for i in backtick] == [(2, ["base"]), (3, ["a", "b"]), (5, ["c:\\path\\"])]


def test_substitution_forms_and_quotes():
    values = {"A": "one", "EMPTY": ""}
    assert texts("$A ${A} x${A}y ${B:-dflt} ${A:-dflt} ${A:+alt} ${B:+alt}z", values) == [
        "one",
        "one",
        "xoney",
        "dflt",
        "one",
        "alt",
        "z",
    ]
    assert texts("${EMPTY:-d} ${EMPTY-d} '$A' \"$A b\" \\$A", values) == ["d", "", "$A", "one b", "$A"]
    assert texts("a&&b || c;d | e < f 2>/dev/null # comment", {}) == [
        "a", "&&", "b", "||", "c", ";", "d", "|", "e", "<", "f", ">", "/dev/null"
    ]  # fmt: skip
    missing = words("git checkout ${NOPE}", {}, 7)[2]
    assert [(m.name, m.line) for m in missing.missing] == [("NOPE", 7)]
    with pytest.raises(UsageError) as raised:
        needed(missing, "docker/Dockerfile", "the pin")
    assert "docker/Dockerfile:7: ${NOPE} has no value" in raised.value.message
    assert "--build-arg NOPE=VALUE" in (raised.value.hint or "")


def test_arg_scoping_build_args_and_env_as_docker_build_does():
    text = (
        "ARG REPO=org/lib\nARG GLOBAL_ONLY=x\nFROM base AS one\nARG REPO\nARG PIN=abc1234\nENV WS=/ws\n"
        "RUN git clone https://h/${REPO}.git $WS/lib && git -C $WS/lib checkout ${PIN}\n"
        "RUN git clone https://h/${GLOBAL_ONLY}.git /g\n"
        "FROM one AS two\nENV PIN=fedcba9 OTHER=y\nARG PIN=ignored\nWORKDIR $WS\n"
        "RUN git clone https://h/two.git && cd two && git checkout $PIN\n"
    )
    built = read_build(text, "Dockerfile", {})
    found = {c.folder: c for c in built.checkouts}
    assert found["/ws/lib"].url.text == "https://h/org/lib.git" and found["/ws/lib"].ref == Word("abc1234")
    assert [m.name for m in found["/g"].url.missing] == ["GLOBAL_ONLY"]  # a global ARG not declared in the stage
    assert found["/ws/two"].ref == Word("fedcba9")  # ENV wins over ARG; FROM one goes on with its ENV
    overridden = checkouts(text, REPO="fork/lib", PIN="1234567", UNUSED="1")
    assert overridden["/ws/lib"] == ("https://h/fork/lib.git", "1234567", False)
    assert read_build(text, "Dockerfile", {"UNUSED": "1"}).unused_build_args == ("UNUSED",)
    legacy = read_build('FROM b\nENV DIR /opt/my dir\nRUN git clone u://x "$DIR"\n', "D", {})
    assert legacy.checkouts[0].folder == "/opt/my dir"


def test_clone_checkout_and_fetch_forms():
    text = (
        "FROM b\nWORKDIR /w\n"
        "RUN git clone --depth 1 -b dev https://h/MindSpeed.git\n"
        "RUN git clone https://h/x/Megatron-LM.git ML && cd ML && git fetch origin pull/1/head && "
        "git checkout FETCH_HEAD\n"
        "RUN git clone --branch=v1 https://h/tool.git /t && cd /t/sub && git checkout -b local origin/main\n"
        "RUN cd /w/MindSpeed && git checkout -- file.py && git reset --hard 0123456789ab\n"
    )
    assert checkouts(text) == {
        "/w/MindSpeed": ("https://h/MindSpeed.git", "0123456789ab", False),
        "/w/ML": ("https://h/x/Megatron-LM.git", "pull/1/head", False),
        "/t": ("https://h/tool.git", "main", False),
    }
    assert checkouts("FROM b\nRUN git clone -b dev u://h/MindSpeed /m\n")["/m"] == ("u://h/MindSpeed", "dev", True)


def test_patches_applied_in_order_in_their_checkouts_and_traced_to_the_context():
    text = (
        "FROM b\nARG PATCH_VERSION=latest\nWORKDIR /ws\n"
        "COPY patch/${PATCH_VERSION} /tmp/patch\nCOPY rocm/*.patch extra/fix.diff /tmp/more/\n"
        "RUN git clone https://h/Megatron-LM.git && cd Megatron-LM && git apply /tmp/more/fix.diff && "
        "git apply --whitespace=nowarn /tmp/patch/megatron.patch && patch -p1 -N < /tmp/more/rocm.patch\n"
        "RUN git clone https://h/lib.git /ws/lib\n"
        "RUN git apply --directory=lib /tmp/patch/lib.patch && patch -d /ws/lib -p1 -i ../x.patch\n"
    )
    built = read_build(text, "Dockerfile", {})
    assert [(a.folder, a.patch) for a in built.applied] == [
        ("/ws/Megatron-LM", "/tmp/more/fix.diff"),
        ("/ws/Megatron-LM", "/tmp/patch/megatron.patch"),
        ("/ws/Megatron-LM", "/tmp/more/rocm.patch"),
        ("/ws/lib", "/tmp/patch/lib.patch"),
        ("/ws/lib", "/ws/x.patch"),
    ]
    assert context_candidates(built.copies, "/tmp/patch/megatron.patch") == ["patch/latest/megatron.patch"]
    assert context_candidates(built.copies, "/tmp/more/rocm.patch") == ["rocm/rocm.patch", "extra/fix.diff/rocm.patch"]
    assert context_candidates(built.copies, "/tmp/more/fix.diff") == ["extra/fix.diff/fix.diff", "extra/fix.diff"]
    chosen = read_build(text, "Dockerfile", {"PATCH_VERSION": "v0.5"})
    assert context_candidates(chosen.copies, "/tmp/patch/megatron.patch") == ["patch/v0.5/megatron.patch"]


def test_a_run_sees_the_copies_of_its_stage_before_it_and_of_the_stage_it_is_built_from():
    text = (
        "FROM alpine AS patches\nCOPY patch/ /p/\n"
        "FROM ubuntu AS build\nRUN git clone https://h/lib.git /ws/lib\n"
        "RUN cd /ws/lib && git apply /p/a.patch\n"  # line 5: its stage copies nothing before it
        "COPY late.patch /q/late.patch\n"
        "RUN cd /ws/lib && git apply /q/late.patch\n"
        "FROM patches\nRUN cd /ws/lib && git apply /p/a.patch\n"  # line 9: built on the stage that has it
        "FROM ubuntu\nCOPY --from=patches /p/ /from/\nRUN git -C /ws/lib apply /from/a.patch\n"
    )
    built = read_build(text, "Dockerfile", {})
    seen = [(a.line, a.stage, [c.line for c in a.copies if not c.clone]) for a in built.applied]
    assert seen == [(5, 1, []), (7, 1, [6]), (9, 2, [2]), (12, 3, [11])]
    assert context_candidates(built.applied[0].copies, "/p/a.patch") == []
    assert context_candidates(built.applied[2].copies, "/p/a.patch") == ["patch/a.patch"]
    assert context_candidates(built.applied[3].copies, "/from/a.patch") == ["patch/a.patch"]  # through the stage


def test_a_clone_url_whose_variable_has_no_value_is_refused_where_it_is_needed():
    built = read_build("FROM b\nARG REPO\nRUN git clone https://h/${REPO}.git /ws/lib\n", "Dockerfile", {})
    with pytest.raises(UsageError) as raised:
        needed(built.checkouts[0].url, "Dockerfile", "in the URL")
    assert "Dockerfile:3: ${REPO} has no value" in raised.value.message
    with pytest.raises(UsageError, match=r"Dockerfile:2: \$\{DIR\} has no value"):
        read_build("FROM b\nRUN git clone https://h/lib.git ${DIR}\n", "Dockerfile", {})


def test_a_manifest_url_with_an_unexpanded_variable_is_refused():
    assert "never given a value" in (url_problem("https://github.com/${MEGATRON_REPO}.git") or "")
    assert "never given a value" in (url_problem("https://github.com/$REPO.git") or "")
    assert url_problem("https://github.com/NVIDIA/Megatron-LM.git") is None


def test_bash_c_scripts_and_folders_a_variable_leaves_unknown():
    text = (
        "FROM b\nARG D=/ws\n"
        "RUN bash -c 'git clone https://h/lib.git $D/lib && cd $D/lib && git apply /p/a.patch'\n"
        "RUN cd $(dirname /x) && echo fine\n"
        "RUN for p in a b; do git -C /ws/lib apply /p/$p.patch; done\n"
    )
    built = read_build(text, "Dockerfile", {})
    assert [c.folder for c in built.checkouts] == ["/ws/lib"]
    assert [(a.folder, a.patch) for a in built.applied] == [("/ws/lib", "/p/a.patch"), ("/ws/lib", "")]
    assert [m.name for m in built.applied[1].word.missing] == ["p"]
    lazy = read_build("FROM b\nWORKDIR $HOME/src\nRUN git clone https://h/lib.git /l\n", "Dockerfile", {})
    assert [c.folder for c in lazy.checkouts] == ["/l"]  # a WORKDIR without a value matters only where used
    with pytest.raises(UsageError, match=r"Dockerfile:2: \$\{HOME\} has no value \(in the folder of git clone"):
        read_build("FROM b\nWORKDIR $HOME/src\nRUN git clone https://h/lib.git\n", "Dockerfile", {})
    with pytest.raises(UsageError, match=r"Dockerfile:3: \$\(nproc\) has no value \(in the folder of git"):
        read_build("FROM b\nRUN git clone https://h/lib.git /l\nRUN cd $(nproc) && git checkout v1\n", "Dockerfile", {})


def test_a_run_heredoc_is_a_script_of_lines():
    text = (
        "FROM b\nRUN <<EOF\ngit clone https://h/lib.git /ws/lib\ncd /ws/lib\ngit checkout v1\n"
        "git apply /p/a.patch\nEOF\nRUN git clone https://h/two.git /two\n"
    )
    built = read_build(text, "Dockerfile", {})
    assert [(c.folder, c.ref.text if c.ref else None) for c in built.checkouts] == [("/ws/lib", "v1"), ("/two", None)]
    assert [(a.folder, a.patch, a.line) for a in built.applied] == [("/ws/lib", "/p/a.patch", 6)]  # its own line
