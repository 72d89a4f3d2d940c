"""The chart and the kustomize overlays install the same objects (charted.py, rules 2 and 3), and the chart's copies
of generated files are the originals."""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

import draledger
from tests.manifests.charted import CHART, OVERLAY_VALUES, normalised, rendered, values
from tests.manifests.documented import section
from tests.manifests.kustomized import MANIFESTS, ROOT, VARIANTS, Objects

VARIANT_OF = {overlay: next(v for v in VARIANTS if v.split("+")[0] == overlay) for overlay in OVERLAY_VALUES}


@pytest.mark.parametrize("overlay", OVERLAY_VALUES)
def test_the_chart_renders_the_overlays_objects(helm: Path, render: Callable[[str], Objects], overlay: str) -> None:
    """With the overlay's values file, the chart renders the overlay's objects, but for charted.DIFFERENCES."""
    chart = normalised(rendered(helm, *values(OVERLAY_VALUES[overlay])))
    kustomized = normalised(render(VARIANT_OF[overlay]))

    assert sorted(kustomized) == sorted(chart)
    assert [] == [key for key in kustomized if kustomized[key] != chart[key]]


def test_every_overlay_has_its_values_file() -> None:
    """Each directory of manifests/overlays has a values file of ci/ that the comparison above renders."""
    overlays = sorted(path.name for path in (MANIFESTS / "overlays").iterdir() if path.is_dir())
    assert overlays == sorted(OVERLAY_VALUES)
    assert all((CHART / "ci" / name).is_file() for name in OVERLAY_VALUES.values())


ROLLOUT_VARIANTS = {"0": "observe+no-webhook", "1": "canary+admission-policy", "2": "minimal+admission-policy"}
NOT_IN_THE_CHARTS_DEFAULTS = ("Namespace", "ServiceMonitor", "PrometheusRule")  # namespace.create, monitoring.*


def rollout_values() -> dict[str, list[str]]:
    """docs/rollout.md's table of the stages with the chart: stage number -> its helm arguments."""
    table = section(ROOT / "docs" / "rollout.md", "The stages with the Helm chart")
    rows = re.findall(r"^\| (\d), [^|]+ \| (.+) \|$", table, re.M)
    return {stage: shlex.split(cell.strip("`")) if cell.startswith("`") else [] for stage, cell in rows}


@pytest.mark.parametrize("stage", ROLLOUT_VARIANTS)
def test_the_rollout_stages_values_are_the_overlays(helm: Path, render: Callable[[str], Objects], stage: str) -> None:
    """Each stage's values in rollout.md render the objects of that stage's overlay with the MutatingAdmissionPolicy
    (the chart's default gating), but for what the chart's defaults leave out: the Namespace and monitoring."""
    chart = normalised(rendered(helm, *rollout_values()[stage]))
    kustomized = {key: obj for key, obj in normalised(render(ROLLOUT_VARIANTS[stage])).items()
                  if key[0] not in NOT_IN_THE_CHARTS_DEFAULTS}

    assert sorted(kustomized) == sorted(chart)
    assert [] == [key for key in kustomized if kustomized[key] != chart[key]]


class TestCopies:
    def test_the_crd_is_the_generated_one(self) -> None:
        """crds/ of the chart holds crds/nodeallocatableledgers.yaml byte for byte (refresh it with cp)."""
        assert (ROOT / "crds/nodeallocatableledgers.yaml").read_bytes() == (
            CHART / "crds/nodeallocatableledgers.yaml").read_bytes()

    def test_the_dashboard_is_the_components(self) -> None:
        """files/draledger-dashboard.json is components/dashboard's, byte for byte (refresh it with cp)."""
        assert (MANIFESTS / "components/dashboard/draledger-dashboard.json").read_bytes() == (
            CHART / "files/draledger-dashboard.json").read_bytes()

    def test_the_chart_versions_are_the_packages(self) -> None:
        """Chart.yaml's version and appVersion are the package's (draledger.__version__, pyproject's dynamic one)."""
        chart = yaml.safe_load((CHART / "Chart.yaml").read_text(encoding="utf-8"))
        assert (draledger.__version__, draledger.__version__) == (chart["version"], chart["appVersion"])
