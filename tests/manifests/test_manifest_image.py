"""The container image recipe: multi-stage, pinned base, numeric non-root user, a small build context."""

from __future__ import annotations

import re

from tests.manifests.kustomized import ROOT

DOCKERFILE = (ROOT / "Dockerfile").read_text(encoding="utf-8")
DOCKERIGNORE = (ROOT / ".dockerignore").read_text(encoding="utf-8")


def _instructions() -> list[tuple[str, str]]:
    lines = re.sub(r"\\\n", " ", DOCKERFILE).splitlines()
    return [(line.split()[0].upper(), line.split(None, 1)[1]) for line in lines
            if line.strip() and not line.lstrip().startswith("#")]


class TestDockerfile:
    def test_base_image_pinned_by_digest(self) -> None:
        """Every stage starts from python:3.11-slim pinned by a sha256 digest."""
        pin = re.search(r"^ARG PYTHON_IMAGE=(\S+)$", DOCKERFILE, re.MULTILINE)
        assert pin is not None
        assert re.fullmatch(r"python:3\.11-slim@sha256:[0-9a-f]{64}", pin.group(1))
        stages = [arg for op, arg in _instructions() if op == "FROM"]
        assert len(stages) >= 2, "multi-stage"
        assert all(stage.split()[0] == "${PYTHON_IMAGE}" for stage in stages)

    def test_runs_as_numeric_non_root_user(self) -> None:
        """The final USER is a numeric, non-zero UID:GID (runAsNonRoot can check it), the same as the manifests'."""
        users = [arg for op, arg in _instructions() if op == "USER"]
        assert users[-1] == "65532:65532"

    def test_entrypoint(self) -> None:
        """The image runs `draledger run` by default."""
        instructions = dict(_instructions())
        assert instructions["ENTRYPOINT"] == '["draledger"]'
        assert instructions["CMD"] == '["run"]'

    def test_build_context_is_allowlisted(self) -> None:
        """.dockerignore excludes everything but what `pip install .` needs."""
        lines = [line for line in DOCKERIGNORE.splitlines() if line and not line.startswith("#")]
        assert lines[0] == "*"
        assert {"!pyproject.toml", "!operator/"} <= set(lines)
