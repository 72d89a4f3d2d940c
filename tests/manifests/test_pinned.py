"""A pinned tool that cannot be built skips its tests with one line, or fails them when the suite is required."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.manifests import pinned
from tests.realcluster import building


@pytest.fixture
def unbuildable(monkeypatch: pytest.MonkeyPatch) -> None:
    """building.tool fails as it does without go; nothing is cached from before."""
    def tool(name: str, version: str | None = None) -> Path:
        raise building.GoMissing("go is not installed (not on PATH, not in /usr/local/go)\nmore detail")

    monkeypatch.setattr(building, "tool", tool)
    monkeypatch.setattr(pinned, "_BUILT", {})


@pytest.mark.usefixtures("unbuildable")
class TestUnbuildable:
    def test_skips_with_one_line(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Without DRALEDGER_REQUIRE_REALCLUSTER the test skips, naming the tool and the first line of why."""
        monkeypatch.delenv(pinned.REQUIRE_ENV, raising=False)
        with pytest.raises(pytest.skip.Exception) as skipped:
            pinned.binary("helm", pinned.HELM)
        assert (f"helm@{pinned.HELM} cannot be built: go is not installed (not on PATH, not in /usr/local/go) "
                f"(set {pinned.REQUIRE_ENV}=1 to fail instead)") == str(skipped.value)

    def test_fails_when_required(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """With DRALEDGER_REQUIRE_REALCLUSTER=1 the same test fails instead."""
        monkeypatch.setenv(pinned.REQUIRE_ENV, "1")
        with pytest.raises(pytest.fail.Exception) as failed:
            pinned.binary("kustomize", pinned.KUSTOMIZE_VERSIONS[0])
        assert str(failed.value).endswith(f"({pinned.REQUIRE_ENV}=1)")
