"""Render the pictures in docs/report.md: the SVG of the README's example cluster
(tests/data/example-cluster.json, four nodes), and screenshots of generated clusters of 1, 200 and 5,000 nodes.

The larger clusters come from the audit benchmark's generator (``tests/report/report_clusters.py``); the
screenshots need Debian's ``chromium``.

    .venv/bin/python docs/examples/make_report.py
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from pathlib import Path

from draledger.commands.audit import ledgers_of
from draledger.commands.dumps import load_paths
from draledger.commands.report import render_svg, write_svg
from draledger.core.accounting.ledger import Flags

ROOT = Path(__file__).resolve().parents[2]
IMAGES = ROOT / "docs" / "images"
EXAMPLE = ROOT / "tests/data/example-cluster.json"
SIZES = (1, 200, 5000)  # nodes in each screenshot
NOW = "2026-12-02T10:00:00Z"


def screenshot(svg: str, output: Path) -> None:
    """``svg`` as a PNG of its own size, through headless Chromium."""
    width, height = (int(float(re.search(f' {side}="([0-9.]+)"', svg).group(1)) + 0.5)  # type: ignore[union-attr]
                     for side in ("width", "height"))
    with tempfile.TemporaryDirectory() as tmp:
        page = Path(tmp) / "report.svg"
        page.write_text(svg, encoding="utf-8")
        subprocess.run(
            ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
             f"--user-data-dir={tmp}/profile", "--force-device-scale-factor=1", f"--window-size={width},{height}",
             f"--screenshot={output}", page.as_uri()],
            check=True, capture_output=True, timeout=120,
        )


def main() -> None:
    target = IMAGES / "ledger-report.svg"
    write_svg(target, ledgers_of(load_paths([str(EXAMPLE)]), Flags(), NOW), title="dra-ledger: the example cluster")
    sys.stdout.write(f"wrote {target.relative_to(ROOT)}\n")
    sys.path.insert(0, str(ROOT / "tests" / "report"))
    from report_clusters import cluster

    for nodes in SIZES:
        named = f"{nodes:,} node{'s' if nodes > 1 else ''}"
        target = IMAGES / f"report-{named.replace(',', '').replace(' ', '-')}.png"
        screenshot(render_svg(cluster(nodes), title=f"dra-ledger: a generated cluster of {named}"), target)
        sys.stdout.write(f"wrote {target.relative_to(ROOT)}\n")


if __name__ == "__main__":
    main()
