"""A picture of the ledgers: SVG 1.1, readable from one node to thousands.

Pure rendering (``render_svg``) over typed node records; ``write_svg`` is the only I/O. One idea a module:

- ``nodes``: ledgers read into exact, typed records (lines, zones, pressure, why a node needs a look);
- ``measuring``: text widths without font files, so that nothing overlaps;
- ``palette`` and ``drawing``: colours, and escaped SVG primitives with exact coordinates;
- ``bars``: stacked bars against a limit; ``cards``: a node's card, full or compact; ``legend``;
- ``cluster``: the overview of a large cluster; ``layout``: the page and the card grid;
- ``rendering``: the entry point; ``output``: files.
"""

from draledger.commands.report.output import write_svg
from draledger.commands.report.palette import PHASE_COLOURS, WARNING
from draledger.commands.report.rendering import OVERVIEW_ABOVE, render_svg

__all__ = ["OVERVIEW_ABOVE", "PHASE_COLOURS", "WARNING", "render_svg", "write_svg"]
