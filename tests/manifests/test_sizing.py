"""The sizing table of docs/performance.md is the one source of the operator's requests and limits: the base
Deployment ships its default row, and every row follows the table's stated rule from its measured memory."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "performance.md"
DEPLOYMENT = ROOT / "manifests" / "base" / "deployment.yaml"
CHART_VALUES = ROOT / "charts" / "dra-ledger" / "values.yaml"
MIB = {"Mi": 1, "Gi": 1024}


def mebibytes(text: str) -> float:
    number, unit = re.fullmatch(r"([\d,.]+)\s*(Mi|Gi|MiB|GiB)", text.strip()).groups()  # type: ignore[union-attr]
    return float(number.replace(",", "")) * MIB[unit[:2]]


def sizing_rows() -> dict[str, list[str]]:
    """The rows of the table under "## Sizing": first cell -> cells."""
    section = DOC.read_text(encoding="utf-8").split("\n## Sizing\n", 1)[1].split("\n## ", 1)[0]
    rows = [line.strip().strip("|").split("|") for line in section.splitlines() if line.startswith("| ")]
    return {cells[0].strip(): [cell.strip() for cell in cells[1:]] for cells in rows[1:]}


def default_row() -> list[str]:
    return next(cells for name, cells in sizing_rows().items() if "default" in name)


def measured_rows() -> dict[str, list[str]]:
    return {name: cells for name, cells in sizing_rows().items() if "nodes" in name and "default" not in name}


def resources() -> dict[str, dict[str, str]]:
    deployment = next(item for item in yaml.safe_load_all(DEPLOYMENT.read_text(encoding="utf-8"))
                      if item and item["kind"] == "Deployment")
    container = next(c for c in deployment["spec"]["template"]["spec"]["containers"] if c["name"] == "draledger")
    return {kind: {name: str(value) for name, value in values.items()}
            for kind, values in container["resources"].items()}


class TestSizing:
    def test_the_deployment_ships_the_default_row(self) -> None:
        """manifests/base/deployment.yaml requests and limits what the table's default row says."""
        cpu_request, cpu_limit = (part.strip() for part in default_row()[-2].split("/"))
        memory_request, memory_limit = (part.strip() for part in default_row()[-1].split("/"))

        assert {"requests": {"cpu": cpu_request, "memory": memory_request},
                "limits": {"cpu": cpu_limit, "memory": memory_limit}} == resources()

    def test_the_chart_defaults_to_the_default_row(self) -> None:
        """The Helm chart's values.yaml requests and limits what the Deployment (and the table's default row) says."""
        values = yaml.safe_load(CHART_VALUES.read_text(encoding="utf-8"))
        assert resources() == {kind: {name: str(value) for name, value in amounts.items()}
                               for kind, amounts in values["resources"].items()}

    def test_three_sizes_are_published(self) -> None:
        """Rows for 100, 1,000 and 5,000 nodes."""
        assert ["100", "1,000", "5,000"] == [name.split()[0] for name in measured_rows()]

    @pytest.mark.parametrize("size", ["100", "1,000", "5,000"])
    def test_memory_follows_the_rule_from_the_peak(self, size: str) -> None:
        """Request: the peak × 1.25 rounded up to 64 MiB; limit: twice the peak rounded up to 128 MiB."""
        cells = next(cells for name, cells in measured_rows().items() if name.startswith(size + " "))
        peak = mebibytes(cells[0].split(";")[1])
        request, limit = (mebibytes(part) for part in cells[-1].split("/"))

        assert 64 * math.ceil(1.25 * peak / 64) == request
        assert 128 * math.ceil(2 * peak / 128) == limit

    def test_the_default_limits_cover_the_largest_row(self) -> None:
        """The default memory limit is the 5,000-node row's, so no published size is killed by it."""
        largest = list(measured_rows().values())[-1]

        assert largest[-1].split("/")[1].strip() == default_row()[-1].split("/")[1].strip()
