#!/usr/bin/env bash
# The image build's steps. The Dockerfile runs them one per layer; tests run `all`
# end to end in a fresh virtual environment, since no Docker engine runs there.
#
#   docker/build.sh install-tool | fetch | apply | install-upstreams | verify | smoke | all
#
# Settings (environment): PYTHON (interpreter of the environment being built),
# TARGET (manifest), VARIANT (ascend: the base image brings torch and torch_npu;
# cpu: install the CPU smoke stack), UPSTREAMS (space-separated subset of the
# target's upstreams, empty for all), BUILD_DIR (where patched checkouts go),
# PATCHMGR_CACHE (patchmgr's download cache).
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
PATCHMGR_HOME=${PATCHMGR_HOME:-$here}
PYTHON=${PYTHON:-python3}
TARGET=${TARGET:-ascend}
VARIANT=${VARIANT:-ascend}
UPSTREAMS=${UPSTREAMS:-}
BUILD_DIR=${BUILD_DIR:-/opt/upstreams}
export PATCHMGR_CACHE=${PATCHMGR_CACHE:-$PATCHMGR_HOME/.cache}

only=()
for name in $UPSTREAMS; do only+=(--upstream "$name"); done

say() { printf '\n== %s\n' "$*"; }
pm() { "$PYTHON" -m patchmgr "$@" --root "$PATCHMGR_HOME"; }

install_tool() {
    say "install patchmgr ($VARIANT)"
    case "$VARIANT" in
        cpu)
            # torch pinned exactly: a CPU build; megatron-core declares Python >= 3.12
            # but the modules the smoke tests load import on 3.11.
            "$PYTHON" -m pip install --quiet "$PATCHMGR_HOME[smoke]"
            "$PYTHON" -m pip install --quiet --no-deps --ignore-requires-python \
                -r "$PATCHMGR_HOME/requirements-smoke-nodeps.txt" ;;
        ascend)
            # the base image's torch and torch_npu stay; only patchmgr and the test runner
            "$PYTHON" -m pip install --quiet "$PATCHMGR_HOME" pytest einops ;;
        *) echo "VARIANT must be ascend or cpu, not $VARIANT" >&2; exit 2 ;;
    esac
}

fetch_upstreams() {
    say "fetch each upstream at its pin into $PATCHMGR_CACHE"
    pm fetch --target "$TARGET" "${only[@]}"
}

apply_patches() {
    say "apply target $TARGET into $BUILD_DIR"
    pm apply --target "$TARGET" --into "$BUILD_DIR" "${only[@]}"
}

install_upstreams() {
    say "install the patched upstreams from $BUILD_DIR"
    local purelib pth
    purelib=$("$PYTHON" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
    pth="$purelib/patchmgr-upstreams.pth"
    : > "$pth"
    # import roots from the ledger, in the manifest's layout (package-root)
    "$PYTHON" - "$PATCHMGR_HOME" "$TARGET" "$BUILD_DIR" <<'PY' | while read -r name root; do
import sys
from pathlib import Path
from patchmgr.project import Project
from patchmgr.ledger import read_ledger
project, target, build = Project.at(Path(sys.argv[1])), sys.argv[2], Path(sys.argv[3])
ledger = read_ledger(build)
for upstream in project.target(target).upstreams:
    if ledger and ledger.upstream(upstream.name):
        root = build / upstream.name / upstream.package_root if upstream.package_root else build / upstream.name
        print(upstream.name, root)
PY
        local checkout="$BUILD_DIR/$name"
        if [ "$VARIANT" = ascend ] && { [ -f "$checkout/pyproject.toml" ] || [ -f "$checkout/setup.py" ]; }; then
            "$PYTHON" -m pip install --quiet --no-deps --no-build-isolation -e "$checkout"
            echo "$name: pip install -e $checkout"
        else
            # a release import has no build files: put its import root on sys.path
            echo "$root" >> "$pth"
            echo "$name: $root on sys.path ($pth)"
        fi
    done
}

verify_build() {
    say "verify $BUILD_DIR"
    pm verify --target "$TARGET" --into "$BUILD_DIR" "${only[@]}"
}

smoke_build() {
    say "smoke tests (--device auto)"
    pm smoke --target "$TARGET" --into "$BUILD_DIR" --device auto "${only[@]}"
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
