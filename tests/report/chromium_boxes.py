"""Where a real browser puts the report's text: headless Chromium lays out an SVG and reports every box.

The SVG is embedded in an HTML page with a script that writes, into the page, the bounding box of every
``<text>`` and of every bar (class ``mark``) relative to the SVG's own box; ``chromium --dump-dom`` prints
the page after the script ran. Chromium is Debian's ``chromium`` package; without it the tests skip,
unless ``DRALEDGER_REQUIRE_CHROMIUM=1`` (CI) makes that a failure.
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

REQUIRE = "DRALEDGER_REQUIRE_CHROMIUM"
SCRIPT = """
const svg = document.querySelector('svg');
const page = svg.getBoundingClientRect();
const box = e => { const r = e.getBoundingClientRect();
  return [r.left - page.left, r.top - page.top, r.right - page.left, r.bottom - page.top]; };
const label = e => (e.querySelector('title') || {textContent: e.getAttribute('class')}).textContent;
document.getElementById('boxes').textContent = JSON.stringify({
  view: [svg.viewBox.baseVal.width, svg.viewBox.baseVal.height],
  texts: [...svg.querySelectorAll('text')].map(t => [t.textContent, ...box(t)]),
  marks: [...svg.querySelectorAll('.mark')].map(m => [label(m), ...box(m)]),
});
"""

Box = tuple[float, float, float, float]


@dataclass(frozen=True)
class Layout:
    width: float
    height: float
    texts: list[tuple[str, Box]]
    marks: list[tuple[str, Box]]


def chromium() -> str:
    """The chromium binary, or skip (fail when ``DRALEDGER_REQUIRE_CHROMIUM=1``)."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found:
        return found
    reason = "chromium is not installed (apt-get install -y chromium): the report's layout is not checked"
    if os.environ.get(REQUIRE) == "1":
        pytest.fail(f"{reason}, and {REQUIRE}=1 requires it")
    pytest.skip(reason)


def layout(svg: str, workdir: Path) -> Layout:
    """The boxes of ``svg``'s text and bars as Chromium lays them out."""
    page = workdir / "layout.html"
    inline = re.sub(r"^<\?xml[^>]*\?>\s*", "", svg)
    page.write_text(
        f'<!DOCTYPE html><html><body style="margin:0">{inline}<pre id="boxes"></pre>'
        f"<script>{SCRIPT}</script></body></html>",
        encoding="utf-8",
    )
    done = subprocess.run(
        [chromium(), "--headless", "--no-sandbox", "--disable-gpu", f"--user-data-dir={workdir / 'profile'}",
         "--dump-dom", page.as_uri()],
        capture_output=True, text=True, timeout=90, check=False,
    )
    found = re.search(r'<pre id="boxes">(.*?)</pre>', done.stdout, re.S)
    if found is None or not found.group(1):
        pytest.fail(f"chromium printed no boxes (exit {done.returncode}): {done.stderr[-2000:]}")
    data = json.loads(html.unescape(found.group(1)))
    return Layout(
        width=data["view"][0],
        height=data["view"][1],
        texts=[(t[0], (t[1], t[2], t[3], t[4])) for t in data["texts"]],
        marks=[(m[0], (m[1], m[2], m[3], m[4])) for m in data["marks"]],
    )


def intersect(a: Box, b: Box) -> bool:
    """The boxes share an area (touching edges do not count)."""
    return min(a[2], b[2]) > max(a[0], b[0]) and min(a[3], b[3]) > max(a[1], b[1])


def overlapping_texts(found: Layout) -> list[str]:
    ordered = sorted(found.texts, key=lambda t: t[1][0])
    out = []
    for index, (text, box) in enumerate(ordered):
        for other, other_box in ordered[index + 1 :]:
            if other_box[0] >= box[2]:
                break
            if intersect(box, other_box):
                out.append(f"{text!r} {box} overlaps {other!r} {other_box}")
    return out


def texts_outside(found: Layout) -> list[str]:
    return [
        f"{text!r} {box}"
        for text, box in found.texts
        if box[0] < 0 or box[1] < 0 or box[2] > found.width or box[3] > found.height
    ]


def texts_on_bars(found: Layout) -> list[str]:
    return [
        f"{text!r} {box} crosses the bar {mark!r} {mark_box}"
        for text, box in found.texts
        for mark, mark_box in found.marks
        if intersect(box, mark_box)
    ]
