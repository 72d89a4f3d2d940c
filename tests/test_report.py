"""The SVG report: valid XML, one panel per node, honest proportions, the right marks on the right nodes."""

from __future__ import annotations

import copy
import json
import xml.etree.ElementTree as ET
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from draledger.commands.audit import ledgers_of
from draledger.commands.dumps import load_paths
from draledger.commands.report import COMPACT_ABOVE, WARNING, render_svg, write_svg
from draledger.core.accounting.ledger import Flags

CONFORMANCE = Path(__file__).parent / "conformance"
NOW = "2026-12-02T10:00:00Z"
SVG = "{http://www.w3.org/2000/svg}"
CASES = {
    "v02-gpu-hugepages-cores": "gpu-node",
    "v11-overcommitted": "over-node",
    "v09-scheduler-divergence": "diverging-node",
    "v06-missing-resource-slice": "stale-node",
}


def conformance_ledgers(case: str, tmp_path: Path) -> list[dict[str, Any]]:
    dump = json.loads((CONFORMANCE / f"{case}.json").read_text())["dump"]
    path = tmp_path / f"{case}.json"
    path.write_text(json.dumps(dump))
    return ledgers_of(load_paths([str(path)]), Flags(), NOW)


def renamed(ledger: dict[str, Any], name: str) -> dict[str, Any]:
    out = copy.deepcopy(ledger)
    out["metadata"]["name"] = name
    out["status"]["nodeName"] = name
    return out


@pytest.fixture
def cluster(tmp_path: Path) -> list[dict[str, Any]]:
    """The four cases as one cluster, one node each (all dumps call their node n1)."""
    ledgers = []
    for case, name in CASES.items():
        (ledger,) = conformance_ledgers(case, tmp_path)
        ledgers.append(renamed(ledger, name))
    return ledgers


def synthetic(index: int, phase: str = "Ready", cpu_requested: int = 10) -> dict[str, Any]:
    name = f"worker-{index:03d}"
    return {
        "apiVersion": "draledger.dev/v1alpha1",
        "kind": "NodeAllocatableLedger",
        "metadata": {"name": name},
        "status": {
            "nodeName": name,
            "phase": phase,
            "claimCount": 1,
            "resources": {
                "cpu": {"allocatable": "64", "podRequests": str(cpu_requested - 4), "claims": "4",
                        "requested": str(cpu_requested), "free": str(64 - cpu_requested),
                        "schedulerCharged": "4"},
                "memory": {"allocatable": "256Gi", "podRequests": "8Gi", "claims": "0", "requested": "8Gi",
                           "free": "248Gi", "schedulerCharged": "0"},
            },
            "numaZones": [{"id": 0, "resources": {"cpu": {"capacity": "32", "claims": "4", "free": "28"}}}],
            "problems": [],
            "claims": [],
            "conditions": [],
        },
    }


def parse(svg: str) -> ET.Element:
    return ET.fromstring(svg.encode())


def classes(element: ET.Element) -> set[str]:
    return set(element.get("class", "").split())


def panels(root: ET.Element) -> list[ET.Element]:
    return [g for g in root.iter(f"{SVG}g") if "panel" in classes(g)]


def name_of(panel: ET.Element) -> str:
    title = panel.find(f"{SVG}title")
    assert title is not None
    return title.text or ""


def panel_named(root: ET.Element, name: str) -> ET.Element:
    return next(p for p in panels(root) if name_of(p) == name)


def with_class(element: ET.Element, cls: str) -> list[ET.Element]:
    return [e for e in element.iter() if cls in classes(e)]


def bar(panel: ET.Element, resource: str) -> ET.Element:
    return next(g for g in with_class(panel, "bar") if f"resource-{resource}" in classes(g))


def rect_width(bar_group: ET.Element, cls: str) -> float:
    return sum(float(r.get("width", "0")) for r in with_class(bar_group, cls))


def test_svg_is_well_formed_xml(cluster: list[dict[str, Any]]) -> None:
    """The output parses with xml.etree and is an SVG 1.1 document."""
    root = parse(render_svg(cluster))
    assert root.tag == f"{SVG}svg"
    assert root.get("version") == "1.1"


def test_one_panel_per_node(cluster: list[dict[str, Any]]) -> None:
    """Each ledger gets exactly one panel, titled with its node name."""
    root = parse(render_svg(cluster))
    assert sorted(name_of(p) for p in panels(root)) == sorted(CASES.values())


def test_panels_sorted_overcommitted_then_stale_then_by_pressure(cluster: list[dict[str, Any]]) -> None:
    """Overcommitted first, stale next, then by peak requested/allocatable, descending."""
    root = parse(render_svg(cluster))
    # diverging-node peaks at cpu 9/16 (56%), gpu-node at cpu 9600m/32 (30%)
    assert [name_of(p) for p in panels(root)] == ["over-node", "stale-node", "diverging-node", "gpu-node"]


def test_ready_nodes_sorted_by_pressure_descending() -> None:
    """Among Ready nodes, the most requested comes first, whatever the input order."""
    ledgers = [synthetic(i, cpu_requested=r) for i, r in enumerate((8, 60, 32, 16))]
    root = parse(render_svg(ledgers))
    assert [name_of(p) for p in panels(root)] == ["worker-001", "worker-002", "worker-003", "worker-000"]


def test_overcommitted_node_has_warning_colour(cluster: list[dict[str, Any]]) -> None:
    """The overcommitted node has a warning-coloured segment; a node that fits has none."""
    root = parse(render_svg(cluster))
    over = with_class(panel_named(root, "over-node"), "seg-over")
    assert over
    assert all(e.get("fill") == WARNING for e in over)
    gpu = panel_named(root, "gpu-node")
    assert not with_class(gpu, "seg-over")
    assert not [e for e in gpu.iter() if e.get("fill") == WARNING]


def test_overcommit_extends_past_allocatable_line(cluster: list[dict[str, Any]]) -> None:
    """requested 5 on allocatable 4: the allocatable line sits at 4/5 and red fills the last fifth."""
    cpu = bar(panel_named(parse(render_svg(cluster)), "over-node"), "cpu")
    (track,) = with_class(cpu, "track")
    x0, width = float(track.get("x", "0")), float(track.get("width", "0"))
    (line,) = with_class(cpu, "alloc-line")
    assert float(line.get("x1", "0")) == pytest.approx(x0 + width * 4 / 5, abs=1)
    assert rect_width(cpu, "seg-over") == pytest.approx(width / 5, abs=1)


def test_divergence_marker_exactly_on_diverging_nodes(cluster: list[dict[str, Any]]) -> None:
    """Only the node whose claims differ from schedulerCharged has a divergence marker and both figures."""
    root = parse(render_svg(cluster))
    marked = {name_of(p) for p in panels(root) if with_class(p, "divergence")}
    assert marked == {"diverging-node"}
    texts = " ".join("".join(t.itertext()) for t in panel_named(root, "diverging-node").iter(f"{SVG}text"))
    assert "ledger claims 8" in texts
    assert "schedulerCharged 0" in texts


def test_numa_bars_in_normal_mode_only(cluster: list[dict[str, Any]]) -> None:
    """NUMA rows appear for a small cluster and disappear in the compact mode of 200 nodes."""
    normal = parse(render_svg(cluster))
    # zone 0: cpu, memory, hugepages-2Mi; zone 1: cpu
    assert len(with_class(panel_named(normal, "gpu-node"), "numa-bar")) == 4
    many = [synthetic(i, cpu_requested=i % 64) for i in range(200)]
    assert len(many) > COMPACT_ABOVE
    compact = parse(render_svg(many))
    assert len(panels(compact)) == 200
    assert all("compact" in classes(p) for p in panels(compact))
    assert not with_class(compact, "numa-bar")


def test_node_names_are_escaped() -> None:
    """A node name with <, & and > is escaped in the markup and read back intact."""
    name = "bad<&>node"
    svg = render_svg([renamed(synthetic(0), name)], title="a <title> & more")
    assert "bad&lt;&amp;&gt;node" in svg
    root = parse(svg)
    assert [name_of(p) for p in panels(root)] == [name]


def test_bar_widths_are_proportional(cluster: list[dict[str, Any]]) -> None:
    """gpu-node cpu: claims 9 and ordinary 600m of 32 take 9/32 and 0.6/32 of the track (within 1px)."""
    cpu = bar(panel_named(parse(render_svg(cluster)), "gpu-node"), "cpu")
    (track,) = with_class(cpu, "track")
    width = float(track.get("width", "0"))
    assert rect_width(cpu, "seg-claims") == pytest.approx(width * 9 / 32, abs=1)
    assert rect_width(cpu, "seg-ordinary") == pytest.approx(width * 0.6 / 32, abs=1)
    assert rect_width(cpu, "seg-free") == pytest.approx(width * 22.4 / 32, abs=1)


def test_pod_level_requested_is_drawn_whole(tmp_path: Path) -> None:
    """With pod-level resources (requested ≠ podRequests + claims) the bar still adds up to requested."""
    (ledger,) = conformance_ledgers("v03-pod-level-resources", tmp_path)
    figures = ledger["status"]["resources"]["cpu"]
    assert (Decimal(figures["requested"]), Decimal(figures["podRequests"]), Decimal(figures["claims"])) == (
        Decimal(15), Decimal(11), Decimal(8))
    cpu = bar(panels(parse(render_svg([ledger])))[0], "cpu")
    (track,) = with_class(cpu, "track")
    width = float(track.get("width", "0"))
    assert rect_width(cpu, "seg-ordinary") == pytest.approx(width * 7 / 16, abs=1)
    assert rect_width(cpu, "seg-claims") == pytest.approx(width * 8 / 16, abs=1)


def test_labels_use_canonical_quantities(cluster: list[dict[str, Any]]) -> None:
    """Labels print the ledger's canonical strings (9600m, 121728Mi), not floats."""
    texts = " ".join("".join(t.itertext()) for t in parse(render_svg(cluster)).iter(f"{SVG}text"))
    assert "9600m of 32 requested" in texts
    assert "free 121728Mi" in texts
    assert "over by 1" in texts


def test_write_svg_writes_the_rendering(tmp_path: Path, cluster: list[dict[str, Any]]) -> None:
    """write_svg writes exactly what render_svg returns, as UTF-8."""
    target = tmp_path / "report.svg"
    write_svg(target, cluster)
    assert target.read_text(encoding="utf-8") == render_svg(cluster)


def test_empty_input_renders() -> None:
    """No ledgers still gives a valid document with no panels."""
    assert panels(parse(render_svg([]))) == []
