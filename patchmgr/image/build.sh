#!/usr/bin/env bash
# The image build's steps, shipped inside patchmgr (patchmgr/image/build.sh; in an image `patchmgr-build`).
# The Dockerfiles run them one per layer; `all` runs them in order outside Docker (into a virtual
# environment, say).
#
#   patchmgr-build install-tool | fetch | apply | install-upstreams | verify | smoke | all
#
# Settings (environment):
#   PATCHMGR_HOME  the project: its manifests/, patches/ and tests/smoke/ (default: this source tree)
#   PATCHMGR_REQUIREMENT  what install-tool installs as patchmgr (pip requirement: a wheel file,
#                patchmgr==X from the index, or a source tree; default PATCHMGR_HOME, this repository)
#   VENV         install-tool creates a virtual environment there (--system-site-packages,
#                from BASE_PYTHON, default python3): an externally managed (PEP 668) base
#                Python is never installed into, and the base's torch/torch_npu stay visible
#   PYTHON       interpreter of the environment being built (default VENV's, else python3)
#   TARGET       manifest; UPSTREAMS: space-separated subset of its upstreams (empty: all)
#   VARIANT      ascend: the base brings torch, torch_npu and triton, the rest of the Ascend set's smoke stack is
#                installed beside them; cpu: install the Ascend set's CPU smoke stack (torch included);
#                plain: patchmgr and pytest only (any project; the cpu lane needs no torch)
#   SMOKE_REQUIREMENTS  more pip requirements the smoke tests import (space-separated)
#   MODE         checkout: fetch each pin, apply into BUILD_DIR, install from there;
#                installed: patch the upstreams the base image already holds in TARGET_PYTHON's
#                environment (`apply --python`), offline: drift against the pins is reported, a patch
#                that does not apply fails the build
#   TARGET_PYTHON  installed mode: the interpreter whose environment holds the upstreams (default PYTHON)
#   PATCHMGR_SOURCES  where each upstream comes from instead of the manifest's URL: space-separated
#                NAME=LOCATION (a local clone, a mirror), handed to patchmgr
#   BUILD_DIR    where patched checkouts go; PATCHMGR_CACHE: patchmgr's download cache
#   PIP_*        pip's own settings (index, mirrors, local wheels), as pip reads them
set -euo pipefail

here=$(cd "$(dirname "$0")/../.." && pwd)
PATCHMGR_HOME=${PATCHMGR_HOME:-$here}
PATCHMGR_REQUIREMENT=${PATCHMGR_REQUIREMENT:-$PATCHMGR_HOME}
VENV=${VENV:-}
BASE_PYTHON=${BASE_PYTHON:-python3}
if [ -n "$VENV" ]; then PYTHON=${PYTHON:-$VENV/bin/python}; else PYTHON=${PYTHON:-python3}; fi
TARGET=${TARGET:-ascend}
VARIANT=${VARIANT:-ascend}
UPSTREAMS=${UPSTREAMS:-}
BUILD_DIR=${BUILD_DIR:-/opt/upstreams}
MODE=${MODE:-checkout}
TARGET_PYTHON=${TARGET_PYTHON:-$PYTHON}
SMOKE_REQUIREMENTS=${SMOKE_REQUIREMENTS:-}
export PATCHMGR_CACHE=${PATCHMGR_CACHE:-$PATCHMGR_HOME/.cache}

# build arguments that were not given arrive empty: an empty pip setting is no setting
for var in PIP_INDEX_URL PIP_EXTRA_INDEX_URL PIP_FIND_LINKS PIP_TRUSTED_HOST PIP_DEFAULT_TIMEOUT PIP_NO_INDEX \
    PATCHMGR_INDEX_URL PATCHMGR_SOURCES; do
    if [ -z "${!var:-}" ]; then unset "$var"; fi
done

only=()
for name in $UPSTREAMS; do only+=(--upstream "$name"); done
# PATCHMGR_SOURCES stays in the environment: patchmgr reads it itself (names the target lacks are ignored there)
case "$MODE" in
    checkout | installed) ;;
    *) echo "MODE must be checkout or installed, not $MODE" >&2; exit 2 ;;
esac

say() { printf '\n== %s\n' "$*"; }
pm() { "$PYTHON" -m patchmgr "$@" --root "$PATCHMGR_HOME"; }

install_tool() {
    if [ -n "$VENV" ] && [ ! -x "$VENV/bin/python" ]; then
        say "virtual environment $VENV (--system-site-packages, from $BASE_PYTHON)"
        "$BASE_PYTHON" -m venv --system-site-packages "$VENV"
    fi
    say "install patchmgr ($VARIANT) into $("$PYTHON" -c 'import sys; print(sys.prefix)')"
    local extra=()
    for requirement in $SMOKE_REQUIREMENTS; do extra+=("$requirement"); done
    case "$VARIANT" in
        cpu)
            # torch comes from wherever pip is pointed (PIP_EXTRA_INDEX_URL=the PyTorch CPU
            # index, or PIP_FIND_LINKS=local wheels) or else PyPI; megatron-core declares Python >= 3.12
            # but the modules the smoke tests load import on 3.11.
            "$PYTHON" -m pip install --quiet "$PATCHMGR_REQUIREMENT[smoke]" "${extra[@]}"
            "$PYTHON" -m pip install --quiet --no-deps --ignore-requires-python \
                -r "$PATCHMGR_HOME/requirements-smoke-nodeps.txt" ;;
        ascend)
            # the base image's torch, torch_npu and triton stay; beside them what the smoke tests import, at the
            # versions they were proven with: patchmgr's `smoke` extra less what the base brings
            # (patchmgr.smoke.image_needs), and megatron-core as the cpu variant installs it. Each upstream's
            # smoke-requirements (by version: smoke-env) the `smoke` step builds into an environment of their own.
            "$PYTHON" -m pip install --quiet "$PATCHMGR_REQUIREMENT" "${extra[@]}"
            local listed needs
            listed=$("$PYTHON" -m patchmgr.smoke.image_needs ascend)
            mapfile -t needs <<< "$listed"
            "$PYTHON" -m pip install --quiet "${needs[@]}"
            if [ -f "$PATCHMGR_HOME/requirements-smoke-nodeps.txt" ]; then
                "$PYTHON" -m pip install --quiet --no-deps --ignore-requires-python \
                    -r "$PATCHMGR_HOME/requirements-smoke-nodeps.txt"
            fi ;;
        plain)
            # any project: patchmgr and pytest (the cpu lane needs no torch), and what its tests import
            "$PYTHON" -m pip install --quiet "$PATCHMGR_REQUIREMENT" pytest "${extra[@]}" ;;
        *) echo "VARIANT must be ascend, cpu or plain, not $VARIANT" >&2; exit 2 ;;
    esac
    # the steps as a command of the environment (`patchmgr-build STEP`), from the installed patchmgr
    local script
    script=$("$PYTHON" -c 'import pathlib, patchmgr; print(pathlib.Path(patchmgr.__file__).parent / "image" / "build.sh")')
    printf '#!/bin/sh\nexec bash %s "$@"\n' "$script" > "$(dirname "$PYTHON")/patchmgr-build"
    chmod +x "$(dirname "$PYTHON")/patchmgr-build"
}

fetch_upstreams() {
    say "fetch each upstream at its pin into $PATCHMGR_CACHE"
    # This layer must not depend on the patches (a patch edit would re-download every
    # upstream), but loading a manifest checks that its patch files exist. So fetch runs
    # on a copy of the manifests with an empty stand-in for each patch file they list;
    # fetch reads no patch, and the copy is gone before the layer is committed.
    local stage
    stage=$(mktemp -d)
    cp -R "$PATCHMGR_HOME/manifests" "$stage/manifests"
    "$PYTHON" - "$stage" <<'PY'
import sys, tomllib
from pathlib import Path
stage = Path(sys.argv[1])
for manifest in (stage / "manifests").glob("*.toml"):
    for name, upstream in tomllib.loads(manifest.read_text()).get("upstreams", {}).items():
        for patch_id in upstream.get("patches", []):
            (stage / "patches" / name).mkdir(parents=True, exist_ok=True)
            (stage / "patches" / name / f"{patch_id}.patch").touch()
PY
    local status=0
    "$PYTHON" -m patchmgr fetch --target "$TARGET" "${only[@]}" --root "$stage" || status=$?
    rm -rf "$stage"
    return "$status"
}

apply_patches() {
    if [ "$MODE" = installed ]; then
        # what the base holds, patched in place: drift against the pins is reported, a patch that does not
        # apply to the installed files refuses the whole target (exit 1: the build stops here)
        say "apply target $TARGET into the environment of $TARGET_PYTHON (installed by the base image)"
        pm apply --target "$TARGET" --python "$TARGET_PYTHON" "${only[@]}"
        return
    fi
    say "apply target $TARGET into $BUILD_DIR"
    pm apply --target "$TARGET" --into "$BUILD_DIR" "${only[@]}"
}

# NAME and ROOT of each upstream applied into BUILD_DIR, each ended by a NUL byte. Read from `roots --json`,
# never from lines: a value holding a newline would forge a second line, and the .pth file below runs
# every line that starts with `import`. A root holding any control character is refused before anything
# is written (a .pth entry is one line).
applied_roots() {
    pm roots --json --target "$TARGET" --into "$BUILD_DIR" "${only[@]}" | "$PYTHON" -c '
import json, sys
from patchmgr.model.urls import control_character
doc = json.load(sys.stdin)
for line in doc["notes"] + [entry["name"] + ": " + entry["reason"] for entry in doc["missing"]]:
    print(line, file=sys.stderr)
for entry in doc["roots"]:
    for value in (entry["name"], entry["root"]):
        if control_character(value):
            sys.exit(f"build.sh: refusing the import root {value!r}: it {control_character(value)}, "
                     "and a .pth entry is one line (rename the folder)")
sys.stdout.write("".join(entry["name"] + "\0" + entry["root"] + "\0" for entry in doc["roots"]))
'
}

install_upstreams() {
    if [ "$MODE" = installed ]; then
        say "the upstreams stay where the base installed them ($TARGET_PYTHON)"
        return
    fi
    say "install the patched upstreams from $BUILD_DIR"
    local purelib pth records
    purelib=$("$PYTHON" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
    pth="$purelib/patchmgr-upstreams.pth"
    records=$(mktemp)
    # each applied upstream's import root (in the manifest's layout: package-root), from the ledger;
    # all of them read and checked before the .pth is touched
    applied_roots > "$records" || { rm -f "$records"; return 1; }
    : > "$pth"
    while IFS= read -r -d '' name && IFS= read -r -d '' root; do
        local checkout="$BUILD_DIR/$name"
        if [ "$VARIANT" = ascend ] && { [ -f "$checkout/pyproject.toml" ] || [ -f "$checkout/setup.py" ]; }; then
            "$PYTHON" -m pip install --quiet --no-deps --no-build-isolation -e "$checkout"
            echo "$name: pip install -e $checkout"
        else
            # a release import has no build files: put its import root on sys.path
            printf '%s\n' "$root" >> "$pth"
            echo "$name: $root on sys.path ($pth)"
        fi
    done < "$records"
    rm -f "$records"
}

# where the steps after apply look: the checkouts in BUILD_DIR, or the base's environment
tree() {
    if [ "$MODE" = installed ]; then printf '%s\0' --python "$TARGET_PYTHON"; else printf '%s\0' --into "$BUILD_DIR"; fi
}

verify_build() {
    say "verify ($MODE)"
    local where=()
    mapfile -d '' where < <(tree)
    pm verify --target "$TARGET" "${where[@]}" "${only[@]}"
}

smoke_build() {
    say "smoke tests (--device auto)"
    local where=()
    mapfile -d '' where < <(tree)
    pm smoke --target "$TARGET" "${where[@]}" --device auto "${only[@]}"
}

case "${1:-all}" in
    install-tool) install_tool ;;
    fetch) fetch_upstreams ;;
    apply) apply_patches ;;
    install-upstreams) install_upstreams ;;
    verify) verify_build ;;
    smoke) smoke_build ;;
    all) install_tool; fetch_upstreams; apply_patches; install_upstreams; verify_build; smoke_build ;;
    *) echo "usage: $0 install-tool|fetch|apply|install-upstreams|verify|smoke|all" >&2; exit 2 ;;
esac
