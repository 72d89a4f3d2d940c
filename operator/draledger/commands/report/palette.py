"""The report's colours and fonts: one place, so a segment and its legend swatch can never disagree."""

from __future__ import annotations

from typing import Final

from draledger.core.phases import Phase

ORDINARY: Final = "#6f8fbf"  # ordinary (non-DRA) requests
CLAIMS: Final = "#2a9d8f"  # DRA claims
ORDINARY_INK: Final = "#3d5f94"  # text that names the ordinary segment
CLAIMS_INK: Final = "#1d7066"  # text that names the claims segment
FREE: Final = "#e7ebef"  # free capacity
WARNING: Final = "#d62728"  # overcommit: requested past allocatable
DIVERGENCE: Final = "#b5179e"  # claims != schedulerCharged
PROBLEM_INK: Final = "#9a6700"
ALLOC_LINE: Final = "#1f2328"
TEXT: Final = "#1f2328"
MUTED: Final = "#57606a"
BORDER: Final = "#d0d7de"
PAGE: Final = "#f6f8fa"
CARD: Final = "#ffffff"
PHASE_COLOURS: Final[dict[str, tuple[str, str]]] = {  # phase -> (fill, ink)
    Phase.READY: ("#2e7d32", "#ffffff"),
    Phase.STALE: ("#f2a900", "#1f2328"),
    Phase.OVERCOMMITTED: (WARNING, "#ffffff"),
    Phase.FROZEN: ("#0969da", "#ffffff"),
    Phase.REBUILDING: ("#6e7781", "#ffffff"),
}
UNKNOWN_PHASE: Final = ("#afb8c1", "#1f2328")
FONT: Final = "Helvetica, Arial, 'DejaVu Sans', 'Liberation Sans', sans-serif"


def phase_colours(phase: str) -> tuple[str, str]:
    return PHASE_COLOURS.get(phase, UNKNOWN_PHASE)
