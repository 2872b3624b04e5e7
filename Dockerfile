# The Ascend training image, built the way users build it today, but through patchmgr.
#
#   docker build -t qwen3vl-ascend .
#   docker build -t qwen3vl-cpu --build-arg BASE_IMAGE=python:3.11-slim --build-arg VARIANT=cpu \
#       --build-arg UPSTREAMS="megatron-bridge vllm-ascend" .
#
# Every step is docker/build.sh, which tests run end to end without Docker.
ARG BASE_IMAGE=quay.io/ascend/vllm-ascend:v0.22.1rc1-a3
FROM ${BASE_IMAGE}

ARG VARIANT=ascend
ARG TARGET=ascend
ARG UPSTREAMS=""
ENV PATCHMGR_HOME=/opt/patchmgr \
    PATCHMGR_CACHE=/opt/patchmgr/cache \
    BUILD_DIR=/opt/upstreams \
    PYTHON=python3 \
    VARIANT=${VARIANT} TARGET=${TARGET} UPSTREAMS=${UPSTREAMS}
WORKDIR /opt/patchmgr

# 1. patchmgr itself: rebuilt only when the tool changes
COPY pyproject.toml README.md requirements-smoke-nodeps.txt ./
COPY patchmgr/ patchmgr/
COPY docker/build.sh docker/build.sh
RUN docker/build.sh install-tool

# 2. the upstreams at their pins: depends on the manifests alone, so editing a
#    patch keeps these downloads cached
COPY manifests/ manifests/
RUN docker/build.sh fetch

# 3. the patches and their smoke tests: a changed patch invalidates every layer
#    from here on, so no image carries a stale patch
COPY patches/ patches/
COPY tests/smoke/ tests/smoke/
RUN docker/build.sh apply
RUN docker/build.sh install-upstreams
RUN docker/build.sh verify
RUN docker/build.sh smoke
