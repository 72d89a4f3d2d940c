"""The report's entry point: ledgers in, one SVG 1.1 document out. Pure: no I/O, no clock.

Up to ``OVERVIEW_ABOVE`` nodes, every node gets a full card (NUMA zones included), the most pressed first.
Above that, one card per node is a wall nobody reads: the page becomes an overview (phases, the pressure
of each resource across nodes, the nodes to look at as compact cards, and a count of the rest), whose
size does not grow with the cluster.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from draledger.commands.report import cluster
from draledger.commands.report.cards import COMPACT_WIDTH, FULL_WIDTH, full_card, full_height
from draledger.commands.report.drawing import Svg
from draledger.commands.report.layout import GAP, MARGIN, grid, grid_width, page
from draledger.commands.report.legend import legend
from draledger.commands.report.measuring import Px, fit
from draledger.commands.report.nodes import Node, ordered
from draledger.commands.report.palette import MUTED

OVERVIEW_ABOVE: Final = 24
TITLE: Final = "dra-ledger: node allocatable ledgers"


def _full_columns(count: int) -> int:
    if count <= 3:
        return max(count, 1)
    if count == 4:
        return 2
    return 3 if count <= 9 else 4


def _header(svg: Svg, title: str, nodes: Sequence[Node], order: str, width: Px) -> Px:
    """Title, summary, how the page is ordered, legend; returns the y below them."""
    svg.text(MARGIN, MARGIN + 18, fit(title, width, 20, bold=True), size=20, bold=True, cls="title")
    svg.text(MARGIN, MARGIN + 40, fit(cluster.summary(nodes), width, 12), size=12, fill=MUTED, cls="summary")
    svg.text(MARGIN, MARGIN + 57, fit(order, width, 11), size=11, fill=MUTED)
    top = MARGIN + 70
    return top + legend(svg, MARGIN, top, width) + 12


def _cards_page(nodes: Sequence[Node], title: str) -> str:
    columns = _full_columns(len(nodes))
    width = max(grid_width(columns, FULL_WIDTH), 720)
    body = Svg()
    order = "sorted by pressure (peak requested/allocatable), overcommitted and stale first"
    y = _header(body, title, nodes, order, width)
    y = grid(body, nodes, x=MARGIN, y=y, columns=columns, card_width=FULL_WIDTH, height=full_height,
             draw=full_card)
    if not nodes:
        body.text(MARGIN, y + 14, "No ledgers.", size=13, fill=MUTED)
        y += 30
    return page(body, title, width + 2 * MARGIN, y + MARGIN - GAP)


def _overview_page(nodes: Sequence[Node], title: str) -> str:
    width = grid_width(cluster.CARD_COLUMNS, COMPACT_WIDTH)
    body = Svg()
    order = "overview: phases, pressure per resource across nodes, then the nodes to look at first"
    y = _header(body, title, nodes, order, width)
    y += cluster.phase_strip(body, nodes, MARGIN, y, width) + 8
    y += cluster.histograms(body, nodes, MARGIN, y, width)
    y += cluster.cards(body, nodes, MARGIN, y, width)
    return page(body, title, width + 2 * MARGIN, y + MARGIN - GAP)


def render_svg(ledgers: Sequence[Mapping[str, Any]], *, title: str = TITLE, overview: bool | None = None) -> str:
    """The report of ``ledgers``; ``overview`` defaults to ``len(ledgers) > OVERVIEW_ABOVE``."""
    nodes = ordered(ledgers)
    if overview is None:
        overview = len(nodes) > OVERVIEW_ABOVE
    return _overview_page(nodes, title) if overview and nodes else _cards_page(nodes, title)
