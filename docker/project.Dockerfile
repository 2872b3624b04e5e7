# Any project's image: patchmgr installed from a wheel or PyPI, the project's own manifests/,
# patches/ and tests/smoke/ copied in. Run from the project's root (the build context):
#
#   docker build -f project.Dockerfile -t myimage \
#       --build-arg BASE_IMAGE=python:3.12 --build-arg TARGET=main .            # patchmgr from PyPI
#   docker build -f project.Dockerfile -t myimage --build-arg TARGET=main \
#       --build-arg PATCHMGR=wheels/patchmgr-0.9.0-py3-none-any.whl .           # from a wheel in wheels/
#
# The context must hold manifests/, patches/, tests/smoke/ and a wheels/ folder (empty when
# patchmgr comes from the index; else the patchmgr wheel, and for an offline build every wheel it
# needs). This repository's own image is the root Dockerfile, the same steps from its source tree.
#
# Two modes (MODE):
#   checkout   (default) each upstream fetched at its pin, patched into /opt/upstreams, installed
#              from there (pip install -e where it has build files, else on sys.path)
#   installed  the base image already holds the upstreams, installed in TARGET_PYTHON's
#              environment (often editable, sometimes with files the base changed): they are
#              patched where they are (`patchmgr apply --python`), with no network: the wheels
#              come from wheels/ (PIP_NO_INDEX=1), the pins from PATCHMGR_SOURCES (the base's own
#              clones, say). Drift of the installed files against the pins is reported; a patch
#              that does not apply to what the base holds fails the build with the reason.
#
#   docker build -f project.Dockerfile --network none --build-arg BASE_IMAGE=my-base \
#       --build-arg MODE=installed --build-arg TARGET_PYTHON=/opt/env/bin/python \
#       --build-arg PATCHMGR=wheels/patchmgr-0.9.0-py3-none-any.whl --build-arg PIP_NO_INDEX=1 \
#       --build-arg PATCHMGR_SOURCES="mylib=/opt/src/mylib" .
#
# Every step after the first is patchmgr-build STEP (patchmgr/image/build.sh, shipped in the wheel).
ARG BASE_IMAGE=python:3.12
FROM ${BASE_IMAGE}

ARG PATCHMGR=patchmgr
ARG TARGET
ARG UPSTREAMS=""
ARG MODE=checkout
ARG TARGET_PYTHON=""
ARG SMOKE_REQUIREMENTS=""
ARG VARIANT=plain
# for this build only (not kept in the image); unset ones stay unset
ARG PIP_INDEX_URL
ARG PIP_EXTRA_INDEX_URL
ARG PIP_TRUSTED_HOST
ARG PIP_DEFAULT_TIMEOUT
ARG PIP_NO_INDEX
ARG PATCHMGR_INDEX_URL
ARG PATCHMGR_SOURCES
ENV PATCHMGR_HOME=/opt/project \
    PATCHMGR_CACHE=/opt/project/.cache \
    BUILD_DIR=/opt/upstreams \
    VENV=/opt/venv \
    PYTHON=/opt/venv/bin/python \
    PATH=/opt/venv/bin:$PATH \
    VARIANT=${VARIANT} TARGET=${TARGET} UPSTREAMS=${UPSTREAMS} MODE=${MODE} TARGET_PYTHON=${TARGET_PYTHON}
WORKDIR /opt/project

# 1. patchmgr in its virtual environment (over the base's packages), then its own install step
COPY wheels/ /opt/wheels/
RUN test -n "$TARGET" || { echo "--build-arg TARGET=<manifest name> is required" >&2; exit 2; }; \
    case "$PATCHMGR" in wheels/*) PATCHMGR=/opt/$PATCHMGR ;; esac; \
    python3 -m venv --system-site-packages "$VENV" \
    && PIP_FIND_LINKS=/opt/wheels "$PYTHON" -m pip install --quiet "$PATCHMGR" \
    && PIP_FIND_LINKS=/opt/wheels PATCHMGR_REQUIREMENT="$PATCHMGR" \
       bash "$("$PYTHON" -c 'import pathlib, patchmgr; print(pathlib.Path(patchmgr.__file__).parent / "image" / "build.sh")')" install-tool

# 2. the upstreams at their pins: depends on the manifests alone
COPY manifests/ manifests/
RUN patchmgr-build fetch

# 3. the patches and their smoke tests: a changed patch re-runs every layer from here on
COPY patches/ patches/
COPY tests/smoke/ tests/smoke/
RUN patchmgr-build apply
RUN patchmgr-build install-upstreams
RUN patchmgr-build verify
RUN patchmgr-build smoke
