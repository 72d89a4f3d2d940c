"""The report in a real browser, at 1, 24, 200 and 5,000 nodes: no two texts overlap, no text is cut off
by the picture's edge, and no text crosses a bar."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from chromium_boxes import chromium, layout, overlapping_texts, texts_on_bars, texts_outside
from report_clusters import cluster

from draledger.commands.report import render_svg


def parse(svg: str) -> ET.Element:
    return ET.fromstring(svg.encode())


@pytest.mark.parametrize("nodes", [
    pytest.param(1, id="1-node"),
    pytest.param(24, id="24-nodes-largest-card-grid"),
    pytest.param(200, id="200-nodes"),
    pytest.param(5000, id="5000-nodes"),
])
def test_text_has_room(nodes: int, tmp_path: Path) -> None:
    """Every text box lies inside the viewBox and meets neither another text nor a bar."""
    chromium()
    found = layout(render_svg(cluster(nodes)), tmp_path)
    assert found.texts, "no text laid out"
    assert found.marks, "no bar laid out"
    assert [] == texts_outside(found)
    assert [] == overlapping_texts(found)
    assert [] == texts_on_bars(found)


def test_overview_does_not_grow_with_the_cluster(tmp_path: Path) -> None:
    """At 5,000 nodes the picture is no taller than at 200: it summarises instead of listing."""
    small, large = (parse(render_svg(cluster(n))) for n in (200, 5000))
    assert float(large.get("height", "0")) <= float(small.get("height", "0")) + 300


def test_the_checks_see_what_they_look_for(tmp_path: Path) -> None:
    """Overlapping texts, a text on a bar and a text past the edge are all reported."""
    chromium()
    svg = (
        '<svg xmlns="http://www.w3.org/2000/svg" width="200" height="60" viewBox="0 0 200 60">'
        '<text x="10" y="20" font-size="12">first label</text><text x="14" y="22" font-size="12">second</text>'
        '<g class="mark"><rect x="100" y="30" width="50" height="10"/></g>'
        '<text x="110" y="40" font-size="12">on the bar</text><text x="180" y="58" font-size="12">cut off</text>'
        "</svg>"
    )
    found = layout(svg, tmp_path)
    assert ["first label", "second"] == [t.split("'")[1] for t in overlapping_texts(found)[0].split(" overlaps ")]
    assert [] != texts_on_bars(found)
    assert ["'cut off'"] == [t.split(" (")[0] for t in texts_outside(found)]
