"""The docs stay in step with the code."""

from __future__ import annotations

import argparse
import pathlib

from draledger.commands.cli import build_parser

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_every_run_flag_is_documented() -> None:
    """docs/configuration.md names every flag of `draledger run` and its environment variable."""
    doc = (ROOT / "docs/configuration.md").read_text()
    commands = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    run = commands.choices["run"]
    for action in run._actions:
        for flag in action.option_strings:
            if flag.startswith("--") and flag not in ("--help", "--no-frozen", "--no-webhook"):
                assert flag in doc, flag
                name = flag.removeprefix("--no-").removeprefix("--").upper().replace("-", "_")
                if name != "NUMA_ATTRIBUTE":
                    assert f"DRALEDGER_{name}" in doc, name


def test_every_metric_is_documented() -> None:
    """docs/operations.md explains every metric the operator exports."""
    from draledger.operator.metrics import Metrics

    doc = (ROOT / "docs/operations.md").read_text()
    metrics = Metrics()
    metrics.watch_mapping_ages(list)
    names = {family.name for family in metrics.registry.collect()}
    assert names
    for name in names:
        assert name in doc, name


def test_every_relative_link_resolves() -> None:
    """Every relative link in README.md, docs/ and benchmarks/README.md names a file that exists."""
    import re

    pages = [ROOT / "README.md", ROOT / "benchmarks/README.md", *sorted((ROOT / "docs").glob("*.md"))]
    broken = []
    for page in pages:
        for target in re.findall(r"\]\(([^)\s]+)\)", page.read_text()):
            if "://" in target or target.startswith(("#", "mailto:")):
                continue
            path = (page.parent / target.split("#")[0]).resolve()
            if not path.exists():
                broken.append(f"{page.relative_to(ROOT)} -> {target}")
    assert [] == broken
