# syntax=docker/dockerfile:1
# dra-ledger operator image: `draledger run` as a non-root, numeric user on a read-only root filesystem.
#
# The base image is pinned by digest so that a rebuild of the same commit gets the same bits. This is the
# digest of the multi-arch index of python:3.11-slim at the time of pinning. To refresh it (e.g. for a
# Python or Debian security update), resolve the tag and replace the digest below:
#   docker buildx imagetools inspect python:3.11-slim --format '{{json .Manifest.Digest}}'
#   (or: crane digest python:3.11-slim;  skopeo inspect --format '{{.Digest}}' docker://python:3.11-slim)
# Dependabot/Renovate can keep it current ("docker" ecosystem); they update tag@digest pins in place.
ARG PYTHON_IMAGE=python:3.11-slim@sha256:9c900dea9e8fb7e16277c179b555cc72d29a352dbc33cff48ad5a0412fd5bfc7

# --- build: install the package and its dependencies into a self-contained virtualenv -------------------
FROM ${PYTHON_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1
RUN python -m venv /opt/draledger
WORKDIR /src
COPY pyproject.toml README.md LICENSE ./
COPY operator ./operator
# The commit this image is built from, for `draledger --version` and draledger_build_info:
#   docker build --build-arg DRALEDGER_COMMIT=$(git rev-parse HEAD) .
ARG DRALEDGER_COMMIT=unknown
RUN if [ "$DRALEDGER_COMMIT" != unknown ]; then echo "$DRALEDGER_COMMIT" > operator/draledger/BUILD_COMMIT; fi \
 && /opt/draledger/bin/pip install . \
 && /opt/draledger/bin/python -m compileall -q /opt/draledger

# --- runtime: the virtualenv only, no compiler, no pip cache, no sources --------------------------------
FROM ${PYTHON_IMAGE}
LABEL org.opencontainers.image.title="dra-ledger" \
      org.opencontainers.image.description="Node-allocatable accounting for Kubernetes DRA (KEP-5517)" \
      org.opencontainers.image.source="https://github.com/dra-ledger/dra-ledger" \
      org.opencontainers.image.licenses="Apache-2.0"
ENV PATH=/opt/draledger/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
COPY --from=build /opt/draledger /opt/draledger
# A numeric UID/GID (65532, "nonroot" by convention), so that Kubernetes' runAsNonRoot can verify it
# without a passwd entry; the manifests run as the same IDs.
USER 65532:65532
EXPOSE 8080 9443
ENTRYPOINT ["draledger"]
CMD ["run"]
