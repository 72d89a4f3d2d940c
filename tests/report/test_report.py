"""The SVG report: valid XML, one card per node in a small cluster, an overview of a large one, honest
proportions, figures for people, the right marks on the right nodes."""

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
from draledger.commands.errors import CommandError, writable
from draledger.commands.report import (
    OVERVIEW_ABOVE,
    WARNING,
    render_svg,
    write_svg,
)
from draledger.core.accounting.ledger import Flags

CONFORMANCE = Path(__file__).parents[1] / "conformance"
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


def test_numa_bars_on_full_cards(cluster: list[dict[str, Any]]) -> None:
    """A small cluster's cards show one NUMA bar per zone and resource."""
    normal = parse(render_svg(cluster))
    # zone 0: cpu, memory, hugepages-2Mi; zone 1: cpu
    assert len(with_class(panel_named(normal, "gpu-node"), "numa-bar")) == 4


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


def texts_of(element: ET.Element) -> str:
    return " ".join("".join(t.itertext()) for t in element.iter(f"{SVG}text"))


def test_labels_are_humanised(cluster: list[dict[str, Any]]) -> None:
    """Labels read like people write (9.6 cores, 119Gi), never 9600m or 121728Mi; tooltips keep the exact
    figures."""
    root = parse(render_svg(cluster))
    texts = texts_of(root)
    assert "9.6/32 requested (30%)" in texts
    assert "free 119Gi" in texts
    assert "over by 1" in texts
    assert "9600m" not in texts
    assert "121728Mi" not in texts
    (tooltip,) = bar(panel_named(root, "gpu-node"), "cpu").iter(f"{SVG}title")
    assert "requested 9600m of allocatable 32" in (tooltip.text or "")


def test_a_row_reads_in_one_unit() -> None:
    """Memory of 42688Mi on 517794616Ki reads 41.7Gi/494Gi, and its free figure in Gi too."""
    ledger = synthetic(0)
    ledger["status"]["resources"]["memory"].update(allocatable="517794616Ki", requested="42688Mi",
                                                    podRequests="42688Mi", free="474083064Ki")
    texts = texts_of(parse(render_svg([ledger])))
    assert "41.7Gi/494Gi requested (8%)" in texts
    assert "ordinary 41.7Gi" in texts
    assert "free 452Gi" in texts


@pytest.mark.parametrize(("spec", "why"), [
    pytest.param({"frozen": True, "reason": "GPU driver upgrade"}, "frozen: GPU driver upgrade", id="its-reason"),
    pytest.param({"frozen": True}, "frozen: no reason given", id="no-reason"),
    pytest.param({"frozen": False}, "frozen: cluster-wide (--frozen)", id="cluster-wide"),
])
def test_a_frozen_node_says_why(spec: dict[str, Any], why: str) -> None:
    """A Frozen node's card, full or compact, opens its second line with why it is frozen (its spec.reason)."""
    frozen = {**synthetic(0, phase="Frozen"), "spec": spec}
    full = texts_of(panel_named(parse(render_svg([frozen, synthetic(1)])), "worker-000"))
    many = [frozen, *(synthetic(i) for i in range(1, OVERVIEW_ABOVE + 1))]
    compact = texts_of(panel_named(parse(render_svg(many)), "worker-000"))

    assert f"{why} · 1 claim" in full
    assert f"{why} · 1 claim" in compact
    assert "frozen" not in texts_of(panel_named(parse(render_svg([frozen, synthetic(1)])), "worker-001"))


def test_write_svg_writes_the_rendering(tmp_path: Path, cluster: list[dict[str, Any]]) -> None:
    """write_svg writes exactly what render_svg returns, as UTF-8."""
    target = tmp_path / "report.svg"
    write_svg(target, cluster)
    assert target.read_text(encoding="utf-8") == render_svg(cluster)


def test_empty_input_renders() -> None:
    """No ledgers still gives a valid document with no panels."""
    assert panels(parse(render_svg([]))) == []


class TestOverview:
    """Above OVERVIEW_ABOVE nodes: phases, pressure histograms, the nodes to look at, a count of the rest."""

    @pytest.fixture
    def many(self) -> list[dict[str, Any]]:
        """200 Ready nodes with cpu requested 0..63 of 64 (round robin), one overcommitted, one stale."""
        ledgers = [synthetic(i, cpu_requested=i % 64) for i in range(198)]
        ledgers.append(synthetic(198, phase="Overcommitted", cpu_requested=70))
        ledgers.append(synthetic(199, phase="Stale", cpu_requested=1))
        return ledgers

    def test_small_clusters_keep_full_cards(self) -> None:
        """Up to OVERVIEW_ABOVE nodes every node has a full card."""
        root = parse(render_svg([synthetic(i) for i in range(OVERVIEW_ABOVE)]))
        assert OVERVIEW_ABOVE == len(panels(root))
        assert not [p for p in panels(root) if "compact" in classes(p)]
        assert not with_class(root, "histogram")

    def test_cards_for_the_nodes_to_look_at_only(self, many: list[dict[str, Any]]) -> None:
        """The overcommitted node, the stale one, then the six most pressed: compact cards, no NUMA rows."""
        root = parse(render_svg(many))
        names = [name_of(p) for p in panels(root)]
        # cpu 63 of 64 on workers 63, 127, 191; 62 of 64 on 62, 126, 190
        assert ["worker-198", "worker-199", "worker-063", "worker-127", "worker-191", "worker-062", "worker-126",
                "worker-190"] == names
        assert all("compact" in classes(p) for p in panels(root))
        assert not with_class(root, "numa-bar")

    def test_the_rest_is_counted(self, many: list[dict[str, Any]]) -> None:
        """Nodes without a card are summed up by phase in one line."""
        (rest,) = with_class(parse(render_svg(many)), "rest")
        assert "and 192 more nodes: 192 Ready" == "".join(rest.itertext())

    def test_histogram_buckets_are_exact(self, many: list[dict[str, Any]]) -> None:
        """Node counts per tenth of cpu allocatable, and past it, as in each column's tooltip."""
        root = parse(render_svg(many))
        cpu = next(h for h in with_class(root, "histogram") if (h.findtext(f"{SVG}title") or "").startswith("cpu"))
        tooltips = [c.findtext(f"{SVG}title") for c in with_class(cpu, "column")]
        # 198 nodes at 0..63 of 64 (0..63 three times, then 0..5) plus 1 of 64: bucket ⌊10·r/64⌋
        want = [0] * 10
        for requested in [i % 64 for i in range(198)] + [1]:
            want[requested * 10 // 64] += 1
        spans = [f"{i * 10}–{i * 10 + 10}%" for i in range(10)] + ["past allocatable"]
        assert [f"cpu {span}: {n} node{'s' if n != 1 else ''}" for span, n in zip(spans, [*want, 1], strict=True)] == (
            tooltips)

    def test_phase_counts(self, many: list[dict[str, Any]]) -> None:
        """The summary counts every phase."""
        (summary,) = with_class(parse(render_svg(many)), "summary")
        assert "200 nodes: 198 Ready, 1 Stale, 1 Overcommitted" == "".join(summary.itertext())


class TestCheckWritable:
    """The output check every command uses (errors.writable): fails fast, in one line naming the path, and
    leaves the file system as it was."""

    def test_missing_directory(self, tmp_path: Path) -> None:
        """A path in a directory that does not exist is refused."""
        target = tmp_path / "nowhere" / "report.svg"
        with pytest.raises(CommandError, match=r"nowhere/report\.svg") as raised:
            writable(str(target))
        assert "\n" not in str(raised.value)

    def test_directory(self, tmp_path: Path) -> None:
        """A directory is not a file to write."""
        with pytest.raises(CommandError, match="is a directory"):
            writable(str(tmp_path))

    def test_new_file_is_not_left_behind(self, tmp_path: Path) -> None:
        """A writable new path passes and is not created."""
        writable(str(tmp_path / "report.svg"))
        assert [] == list(tmp_path.iterdir())

    def test_existing_file_is_untouched(self, tmp_path: Path) -> None:
        """An existing file passes and keeps its content."""
        target = tmp_path / "report.svg"
        target.write_text("before")
        writable(str(target))
        assert "before" == target.read_text()
