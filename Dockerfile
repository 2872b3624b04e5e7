# The Ascend training image, built the way users build it today, but through patchmgr.
#
#   docker build -t qwen3vl-ascend .
#   docker build -t qwen3vl-cpu --build-arg BASE_IMAGE=python:3.12 --build-arg VARIANT=cpu \
#       --build-arg UPSTREAMS="megatron-bridge vllm-ascend" \
#       --build-arg PIP_EXTRA_INDEX_URL=https://download.pytorch.org/whl/cpu .
#
# This repository's image: patchmgr from this source tree, the Ascend set's manifests, patches and
# smoke tests. Any other project builds its image with docker/project.Dockerfile (patchmgr from a
# wheel or PyPI). Every step is patchmgr/image/build.sh STEP (patchmgr-build STEP), one per layer. The base needs python3 (with its
# venv module) and git; patchmgr and what it installs go into a virtual environment created with
# --system-site-packages, so a base whose Python is externally managed (PEP 668: Debian,
# Ubuntu 24.04) works as well as one whose Python is not, and the base's torch and
# torch_npu stay visible.
#
# The base's vllm-ascend is the manifest's pin (manifests/ascend.toml: 0.23.0, commit
# 5cb98caa): `apply --python` on the image refuses any other installed version, so keep
# this tag and that pin moving together.
ARG BASE_IMAGE=quay.io/ascend/vllm-ascend:v0.23.0-a3
FROM ${BASE_IMAGE}

ARG VARIANT=ascend
ARG TARGET=ascend
ARG UPSTREAMS=""
# Where pip and patchmgr download from, for this build only (not kept in the image):
# a PyPI mirror (PIP_INDEX_URL, PATCHMGR_INDEX_URL), the PyTorch CPU index or a folder or
# page of local wheels for the cpu variant (PIP_EXTRA_INDEX_URL, PIP_FIND_LINKS).
# Unset ones stay unset; proxies come through Docker's predefined HTTPS_PROXY etc.
ARG PIP_INDEX_URL
ARG PIP_EXTRA_INDEX_URL
ARG PIP_FIND_LINKS
ARG PIP_TRUSTED_HOST
ARG PIP_DEFAULT_TIMEOUT
ARG PATCHMGR_INDEX_URL
# where each upstream comes from instead of its manifest URL (space-separated NAME=LOCATION), build only
ARG PATCHMGR_SOURCES
ENV PATCHMGR_HOME=/opt/patchmgr \
    PATCHMGR_CACHE=/opt/patchmgr/cache \
    BUILD_DIR=/opt/upstreams \
    VENV=/opt/venv \
    PYTHON=/opt/venv/bin/python \
    PATH=/opt/venv/bin:$PATH \
    VARIANT=${VARIANT} TARGET=${TARGET} UPSTREAMS=${UPSTREAMS}
WORKDIR /opt/patchmgr

# 1. patchmgr itself in its virtual environment: rebuilt only when the tool changes
COPY pyproject.toml README.md requirements-smoke-nodeps.txt ./
COPY patchmgr/ patchmgr/
RUN bash patchmgr/image/build.sh install-tool

# 2. the upstreams at their pins: depends on the manifests alone, so editing a
#    patch keeps these downloads cached
COPY manifests/ manifests/
RUN patchmgr-build fetch

# 3. the patches and their smoke tests: a changed patch invalidates every layer
#    from here on, so no image carries a stale patch
COPY patches/ patches/
COPY tests/smoke/ tests/smoke/
RUN patchmgr-build apply
RUN patchmgr-build install-upstreams
RUN patchmgr-build verify
RUN patchmgr-build smoke
